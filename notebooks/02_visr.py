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
# # 02 · VISR: skills from a discriminator, tasks by least squares
#
# Notebook 01 computed successor features exactly, for features we chose. VISR (Hansen et al.,
# 2020) *learns* the features φ(s) without any reward, together with a family of policies, one per
# task vector w on the unit sphere, and then solves a new task in three moves: collect some
# rewards, fit r ≈ φ(s')ᵀw by least squares, act greedily on ψ(s, a, w)ᵀw. This notebook builds
# and runs it on the two key-passageway levels of notebook 00.
#
# After it you will be able to:
#
# * explain why VISR's intrinsic reward is φ(s')ᵀw: the log-likelihood of a von Mises-Fisher
#   discriminator, and check that numerically;
# * pretrain VISR reward-free with the library and draw what each skill w does on the grid;
# * write the task-inference regression yourself, and recognise the reversed regression, a bug
#   that recovers the wrong w;
# * read zero-shot and fine-tuned success and coverage numbers, and say why VISR succeeds zero-shot
#   where it does (and what it needs for that) and fails where it fails;
# * see why the networks read centred observations: on an open maze, raw boards kill φ's units;
# * paint a reward map of your own on a maze and watch the pretrained agent try it zero-shot.

# %%
# On Colab, this installs the course's library at the release these notebooks were run with.
# Elsewhere it does nothing: install once from the repository instead (pip install -e .).
import sys

if "google.colab" in sys.modules:
    from importlib.metadata import distributions

    from IPython import get_ipython

    def versions():
        return {d.metadata["Name"].lower(): d.version for d in distributions()}

    before = versions()
    requirement = "aps-teach @ git+https://github.com/aps-teach/aps-teach@v0.1.0"
    get_ipython().run_line_magic("pip", f'install "{requirement}"')  # %pip install, errors shown
    upgraded = [f"{name} {before[name]} -> {new}" for name, new in versions().items()
                if before.get(name, new) != new]
    if upgraded:
        print("Upgraded preinstalled packages:", ", ".join(upgraded))
        print("Restart the runtime now (Runtime > Restart session), then run the notebook from the top.")

# %% tags=["parameters"]
import os

from aps_teach import experiments

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
# fast mode: one round of the 32 envs x 100 steps per phase (budgets are rounded up to whole rounds)
pretrain_steps = 3_200 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps
identify_steps = 3_200 if FAST else experiments.DEFAULT_IDENTIFY_STEPS  # env steps of (phi, r) pairs
finetune_steps = 3_200 if FAST else experiments.DEFAULT_FINETUNE_STEPS  # env steps on the task reward
eval_episodes = 8 if FAST else experiments.DEFAULT_EVAL_EPISODES  # greedy episodes per evaluation
more_seeds = (1,) if FAST else (1, 2)  # extra full runs on the easy level
num_skills = 6  # task vectors w drawn as paths
maze = "open10"  # the maze for painting tasks: "open10" or "fourroom"
seed = 0

# %%
import inspect
import time
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import ListedColormap
from scipy.stats import vonmises_fisher

import gridworld
from aps_teach import exercises, plots, rewards, tasks, transfer
from aps_teach.random_policy import random_policy_stats
from aps_teach.rollouts import greedy_rollout, oracle_task
from aps_teach.train import TrainConfig, evaluate, finetune, pretrain, task_data
from aps_teach.widgets import zero_shot_painter

config = TrainConfig(progress=not FAST)  # the library's defaults
levels = list(gridworld.LEVELS)
VISR = plots.METHOD_COLOURS["visr"]
started = time.perf_counter()
d = config.agent.feature_dim
print(f"feature dimension d = {d} | {config.num_envs} envs in lockstep | w redrawn every "
      f"{config.task_resample_every} steps | epsilon {config.epsilon_start:g} -> {config.epsilon_end:g} "
      f"over the first {config.epsilon_decay_fraction:.0%} of pretraining; fine-tuning starts at "
      f"{config.finetune_epsilon_start:g} | target absorbing while pretraining: {config.absorbing_target} | "
      f"GPI over w + {config.agent.gpi_samples} fresh skills | episodes of at most "
      f"{gridworld.MAX_EPISODE_STEPS} steps")

# %% [markdown]
# ## The discriminator and its reward
#
# VISR has two networks:
#
# * φ(s) maps a state onto the unit sphere in R^d (d is printed above), an MLP whose output is
#   divided by its norm;
# * ψ(s, a, w), the successor features of "skill w", the policy that acts greedily on
#   Q(s, a, w) = ψ(s, a, w)ᵀw.
#
# While pretraining, each copy of the environment draws a fresh w uniformly on the sphere every few
# steps and follows skill w. Good skills are *distinguishable*: from the state s' a skill reaches,
# one should be able to tell which w produced it. VISR asks a discriminator to do that, a von
# Mises-Fisher distribution on the sphere centred on φ(s'):
#
# q(w | s') = C_d(κ) exp(κ φ(s')ᵀw).
#
# Its normaliser C_d(κ) depends on the concentration κ and the dimension only, not on φ(s')
# (that is why φ is normalised), so log q(w | s') = κ φ(s')ᵀw + constant. One quantity does both
# jobs, with κ = 1:
#
# * **the discriminator's loss**, −φ(s')ᵀw averaged over replayed (s', w) pairs, trains φ to point
#   at the w that produced s';
# * **the intrinsic reward** φ(s')ᵀw pays skill w for reaching states the discriminator
#   attributes to w.
#
# Together they push up a variational lower bound on the mutual information between skills and
# states, I(s'; w) = H(w) − H(w | s') ≥ H(w) + E[log q(w | s')]. In the library:

