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
# # 03 · APT's reward: entropy from nearest neighbours
#
# VISR (notebook 02) learns skills, but it explores only as far as its skills happen to take it.
# **APT** (Liu & Abbeel, 2021a) pays the agent for reaching states unlike the ones it has recently
# seen: the reward is how far the new state lies from its k nearest neighbours in a learned
# representation. That reward comes from a nonparametric estimator of entropy, so this notebook
# builds the estimator on point clouds whose entropy we know exactly, turns it into APT's reward,
# and has you write that reward. Notebook 03b then puts APT in the gridworlds beside VISR.
#
# **After this notebook you can**
#
# * estimate the entropy of a point cloud from nearest-neighbour distances (the Kozachenko–Leonenko
#   estimator) and say how its error depends on the sample size n, the neighbour count k and the
#   shape of the distribution;
# * derive APT's reward, Eq. (1) of the paper, as a per-particle surrogate of that estimator, and say
#   what it drops and why an RL agent does not miss it;
# * write the kNN particle reward yourself, and name the library's decisions about it (the particle
#   itself, the exponent, the normaliser).
#
# **How long.** About 63 minutes of study: reading what it says and prints, its figures, predictions and
# questions, and the exercise; a few seconds of compute.
#
# **What reproduces from the paper.** The paper states that the particle estimator is
# asymptotically unbiased and consistent. On a 2-D Gaussian the checks below find it so; on a
# uniform square, whose density drops to zero at the edges, it is biased upwards at every sample size
# tried, less as n grows. The paper's reward, Eq. (1), is not itself an entropy estimate: it rises
# with the entropy but not in step with it, as measured below.

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
sample_sizes = [100, 1000] if FAST else [50, 100, 200, 500, 1000, 2000]
neighbour_counts = [1, 3, 10]  # k
repeats = 3 if FAST else 30  # independent clouds per (distribution, n)
seed = 0

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from aps_teach import course
from aps_teach.course import exercises
from aps_teach.course.entropy import gaussian_entropy, knn_entropy, uniform_box_entropy
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.rewards import RunningMean, particle_entropy_reward

course.fast_mode_banner(FAST)
started = time.perf_counter()

# %% [markdown]
# ## Entropy from nearest neighbours
#
# *About 16 minutes.*
#
# Take n samples x_1, …, x_n from an unknown density p on $\mathbb{R}^d$, and let ε_i be the distance
# from x_i to its k-th nearest *other* sample. The ball of radius ε_i around x_i holds about k of the
# other samples, so its probability mass p(x_i) V_d ε_i^d (V_d the volume of the unit ball) is about
# k / n. Solve for −log p(x_i) and average over the samples to estimate H = E[−log p(x)]:
#
# $$\hat H = \psi(n) - \psi(k) + \log V_d + \frac{d}{n}\sum_{i=1}^{n} \log \varepsilon_i .$$
#
# The counting argument gives log n − log k; the Kozachenko–Leonenko estimator (k = 1; Singh et al.,
# 2003, for any k) uses the digamma function ψ instead (here only: not the successor features),
# which makes it unbiased as n grows with k fixed. `aps_teach.course.entropy.knn_entropy` computes it.
#
# Two distributions whose entropy we know in closed form: a correlated 2-D Gaussian,
# H = ½ log det(2πeΣ), and the uniform distribution on a square of side L, H = log L². For each
# sample size n we draw `repeats` independent clouds and estimate each one's entropy with
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

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, (name, (true_entropy, _)) in zip(axes, clouds.items(), strict=True):
    for j, k in enumerate(neighbour_counts):
        values = estimates[name, k]
        shift = 1 + 0.04 * (j - 1)  # spread the error bars apart
        ax.errorbar(np.array(sample_sizes) * shift, values.mean(1), yerr=values.std(1), marker="o",
                    markersize=4, capsize=3, label=f"$k = {k}$")
    ax.axhline(true_entropy, color="black", linestyle="--", linewidth=1, label="exact entropy")
    ax.set_xscale("log")
    ax.set_xlabel("sample size $n$")
    ax.set_ylabel(r"$\hat H$ (nats)")
    ax.set_title(f"{name}: kNN estimate, mean ± sd over {repeats} clouds")
    ax.legend()
fig.tight_layout()

