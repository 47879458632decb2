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
# # 01 · Successor features: Q = ψᵀw
#
# VISR and APS rest on one identity (Section 3.1 of the APS paper). Suppose the reward of a move is
# linear in some features, with a task vector $w$:
#
# $$r(s, a, s') = \phi(s, a, s')^\top w.$$
#
# Then the value of any policy $\pi$ splits the same way:
#
# $$Q^\pi(s, a) = \mathbb{E}_\pi\Big[\sum_{t\ge 0} \gamma^t r_t\Big]
#   = \mathbb{E}_\pi\Big[\sum_{t\ge 0} \gamma^t \phi_t\Big]^\top w \equiv \psi^\pi(s, a)^\top w,$$
#
# where $\psi^\pi(s, a)$, the **successor features**, is the expected discounted sum of future
# features. $\psi$ depends on the policy and the world, not on the task: learn it once, then any task
# $w$ costs one dot product. This notebook checks that identity numerically on the gridworlds, reuses
# $\psi$ for a second task, and combines several policies with **generalised policy improvement (GPI)**,
# which you will write yourself.
#
# **How long.** About 51 minutes of study: reading what it says and prints, its figures, predictions and
# questions, and the exercise; a few seconds of compute.
#
# The gridworlds are small enough to do everything exactly, in tables (`aps_teach.grid.tabular`); later
# notebooks replace the tables with neural networks and learned features.
#
# ### Notation, for the whole course
#
# | symbol | in the code | what it is |
# |---|---|---|
# | $s, a, s'$ | `obs`, `action`, `next_obs` | a state, the action taken in it, the state it leads to |
# | $\phi(s, a, s')$ or $\phi(s') \in \mathbb{R}^d$ | `phi` | features of a move's outcome (below) |
# | $w \in \mathbb{R}^d$ | `w` | a task: the reward is $\phi^\top w$; a unit vector in VISR and APS |
# | $\psi^\pi(s, a) \in \mathbb{R}^d$ | `psi` | successor features: discounted future $\phi$ under $\pi$ |
# | $z$ | `z` | the task a policy was trained for (a GPI candidate); VISR and APS train with $z \equiv w$ |
# | $f$, $h = f(s')$ | `encoder`, `h` | the representation APT and APS take distances in (APS: $f = \phi$) |
# | $k$ | `k` | how many nearest neighbours the particle (kNN) reward averages over |
# | $\gamma$ | `gamma` | the discount factor |
#
# Here $\phi$ marks events of a move (a key picked up, the target reached), so it is written
# $\phi(s, a, s')$; from notebook 02 on it is a network's output on the state reached, written $\phi(s')$.
# Both are the features of where a move led; the derivations below hold for either.

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
td_sweeps = 30 if FAST else 300  # TD passes over every (state, action)
gamma = 0.9
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from aps_teach.course import exercises, fast_mode_banner
from aps_teach.grid import plots, tabular

fast_mode_banner(FAST)

# %% [markdown]
# ## Features whose span contains the task
#
# *About 1 minute.*
#
# On a key-passageway level, take as features the *events* of a move: did it pick up each key, did
# it reach the target? The evaluation reward (+1 per key, +10 at the target) is then exactly
# linear in them, with $w = (1, 10)$ on the easy level. We check that against the environment's own
# reward for every move from every reachable state.

# %%
easy = tabular.TabularGridworld.from_level("easy")
w_eval = np.array([1.0, 10.0])
print("states:", len(easy.states), "| features:", easy.event_names)
print("environment reward == phi^T w for every move:", np.allclose(easy.events @ w_eval, easy.rewards))

# %% [markdown]
# ## ψ by temporal differences, checked against direct policy evaluation
#
# *About 8 minutes.*
#
# $\psi$ obeys a Bellman equation of its own, with $\phi$ in the place of the reward,
#
# $$\psi^\pi(s, a) = \mathbb{E}\big[\phi(s, a, s') + \gamma\, \mathbb{E}_{a' \sim \pi(\cdot \mid s')}\,
#   \psi^\pi(s', a')\big],$$
#
# so TD learning works on it feature by feature. `tabular.successor_features_td` sweeps over every
# $(s, a)$ in a random order and moves $\psi(s, a)$ a step $\alpha$ towards its one-step target:
#
# $$\psi(s, a) \leftarrow \psi(s, a) + \alpha \big[\phi(s, a, s') +
#   \gamma \textstyle\sum_{a'} \pi(a' \mid s')\, \psi(s', a') - \psi(s, a)\big],$$
#
# with the bootstrap term dropped when $s'$ ends the episode. Take the uniformly random policy, learn
# $\psi$ by TD, and compare $\psi^\top w$ with $Q^\pi$ computed the direct way: Bellman backups on the
# environment's reward, never touching the features.
#
# **Predict.** After `td_sweeps` passes, how far apart will $\psi^\top w$ and $Q^\pi$ be at the worst
# (state, action): 1, 0.01, or at floating-point precision? What would make it worse?