# %%
print(inspect.getsource(rewards.vmf_reward))
print(inspect.getsource(rewards.vmf_loss))

# %% [markdown]
# Check the "up to a constant" with SciPy's own von Mises-Fisher density: log q(w | s') − κ φ(s')ᵀw
# should be one number, whatever the centre φ(s') and the point w.

# %%
def unit_rows(n, generator):
    """n directions uniform on the sphere, renormalised in float64 (SciPy checks the norm closely)."""
    x = tasks.sample_tasks(n, d, generator).double()
    return x / x.norm(dim=1, keepdim=True)


generator = torch.Generator().manual_seed(seed)
centres, points = unit_rows(4, generator), unit_rows(50, generator)
for kappa in (1.0, 5.0):
    gaps = np.array([vonmises_fisher(mu.numpy(), kappa).logpdf(points.numpy())
                     - kappa * rewards.vmf_reward(points, mu).numpy() for mu in centres])
    print(f"kappa = {kappa}: log q(w|s') - kappa phi(s')^T w over 4 centres x 50 points: "
          f"{gaps.mean():.6f}, spread (max - min) {np.ptp(gaps):.1e}")

# %% [markdown]
# ## Pretraining on both levels, without reward
#
# `train.pretrain` runs the loop: a batch of environments in lockstep, ε-greedy actions on
# ψ(s, a, w)ᵀw (ε decaying as printed at the top), replayed n-step windows, a TD update of ψ on
# the reward φ(s')ᵀw and the vMF loss on φ, both in one gradient step. The environment batch is
# built reward-free: the level's +1 and +10 never reach the learner.
#
# One thing differs from the task while pretraining: the target is *absorbing*
# (`TrainConfig.absorbing_target`). Reaching it ends nothing; the agent stays on it until the round
# ends. In the task, +10 ends the episode, and if it did so here too, a skill that found the target
# would be sent back to a start cell at once: "go to the target and stay" could not be a skill, and
# no task vector could ask for it later. We keep the set of (position, keys held) states pretraining
# visits, for later.

# %%
runs = {}
for level in levels:
    visited = set()
    tick = time.perf_counter()
    learner, log = pretrain("visr", level, pretrain_steps, seed, config,
                            on_round=lambda end, visited=visited: visited.update(end.envs.visited))
    runs[level] = {"learner": learner, "log": log, "visited": visited}
    last, cover = log.metrics[-1], log.coverage
    print(f"{level}: {pretrain_steps:,} env steps in {time.perf_counter() - tick:.0f} s | "
          f"last round: vMF loss {last.get('loss_vmf', float('nan')):.3f} | states visited "
          f"{cover['states_visited']}/{cover['states_reachable']} | keys picked up {cover['keys_picked']} | "
          f"target reached {cover['target_reached']}")

# %% [markdown]
# The vMF loss is −φ(s')ᵀw: 0 when φ(s') is unrelated to w, −1 when it points exactly at w. How
# far it falls is how distinguishable the skills became. Beside it, coverage: the distinct states
# seen so far, against what a uniformly random policy visits in as many steps.

# %%
baseline = {level: random_policy_stats(level, pretrain_steps // gridworld.MAX_EPISODE_STEPS, seed=seed,
                                       progress=False) for level in levels}
fig, (loss_ax, cover_ax) = plt.subplots(1, 2, figsize=(11, 3.8))
for level, style in zip(levels, ("-", "--"), strict=True):
    rows = [row for row in runs[level]["log"].metrics if "loss_vmf" in row]
    loss_ax.plot([row["env_steps"] for row in rows], [row["loss_vmf"] for row in rows], style, color=VISR,
                 label=f"visr, {level}")
    metrics = runs[level]["log"].metrics
    cover_ax.plot([row["env_steps"] for row in metrics], [row["state_coverage"] for row in metrics], style,
                  color=VISR, label=f"visr, {level}")
    random = baseline[level]
    cover_ax.axhline(random.distinct_states / random.reachable_states, linestyle=style, color="grey",
                     label=f"random policy, {level} ({random.episodes} episodes)")
    visr_states = runs[level]["log"].coverage["states_visited"]
    compared = "more states than" if visr_states > random.distinct_states else \
        "as many states as" if visr_states == random.distinct_states else "fewer states than"
    print(f"{level}: random policy, {random.episodes} episodes: states visited "
          f"{random.distinct_states}/{random.reachable_states} | VISR visited {visr_states}: {compared} the "
          "random policy")