# %% [markdown]
# **Explain it.** Before reading the checks below: why would the estimate on the uniform square come
# out *too high*, and more so for larger k?
#
# <details><summary>Answer</summary>
#
# The square's density drops to zero at its edges. A sample near an edge has no neighbours on the
# other side, so its k-th neighbour is farther away than the density there suggests, and a large
# ε_i means a large estimated −log p. A larger k averages over a bigger ball, which pokes out of the
# square more often (more bias) but counts more neighbours (less variance); as n grows every ball
# shrinks and the edge effect with it. On the Gaussian there is no edge, and the estimate is close
# to exact at large n. So k trades variance for bias.
# </details>
#
# The checks state these claims for this run:

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
# *About 25 minutes.*
#
# Of everything in the estimator only $\frac{d}{n}\sum_i \log\varepsilon_i$ depends on the samples,
# and it is a sum with **one term per particle**. A particle far from its neighbours contributes a
# large term, so an agent that keeps reaching states far from the ones it has seen raises the
# entropy estimate of its state distribution. APT makes each particle's term its reward. For a state
# s' with representation h = f(s') and its k nearest neighbours $N_k(h)$ among the other particles,
# Eq. (1) of the paper is
#
# $$r_{\text{APT}}(s, a, s') = \log\Big(1 + \frac{1}{k}
#   \sum_{h^{(j)} \in N_k(h)} \lVert h - h^{(j)} \rVert^{n_h}\Big), \qquad h = f(s'). \tag{1}$$
#
# Against the estimator's per-particle term d log ε_i it changes three things:
#
# 1. **Constants and the factor d are gone.** Adding the same constant c to every reward adds
#    c / (1 − γ) to every value when episodes don't end, and multiplying every reward by d > 0
#    multiplies every value by d. Neither changes which action is best.
# 2. **The mean over the k nearest neighbours** replaces the k-th distance alone: less noisy, and
#    the paper reports it stabilises training.
# 3. **log(1 + ·)** replaces log: the reward is never negative and stays finite when a neighbour
#    sits at distance 0, which in a gridworld happens all the time (a batch holds many copies of the
#    same state). It behaves like the distance for small distances and like its log for large ones.
#
# The exponent $n_h$ (the dimension of h) restores the estimator's factor d inside the log; the
# public implementations use the plain distance, and so does the library by default
# (`AgentConfig.knn_exponent = 1`). The exercise uses the plain distance too.
#
# ### Exercise: the kNN particle reward
#
# Write `my_knn_reward(particles, k)`: given a float tensor `particles` of shape (N, d), return the
# (N,) rewards
#
# $$r_i = \log\Big(1 + \frac{1}{k}\sum_{j \in N_k(i)} \lVert p_i - p_j \rVert\Big),$$
#
# where $N_k(i)$ are the k particles nearest to p_i **other than p_i itself**. Mind the duplicates:
# a copy of p_i at another index is another particle at distance 0, and it counts. Hints:
# `torch.cdist`, `torch.topk(..., largest=False)`, `torch.log1p`. The checker compares your function
# with the library's on random inputs, duplicates and k = N − 1 included, names the mistake when it
# recognises it, and the cells below use the library's answer until yours is right.
# After a wrong attempt, `my_knn_reward(*exercises.failing_case("knn_reward"))` calls yours on the inputs
# it got wrong; once you have tried, `exercises.solution("knn_reward")` shows a solution.

# %%
def my_knn_reward(particles, k):
    raise NotImplementedError  # your code here


knn_reward = exercises.check_knn_reward(my_knn_reward)

# %% [markdown]
# ## What the reward measures
#
# *About 9 minutes.*
#
# So the batch mean of r is not an entropy estimate (it is not even in nats). What the agent needs
# is that it rises when the particles spread out, and that each particle's share is larger where
# particles are sparse. Check both with your `knn_reward`, on clouds of the size the learner uses and
# with the learner's k. The particles of one update are states of its training batch: by default
# (`nstep_reward="last"`, as in the authors' code) the last state of each of the batch's
# `batch_size` n-step windows, one particle per sampled transition. Each cloud is stretched by factors
# c: that raises its exact entropy by 2 log c.

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
    rows = [(exact[name](c), knn_entropy(c * points, k_apt), knn_reward(torch.from_numpy(c * points), k_apt)
             .mean().item()) for c in scales]
    surrogate[name] = np.array(rows)
    print(f"{name}, n = {n_particles}, k = {k_apt}:  scale  exact H  kNN estimate  mean APT reward")
    for c, (h, h_knn, r) in zip(scales, surrogate[name], strict=True):
        print(f"{'':>30}{c:6.2f} {h:8.3f} {h_knn:13.3f} {r:16.3f}")
    steps = np.diff(surrogate[name], axis=0)
    print(f"  estimate moves exactly with the exact entropy: {np.allclose(steps[:, 1], steps[:, 0])}")
    print(f"  mean APT reward rises with the exact entropy: {bool((steps[:, 2] > 0).all())}; "
          f"gains more per step at each step: {bool((np.diff(steps[:, 2]) > 0).all())}")

fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
per_particle = knn_reward(torch.from_numpy(base["Gaussian"]), k_apt)
image = axes[0].scatter(*base["Gaussian"].T, c=per_particle, cmap="magma", s=18)
fig.colorbar(image, ax=axes[0], label=r"$r_i$")
axes[0].set_aspect("equal")
axes[0].set_xlabel("$x_1$")
axes[0].set_ylabel("$x_2$")
axes[0].set_title(f"one Gaussian cloud: each particle's reward ($k = {k_apt}$)")
for name, rows in surrogate.items():
    axes[1].plot(rows[:, 0], rows[:, 1], "o-", label=name)
    axes[2].plot(rows[:, 0], rows[:, 2], "o-", label=name)