# %%
policy = tabular.uniform_policy(easy)
psi = tabular.successor_features_td(easy, policy, gamma, sweeps=td_sweeps, seed=seed)
q_direct = tabular.policy_evaluation(easy, policy, gamma)
q_from_psi = psi @ w_eval
print(f"max |psi^T w - Q| over {q_direct.size} state-actions: {np.abs(q_from_psi - q_direct).max():.2e}")

fig, ax = plt.subplots(figsize=(4.2, 4))
ax.scatter(q_direct.ravel(), q_from_psi.ravel(), s=8)
ax.plot([q_direct.min(), q_direct.max()], [q_direct.min(), q_direct.max()], "k:", linewidth=1)
ax.set_xlabel(r"$Q^\pi$ from policy evaluation")
ax.set_ylabel(r"$\psi^\top w$ from TD")
ax.set_title("one dot per (state, action)")
plt.show()

# %% [markdown]
# ## A second task for free
#
# *About 7 minutes.*
#
# Now change the task without learning anything: $w = (1, 0)$ pays only for the key. The same $\psi$
# gives its $Q$ at once, and it again agrees with policy evaluation on that reward. The value maps
# show $V(s) = \sum_a \pi(a \mid s)\, Q(s, a)$ over the cells, before and after the key is picked up.
#
# **Predict.** Once the key is held, what is the key-only task's value anywhere? Before it is held, will
# the two tasks' maps look alike or different?

# %%
tasks = {"evaluation task w = (1, 10)": w_eval, "key only w = (1, 0)": np.array([1.0, 0.0])}
maps = {}
fig, axes = plt.subplots(2, 2, figsize=(8, 7.5))
for column, (name, w) in enumerate(tasks.items()):
    q = psi @ w
    error = np.abs(q - tabular.policy_evaluation(easy, policy, gamma, easy.events @ w)).max()
    print(f"{name}: max error against policy evaluation {error:.2e}")
    values = (policy * q).sum(axis=1)
    maps[name] = values
    for row, held in enumerate([(), ("green",)]):
        image = plots.plot_state_values(axes[row, column], easy.layout, easy.states, values, held,
                                        title=f"{name}\nkeys held: {', '.join(held) or 'none'}")
        fig.colorbar(image, ax=axes[row, column], fraction=0.046, label=r"$V(s)$")
fig.suptitle(r"values of the random policy, both from the same $\psi$")
fig.tight_layout()
no_key = np.array([held == () for _, held in easy.states])
full_values, key_values = maps.values()
ratio = full_values[no_key] / key_values[no_key]
print(f"no key held: evaluation-task value / key-only value from {ratio.min():.3f} to {ratio.max():.3f} over "
      f"{no_key.sum()} states | one map a multiple of the other: {bool(np.ptp(ratio) < 1e-3 * ratio.mean())}")
print(f"key held: largest |V| of the key-only task {np.abs(key_values[~no_key]).max():.1e}, of the "
      f"evaluation task {np.abs(full_values[~no_key]).max():.2f}")