loss_ax.set_xlabel("env steps")
loss_ax.set_ylabel("vMF loss  -phi(s')^T w")
loss_ax.set_title("discriminator loss per round")
loss_ax.legend(frameon=False)
cover_ax.set_xlabel("env steps")
cover_ax.set_ylabel("fraction of reachable states visited")
cover_ax.set_title("coverage during pretraining")
cover_ax.set_ylim(0, 1.05)
cover_ax.legend(frameon=False, fontsize="small", loc="lower right")
fig.tight_layout()

# %% [markdown]
# The last lines compare the two on each level. Nothing in VISR's reward asks for new states, so
# whether its skills spread as far as random actions do is an empirical question; where pretraining
# missed states, they are mapped further down.
#
# ## What a skill does
#
# A skill is a direction w. Draw a few uniformly on the sphere and follow each greedily (ε = 0,
# skill w alone, no GPI) from the same start cell, on both levels (`rollouts.greedy_rollout`).

# %%
skills = tasks.sample_tasks(num_skills, d, torch.Generator().manual_seed(seed))
labels = [f"skill {i}" for i in range(num_skills)]
fig, axes = plt.subplots(1, 2, figsize=(10, 5))
for ax, level in zip(axes, levels, strict=True):
    paths, layout = [], gridworld.resolve_level(level)
    passage = next((r, c) for r, row in enumerate(layout.art) for c, char in enumerate(row) if char == "A")
    through = reached = 0
    for label, w in zip(labels, skills, strict=True):
        rollout = greedy_rollout(runs[level]["learner"], level, w, seed=seed)
        paths.append(rollout.positions)
        crossed = any(col > passage[1] for _, col in rollout.positions)
        through, reached = through + crossed, reached + rollout.success
        print(f"{level} {label}: {len(set(rollout.positions))} distinct cells, ends at "
              f"{rollout.positions[-1]}, keys held {rollout.keys_held[-1] or 'none'}, through the green "
              f"passageway {crossed}, target reached {rollout.success}")
    print(f"{level}: {through} of {num_skills} skills go through the green passageway, {reached} reach the "
          "target")
    plots.plot_paths(ax, gridworld.resolve_level(level), paths, labels,
                     title=f"{level}: {num_skills} skills, one start cell")
axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
fig.tight_layout()

# %% [markdown]
# Do skills go where their own reward φ(s')ᵀw is high? The maps show that reward for reaching each
# cell under four of the skills, before the green key is picked up (top, with each skill's path)
# and after (bottom: the far room only exists for the agent once the passageway is open). `plots.reward_maps`
# computes them from the learned φ; `transfer.feature_spread` measures how different φ is across
# the cells (the mean over dimensions of its standard deviation): 0 would mean φ collapsed to a
# single vector, so every state would look the same to every skill. `transfer.dead_units` counts
# φ's hidden ReLU units that output 0 in every state of the level: a dead unit no longer responds to
# anything.

# %%
for level in levels:
    learner, layout = runs[level]["learner"], gridworld.resolve_level(level)
    print(f"{level}: spread of phi over the cells {transfer.feature_spread(learner, layout):.3f} | hidden "
          f"units of phi dead on every state: {transfer.dead_units(learner, level)} of {config.agent.hidden}")
easy = gridworld.resolve_level("easy")
cells = {held: plots.cell_states(easy, held) for held in plots.held_key_sets(easy)}
fig, axes = plt.subplots(2, 4, figsize=(15, 7.6))
earns_more = 0
for column, label, w in zip(axes.T, labels, skills, strict=False):
    maps = {held: plots.reward_maps(runs["easy"]["learner"], c, None, w)["exploit"]
            for held, c in cells.items()}
    rollout = greedy_rollout(runs["easy"]["learner"], "easy", w, seed=seed)
    earned = [maps[held][position] for position, held in zip(rollout.positions[1:], rollout.keys_held[1:],
                                                              strict=True)]
    every = np.concatenate([m[np.isfinite(m)] for m in maps.values()])
    earns_more += bool(np.nanmean(earned) > every.mean())
    print(f"easy {label}: mean phi(s')^T w along its path {np.nanmean(earned):+.3f} | over all states "
          f"{every.mean():+.3f} | best state {every.max():+.3f}")
    scale = {"vmin": every.min(), "vmax": every.max(), "cmap": "viridis"}
    for ax, held in zip(column, cells, strict=True):
        image = plots.plot_cell_map(ax, easy, maps[held], f"{label}: phi(s')^T w\n(keys held: "
                                    f"{', '.join(held) or 'none'})", **scale)
        fig.colorbar(image, ax=ax, fraction=0.046, label="reward")
    plots.draw_path(column[0], rollout.positions, plots.PATH_COLOURS[labels.index(label)], label)
    column[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), frameon=False)
