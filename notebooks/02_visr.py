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
# * read zero-shot and fine-tuned success and coverage numbers, and say why VISR fails where it
#   fails;
# * paint a reward map of your own on a maze and watch the pretrained agent try it zero-shot.

# %%
# On Colab, install aps-teach first (elsewhere: `pip install -e .` once, from the repository).
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "aps-teach @ git+https://github.com/aps-teach/aps-teach"], check=True)

# %% tags=["parameters"]
import os

from aps_teach import experiments

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
pretrain_steps = 1_600 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps
identify_steps = 800 if FAST else experiments.DEFAULT_IDENTIFY_STEPS  # env steps of (phi, r) pairs
finetune_steps = 800 if FAST else experiments.DEFAULT_FINETUNE_STEPS  # env steps on the task reward
eval_episodes = 8 if FAST else experiments.DEFAULT_EVAL_EPISODES  # greedy episodes per evaluation
more_seeds = (1,) if FAST else (1, 2)  # extra full runs on the easy level
num_skills = 6  # task vectors w drawn as paths
maze = "open10"  # the maze for painting tasks: "open10" or "fourroom"
seed = 0

# %%
import inspect
import time

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

config = TrainConfig(progress=not FAST)  # the library's defaults: the budgets of the Figure 4 runs
levels = list(gridworld.LEVELS)
VISR = plots.METHOD_COLOURS["visr"]
started = time.perf_counter()
d = config.agent.feature_dim
print(f"feature dimension d = {d} | {config.num_envs} envs in lockstep | w redrawn every "
      f"{config.task_resample_every} steps | epsilon {config.epsilon_start:g} -> {config.epsilon_end:g} over "
      f"{config.epsilon_decay_steps:,} steps (pretraining), over {config.finetune_epsilon_decay_steps:,} "
      f"(fine-tuning) | GPI over w + {config.agent.gpi_samples} fresh skills | episodes of at most "
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
# built reward-free: the level's +1 and +10 never reach the learner. We keep the set of
# (position, keys held) states it visits, for later.

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
    print(f"{level}: random policy, {random.episodes} episodes: states visited "
          f"{random.distinct_states}/{random.reachable_states}")
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
# Read the printed counts. On the easy level VISR and the random policy both see every state. On
# the hard level VISR, with all its learning, visits fewer states than uniformly random actions do
# in the same number of steps: the states it misses are mapped further down.
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
    for label, w in zip(labels, skills, strict=True):
        rollout = greedy_rollout(runs[level]["learner"], level, w, seed=seed)
        paths.append(rollout.positions)
        print(f"{level} {label}: {len(set(rollout.positions))} distinct cells, ends at "
              f"{rollout.positions[-1]}, keys held {rollout.keys_held[-1] or 'none'}, through the green "
              f"passageway {any(col > passage[1] for _, col in rollout.positions)}")
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
# single vector, so every state would look the same to every skill.

# %%
for level in levels:
    learner, layout = runs[level]["learner"], gridworld.resolve_level(level)
    print(f"{level}: spread of phi over the cells {transfer.feature_spread(learner, layout):.3f}")
easy = gridworld.resolve_level("easy")
cells = {held: plots.cell_states(easy, held) for held in plots.held_key_sets(easy)}
fig, axes = plt.subplots(2, 4, figsize=(15, 7.6))
for column, label, w in zip(axes.T, labels, skills, strict=False):
    maps = {held: plots.reward_maps(runs["easy"]["learner"], c, None, w)["exploit"]
            for held, c in cells.items()}
    rollout = greedy_rollout(runs["easy"]["learner"], "easy", w, seed=seed)
    earned = [maps[held][position] for position, held in zip(rollout.positions[1:], rollout.keys_held[1:],
                                                              strict=True)]
    every = np.concatenate([m[np.isfinite(m)] for m in maps.values()])
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

# %% [markdown]
# Compare the means on each line: a skill that does its job earns more along its path than the
# average state, and so it does here. φ has not collapsed on the key levels (the spreads printed
# above are far from 0): different cells get different features, and different skills prefer
# different cells. Now look at *where* the skills go, in the printed lines and the paths: short
# trips on the start side of the green passageway. Distinguishable is not the same as
# far-reaching. Nothing in φ(s')ᵀw pays for reaching new states; a skill that parks in one corner
# of the start room is perfectly identifiable.
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
    raise NotImplementedError("your answer here")


if exercises.SOLUTIONS:  # APS_TEACH_SOLUTIONS=1 fills in the library's answer
    my_infer_task = exercises.solution("infer_task")
exercises.check_infer_task(my_infer_task)

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
identified = {}
for level in levels:
    learner = runs[level]["learner"]
    features, rewards_seen = task_data(learner, level, identify_steps, seed, config)
    values, counts = torch.unique(rewards_seen, return_counts=True)
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
    print(f"  eigenvalues of Phi^T Phi / N: {', '.join(f'{x:.3f}' for x in moments.tolist())}")
    print(f"  R^2 of the fit {transfer.fit_task(features, rewards_seen, seed).r2:.3f} | "
          f"cos(oracle, infer_task) = {float(w @ oracle):.3f} | "
          f"cos(oracle, reversed) = {float(reversed_task(features, rewards_seen).float() @ oracle):.3f} | "
          f"cos(oracle, my_infer_task) = {float(my_infer_task(features, rewards_seen) @ oracle):.3f}")

# %% [markdown]
# Read the reward counts first: the identification data hold only what the pretrained skills
# reach, so the +10 can appear only if some skill walks to the target; the counts show whether one
# did. The eigenvalues of ΦᵀΦ / N are far from equal, and the reversed regression lands much
# further from the oracle's direction than `infer_task` does, as on the correlated synthetic
# features. The R² shows how little of a sparse reward a linear function of φ explains.
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
# ## Fine-tuning
#
# Zero-shot fails on both levels, with the identified w and with the oracle's: the rates above are
# 0, and the greedy paths stay in the start room. The oracle's w has the +10 in its data, so the
# regression is not what is missing; no skill, alone or combined by GPI, goes to the target.
#
# ## Fine-tuning
#
# When zero-shot is not enough, train on: `train.finetune` keeps φ (frozen) and the identified w,
# and trains ψ(·, ·, w) on the task reward for `finetune_steps` env steps, ε decaying from 1 again.
# The DQN baseline of `experiments.run_gridworld` gets this same budget for its whole training.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for level, style in zip(levels, ("-", "--"), strict=True):
    learner = runs[level]["learner"]
    tick = time.perf_counter()
    log = finetune(learner, level, identified[level], finetune_steps, seed, config)
    result = evaluate(learner, level, identified[level], eval_episodes, seed, config)
    runs[level]["fine-tuned"] = result
    print(f"{level}: fine-tuned for {finetune_steps:,} env steps in {time.perf_counter() - tick:.0f} s | "
          f"success {result.success_rate:.2f}, mean return {result.mean_return:.2f} | "
          f"episodes that reached the target during fine-tuning: "
          f"{sum(row['episodes_succeeded'] for row in log.metrics)}")
    ax.plot([row["env_steps"] for row in log.metrics], [row["episodes_succeeded"] for row in log.metrics],
            style, color=VISR, label=f"visr, {level}")
ax.set_xlabel("fine-tuning env steps")
ax.set_ylabel("episodes reaching the target per round")
ax.set_title("fine-tuning on the task reward")
ax.legend(frameon=False)
plt.show()

# %% [markdown]
# Fine-tuning can only learn from rewards it meets. Compare the two levels' counts of episodes
# that reached the target *during* fine-tuning with their final success: where ε-greedy
# exploration from the start room meets the +10 often enough, the policy learns it; where it
# never meets it, there is nothing to learn.
#
# One seed says little when a run either finds the target or not. `experiments.run_gridworld`
# runs the same pipeline end to end (pretrain, identify, zero-shot, fine-tune, evaluate); here it
# is on more seeds of the easy level.

# %%
first, coverage = runs["easy"], runs["easy"]["log"].coverage["state_coverage"]
finetuned = [first["fine-tuned"].success_rate]
print(f"seed {seed}: zero-shot success {first['zero-shot, identified w'].success_rate:.2f}, fine-tuned "
      f"success {first['fine-tuned'].success_rate:.2f}, coverage {coverage:.2f} (above)")
for other in more_seeds:
    result = experiments.run_gridworld("visr", "easy", seed=other, pretrain_steps=pretrain_steps,
                                       finetune_steps=finetune_steps, identify_steps=identify_steps,
                                       eval_episodes=eval_episodes, config=config)
    print(f"seed {other}: zero-shot success {result.zero_shot_success:.2f}, fine-tuned success "
          f"{result.finetuned_success:.2f}, coverage {result.state_coverage:.2f} "
          f"({result.wall_seconds:.0f} s)")
    finetuned.append(result.finetuned_success)
print(f"easy level: fine-tuned success >= 0.5 on {sum(x >= 0.5 for x in finetuned)} of {len(finetuned)} "
      "seeds")

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
for ax, held in zip(axes, held_sets, strict=True):
    in_set = [s for s, state in zip(seen, states, strict=True) if state[1] == held]
    image = plots.plot_state_values(ax, hard, states, seen, held, cmap=colours, vmin=-0.5, vmax=1.5,
                                    title=f"keys held: {', '.join(held) or 'none'}\n"
                                          f"visited {int(sum(in_set))} of {len(in_set)} states")
    print(f"keys held {held or 'none'}: visited {int(sum(in_set))} of {len(in_set)} reachable states")
bar = fig.colorbar(image, ax=axes, ticks=[0, 1], fraction=0.02)
bar.ax.set_yticklabels(["never visited", "visited"])
fig.suptitle(f"VISR's pretraining on the hard level ({pretrain_steps:,} env steps): which states it reached")
plt.show()

# %% [markdown]
# The orange cells are the states pretraining never reached, and the counts say in which phase of
# the level they are: the holes are mostly in the last panel, after both keys, when the room with
# the target is finally open. Those are exactly the states a task on this level pays for.

# %% [markdown]
# ## Any task on any map: paint one
#
# The key levels give VISR one task each. On an open maze we can give it any: a reward map pays
# R[cell] at every step for the cell the agent is on, and episodes run to the step limit. First
# pretrain VISR there, reward-free, exactly as before.

# %%
maze_layout = transfer.maze_layout(maze)
tick = time.perf_counter()
maze_learner, maze_log = pretrain("visr", transfer.maze_env(maze, np.zeros(maze_layout.shape),
                                                            gridworld.MAX_EPISODE_STEPS),
                                  pretrain_steps, seed, config)
print(f"{maze}: pretrained in {time.perf_counter() - tick:.0f} s | states visited "
      f"{maze_log.coverage['states_visited']}/{maze_log.coverage['states_reachable']} | spread of phi over "
      f"the cells {transfer.feature_spread(maze_learner, maze_layout):.4f}")

# %% [markdown]
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
print(f"w = ({', '.join(f'{x:.3f}' for x in shot.fit.w.tolist())}) | reward seen during identification: "
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
row = transfer.transfer_task(maze_learner, maze, shot.reward_map, seed, references=references,
                             identify_steps=identify_steps, eval_episodes=eval_episodes, config=config)
print(f"return {row['return']:.2f} | optimal {row['optimal_return']:.2f} | random "
      f"{row['random_return']:.2f} | normalised score {row['normalised_score']:.3f} | R^2 {row['r2']:.3f}")

# %% [markdown]
# Compare the spread of φ on the maze, printed after its pretraining, with the spreads on the key
# levels: on this maze φ has nearly collapsed to one vector. Every cell then has almost the same
# features, so every skill's reward φ(s')ᵀw is almost the same everywhere, there is nothing to
# tell the skills apart, and ψ learns one behaviour for all of them: count the greedy actions
# printed above. It is a self-consistent state: a constant φ makes the vMF loss and the gradient
# that would spread φ out both vanish on average over w. Least squares can still fit part of the
# painted reward in sample (the R²), by putting large coefficients on tiny differences in φ; but
# a policy that cannot steer by φ cannot follow the w it gets, and the normalised score says how
# that compares with random actions (0).
#
# ## What this run found

# %%
for level in levels:
    run, random = runs[level], baseline[level]
    print(f"{level:>5}: states visited in pretraining {run['log'].coverage['states_visited']}/"
          f"{random.reachable_states} (random policy, same steps: {random.distinct_states}) | zero-shot "
          f"success {run['zero-shot, identified w'].success_rate:.2f} (oracle w "
          f"{run['zero-shot, oracle w'].success_rate:.2f}) | fine-tuned {run['fine-tuned'].success_rate:.2f}")
print(f"easy, fine-tuned success per seed {[round(x, 2) for x in finetuned]}")
print(f"{maze}: spread of phi {transfer.feature_spread(maze_learner, maze_layout):.4f} (easy "
      f"{transfer.feature_spread(runs['easy']['learner'], easy):.3f}) | painted task: normalised score "
      f"{row['normalised_score']:.3f}")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Summary
#
# * VISR's φ is a von Mises-Fisher discriminator: log q(w | s') = κ φ(s')ᵀw + constant, so one
#   dot product is both its training signal (the vMF loss) and the skills' reward.
# * A skill w is the greedy policy on ψ(s, a, w)ᵀw. Skills become distinguishable, but nothing in
#   their reward asks them to go anywhere new: on the hard level VISR's pretraining covered fewer
#   states than random actions, and missed most of what lies beyond the second key.
# * A task is a direction w found by least squares, rewards regressed *on* the features. The
#   reversed regression bends w by ΦᵀΦ and recovers the wrong direction on correlated features,
#   learned φ included.
# * Zero-shot, VISR never reached a target here, with the identified w or the oracle's: the
#   behaviour is missing, not the regression. Fine-tuning succeeds only where its own ε-greedy
#   exploration meets the +10, which on the easy level depends on the seed and on the hard level
#   did not happen.
# * On an open maze φ can collapse, and then no painted task can be followed.
#
# **Next.** Notebook 03 builds APT, which rewards reaching states unlike the ones already seen (a
# k-nearest-neighbour entropy estimate), and compares its coverage with VISR's; notebook 04
# combines both rewards into APS. The library pieces used here: `aps_teach.rewards`
# (`vmf_reward`, `vmf_loss`), `aps_teach.tasks` (`infer_task`, `sample_tasks`), `aps_teach.train`
# (`pretrain`, `task_data`, `evaluate`, `finetune`), `aps_teach.rollouts`, `aps_teach.transfer`
# and `aps_teach.widgets.zero_shot_painter`.
#
# **Try it.** Paint a task in a different corner, or a stripe across the maze, and see whether R²
# and the score move; set `maze = "fourroom"` in the parameters cell; double `pretrain_steps` and
# watch the coverage maps of the hard level.

