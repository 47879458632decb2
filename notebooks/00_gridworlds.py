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
# Before any learning, meet the small worlds the course trains on. The first two come from
# Section 4.3 of the APS paper (Liu & Abbeel, 2021), built with DeepMind's pycolab engine:
#
# * **easy** — pick up the green key, which opens a closed passageway, then reach the orange target;
# * **hard** — the same, then a purple key beyond the first passageway opens a second passageway
#   into the upper-right room, where the target now is;
# * **deep** — not in the paper: the same two keys in three large rooms, added to this course as a
#   level where a random walk does not already visit nearly every state.
#
# By the end of this notebook you will know what the agent sees, what it is paid, and — by
# watching a random policy — what makes each level hard for it.
#
# **How long.** About 45 minutes of study: reading what it says and prints, its figures, predictions and
# questions, and about 40 seconds of compute in its committed run, on a quiet 2-core CPU.

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
from aps_teach import course
from aps_teach.course import fast_mode_banner
from aps_teach.grid import experiments, plots
from aps_teach.grid.random_policy import exact_random_policy, random_policy_stats
from aps_teach.infra.sweeps import read_rows

fast_mode_banner(FAST)

# %% [markdown]
# ## The three levels
#
# *About 5 minutes.*
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
# *About 8 minutes.*
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
# *About 28 minutes.*
#
# The simplest explorer picks uniformly random actions. How far does it get in
# `num_episodes` episodes per level? The library collects the visitation counts and how often
# each milestone is reached.
#
# **Predict.** Before running the cell: of the hard level's 123 (position, keys held) states, how many
# will a random walk visit in 2000 episodes of 100 steps, and in what share of episodes will it reach
# the target?

# %%
stats = [random_policy_stats(level, num_episodes, seed=seed) for level in gridworld.LEVELS]
for result in stats:
    print(result.summary())
fig = plots.plot_random_policy_overview(stats)

# %% [markdown]
# Read the lines and the heatmaps against your prediction; the next cell puts them into words, per level,
# from the numbers: how many states the walk visited, how often it held every key and reached the
# target, and what share of its steps it spent in the *last room*, the cells no state can be on before
# every key is held (the upper-right room of the hard level, the bottom room of the deep one).

# %%
def last_room(level):
    """Cells on which every reachable state holds every key: the room behind the last passageway."""
    layout = gridworld.resolve_level(level)
    held_by_cell = {}
    for position, held in layout.reachable_states():
        held_by_cell.setdefault(position, set()).add(len(held))
    return [cell for cell, counts in held_by_cell.items() if counts == {len(layout.key_names)}]


for result in stats:
    room = last_room(result.level)
    share = sum(result.visits[cell] for cell in room) / result.visits.sum()
    last_key = list(result.key_rates)[-1]
    room_words = ("never entered" if share == 0 else "nearly dark (under 1% of its steps)" if share < 0.01
                  else f"{share:.1%} of its steps")
    print(f"{result.level}: {result.distinct_states} of {result.reachable_states} states visited | "
          f"{last_key} key in {result.key_rates[last_key]:.1%} of episodes | target in "
          f"{result.success_rate:.1%} | last room ({len(room)} cells): {room_words}")
hard_stats = stats[list(gridworld.LEVELS).index("hard")]
print(f"hard: the random walk visits most states ({hard_stats.distinct_states} of "
      f"{hard_stats.reachable_states}) yet reaches the target in under 1% of episodes: "
      f"{hard_stats.distinct_states > hard_stats.reachable_states / 2 and hard_stats.success_rate < 0.01}")

# %% [markdown]
# Sampling can only say "rarely". Because the worlds are tiny, we can instead compute the random
# policy's chance of success *exactly*. Let $p_t(s)$ be the probability of being in state
# $s$ = (position, keys held) after $t$ steps, $T(s' \mid s, a)$ the rules, and the target an absorbing
# state. Each step pushes the distribution forward under the uniform policy over the 4 actions,
#
# $$p_{t+1}(s') = \sum_s p_t(s) \sum_a \tfrac{1}{4}\, T(s' \mid s, a),$$
#
# and $P(\text{success within } t \text{ steps})$ is the mass $p_t$ puts on the target. How does it grow
# with the episode length?
#
# **Predict.** The hard level's sampled success rate was a fraction of a percent in 100-step episodes.
# How long must an episode be before the random walk reaches its target in one episode of five? Sketch
# the three curves before running the cell.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8))
one_in_five = {}
for level in gridworld.LEVELS:
    curve = exact_random_policy(level, horizon).success_by_step
    ax.plot(curve, label=level)
    one_in_five[level] = int(np.argmax(curve >= 0.2)) if curve[-1] >= 0.2 else None
    print(f"{level}: P(success within {gridworld.MAX_EPISODE_STEPS} steps) = "
          f"{curve[min(horizon, gridworld.MAX_EPISODE_STEPS)]:.4f}, within {horizon} steps = "
          f"{curve[-1]:.4f} | one episode in five succeeds from length "
          + (f"{one_in_five[level]}" if one_in_five[level] is not None else f"beyond {horizon}"))
