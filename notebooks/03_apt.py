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
# # 03 · APT: exploring by maximising a particle estimate of entropy
#
# VISR (notebook 02) learns skills, but it explores only as far as its skills happen to take it.
# **APT** (Liu & Abbeel, 2021a) pays the agent for reaching states unlike the ones it has recently
# seen: the reward is how far the new state lies from its k nearest neighbours, measured in a learned
# representation. That reward comes from a nonparametric estimator of entropy, so we start with
# the estimator, on point clouds whose entropy we know exactly, and then put APT in the gridworlds
# beside VISR.
#
# By the end of this notebook you will be able to
#
# * estimate the entropy of a point cloud from nearest-neighbour distances (the Kozachenko–Leonenko
#   estimator) and say how its error depends on the sample size n, the neighbour count k and the
#   shape of the distribution;
# * derive APT's reward log(1 + mean kNN distance) as a per-particle surrogate of that estimator,
#   and say what it drops and why the dropped parts don't matter to an RL agent;
# * write the kNN particle reward yourself, and read the library's version with its decisions
#   (self-exclusion, exponent, normaliser);
# * pretrain APT and VISR on both levels with the same budget and seeds, and compare where they go
#   (state coverage, visitation and reward heatmaps) and how well they solve the task, zero-shot and
#   along fine-tuning.

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

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
# part 1: point clouds
sample_sizes = [100, 1000] if FAST else [50, 100, 200, 500, 1000, 2000]
neighbour_counts = [1, 3, 10]  # k
repeats = 3 if FAST else 30  # independent clouds per (distribution, n)
# part 2: the gridworlds (the library's default budgets in full mode, tiny ones in fast mode)
from aps_teach import experiments

levels = ["easy", "hard"]
seeds = [0] if FAST else [0, 1, 2]  # pretraining, coverage and zero-shot: every seed
finetune_seeds = {"easy": [0], "hard": []} if FAST else {"easy": [0, 1], "hard": []}  # the costly phase
pretrain_steps = 400 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps
finetune_steps = 200 if FAST else experiments.DEFAULT_FINETUNE_STEPS  # env steps on the task reward
identify_steps = 1_600 if FAST else experiments.DEFAULT_IDENTIFY_STEPS  # VISR's task identification
eval_episodes = 4 if FAST else experiments.DEFAULT_EVAL_EPISODES  # greedy episodes per evaluation
snapshot_every_rounds = 1 if FAST else 5  # a pretraining snapshot every this many rounds (envs x 100 steps)
seed = 0

# %%
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

import gridworld
from aps_teach import exercises, plots
from aps_teach.agents import AgentConfig, Learner, info_nce
from aps_teach.entropy import gaussian_entropy, knn_entropy, uniform_box_entropy
from aps_teach.experiments import adapt_and_score
from aps_teach.random_policy import random_policy_stats
from aps_teach.rewards import RunningMean, particle_entropy_reward
from aps_teach.snapshots import pretrain_with_snapshots
from aps_teach.train import TrainConfig, evaluate, identify_task
from aps_teach.widgets import reward_explorer

# %% [markdown]
# ## Part 1 · Entropy from nearest neighbours
#
# Take n samples x_1, …, x_n from an unknown density p on R^d, and let ε_i be the distance from
# x_i to its k-th nearest *other* sample. The ball of radius ε_i around x_i holds about k of the
# other samples, so its probability mass p(x_i) V_d ε_i^d (V_d the volume of the unit ball) is
# about k / n. Solving for −log p(x_i) and averaging over the samples estimates the entropy
# H = E[−log p(x)]:
#
# H ≈ log n − log k + log V_d + (d / n) Σ_i log ε_i.
#
# The Kozachenko–Leonenko estimator (for k = 1; Singh et al., 2003, for any k) replaces
# log n − log k by ψ(n) − ψ(k), where ψ is the digamma function (not the successor features, here
# only). That correction makes the estimate unbiased as n grows with k fixed; with the plain logs
# and k = 1 it would stay off by Euler's constant. Here is the library's version:

# %%
print(inspect.getsource(knn_entropy))

# %% [markdown]
# Two distributions whose entropy we know in closed form: a correlated 2-D Gaussian,
# H = ½ log det(2πeΣ), and the uniform distribution on a square of side L, H = log L². For each
# sample size n we draw `repeats` independent clouds and estimate the entropy of each with
# k = 1, 3 and 10 (the same clouds for every k).

