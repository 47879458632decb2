# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · The key-passageway gridworlds
#
# Before any learning, meet the two small worlds the course trains on. They come from
# Section 4.3 of the APS paper (Liu & Abbeel, 2021), built with DeepMind's pycolab engine:
#
# * **easy** — pick up the green key, which opens a closed passageway, then reach the orange target;
# * **hard** — the same, then a purple key beyond the first passageway opens a second passageway
#   into the upper-right room, where the target now is.
#
# By the end of this notebook you will know what the agent sees, what it is paid, and — by
# watching a random policy — why the hard level needs real exploration.

# %%
# On Colab, this installs the course's library at the release these notebooks were run with.
# Elsewhere it does nothing: install once from the repository instead (pip install -e .).
import sys

if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import distributions

    class InstallFailed(Exception):
        def _render_traceback_(self):  # IPython shows this one line instead of a traceback
            return [str(self)]

    def versions():
        return {d.metadata["Name"].lower(): d.version for d in distributions()}

    before = versions()
    requirement = "aps-teach @ git+https://github.com/aps-teach/aps-teach@v0.1.0"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-color", requirement],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        said = [line for line in pip.stderr.splitlines() if line.strip()] or ["pip printed no error"]
        errors = [line for line in said if line.startswith("ERROR")] or said
        raise InstallFailed(f"aps-teach could not be installed from {requirement}: {errors[-1]}")
    upgraded = [f"{name} {before[name]} -> {new}" for name, new in versions().items()
                if before.get(name, new) != new]
    if upgraded:
        print("Upgraded preinstalled packages:", ", ".join(upgraded))
        print("Restart the runtime now (Runtime > Restart session), then run the notebook from the top.")

# %% tags=["parameters"]
import os

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
num_episodes = 20 if FAST else 2000  # random-policy episodes per level
horizon = 100 if FAST else 600  # longest episode length in the exact success-curve figure
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np

import gridworld
from aps_teach import plots
from aps_teach.course import fast_mode_banner
from aps_teach.random_policy import exact_random_policy, random_policy_stats

fast_mode_banner(FAST)

# %% [markdown]
# ## The two levels
#
# A level is ASCII art; this legend is all there is to it (you can pass your own art to
# `gridworld.make`, and malformed art is refused with a message saying what is wrong):

# %%
for char, meaning in gridworld.LEGEND.items():
    print(f"{char!r}: {meaning}")
print()
for name, art in gridworld.LEVELS.items():
    print(name, *art, sep="\n")
    print()

# %%
fig, axes = plt.subplots(1, len(gridworld.LEVELS), figsize=(4.4 * len(gridworld.LEVELS), 4.4),
                         width_ratios=[gridworld.resolve_level(level).shape[1] for level in gridworld.LEVELS])
for ax, level in zip(axes, gridworld.LEVELS, strict=True):
    plots.plot_level(ax, gridworld.resolve_level(level), title=f"{level} level")
fig.legend(handles=plots.level_legend_handles(), loc="lower center", ncol=4, frameon=False)
fig.tight_layout(rect=(0, 0.12, 1, 1))

# %% [markdown]
# ## What the agent sees, does and is paid
#
# The environments speak the Gymnasium API. An observation is a stack of one-hot planes, one per
# kind of thing, so every cell is 1 in exactly one plane. Holding a key is visible: its key and
# its passageway vanish from the board. Actions are 0 up, 1 down, 2 left, 3 right.