lims = [min(r[:, 0].min() for r in surrogate.values()), max(r[:, 0].max() for r in surrogate.values())]
axes[1].plot(lims, lims, "k--", linewidth=1, label=r"$\hat H = H$")
axes[1].set_ylabel(r"kNN estimate $\hat H$ (nats)")
axes[1].set_title(f"the estimator on stretched clouds ($n = {n_particles}$)")
axes[2].set_ylabel(r"mean reward $\bar r$")
axes[2].set_title("APT's reward: monotone, not linear")
for ax in axes[1:]:
    ax.set_xlabel("exact entropy $H$ (nats)")
    ax.legend()
fig.tight_layout()

# %% [markdown]
# The particles in the tails of the Gaussian earn the most: there the agent is paid for going where
# few particles are. Stretching a cloud moves the estimator by exactly as much as the exact entropy
# (every ε_i is multiplied by c), so its error at the batch's n is the same at every scale. The mean
# reward rises with the entropy, but each equal step of entropy buys more reward than the last:
# for small distances log(1 + x) ≈ x grows like the distances themselves, and only for large ones
# does it approach log x, a straight line in the entropy.
#
# ## The normaliser, and the library's decisions
#
# *About 5 minutes.*
#
# The representation f is trained at the same time as the policy, so the scale of h keeps changing.
# The reference code divides each distance by the running mean m of all distances seen so far
# (`AgentConfig.knn_normalise = True`); the reward then measures spread relative to history. With a
# fresh normaliser a cloud and a copy ten times larger earn the same rewards:

# %%
x = torch.from_numpy(base["Gaussian"])
small = particle_entropy_reward(x, x, k_apt, exclude_self=True, normaliser=RunningMean())
large = particle_entropy_reward(10 * x, 10 * x, k_apt, exclude_self=True, normaliser=RunningMean())
print("same rewards for the cloud and its 10x copy, each with a fresh normaliser:",
      torch.allclose(small, large))
print(f"without the normaliser: mean reward {knn_reward(x, k_apt).mean():.3f} vs "
      f"{knn_reward(10 * x, k_apt).mean():.3f}")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# The library's `rewards.particle_entropy_reward` is your function with those options: `exponent`
# (1 by default, `source.shape[1]` for the paper's $n_h$), `normaliser`, and `exclude_self`, which
# drops a particle's own zero distance by its *index*, so copies of the same state elsewhere in the
# batch still count, as evidence of high density there. With fewer than k candidates it averages
# over the ones there are instead of failing.
#
# **Explain it.** A gridworld state appears at least k times among the particles of a batch. What
# reward does reaching it earn, and what does that make APT in a gridworld?
#
# <details><summary>Answer</summary>
#
# About 0: its k nearest neighbours are copies at distance 0, and log(1 + 0) = 0. The reward is high
# only where the batch holds few copies of a state, so in a small discrete world APT behaves like a
# count-based bonus, computed in f-space. Notebook 03b shows it cell by cell.
# </details>
#
# ## Summary
#
# *About 3 minutes.*
#
# * The Kozachenko–Leonenko estimator turns k-th-neighbour distances into an entropy estimate. It is
#   nearly unbiased on the 2-D Gaussian; on the uniform square the edges bias it upwards, more for
#   larger k and smaller n, while a larger k lowers its variance.
# * APT's reward, Eq. (1), is the estimator's per-particle term, averaged over the k neighbours and
#   kept finite by the 1, without what an RL agent does not need: constants and a positive factor.
#   It is largest where particles are sparse, about zero on a state with k copies in the batch, and
#   its batch mean rises with the spread of the particles, though not in step with the entropy.
#
# **Key equations: APT**
#
# * the entropy estimate, $\varepsilon_i$ the distance to the $k$-th neighbour:
#   $\hat H = \psi(n) - \psi(k) + \log V_d + \frac{d}{n} \sum_i \log \varepsilon_i$;
# * its reward (Eq. 1), the particles a batch's $h$:
#   $r(s, a, s') = \log\big(1 + \frac{1}{k} \sum_{h^{(j)} \in \mathrm{N}_k(h)}
#   \lVert h - h^{(j)} \rVert\big)$, $h = f(s')$;
# * what trains $f$ (notebook 03b writes it out): a contrastive loss, InfoNCE, that asks $f(s)$ to pick out
#   $f(s')$ of its own transition among a batch's next states;
# * acting: a Q-learner on that reward (in this library the successor-feature learner with one fixed
#   task, notebook 03b), $Q(s, a)$, no task input.
#
# The paper numbers APS's own use of this reward Eq. 2: it is Eq. (1) with $h = \phi(s')$, APS's features
# (notebooks 04 and 04a).
#
# **Next.** Notebook 03b puts APT in the gridworlds beside VISR: coverage, where each method spends
# its time, APT's reward cell by cell, and how fast each adapts to the task.
#
# **Try it.** Add k = 30 to `neighbour_counts`; stretch only one axis of the Gaussian (a new `cov`)
# and see whether the reward still follows the entropy; compare `knn_reward` with
# `particle_entropy_reward(x, x, k, exclude_self=True, exponent=2)`.