fig.suptitle("the intrinsic reward of four skills on the easy level, and where each skill goes")
fig.tight_layout()
print(f"skills that earn more along their path than over all states: {earns_more} of {axes.shape[1]}")

# %% [markdown]
# Compare the means on each line: a skill that does its job earns more along its path than the
# average state (the last line counts how many of the four do). A spread of φ well above 0 and few
# dead units (both printed above) mean that different cells get different features, so different
# skills can prefer different cells. Now look at *where* the skills go, in the printed lines and the
# paths. Distinguishable is not the same as far-reaching: nothing in φ(s')ᵀw pays for reaching new
# states, and a skill that parks in one corner of the start room is perfectly identifiable. A skill
# that parks on the target is identifiable too, now that pretraining lets it stay there.
#
# ## Task inference by least squares
#
# A new task arrives as a reward, here the level's +1 per key and +10 at the target. If the reward
# were linear in the features, r(s') = φ(s')ᵀw, then Q(s, a, w) = ψ(s, a, w)ᵀw would be that task's
# value. So collect N transitions (the pretrained skills with random w, ε = 0.05), stack the rows
# φ(s') into Φ (N × d) and the rewards into r, and solve
#
# w* = argmin_w ‖Φw − r‖²,  then normalise w*/‖w*‖
#
# (the length of w does not change a greedy policy, and skills were trained on unit w).
#
# ### Exercise: write `infer_task`
#
# Write `my_infer_task(features, rewards)`: features (N, d), rewards (N,), both torch tensors;
# return the unit vector w (d,). `torch.linalg.lstsq` solves least squares. The checker compares
# your function with the library's on random inputs, some with correlated features.

# %%
def my_infer_task(features, rewards):
    raise NotImplementedError  # your code


my_infer_task = exercises.check_infer_task(my_infer_task)

# %% [markdown]
# The library's version (compare it with yours):

# %%
print(inspect.getsource(tasks.infer_task))

# %% [markdown]
# ### The reversed regression
#
# Public code has solved this regression the other way round, `lstsq(r, Φ)`: rewards as the
# design matrix, the features as the targets. That minimises ‖r bᵀ − Φ‖ over b, whose solution is
# b = Φᵀr / rᵀr. With r = Φw + noise, Φᵀr ≈ (ΦᵀΦ) w: the true w bent by the features' second
# moment matrix ΦᵀΦ. Only when ΦᵀΦ is a multiple of the identity (uncorrelated features of equal
# scale) is that the right direction. A test on synthetic data with a known w shows it:

# %%
def reversed_task(features, rewards):
    """The bug: regress the features on the rewards, lstsq(r, Phi), and normalise."""
    b = torch.linalg.lstsq(rewards.double()[:, None], features.double()).solution[0]
    return b / b.norm()


generator = torch.Generator().manual_seed(seed)
w_true = tasks.sample_tasks(1, d, generator)[0].double()
mixing = torch.eye(d, dtype=torch.float64) + 0.8 * torch.ones(d, d, dtype=torch.float64)
raw = torch.randn(2000, d, generator=generator, dtype=torch.float64)
for name, features in {"uncorrelated": raw, "correlated": raw @ mixing}.items():
    noisy = features @ w_true + 0.1 * torch.randn(2000, generator=generator, dtype=torch.float64)
    right, wrong = tasks.infer_task(features, noisy), reversed_task(features, noisy)
    bent = features.T @ features @ w_true
    print(f"{name:>12} features: cos(w_true, infer_task) = {float(right @ w_true):.4f} | "
          f"cos(w_true, reversed) = {float(wrong @ w_true):.4f} | "
          f"cos(reversed, Phi^T Phi w_true) = {float(wrong @ bent / bent.norm()):.4f}")

# %% [markdown]
# Now the real thing. `train.task_data` rolls out the pretrained skills on the level, with its
# reward switched on, and returns (Φ, r). As a reference we also ask what least squares would find
# with *perfect* data: `rollouts.oracle_task` regresses over every transition of the level, each
# reachable state and action once, the +10 included. `transfer.fit_task` gives the fit's R², the
# fraction of the rewards' variance that φ(s')ᵀc explains.