# %%
cov = np.array([[1.0, 0.6], [0.6, 1.0]])
side = 2.0
clouds = {
    "Gaussian": (gaussian_entropy(cov), lambda rng, n: rng.multivariate_normal(np.zeros(2), cov, size=n)),
    "uniform square": (uniform_box_entropy([side, side]), lambda rng, n: rng.uniform(0, side, size=(n, 2))),
}
rng = np.random.default_rng(seed)
estimates = {}  # (cloud, k) -> array (len(sample_sizes), repeats)
for name, (_, sample) in clouds.items():
    for k in neighbour_counts:
        estimates[name, k] = np.zeros((len(sample_sizes), repeats))
    for i, n in enumerate(sample_sizes):
        for r in range(repeats):
            points = sample(rng, n)
            for k in neighbour_counts:
                estimates[name, k][i, r] = knn_entropy(points, k)

for name, (true_entropy, _) in clouds.items():
    print(f"{name}: exact entropy {true_entropy:.4f} nats; "
          f"estimate minus exact, mean (standard deviation) over {repeats} clouds")
    print("        " + "".join(f"{f'n = {n}':>17}" for n in sample_sizes))
    for k in neighbour_counts:
        errors = estimates[name, k] - true_entropy
        print(f"  k = {k:<3}" + "".join(f"{m:>+10.3f} ({s:.3f})" for m, s in
                                     zip(errors.mean(1), errors.std(1), strict=True)))

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
for ax, (name, (true_entropy, _)) in zip(axes, clouds.items(), strict=True):
    for j, k in enumerate(neighbour_counts):
        values = estimates[name, k]
        shift = 1 + 0.04 * (j - 1)  # spread the error bars apart
        ax.errorbar(np.array(sample_sizes) * shift, values.mean(1), yerr=values.std(1), marker="o",
                    markersize=4, capsize=3, label=f"k = {k}")
    ax.axhline(true_entropy, color="black", linestyle="--", linewidth=1, label="exact entropy")
    ax.set_xscale("log")
    ax.set_xlabel("sample size n")
    ax.set_ylabel("entropy (nats)")
    ax.set_title(f"{name}: kNN estimate, mean ± sd over {repeats} clouds")
    ax.legend()
fig.tight_layout()

# %% [markdown]
# Read the table, not just the picture:
#
# * **Gaussian.** The mean errors are comparable to or smaller than the spread of single
#   estimates, and small at the largest n. A larger k averages over a bigger ball, which lowers the
#   spread.
# * **Uniform square.** Here the density drops to zero at the edges. A sample near an edge has no
#   neighbours on the other side, so its k-th neighbour is farther away than the density suggests,
#   and the estimate comes out too high. The error is larger for larger k (bigger balls poke out of
#   the square more often) and shrinks with n (the balls shrink).
#
# So k trades variance for bias: more neighbours, steadier estimates, but each one describes a
# bigger neighbourhood. The checks below state these claims for this run:

# %%
square_bias = np.array([(estimates["uniform square", k] - clouds["uniform square"][0]).mean(1)
                        for k in neighbour_counts])  # (k, n)
print("uniform square: estimate above the exact entropy for every k and n:", bool((square_bias > 0).all()))
print(f"uniform square: bias larger with k = {neighbour_counts[-1]} than with k = {neighbour_counts[0]} "
      f"at every n: {bool((square_bias[-1] > square_bias[0]).all())}")
print("uniform square: bias at the largest n smaller than at the smallest, for every k:",
      bool((square_bias[:, -1] < square_bias[:, 0]).all()))
gauss_bias = [abs((estimates["Gaussian", k][-1] - clouds["Gaussian"][0]).mean()) for k in neighbour_counts]
print(f"Gaussian: largest |bias| at n = {sample_sizes[-1]} over k: {max(gauss_bias):.3f} nats")
low_k, high_k = neighbour_counts[0], neighbour_counts[-1]
for name in clouds:
    smaller = (estimates[name, high_k].std(1) < estimates[name, low_k].std(1)).all()
    print(f"{name}: spread smaller with k = {high_k} than with k = {low_k} at every n: {bool(smaller)}")