# %% [markdown]
# The printed lines measure the maps. Once the key is held, the key-only task has nothing left to pay,
# so its value there is 0, while the evaluation task still values the way to the target. Before the key,
# the ratio of the two maps says how they differ. Under the random policy every route to the target
# passes through one state, the key's cell just after the pick-up, so whatever the target adds is the
# discounted key value times one factor, the same from every cell: the ratio is one number, up to
# how far TD has converged (compare the errors printed above). Same $\psi$, two tasks, no new learning.
#
# ## Generalised policy improvement
#
# *About 23 minutes.*
#
# $\psi$ tells us how good *any* policy we have is for *any* task. GPI uses that to act better than
# each of them: given policies $\pi_1, \dots, \pi_n$ with successor features $\psi_i$, act greedily on
#
# $$Q_{\mathrm{GPI}}(s, a) = \max_i\, \psi_i(s, a)^\top w,$$
#
# every policy scored under the task $w$ at hand. The GPI theorem guarantees the result is at least
# as good as every $\pi_i$ on task $w$.
#
# ### Exercise: GPI in one line
#
# Write `my_gpi(psis, w, zs)` returning $Q_{\mathrm{GPI}}$ as an array of shape (S, A), from `psis` of
# shape (n, S, A, d) (policy $i$'s successor features for every state and action), the task `w` of
# shape (d,), and `zs` of shape (n, d): `zs[i]` is the task policy $i$ was trained for. NumPy's
# `einsum` or `@` and `.max(axis=...)` are all you need. The checker compares your function with the
# library's on random inputs; until yours passes, the rest of the notebook uses the library's.
# After a wrong attempt, `my_gpi(*exercises.failing_case("gpi"))` calls yours on the inputs it got wrong;
# once you have tried, `exercises.solution("gpi")` shows a solution.

# %%
def my_gpi(psis, w, zs):
    raise NotImplementedError  # your code


gpi = exercises.check_gpi(my_gpi)

# %% [markdown]
# On the passageway levels the policies are nested (chasing the target means fetching every key
# first), so one of them is already best everywhere. GPI shows its strength when policies are good
# in different places. So draw a room of your own, with the same legend: two keys whose passageways
# are walled off (every key has one; here they open nothing), the target out of the way in a corner.

# %%
two_keys_art = [
    "#########",
    "#a......#",
    "#.......#",
    "#..SSS..#",
    "#......b#",
    "#.......#",
    "#......T#",
    "#########",
    "###A#B###",
]
room = tabular.TabularGridworld.from_level(two_keys_art)
print("features:", room.event_names)

# %% [markdown]
# Our policies: $\pi_{\text{green}}$, optimal for "green key" alone ($z_1 = (1, 0, 0)$), and
# $\pi_{\text{purple}}$, optimal for "purple key" alone ($z_2 = (0, 1, 0)$). Each fetches its key, then
# has nothing left to do. The new task pays 3 for the green key and 1 for the purple one:
# $w = (3, 1, 0)$. GPI acts greedily on `gpi(psis, w_new, z_tasks)`: your function, once it passes.
#
# **Predict.** Rank the start values of $\pi_{\text{green}}$, $\pi_{\text{purple}}$, GPI and the optimal
# policy on $w = (3, 1, 0)$. Can GPI beat both of its policies? Can it reach the optimum?

# %%
z_tasks = np.eye(3)[:2]
policies = [tabular.greedy_policy(tabular.optimal_q(room, room.events @ z, gamma)) for z in z_tasks]
psis = np.stack([tabular.successor_features(room, p, gamma) for p in policies])
w_new = np.array([3.0, 1.0, 0.0])
q_gpi = gpi(psis, w_new, z_tasks)

starts = [room.state_index(cell) for cell in room.layout.start_cells]


def start_value(policy):
    """Mean over start cells of V(s) on the task w_new."""
    return tabular.policy_evaluation(room, policy, gamma, room.events @ w_new).max(axis=1)[starts].mean()


names = ["pi_green", "pi_purple"]
for name, p in zip(names, policies, strict=True):
    print(f"{name:>10}: {start_value(p):.3f}")
gpi_value = start_value(tabular.greedy_policy(q_gpi))
print(f"{'GPI':>10}: {gpi_value:.3f}")
best = tabular.optimal_q(room, room.events @ w_new, gamma).max(axis=1)[starts].mean()
print(f"{'optimal':>10}: {best:.3f}  (value iteration on w_new, for reference)")
beats_both = all(gpi_value > start_value(p) + 1e-9 for p in policies)
optimal = bool(np.isclose(gpi_value, best, atol=1e-6))
print(f"GPI above both of its policies: {beats_both} | GPI equal to the optimal value: {optimal}")
print("GPI " + ("beats both of its policies" if beats_both else "does not beat both of its policies")
      + (", and here matches the optimal value" if optimal else ", and falls short of the optimal value"))