# %%
identified, tens = {}, {}  # tens: +10 rewards in each level's identification data
for level in levels:
    learner = runs[level]["learner"]
    features, rewards_seen = task_data(learner, level, identify_steps, seed, config)
    values, counts = torch.unique(rewards_seen, return_counts=True)
    tens[level] = int((rewards_seen == 10).sum())
    print(f"{level}: {len(rewards_seen)} transitions, rewards seen "
          f"{dict(zip(values.tolist(), counts.tolist(), strict=True))}")
    oracle = oracle_task(learner, level)
    if not rewards_seen.any():
        print("  no reward at all in the identification data: nothing to regress, w drawn at random")
        identified[level] = transfer.fit_task(features, rewards_seen, seed).w
        continue
    w = tasks.infer_task(features, rewards_seen)
    identified[level] = w
    moments = torch.linalg.eigvalsh(features.T.double() @ features.double() / len(features))
    right, wrong = float(w @ oracle), float(reversed_task(features, rewards_seen).float() @ oracle)
    print(f"  eigenvalues of Phi^T Phi / N from {moments.min():.4f} to {moments.max():.4f} (ratio "
          f"{moments.max() / moments.min():,.0f})")
    print(f"  R^2 of the fit {transfer.fit_task(features, rewards_seen, seed).r2:.3f} | "
          f"cos(oracle, infer_task) = {right:.3f} | cos(oracle, reversed) = {wrong:.3f} | "
          f"cos(oracle, my_infer_task) = {float(my_infer_task(features, rewards_seen) @ oracle):.3f}")
    print(f"  the reversed regression lands further from the oracle's w than infer_task: {wrong < right}")

# %% [markdown]
# Read the reward counts first: the identification data hold only what the pretrained skills
# reach under random w, so the +10 can appear only if some skill walks to the target; the counts
# show whether one did. The eigenvalues of ΦᵀΦ / N are far from equal (their ratio is printed): these
# features are correlated, like the synthetic ones above, and the last line of each level says
# whether the reversed regression lands further from the oracle's direction than `infer_task`. The
# R² shows how much of a sparse reward a linear function of φ explains.
#
# ## Zero-shot
#
# With w in hand the agent acts at once, greedily, with GPI over w and a few fresh skills
# (`train.evaluate`). Both the identified w and the oracle's are tried: if the oracle's fails too,
# the fault is in the behaviour, not in the regression.

# %%
oracles = {level: oracle_task(runs[level]["learner"], level) for level in levels}
fig, axes = plt.subplots(1, 2, figsize=(10, 5))
for ax, level in zip(axes, levels, strict=True):
    learner, paths, names = runs[level]["learner"], [], []
    for name, w in (("identified w", identified[level]), ("oracle w", oracles[level])):
        result = evaluate(learner, level, w, eval_episodes, seed, config)
        runs[level][f"zero-shot, {name}"] = result
        print(f"{level}, {name}: success {result.success_rate:.2f}, mean return {result.mean_return:.2f} "
              f"({result.episodes} episodes)")
        paths.append(greedy_rollout(learner, level, w, seed=seed, gpi=True).positions)
        names.append(f"{name}, greedy GPI")
    plots.plot_paths(ax, gridworld.resolve_level(level), paths, names, title=f"{level}: zero-shot paths")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), frameon=False)
fig.tight_layout()

# %% [markdown]
# ### Where w points
#
# Skill w was pretrained to reach states s' with a large φ(s')ᵀw and, since the discount is close
# to 1, to stay on the best one it can reach. The task pays +10 at the target, so if the
# identification data saw the target, least squares turns w towards φ(target). Does the target
# then come out as skill w's best state? For each w the cell prints φ(target)ᵀw and how many of the
# level's other states score higher: 0 means the target is exactly where skill w was trained to go
# and stay, which the absorbing target of pretraining made possible.

# %%
for level in levels:
    compiled = gridworld.compile_level(level)
    phi_all = runs[level]["learner"].features(torch.from_numpy(compiled.observations.copy()))
    on_target = torch.from_numpy(compiled.terminal.copy())
    for name, w in (("identified w", identified[level]), ("oracle w", oracles[level])):
        score = phi_all @ w
        best = score[on_target].max()
        higher = int((score[~on_target] > best).sum())
        print(f"{level}, {name}: phi(target)^T w = {float(best):+.3f} | other states scoring higher "
              f"{higher} of {int((~on_target).sum())} | zero-shot success "
              f"{runs[level][f'zero-shot, {name}'].success_rate:.2f}"
              + (f" | +10 rewards in its data: {tens[level]}" if name == "identified w" else ""))

# %% [markdown]
# Read each level's lines together. Where the target is w's best state and zero-shot succeeds, the
# identification found the task and a skill goes there. Where the identified w ranks the target
# well below the oracle's, the identification data are part of what is missing: count their +10
# rewards. Where even the oracle's w fails, whether it ranks the target first or not, the
# pretrained features or behaviour are missing too, and more identification data alone would not
# help: on the hard level a skill would have to pick up both keys on the way, and the map of
# unvisited states further down shows how much of the last room pretraining saw.
#
# ## Fine-tuning
#
# When zero-shot is not enough, train on: `train.finetune` keeps φ (frozen) and the identified w,
# and trains ψ(·, ·, w) on the task reward for `finetune_steps` env steps. ε starts at
# `finetune_epsilon_start` (printed at the top), well below pretraining's 1, and decays to ε_end:
# fine-tuning begins from the zero-shot policy instead of throwing it away, with enough noise for a
# policy that misses the target to stumble on it now and then. The DQN baseline of
# `experiments.run_gridworld` gets this same budget for its whole training, starting from ε = 1.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for level, style in zip(levels, ("-", "--"), strict=True):
    learner = runs[level]["learner"]
    tick = time.perf_counter()
    log = finetune(learner, level, identified[level], finetune_steps, seed, config)
    result = evaluate(learner, level, identified[level], eval_episodes, seed, config)
    runs[level]["fine-tuned"] = result
    per_round = [row["episodes_succeeded"] for row in log.metrics]
    before = runs[level]["zero-shot, identified w"].success_rate
    print(f"{level}: fine-tuned for {finetune_steps:,} env steps in {time.perf_counter() - tick:.0f} s | "
          f"success {result.success_rate:.2f} (zero-shot {before:.2f}), mean return "
          f"{result.mean_return:.2f} | episodes that reached the target during fine-tuning: {sum(per_round)} "
          f"(per round: first {per_round[0]}, fewest {min(per_round)}, last {per_round[-1]})")
    ax.plot([row["env_steps"] for row in log.metrics], [row["episodes_succeeded"] for row in log.metrics],
            style, color=VISR, label=f"visr, {level}")