ax.axvline(gridworld.MAX_EPISODE_STEPS, color="grey", linestyle=":", label="step limit")
ax.set_xlabel("episode length (steps)")
ax.set_ylabel("P(target reached)")
ax.set_title("uniformly random policy, computed exactly")
ax.legend()
plt.show()

# %% [markdown]
# Each key-passageway pair in the way multiplies the steps a random walk needs to reach the target, and so
# does the size of the rooms: deep has the same two pairs as hard, in rooms holding 312 states against 123,
# and needs beyond 600 steps where hard needs 568 (the lengths above).
#
# Visiting states is one thing, reaching the target another. Reward-free pretraining (notebooks 02-04)
# gets 64,000 steps on each level; a random walk of as many steps is the baseline its coverage must beat.
# **Predict.** On the hard level, will VISR, APT and APS, each pretrained for 64,000 steps, visit more
# states than a random walk of the same length? On the deep level?
#
# The next cell sets that random walk beside the committed sweep's pretraining runs (10 seeds per method
# and level; DQN has no reward-free phase, so it is left out).

# %%
budget = experiments.Budget()
walk_episodes = min(num_episodes, budget.pretrain_steps // gridworld.MAX_EPISODE_STEPS)
figure4 = [row for row in read_rows(course.committed_result("gridworld/figure4.csv"))
           if row["phase"] == "zero_shot" and row["method"] != "dqn"]
beats, above = {}, {}  # mean over runs above the walk; runs above the walk, one by one
for level in ("hard", "deep"):
    walk = random_policy_stats(level, walk_episodes, seed=seed, progress=False)
    print(f"{level}: random walk, {walk_episodes} episodes of at most {gridworld.MAX_EPISODE_STEPS} steps: "
          f"{walk.distinct_states} of {walk.reachable_states} states, target in {walk.success_rate:.1%} of "
          "episodes")
    for method in ("visr", "apt", "aps"):
        runs = [row for row in figure4 if row["method"] == method and row["level"] == level]
        counts = [int(row["states_visited"]) for row in runs]
        visited = np.mean(counts)
        reached = sum(row["target_reached"] == "True" for row in runs)
        beats[level, method] = visited > walk.distinct_states
        above[level, method] = f"{method} {sum(c > walk.distinct_states for c in counts)} of {len(counts)}"
        print(f"  {method:<4} pretraining, {budget.pretrain_steps:,} steps: {visited:.1f} states on average, "
              f"target reached in {reached} of {len(runs)} runs | more states than the walk: "
              f"{beats[level, method]} (runs: {min(counts)} to {max(counts)} states)")
same_steps = walk_episodes * gridworld.MAX_EPISODE_STEPS == budget.pretrain_steps
for level in ("hard", "deep"):
    ahead = [method for method in ("visr", "apt", "aps") if beats[level, method]]
    print(f"{level}: pretrained methods whose mean over runs visits more states than this one random walk: "
          f"{', '.join(ahead) or 'none'} (runs above it, one by one: "
          f"{', '.join(above[level, method] for method in ('visr', 'apt', 'aps'))}): "
          + ("the walk had fewer steps than pretraining (fast mode): no verdict" if not same_steps else
             f"pretraining adds coverage here ({', '.join(ahead)})"
             + (": VISR's too, though its reward pays for recognisable skills, not for new states"
                if "visr" in ahead else "") if ahead else
             "on average, coverage is not what pretraining adds here; what counts is the behaviour it "
             "leaves"))

# %% [markdown]
# The verdict compares each method's mean over its 10 runs with one walk (a sample too), so read it with the
# runs beside it: on hard a few single runs do visit more states than this walk. Where no method's mean beats
# the walk, coverage does not decide the task: what notebooks 02-04 ask there is
# whether pretraining leaves *behaviour* that walks through both passageways to the target when asked.
# Figure 4 of the paper measures the methods on easy and hard by the success each reaches after
# pretraining.
#
# **Try it.** Draw your own level with the legend above (say, the target behind both passageways
# in a longer maze, or the start cells far from the green key), build it with
# `gridworld.make(my_art)`, and rerun the two figures above on it. The legend has six keys (a-f),
# so a level has at most six key-passageway pairs.

#
# ## Summary
#
# *About 1 minute.*
#
# * Three levels, each a chain of key-passageway pairs; the agent sees one-hot planes, acts with four
#   moves, and is paid $r_t = \mathbb{1}[\text{key picked up}] + 10\,\mathbb{1}[\text{target reached}]$,
#   the target ending the episode.
# * A random walk's success is computed exactly by pushing the state distribution forward,
#   $p_{t+1}(s') = \sum_s p_t(s) \sum_a \tfrac14 T(s' \mid s, a)$; every extra passageway stretches the
#   episode length it needs.
# * Visiting states and reaching the target are different things: the verdict lines above set a
#   random walk's coverage beside its success on each level, and beside the coverage of 64,000 steps of
#   reward-free pretraining on the hard and deep levels.
#
# **Next.** Notebook 01 builds successor features, $Q^\pi(s, a) = \psi^\pi(s, a)^\top w$, exactly on these
# levels: the identity VISR and APS rest on.