# %%
env = gridworld.make("hard", render_mode="rgb_array")
observation, info = env.reset(seed=seed)
print("observation", observation.shape, observation.dtype, "| actions", env.action_space)
print("info", info)
fig, axes = plt.subplots(1, len(env.unwrapped.layer_names), figsize=(16, 2.4))
for ax, name, plane in zip(axes, env.unwrapped.layer_names, observation, strict=True):
    ax.imshow(plane, cmap="Greys", vmin=0, vmax=1)
    ax.set_title(name, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
assert (observation.sum(axis=0) == 1).all()

# %% [markdown]
# The evaluation protocol of the paper pays **+1 the first time each key is picked up** and
# **+10 on reaching the target**, which ends the episode (`info["success"]` becomes True):
#
# $$r_t = \mathbb{1}[\text{a key is picked up at step } t] + 10\,\mathbb{1}[\text{the target is reached}].$$
#
# An episode is cut after `gridworld.MAX_EPISODE_STEPS` steps. Let us follow the shortest solution
# (found by breadth-first search over the rules) and add up what it earns.

# %%
print("step limit:", gridworld.MAX_EPISODE_STEPS)
fig, axes = plt.subplots(1, len(gridworld.LEVELS), figsize=(4.4 * len(gridworld.LEVELS), 4),
                         width_ratios=[gridworld.resolve_level(level).shape[1] for level in gridworld.LEVELS])
for ax, level in zip(axes, gridworld.LEVELS, strict=True):
    env = gridworld.make(level)
    _, info = env.reset(seed=seed)
    path = [info["position"]]
    rewards = []
    for action in gridworld.shortest_path(env.unwrapped.layout, (info["position"], ())):
        _, reward, terminated, truncated, info = env.step(action)
        path.append(info["position"])
        rewards.append(reward)
    print(f"{level}: {len(rewards)} steps, rewards paid {[r for r in rewards if r]}, "
          f"return {sum(rewards):g}, success {info['success']}")
    plots.plot_level(ax, env.unwrapped.layout, title=f"{level}: shortest solution")
    rows, cols = np.array(path).T
    ax.plot(cols, rows, "-o", color="tab:blue", markersize=4)

# %% [markdown]
# ## A random policy
#
# The simplest explorer picks uniformly random actions. How far does it get in
# `num_episodes` episodes per level? The library collects the visitation counts and how often
# each milestone is reached.

# %%
stats = [random_policy_stats(level, num_episodes, seed=seed) for level in gridworld.LEVELS]
for result in stats:
    print(result.summary())
fig = plots.plot_random_policy_overview(stats)

# %% [markdown]
# On the easy level the random walk picks up the green key in most episodes and stumbles on the
# target now and then. On the hard level it still finds the first key, but it rarely gets as far
# as the purple key, and it almost never reaches the target: the upper-right room stays nearly
# dark in the heatmap. The deep level, the paper's two keys in three large rooms, was chosen for that
# darkness: a random walk there does not reach its bottom room at all.
#
# Sampling can only say "rarely". Because the worlds are tiny, we can instead compute the random
# policy's chance of success *exactly*. Let $p_t(s)$ be the probability of being in state
# $s$ = (position, keys held) after $t$ steps, $T(s' \mid s, a)$ the rules, and the target an absorbing
# state. Each step pushes the distribution forward under the uniform policy over the 4 actions,
#
# $$p_{t+1}(s') = \sum_s p_t(s) \sum_a \tfrac{1}{4}\, T(s' \mid s, a),$$
#
# and $P(\text{success within } t \text{ steps})$ is the mass $p_t$ puts on the target. How does it grow
# with the episode length?

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for level in gridworld.LEVELS:
    curve = exact_random_policy(level, horizon).success_by_step
    ax.plot(curve, label=level)
    print(f"{level}: P(success within {gridworld.MAX_EPISODE_STEPS} steps) = "
          f"{curve[min(horizon, gridworld.MAX_EPISODE_STEPS)]:.4f}, within {horizon} steps = {curve[-1]:.4f}")
ax.axvline(gridworld.MAX_EPISODE_STEPS, color="grey", linestyle=":", label="step limit")
ax.set_xlabel("episode length (steps)")
ax.set_ylabel("P(target reached)")
ax.set_title("uniformly random policy, computed exactly")
ax.legend()
plt.show()

# %% [markdown]
# Each extra key-passageway pair multiplies the steps a random walk needs. A method whose
# behaviour stays close to "random until a reward shows up" gets almost no signal on the hard
# level; a method that *explores on purpose* (APT, APS) gets to the purple key and beyond during
# reward-free pretraining. That is the contrast Figure 4 of the paper measures, and the one
# notebooks 02–04 rebuild.
#
# **Try it.** Draw your own level with the legend above (say, the target behind both passageways
# in a longer maze, or the start cells far from the green key), build it with
# `gridworld.make(my_art)`, and rerun the two figures above on it. The legend has six keys (a-f),
# so a level has at most six key-passageway pairs.