ax.set_xlabel("fine-tuning env steps")
ax.set_ylabel("episodes reaching the target per round")
ax.set_title("fine-tuning on the task reward")
ax.legend(frameon=False)
plt.show()

# %% [markdown]
# Fine-tuning can only learn from rewards it meets. Compare the two levels' counts of episodes
# that reached the target *during* fine-tuning with their final success: where the zero-shot
# policy, with its ε-greedy noise, meets the +10 often enough, the policy learns it; where it never
# meets it, there is nothing to learn. Compare, too, each level's first and fewest successes per
# round: a dip in the middle is common. ψ was pretrained on intrinsic rewards paid at every step;
# under the sparse task reward those values deflate only slowly, and while they do the greedy
# policy can wander off the path it had.
#
# One seed says little when a run either finds the target or not. `experiments.run_gridworld`
# runs the same pipeline end to end (pretrain, identify, zero-shot, fine-tune, evaluate, with a few
# evaluations along fine-tuning in `result.adaptation`); here it is on more seeds of the easy level.

# %%
first, coverage = runs["easy"], runs["easy"]["log"].coverage["state_coverage"]
zero_shot = [first["zero-shot, identified w"].success_rate]
finetuned = [first["fine-tuned"].success_rate]
print(f"seed {seed}: zero-shot success {first['zero-shot, identified w'].success_rate:.2f}, fine-tuned "
      f"success {first['fine-tuned'].success_rate:.2f}, coverage {coverage:.2f} (above)")
for other in more_seeds:
    result = experiments.run_gridworld("visr", "easy", seed=other, pretrain_steps=pretrain_steps,
                                       finetune_steps=finetune_steps, identify_steps=identify_steps,
                                       eval_episodes=eval_episodes, config=config)
    curve = ", ".join(f"{p['success_rate']:.2f} at {p['finetune_steps']:,}" for p in result.adaptation)
    print(f"seed {other}: zero-shot success {result.zero_shot_success:.2f}, fine-tuned success "
          f"{result.finetuned_success:.2f}, coverage {result.state_coverage:.2f} "
          f"({result.wall_seconds:.0f} s) | success along fine-tuning: {curve} steps")
    zero_shot.append(result.zero_shot_success)
    finetuned.append(result.finetuned_success)
print(f"easy level, success >= 0.5 zero-shot on {sum(x >= 0.5 for x in zero_shot)} of {len(zero_shot)} "
      f"seeds, after fine-tuning on {sum(x >= 0.5 for x in finetuned)} of {len(finetuned)}")

# %% [markdown]
# ## Where VISR never went on the hard level
#
# The coverage numbers above count states; the maps show which ones. Each panel is one
# combination of keys held; a cell is coloured by whether pretraining ever visited it in that
# combination.

# %%
hard = gridworld.resolve_level("hard")
states = hard.reachable_states()
seen = [float(state in runs["hard"]["visited"]) for state in states]
held_sets = plots.held_key_sets(hard)
fig, axes = plt.subplots(1, len(held_sets), figsize=(4.2 * len(held_sets), 4.2))
colours = ListedColormap(["#fdae61", VISR])  # never visited, visited
missed = {}  # keys held -> reachable states pretraining never visited
for ax, held in zip(axes, held_sets, strict=True):
    in_set = [s for s, state in zip(seen, states, strict=True) if state[1] == held]
    image = plots.plot_state_values(ax, hard, states, seen, held, cmap=colours, vmin=-0.5, vmax=1.5,
                                    title=f"keys held: {', '.join(held) or 'none'}\n"
                                          f"visited {int(sum(in_set))} of {len(in_set)} states")
    print(f"keys held {held or 'none'}: visited {int(sum(in_set))} of {len(in_set)} reachable states")
    missed[held] = len(in_set) - int(sum(in_set))