# %% [markdown]
# ## From the estimator to a reward
#
# Of everything in the estimator, only (d / n) Σ_i log ε_i depends on the samples, and it is a sum
# with **one term per particle**. A particle far from its neighbours contributes a large term, so
# an agent that keeps reaching states far from the ones it has seen raises the entropy estimate of
# its state distribution. APT makes each particle's term its reward. For a state s' with
# representation h = f(s') and its k nearest neighbours N_k(h) among the other particles:
#
# r(s') = log(1 + (1/k) Σ_{h_j ∈ N_k(h)} ‖h − h_j‖).
#
# Compared with the estimator's per-particle term d log ε_i it changes three things:
#
# 1. **Constants and the factor d are gone.** Adding the same constant c to every reward adds
#    c / (1 − γ) to every value when episodes don't end (pretraining bootstraps through episode
#    ends, `AgentConfig.bootstrap_through_termination`), and multiplying every reward by d > 0
#    multiplies every value by d. Neither changes which action is best.
# 2. **The mean over the k nearest neighbours** replaces the k-th distance alone: less noisy, and
#    the paper reports it stabilises training.
# 3. **log(1 + ·)** replaces log: the reward is never negative and stays finite when a neighbour
#    sits at distance 0. In a gridworld that happens all the time: a batch holds many copies of
#    the same state. It behaves like log for large distances and like the distance itself for
#    small ones.
#
# So the batch mean of r is not an entropy estimate (it is not even in nats). What the agent needs
# is that it rises when the particles spread out, and that each particle's share is larger where
# particles are sparse. We check both on clouds of the size the learner uses, with the learner's k.
# The particles of one update are states of its training batch: by default (`nstep_reward="last"`,
# as in the authors' code) the last state of each of the batch's `batch_size` n-step windows, one
# particle per sampled transition.

# %%
agent_defaults = AgentConfig()
per_window = 1 if agent_defaults.nstep_reward == "last" else agent_defaults.n_step  # "sum": every state
n_particles = agent_defaults.batch_size * per_window
k_apt = agent_defaults.k
print(f"a training batch: {agent_defaults.batch_size} windows of up to {agent_defaults.n_step} steps, "
      f"nstep_reward={agent_defaults.nstep_reward!r}: {n_particles} particles; k = {k_apt}")
cloud_rng = np.random.default_rng(seed + 1)
base = {"Gaussian": cloud_rng.multivariate_normal(np.zeros(2), cov, size=n_particles),
        "uniform square": cloud_rng.uniform(0, side, size=(n_particles, 2))}
exact = {"Gaussian": lambda c: gaussian_entropy(c**2 * cov),
         "uniform square": lambda c: uniform_box_entropy([c * side] * 2)}