# %% [markdown]
# The last line gives the verdict. GPI can beat both policies because it switches between them: it
# fetches the green key with $\pi_{\text{green}}$, then follows $\pi_{\text{purple}}$ for the second key,
# a plan neither policy follows alone. The map shows
# which policy GPI follows in each cell: the one whose value backs the greedy action. Beside it, a
# common mistake: public reference code has scored each policy under *its own* task $z_i$,
# $\max_i \psi_i(s, a)^\top z_i$, instead of under the current $w$.
#
# **Explain it.** Before running the next cell: what does scoring each policy under its own $z_i$
# rank the policies by, and which policy would it follow near the purple key?
#
# <details><summary>Answer</summary>
#
# It ranks them by how well each does *its own* job, here by which key is nearer, not by what it
# earns on your task. On the cells nearer the purple key it follows $\pi_{\text{purple}}$, although the
# green key pays three times as much, so from there it fetches the key worth less first: its start
# value is below GPI's.
#
# </details>

# %%
def backing_policy(scores):
    """Per state, the policy i whose value backs the greedy action of max_i scores[i] (n, S, A)."""
    greedy = scores.max(axis=0).argmax(axis=1)
    return scores[:, np.arange(scores.shape[1]), greedy].argmax(axis=0)


scores_under_w = psis @ w_new  # (n, S, A)
own_scores = np.stack([psi_i @ z for psi_i, z in zip(psis, z_tasks, strict=True)])  # the mistake
chosen, chosen_own_z = backing_policy(scores_under_w), backing_policy(own_scores)
own_value = start_value(tabular.greedy_policy(own_scores.max(axis=0)))
print(f"scored under its own z: start value {own_value:.3f} (GPI under w: {gpi_value:.3f}) | below GPI's: "
      f"{own_value < gpi_value - 1e-9}")
no_key = np.array([held == () for _, held in room.states])
print(f"states with no key held that follow pi_purple: under w {int((chosen[no_key] == 1).sum())}, under its "
      f"own z {int((chosen_own_z[no_key] == 1).sum())} of {int(no_key.sum())}")

key_colours = ListedColormap(["#2ca02c", "#9467bd"])  # the two policies
fig, axes = plt.subplots(1, 2, figsize=(9, 4))
for ax, picks, title in [(axes[0], chosen, "GPI under the current $w$"),
                         (axes[1], chosen_own_z, "each policy under its own $z_i$ (a bug)")]:
    image = plots.plot_state_values(ax, room.layout, room.states, picks, (), cmap=key_colours,
                                    vmin=-0.5, vmax=1.5, title=f"{title}\nno key held yet")
cbar = fig.colorbar(image, ax=axes, ticks=[0, 1], fraction=0.03)
cbar.ax.set_yticklabels([r"$\pi_{\mathrm{green}}$", r"$\pi_{\mathrm{purple}}$"])
plt.show()

# %% [markdown]
# Under $w$, a few cells with no key held are purple (the line above counts them): the cells beside the
# green key. There the greedy action steps onto the green key whichever policy backs it, and
# $\pi_{\text{purple}}$'s value backs it: after that step $\pi_{\text{purple}}$ still fetches the purple key,
# worth 1 more, while $\pi_{\text{green}}$ has nothing left to do. Purple there means the second key comes
# next, not that the first is skipped.

# %% [markdown]
# ## Summary
#
# *About 1 minute.*
#
# * When the reward is linear in features, $r = \phi^\top w$, every policy's value splits into a
#   task-free part and the task: $Q^\pi(s, a) = \psi^\pi(s, a)^\top w$, with
#   $\psi^\pi(s, a) = \mathbb{E}_\pi\big[\sum_t \gamma^t \phi_t\big]$, learnt by TD like a value
#   (the printed errors compare it with policy evaluation).
# * One $\psi$ serves any $w$: a new task costs a dot product, not new learning.
# * GPI, $Q_{\mathrm{GPI}}(s, a) = \max_i \psi_i(s, a)^\top w$, scores every policy under the task at hand
#   and is at least as good as each; scoring each under its own $z_i$ instead is a bug with a measurable
#   cost (the start values above).
#
# **Next.** Here we chose $\phi$ and computed $\psi$ exactly. Notebook 02 builds VISR, which *learns*
# $\phi$ without reward and trains $\psi$ for a whole sphere of tasks $w$; notebook 02a finds a task's $w$
# by least squares.