bar = fig.colorbar(image, ax=axes, ticks=[0, 1], fraction=0.02)
bar.ax.set_yticklabels(["never visited", "visited"])
fig.suptitle(f"VISR's pretraining on the hard level ({pretrain_steps:,} env steps): which states it reached")
plt.show()
worst = max(missed, key=missed.get)
print("every reachable state visited" if not any(missed.values()) else
      f"most states missed with keys held: {', '.join(worst) or 'none'} ({missed[worst]} of "
      f"{sum(missed.values())} missed states)")

# %% [markdown]
# The orange cells are the states pretraining never reached, and the counts say in which phase of
# the level they are. Holes in the last panel, after both keys, when the room with the target is
# finally open, matter most: those are exactly the states a task on this level pays for, and the
# identification rollouts, run by the same skills, rarely get there either.

# %% [markdown]
# ## Any task on any map: paint one
#
# The key levels give VISR one task each. On an open maze we can give it any: a reward map pays
# R[cell] at every step for the cell the agent is on, and episodes run to the step limit. First
# pretrain VISR there, reward-free, exactly as before; then a second time with one switch turned
# off, `AgentConfig.normalise_observations`, so that the networks read the raw one-hot boards.
#
# Why the switch exists: about 100 of a board's 800 entries (walls, floor) are on in every state,
# and only a handful differ between states. Fed raw, the always-on entries make up most of every
# first-layer activation and Adam moves their weights together; a ReLU unit pushed below zero on one
# state tends to be below zero on all of them, and then it gets no gradient ever again. By default
# the networks read x = board − m instead, m the running mean of the observations trained on, and
# only the board entries that vary between the level's states (`aps_teach.inputs`): what reaches φ
# is what tells states apart.

# %%
maze_layout = transfer.maze_layout(maze)
maze_task_free = transfer.maze_env(maze, np.zeros(maze_layout.shape), gridworld.MAX_EPISODE_STEPS)
maze_learners, maze_dead, maze_spread = {}, {}, {}
for inputs, centred in (("centred inputs", True), ("raw boards", False)):
    variant = replace(config, agent=replace(config.agent, normalise_observations=centred))
    tick = time.perf_counter()
    maze_learners[inputs], maze_log = pretrain("visr", maze_task_free, pretrain_steps, seed, variant)
    maze_dead[inputs] = transfer.dead_units(maze_learners[inputs], maze)
    spread = transfer.feature_spread(maze_learners[inputs], maze_layout)
    print(f"{maze}, {inputs}: pretrained in {time.perf_counter() - tick:.0f} s | states visited "
          f"{maze_log.coverage['states_visited']}/{maze_log.coverage['states_reachable']} | spread of phi "
          f"over the cells {spread:.4f} | hidden units of phi dead on every state: {maze_dead[inputs]} of "
          f"{config.agent.hidden}")
    maze_spread[inputs] = spread
print(f"raw boards left more of phi's units dead than centred inputs: "
      f"{maze_dead['raw boards'] > maze_dead['centred inputs']}")
print(f"phi on raw boards collapsed to (nearly) one vector (spread under a tenth of the centred one's): "
      f"{maze_spread['raw boards'] < 0.1 * maze_spread['centred inputs']}")
maze_learner = maze_learners["centred inputs"]

# %% [markdown]
# Compare the two lines. A dead unit is capacity lost for good: it outputs 0 on every state, so it
# gets no gradient and never comes back. The spread says how much of φ is left. While the units
# still alive separate the cells, φ works on with fewer units; once they die too, φ is a constant:
# every skill's reward φ(s')ᵀw is the same everywhere, nothing tells the skills apart, and ψ learns
# one behaviour for all of them. That state is self-consistent, since a constant φ makes the vMF
# loss and the gradient that would spread φ out both vanish on average over w, and it is where an
# earlier version of this library, which fed raw boards, ended on this maze: 118-123 of φ's 128
# units dead (`aps_teach.inputs` records it). Below, the painted task is scored with both learners;
# the painter uses the one with centred inputs.
#
# Now paint. With a widget frontend (Jupyter, Colab) toggle cells in the grid (each gets the value
# in the "reward" box) and press **infer w and act**; elsewhere, and in the saved notebook, edit
# `painted_cells` and rerun the cell. Either way `widgets.zero_shot_painter` runs
# `transfer.zero_shot_on_reward_map`: identification data on the painted task, least squares for w
# and its R², then the value map and one greedy GPI episode, drawn side by side.

# %%
painted_cells = [((row, col), 1.0) for row in (1, 2, 3) for col in (8, 9, 10)]  # a corner, 3 x 3
painter = zero_shot_painter(maze_learner, maze, painted_cells, seed=seed, identify_steps=identify_steps,
                            config=config)
shot = painter.shot
print(f"w = ({', '.join(f'{x:.3f}' for x in shot.fit.w.tolist())})\nreward seen during identification: "
      f"{shot.fit.identified} | R^2 = {shot.fit.r2:.3f} | greedy GPI episode: return "
      f"{shot.rollout.total_reward:g}, {len(set(shot.rollout.positions))} distinct cells")