scales = np.geomspace(0.25, 8, 11)  # the same cloud, stretched by each factor
surrogate = {}
for name, points in base.items():
    rows = []
    for c in scales:
        x = torch.from_numpy(c * points)
        reward = particle_entropy_reward(x, x, k_apt, exclude_self=True)
        rows.append((exact[name](c), knn_entropy(c * points, k_apt), reward.mean().item()))
    surrogate[name] = np.array(rows)
    print(f"{name}, n = {n_particles}, k = {k_apt}:  scale  exact H  kNN estimate  mean APT reward")
    for c, (h, h_knn, r) in zip(scales, surrogate[name], strict=True):
        print(f"{'':>30}{c:6.2f} {h:8.3f} {h_knn:13.3f} {r:16.3f}")
    steps = np.diff(surrogate[name], axis=0)
    print(f"  estimate moves exactly with the exact entropy: {np.allclose(steps[:, 1], steps[:, 0])}")
    print(f"  mean APT reward rises with the exact entropy: {bool((steps[:, 2] > 0).all())}; "
          f"gains more per step at each step: {bool((np.diff(steps[:, 2]) > 0).all())}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
points = torch.from_numpy(base["Gaussian"])
per_particle = particle_entropy_reward(points, points, k_apt, exclude_self=True)
image = axes[0].scatter(*base["Gaussian"].T, c=per_particle, cmap="magma", s=18)
fig.colorbar(image, ax=axes[0], label="APT reward r_i")
axes[0].set_aspect("equal")
axes[0].set_xlabel("x_1")
axes[0].set_ylabel("x_2")
axes[0].set_title(f"one Gaussian cloud: each particle's reward (k = {k_apt})")
for name, rows in surrogate.items():
    axes[1].plot(rows[:, 0], rows[:, 1], "o-", label=name)
    axes[2].plot(rows[:, 0], rows[:, 2], "o-", label=name)
lims = [min(r[:, 0].min() for r in surrogate.values()), max(r[:, 0].max() for r in surrogate.values())]
axes[1].plot(lims, lims, "k--", linewidth=1, label="estimate = exact")
axes[1].set_ylabel("kNN (Kozachenko–Leonenko) estimate (nats)")
axes[1].set_title(f"the estimator on stretched clouds (n = {n_particles})")
axes[2].set_ylabel("mean APT reward")
axes[2].set_title("APT's surrogate: monotone, not linear")
for ax in axes[1:]:
    ax.set_xlabel("exact entropy (nats)")
    ax.legend()
fig.tight_layout()

# %% [markdown]
# The particles in the tails of the Gaussian earn the most: there the agent is paid for going
# where few particles are. Stretching a cloud by c raises the exact entropy by 2 log c, and the
# estimator by exactly as much (every ε_i is multiplied by c), so its error at the batch's n is the
# same at every scale. The mean APT reward rises with the entropy, but not in step: over this range each
# equal step of entropy buys more reward than the last. For small distances log(1 + x) ≈ x, so the
# reward grows like the distances themselves; only for large ones does it approach log x, a
# straight line in the entropy.
#
# Two more settings of the library's reward:
#
# * **The exponent.** The paper writes ‖h − h_j‖^{n_h}, the distance raised to the dimension of h,
#   which restores the factor d of the estimator inside the log. The public implementations use
#   the plain distance, and so does the library by default (`AgentConfig.knn_exponent = 1`).
# * **The normaliser.** The representation f is trained at the same time, so the scale of h keeps
#   changing. The reference code divides each distance by the running mean m of all distances seen
#   so far (`AgentConfig.knn_normalise = True`); the reward then measures spread relative to
#   history. With a fresh normaliser a cloud and a copy ten times larger earn the same rewards:

# %%
x = torch.from_numpy(base["Gaussian"])
small = particle_entropy_reward(x, x, k_apt, exclude_self=True, normaliser=RunningMean())
large = particle_entropy_reward(10 * x, 10 * x, k_apt, exclude_self=True, normaliser=RunningMean())
print("same rewards for the cloud and its 10x copy, each with a fresh normaliser:",
      torch.allclose(small, large))
plain_small = particle_entropy_reward(x, x, k_apt, exclude_self=True)
plain_large = particle_entropy_reward(10 * x, 10 * x, k_apt, exclude_self=True)
print(f"without the normaliser: mean reward {plain_small.mean():.3f} vs {plain_large.mean():.3f}")

# %% [markdown]
# ## Exercise: the kNN particle reward
#
# Write `my_knn_reward(particles, k)`: given a float tensor `particles` of shape (N, d), return the
# (N,) rewards r_i = log(1 + (1/k) Σ_{j ∈ N_k(i)} ‖p_i − p_j‖), where N_k(i) are the k particles
# nearest to p_i **other than p_i itself**. Mind the duplicates: a copy of p_i at another index is
# another particle at distance 0, and it counts. Hints: `torch.cdist`, `torch.topk(..., largest=False)`,
# `torch.log1p`. The checker compares your function with the library on random inputs, duplicates
# and k = N − 1 included.

# %%
def my_knn_reward(particles, k):
    raise NotImplementedError  # your code


my_knn_reward = exercises.check_knn_reward(my_knn_reward)

# %% [markdown]
# The library's answer. Its docstring records the decisions: the particle itself is excluded by
# index (so duplicates still count), the exponent, the normaliser, and what happens with fewer than
# k candidates.

# %%
print(inspect.getsource(particle_entropy_reward))

# %% [markdown]
# ## Part 2 · APT in the gridworlds
#
# In the library APT is one setting of the same successor-feature learner as VISR
# (`AgentConfig(method="apt")`); it differs in three places:
#
# * **no task conditioning:** w is fixed to e₁, so Q(s, a) = ψ(s, a, e₁)ᵀe₁ is one ordinary
#   Q-function for the exploration reward;
# * **the reward** is the kNN particle reward of h = f(s'). With the default
#   `nstep_reward="last"` (the authors' code) each sampled n-step window is paid the reward of its
#   last state s'_m, which also bootstraps the window (γ^m), and the particles are those last states,
#   one per sampled transition, each excluding itself (`"sum"` pays every window state exactly,
#   with every window state a particle);
# * **the representation** f is trained by InfoNCE: f(s) must pick out f(s') of its own transition
#   among the batch's next states (consecutive time steps play the role of APT's data augmentations).
#
# Here is where the reward is computed, for APT and (with phi as h) for APS:

# %%
print(inspect.getsource(Learner.knn_features))
print(inspect.getsource(Learner._intrinsic_last))
print(inspect.getsource(info_nce))

# %% [markdown]
# Now pretrain VISR and APT on both levels with the same budget and the same seeds, keeping
# snapshots of the networks and the replay along the way (`pretrain_with_snapshots`, which is
# `pretrain` with a hook). Pretraining is reward-free, with the target absorbing (reaching it ends
# nothing, as in notebook 02). Then, as in `experiments.run_gridworld`, every run is scored
# zero-shot: VISR identifies the task by least squares and acts by GPI, APT just runs its pretrained
# policy. Fine-tuning (the task reward, `finetune_steps` env steps, the same for both methods, with
# a few evaluations on the way) runs only on the seeds in `finetune_seeds`: two seeds of the easy
# level in the teaching configuration. Add hard-level seeds there if you have the time; notebook 05
# runs the full Figure 4 sweep, every level and 10 seeds.

# %%
# the library's defaults; fast mode: 2 envs and updates from step 150, so that every phase does a few
config = TrainConfig(num_envs=2, learning_starts=150) if FAST else TrainConfig()
methods = ["visr", "apt"]
runs = {}  # (level, method, seed) -> dict
started, cpu_started = time.perf_counter(), time.process_time()
for level in levels:
    for method in methods:
        for s in seeds:
            start = time.perf_counter()
            learner, log, snapshots = pretrain_with_snapshots(method, level, pretrain_steps, s,
                                                              snapshot_every_rounds, config)
            run = {"log": log, "snapshots": snapshots, "coverage": log.coverage}
            if s in finetune_seeds[level]:
                run["result"] = adapt_and_score(
                    learner, method, level, seed=s, pretrain_log=log, start=start,
                    finetune_steps=finetune_steps, identify_steps=identify_steps,
                    eval_episodes=eval_episodes, config=config)
                run["zero_shot"] = run["result"].zero_shot_success
            else:
                w = identify_task(learner, level, identify_steps, s, config) if method == "visr" else None
                run["zero_shot"] = evaluate(learner, level, w, eval_episodes, s, config).success_rate
            runs[level, method, s] = run
print(f"{len(runs)} pretraining runs, {sum('result' in r for r in runs.values())} fine-tuned: "
      f"{time.perf_counter() - started:.0f} s wall, {time.process_time() - cpu_started:.0f} s CPU")
print(f"per pretraining run: {log.metrics[-1]['env_steps']:,} env steps, {log.metrics[-1]['updates']:,} "
      f"gradient updates of {config.agent.batch_size} transitions")

# %%
print(f"{'level':<6}{'method':<7}{'seed':>4}  {'states visited':>16}  {'coverage':>8}  {'keys':>4}  "
      f"{'target reached':>14}  {'zero-shot':>9}  {'fine-tuned':>10}")
for (level, method, s), run in runs.items():
    cov_ = run["coverage"]
    finetuned = f"{run['result'].finetuned_success:.2f}" if "result" in run else "-"
    print(f"{level:<6}{method:<7}{s:>4}  {cov_['states_visited']:>9}/{cov_['states_reachable']:<6}  "
          f"{cov_['state_coverage']:>8.3f}  {cov_['keys_picked']:>4}  {str(cov_['target_reached']):>14}  "
          f"{run['zero_shot']:>9.2f}  {finetuned:>10}")

print("\nmean over seeds:")
for level in levels:
    for method in methods:
        mine = [runs[level, method, s] for s in seeds]
        rates = [r["result"].finetuned_success for r in mine if "result" in r]
        finetuned = f"{np.mean(rates):.2f} ({len(rates)} seed{'s' * (len(rates) > 1)})" if rates else "-"
        coverage = np.mean([r["coverage"]["state_coverage"] for r in mine])
        print(f"  {level:<5} {method:<5} coverage {coverage:.3f} | zero-shot success "
              f"{np.mean([r['zero_shot'] for r in mine]):.2f} | fine-tuned success {finetuned}")

# %% [markdown]
# ## Coverage
#
# Coverage counts the distinct (position, keys held) states visited while pretraining, out of all
# the level's reachable states. The curves show it growing over pretraining, one thin line per
# seed; the dotted line is what a uniformly random policy reaches in the same number of
# 100-step episodes.

# %%
random_states = {level: random_policy_stats(level, pretrain_steps // gridworld.MAX_EPISODE_STEPS, seed=seed,
                                            progress=False).distinct_states for level in levels}
fig, axes = plt.subplots(1, len(levels), figsize=(5.5 * len(levels), 4))
for ax, level in zip(np.atleast_1d(axes), levels, strict=True):
    reachable = runs[level, methods[0], seeds[0]]["coverage"]["states_reachable"]
    for method in methods:
        colour = plots.METHOD_COLOURS[method]
        for s in seeds:
            rows = runs[level, method, s]["log"].metrics
            ax.plot([r["env_steps"] for r in rows], [r["states_visited"] for r in rows], color=colour,
                    linewidth=1.5, alpha=0.8, label=method if s == seeds[0] else None)
    ax.axhline(reachable, color="black", linestyle="--", linewidth=1, label="reachable states")
    ax.axhline(random_states[level], color="grey", linestyle=":", linewidth=1.5,
               label=f"random policy, {pretrain_steps // gridworld.MAX_EPISODE_STEPS} episodes")
    ax.set_xlabel("pretraining env steps")
    ax.set_ylabel("distinct (position, keys) states visited")
    ax.set_title(f"{level} level: coverage while pretraining ({len(seeds)} seeds)")
    ax.legend(loc="lower right")
fig.tight_layout()
for level in levels:
    visited = {m: [runs[level, m, s]["coverage"]["states_visited"] for s in seeds] for m in methods}
    apt_ahead = sum(a > v for a, v in zip(visited["apt"], visited["visr"], strict=True))
    visr_ahead = sum(v > a for a, v in zip(visited["apt"], visited["visr"], strict=True))
    beaten = random_states[level] > max(max(v) for v in visited.values())
    print(f"{level}: states visited by seed: visr {visited['visr']}, apt {visited['apt']} | apt ahead on "
          f"{apt_ahead}, visr ahead on {visr_ahead} of {len(seeds)} seeds | random policy "
          f"{random_states[level]}, more than every pretraining run: {beaten}")

# %% [markdown]
# Where does the time go? The snapshots count how often the agent stood on each cell over the whole
# pretraining replay, separately for each set of keys held (the title gives each set's share of all
# steps; cells never visited stay white). Seed `seed` on the hard level:

# %%
layout = gridworld.resolve_level("hard")
key_sets = plots.held_key_sets(layout)
fig, axes = plt.subplots(len(methods), len(key_sets), figsize=(4.2 * len(key_sets), 3.9 * len(methods)),
                         squeeze=False)
for row, method in zip(axes, methods, strict=True):
    visits = runs["hard", method, seed]["snapshots"][-1].visits
    total = sum(v.sum() for v in visits.values())
    for ax, keys in zip(row, key_sets, strict=True):
        counts = visits.get(keys, np.zeros(layout.shape))
        held = ", ".join(keys) or "no key"
        title = f"{method}, {held}: {counts.sum() / total:.1%} of steps"
        if counts.sum():
            image = plots.plot_visitation(ax, layout, counts, title=title)
            fig.colorbar(image, ax=ax, fraction=0.046, label="fraction of these steps")
        else:
            plots.plot_level(ax, layout, title=f"{method}, {held}: never")
        print(title if counts.sum() else f"{method}, {held}: never")
fig.suptitle(f"hard level, seed {seed}: where each method spent its {pretrain_steps:,} pretraining steps")
fig.tight_layout()

# %% [markdown]
# ## What APT is paid for, cell by cell
#
# `plots.reward_maps` evaluates the exploration reward the snapshot's learner would pay for
# reaching each cell, against one update's worth of particles from its replay (with the learner's
# normaliser as a fixed scale). Early and late in pretraining, on the hard level:

# %%
apt_snapshots = runs["hard", "apt", seed]["snapshots"]
batch = n_particles  # the particles of one update (the same AgentConfig defaults as Part 1)
shown_keys = key_sets[:2]
checkpoints = [apt_snapshots[0], apt_snapshots[-1]]
fig, axes = plt.subplots(len(checkpoints), len(shown_keys), squeeze=False,
                         figsize=(4.6 * len(shown_keys), 4 * len(checkpoints)))
for row, snap in zip(axes, checkpoints, strict=True):
    for ax, keys in zip(row, shown_keys, strict=True):
        cells = plots.cell_states(layout, keys)
        explore = plots.reward_maps(snap.learner, cells, snap.particles[:batch])["explore"]
        held = ", ".join(keys) or "no key"
        image = plots.plot_cell_map(ax, layout, explore,
                                    title=f"after {snap.env_steps:,} steps, {held}")
        fig.colorbar(image, ax=ax, fraction=0.046, label="kNN reward")
        best = np.unravel_index(np.nanargmax(explore), explore.shape)
        print(f"after {snap.env_steps:>6,} steps, {held:<9}: reward {np.nanmin(explore):.2f} to "
              f"{np.nanmax(explore):.2f}, highest at cell {tuple(map(int, best))}")
fig.suptitle(f"APT on the hard level, seed {seed}: exploration reward for reaching each cell")
fig.tight_layout()

# %% [markdown]
# A cell whose state appears at least k times among the particles earns about 0: its k nearest
# neighbours are copies at distance 0 (up to rounding in `cdist`), and log(1 + 0) = 0. The reward
# is high where the particles are few, which makes it a count-based bonus in disguise, computed in
# f-space.
#
# The explorer below shows every panel for any checkpoint, set of keys held and k, for APT and
# VISR (VISR has no kNN term; its panels show φ(s)ᵀw instead): compare the reward with the panels
# of particles and visits, and look at the greedy actions the pretrained policy takes. Move the
# controls in a live notebook; on GitHub you see its default view, APT's last checkpoint.

# %%
explorer = reward_explorer({"apt": apt_snapshots, "visr": runs["hard", "visr", seed]["snapshots"]})

# %% [markdown]
# ## Adaptation: zero-shot and along fine-tuning
#
# The paper expects APT to adapt slowly: its pretraining learns no task-conditioned behaviour, so
# when the task reward arrives there is nothing to infer, only a Q-function to retrain. VISR can
# infer w and act at once by GPI, then fine-tune ψ for that w. `adapt_and_score` evaluates each
# fine-tuned run with `eval_episodes` greedy episodes at 0 fine-tuning steps (zero-shot) and at a
# few points along fine-tuning (`result.adaptation`, left). Fine-tuning a pretrained learner starts
# from ε = `TrainConfig.finetune_epsilon_start` (printed below), well below pretraining's 1 and the
# same for both methods: it keeps the pretrained policy, with some noise around it. On the right,
# the episodes that reached the target in each fine-tuning round: the rewards fine-tuning had to
# learn from.

# %%
print(f"fine-tuning epsilon: {config.finetune_epsilon_start:g} -> {config.epsilon_end:g} over the first "
      f"{config.epsilon_decay_fraction:.0%} of its {finetune_steps:,} steps")
tuned = [(key, run["result"]) for key, run in runs.items() if "result" in run]
tuned_levels = [level for level in levels if finetune_seeds[level]]
reached = {}  # (level, method, seed) -> fine-tuning steps of the first evaluation with success >= 0.5
fig, axes = plt.subplots(len(tuned_levels), 2, figsize=(12, 4 * len(tuned_levels)), squeeze=False)
for (success_ax, rounds_ax), level in zip(axes, tuned_levels, strict=True):
    for (run_level, method, s), result in tuned:
        if run_level != level:
            continue
        style = {"color": plots.METHOD_COLOURS[method], "alpha": 0.8, "label": f"{method}, seed {s}",
                 "linestyle": ["-", "--", ":"][finetune_seeds[level].index(s) % 3]}
        curve, rows = result.adaptation, result.metrics["finetune"]
        success_ax.plot([p["finetune_steps"] for p in curve], [p["success_rate"] for p in curve], marker="o",
                        **style)
        counts = [r["episodes_succeeded"] for r in rows]
        rounds_ax.plot([r["env_steps"] for r in rows], counts, **style)
        first = next((p["finetune_steps"] for p in curve if p["success_rate"] >= 0.5), None)
        reached[level, method, s] = np.inf if first is None else first
        print(f"{level} {method} seed {s}: success " + ", ".join(
            f"{p['success_rate']:.2f} at {p['finetune_steps']:,}" for p in curve) + " fine-tuning steps | "
              f"episodes reaching the target while fine-tuning: {sum(counts)} | first evaluation with "
              f"success >= 0.5: {'never' if first is None else f'{first:,} steps'}")
    success_ax.set_ylim(-0.05, 1.05)
    success_ax.set_xlabel("fine-tuning env steps")
    success_ax.set_ylabel("success rate (greedy evaluation)")
    success_ax.set_title(f"{level} level: success along fine-tuning")
    success_ax.legend()
    rounds_ax.set_xlabel("fine-tuning env steps")
    rounds_ax.set_ylabel("episodes reaching the target, per round")
    rounds_ax.set_title(f"{level} level: what fine-tuning met")
fig.tight_layout()
for level in tuned_levels:
    pairs = [(reached[level, "apt", s], reached[level, "visr", s]) for s in finetune_seeds[level]]
    print(f"{level}: first to success >= 0.5, over {len(pairs)} fine-tuned seeds: visr earlier on "
          f"{sum(v < a for a, v in pairs)}, apt earlier on {sum(a < v for a, v in pairs)}, at the same "
          f"evaluation on {sum(a == v and a < np.inf for a, v in pairs)}, neither on "
          f"{sum(a == v == np.inf for a, v in pairs)}")

# %% [markdown]
# ## What this run shows
#
# Set the paper's account of these levels, "APT explores further, VISR adapts faster", beside the
# numbers printed above. The cell below puts each claim to this run's seeds.

# %%
for level in levels:
    visited = {m: [runs[level, m, s]["coverage"]["states_visited"] for s in seeds] for m in methods}
    found = {m: sum(runs[level, m, s]["coverage"]["target_reached"] for s in seeds) for m in methods}
    apt_ahead = sum(a > v for a, v in zip(visited["apt"], visited["visr"], strict=True))
    visr_ahead = sum(a < v for a, v in zip(visited["apt"], visited["visr"], strict=True))
    walk_ahead = random_states[level] > max(max(v) for v in visited.values())
    print(f"exploration, {level}: apt visited more states than visr on {apt_ahead} of {len(seeds)} seeds, "
          f"fewer on {visr_ahead} | target reached while pretraining on visr {found['visr']}, apt "
          f"{found['apt']} of {len(seeds)} seeds | a random walk visited more than every pretraining run: "
          f"{walk_ahead}")
    print(f"  'APT explores further' holds on every seed of the {level} level: {apt_ahead == len(seeds)}")
for level in tuned_levels:
    mine = {m: [runs[level, m, s]["result"] for s in finetune_seeds[level]] for m in methods}
    summary = " | ".join(f"{m}: zero-shot {np.mean([r.zero_shot_success for r in mine[m]]):.2f}, fine-tuned "
                         f"{np.mean([r.finetuned_success for r in mine[m]]):.2f}" for m in methods)
    visr_first = all(reached[level, "visr", s] < reached[level, "apt", s] for s in finetune_seeds[level])
    print(f"adaptation, {level} (mean over {len(finetune_seeds[level])} fine-tuned seeds): {summary}")
    print(f"  'VISR adapts faster' (success >= 0.5 at an earlier evaluation) holds on every fine-tuned seed "
          f"of the {level} level: {visr_first}")

# %% [markdown]
# Why either claim can come out one way or the other at this scale:
#
# * **Exploration.** Nothing in VISR's reward asks for new states, but φ(s')ᵀw with many random w
#   spreads skills over the level; APT's reward asks for new states, but it lives in f-space (two
#   cells far apart on the grid need not be far apart in f), and a greedy policy chasing a reward
#   that moves under it (every visit lowers the reward where it went) can leave a room more slowly
#   than a random walk. Once both cover a small level the counts saturate, and only the hard level,
#   and the room behind the purple key, can tell them apart.
# * **Adaptation.** VISR can act on the task at once: when identification finds a w whose skill goes
#   to the target, it succeeds zero-shot, and fine-tuning, starting at low ε, keeps that policy.
#   APT has no task to infer: its zero-shot policy is its exploration policy, and fine-tuning
#   learns about the +10 only once that policy, with the ε-greedy noise around it, stumbles on it;
#   the right-hand panel shows how often and how soon it did. The lower ε starts, the more of the
#   pretrained policy fine-tuning keeps, and the longer a policy without the task in it can take to
#   find the reward. With ε starting at 1 (as the DQN baseline does), APT's fine-tuning would be DQN
#   started from an explorer's weights, and the comparison would be about exploration during
#   fine-tuning rather than about pretraining.
#
# These are a few seeds of a noisy process. Notebook 05 runs 10 seeds per method and level with 95%
# intervals, and the command line runs any single one, e.g.
# `aps-teach gridworld run --method apt --level hard --seed 3 --out runs/apt-hard-3`.
#
# ## Summary
#
# * The Kozachenko–Leonenko estimator turns k-th-neighbour distances into an entropy estimate. It
#   is nearly unbiased on the 2-D Gaussian; on the uniform square the edges bias it upwards, more
#   for larger k and smaller n, while larger k lowers its variance.
# * APT's reward log(1 + mean kNN distance) is the estimator's per-particle term, averaged over the
#   k neighbours and kept finite by the 1, without what an RL agent does not need: constants and a
#   positive factor. It is largest where particles are sparse, about zero on a state with k copies
#   in the batch, and its batch mean rises with the spread of the particles.
# * In the library APT is the successor-feature learner with w fixed to e₁, the kNN reward on a
#   contrastively trained f(s'), and `particle_entropy_reward` with self-exclusion by index and a
#   running-mean normaliser.
# * The paper's two claims about APT, "explores further" and "adapts more slowly than VISR", are
#   checked above on this run's seeds; the reasons either can go one way or the other at this
#   scale are listed with them.
#
# **Where next.** Notebook 04 builds APS, which puts the kNN entropy on VISR's own features φ, so
# one representation serves both exploring and inferring the task. To experiment here: change `k`,
# `knn_exponent`, `knn_normalise` or `representation="observation"` in `AgentConfig` (pass
# `TrainConfig(agent=AgentConfig(...))`) and rerun Part 2; with `representation="observation"` the
# kNN reward becomes a count-based bonus on the raw one-hot states.