moves, counts = np.unique(shot.action[np.isfinite(shot.action)], return_counts=True)
print("greedy action of policy w, cells per action:",
      {gridworld.ACTIONS[int(move)]: int(count) for move, count in zip(moves, counts, strict=True)})

# %% [markdown]
# How good is that? `transfer.transfer_task` scores the same w over `eval_episodes` greedy GPI
# episodes from uniform start cells, against exact references computed by dynamic programming:
# the best possible expected return and a uniformly random policy's, so a normalised score of 0
# is random and 1 optimal.

# %%
references = transfer.task_references(maze_layout, shot.reward_map, gridworld.MAX_EPISODE_STEPS)
scores = {}
for inputs, maze_net in maze_learners.items():
    row = transfer.transfer_task(maze_net, maze, shot.reward_map, seed, references=references,
                                 identify_steps=identify_steps, eval_episodes=eval_episodes, config=config)
    scores[inputs] = row["normalised_score"]
    print(f"{inputs}: return {row['return']:.2f} | optimal {row['optimal_return']:.2f} | random "
          f"{row['random_return']:.2f} | normalised score {row['normalised_score']:.3f} | "
          f"R^2 {row['r2']:.3f}")

# %% [markdown]
# Read the score beside the R². R² says how much of the painted reward a linear function of φ
# explains on the identification data, where the skills went; the score says whether the policy of
# the fitted w, with GPI, then collects the reward from anywhere on the maze. The value map and the
# greedy actions printed above show how: a ψ that steers by φ sends different cells in different
# directions, towards the painted corner. Compare, too, the two learners' scores: what the units
# lost to raw boards cost on this task. One painted task is one sample: notebook 05 runs the
# transfer benchmark over many random tasks and seeds.
#
# ## What this run found

# %%
for level in levels:
    run, random = runs[level], baseline[level]
    print(f"{level:>5}: states visited in pretraining {run['log'].coverage['states_visited']}/"
          f"{random.reachable_states} (random policy, same steps: {random.distinct_states}) | zero-shot "
          f"success {run['zero-shot, identified w'].success_rate:.2f} (oracle w "
          f"{run['zero-shot, oracle w'].success_rate:.2f}) | fine-tuned {run['fine-tuned'].success_rate:.2f}")
print(f"easy, success per seed: zero-shot {[round(x, 2) for x in zero_shot]}, fine-tuned "
      f"{[round(x, 2) for x in finetuned]}")
print(f"{maze}: dead units of phi {maze_dead['centred inputs']} of {config.agent.hidden} with centred "
      f"inputs, {maze_dead['raw boards']} with raw boards | painted task: normalised score "
      f"{scores['centred inputs']:.3f} (raw boards {scores['raw boards']:.3f})")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Summary
#
# * VISR's φ is a von Mises-Fisher discriminator: log q(w | s') = κ φ(s')ᵀw + constant, so one
#   dot product is both its training signal (the vMF loss) and the skills' reward.
# * A skill w is the greedy policy on ψ(s, a, w)ᵀw. Skills become distinguishable, but nothing in
#   their reward asks them to go anywhere new: how far they spread, against a random walk, is
#   something to measure (the coverage lines and maps above).
# * A task is a direction w found by least squares, rewards regressed *on* the features. The
#   reversed regression bends w by ΦᵀΦ and recovers the wrong direction on correlated features;
#   the lines on real data say how far off it lands with the learned φ.
# * Zero-shot success needs three things: identification data that hold the reward, a w that makes
#   the rewarding state skill w's best, and a skill that goes there and stays. The absorbing target
#   of pretraining is what lets "go to the target and stay" be a skill at all; the "where w points"
#   lines say which of the three each level had in this run.
# * Fine-tuning starts from the zero-shot policy (ε well below 1) and learns only from rewards it
#   meets; its values, pretrained on dense intrinsic rewards, can take a while to settle on the
#   sparse task.
# * The networks read centred observations on the entries that vary. On raw one-hot boards most
#   of φ's units die, capacity lost for good; once all but a few are gone φ is a constant, and then
#   no painted task can be followed.
#
# **Next.** Notebook 03 builds APT, which rewards reaching states unlike the ones already seen (a
# k-nearest-neighbour entropy estimate), and compares its coverage with VISR's; notebook 04
# combines both rewards into APS. The library pieces used here: `aps_teach.rewards`
# (`vmf_reward`, `vmf_loss`), `aps_teach.tasks` (`infer_task`, `sample_tasks`), `aps_teach.train`
# (`pretrain`, `task_data`, `evaluate`, `finetune`), `aps_teach.rollouts`, `aps_teach.transfer`
# and `aps_teach.widgets.zero_shot_painter`.
#
# **Try it.** Paint a task in a different corner, or a stripe across the maze, and see whether R²
# and the score move; set `maze = "fourroom"` in the parameters cell; pretrain with
# `TrainConfig(absorbing_target=False)` and see what becomes of zero-shot success on the easy level;
# double `pretrain_steps` and watch the coverage maps of the hard level.
