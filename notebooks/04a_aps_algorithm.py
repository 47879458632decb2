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
# # 04a · APS: Algorithm 1, written and checked
#
# Notebook 04 derived APS's reward: VISR's $\phi(s')^\top w$ plus APT's kNN term on $h = \phi(s')$
# (Eq. 6). Here is the loop that trains on it, the paper's Algorithm 1: VISR's training loop with the
# environment's reward thrown away and $r_{\text{APS}}$ in the target. You write the piece of it that
# carries the most care, the n-step successor-feature target; then the update itself, lines 10–14, runs in
# ten lines on a real replay batch beside the library's `Learner.update`.
#
# **What you will be able to do.** State the two terms of APS's reward and the vMF loss as the paper's
# equations; read Algorithm 1 line by line; write the n-step successor-feature TD target with its
# cumulant; run Algorithm 1 in ten lines against the library; and say where the library departs from the
# paper and why.
#
# **How long.** About 65 minutes of study, counted as the README's course table says: one function to
# derive and write, and seconds of compute. Notebook 04b then puts APS on the grid.

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
import time

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
seed = 0
learning_starts = 400 if FAST else 1_600  # env steps before the first update (the library's: 1600)
notebook_start = time.perf_counter()

# %%
import copy

import matplotlib.pyplot as plt
import numpy as np
import torch

import gridworld
from aps_teach import course
from aps_teach.course import exercises
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.learner.rewards import particle_entropy_reward

course.fast_mode_banner(FAST)
config = TrainConfig(progress=False, learning_starts=learning_starts)


# %% [markdown]
# ## APS's reward, and Algorithm 1
#
# *About 4 minutes.*
#
# Notebook 04 derived the pieces; here they are, as the loop uses them.
#
# * **Exploration** is APT's particle reward (the paper's Eq. 2, which is notebook 03's Eq. (1) on the
#   encoder APS shares, $f = \phi$): in a batch, each $h = f(s')$ of a state reached is a particle, paid
#   $\log\big(1 + \frac{1}{k}\sum_j \lVert h - h^{(j)} \rVert\big)$ over its $k$ nearest other particles
#   $h^{(j)}$.
# * **Exploitation** is Eq. 4, $\phi(s)^\top w$, and $\phi$ is trained to make it large for the states the
#   skill $w$ reaches, minimising the von Mises–Fisher loss $L = -\mathbb{E}_{s, w}[\phi(s)^\top w]$
#   (Eq. 5).
# * **APS shares the encoder**, $f = \phi$, and adds the two terms: Eq. 6 (the paper's Eq. 7 is its line
#   $h = \phi(s')$).
#
# The paper writes $\phi(s)$ in the first term, $\phi(s')$ in the second; the library pays both on the
# state reached. Like the authors' code, it uses the plain distance (the paper: to the power $n_h$),
# divided by its running mean (`AgentConfig.knn_normalise`).
#
# Algorithm 1 is VISR's training loop with two lines changed (the environment's reward is thrown away,
# and the target uses $r_{\text{APS}}$):
#
# | line | Algorithm 1 |
# |---|---|
# | 1–2 | initialise $\phi$ (unit-length output) and $\psi$ ($d$ numbers per action) |
# | 3–4 | for each episode, draw $w \sim \mathcal{N}(0, I)$ and normalise it: uniform on the sphere |
# | 5–8 | observe $s_t$, act $\epsilon$-greedily on $Q(s_t, \cdot \mid w) = \psi(s_t, \cdot, w)^\top w$ |
# | 9 | step to $s_{t+1}$; **the environment's reward is thrown away** |
# | 10 | $a' = \arg\max_a \psi(s_{t+1}, a, w)^\top w$ |
# | 11 | **compute $r_{\text{APS}}(s_t, a_t, s_{t+1})$ with Eq. 6** |
# | 12 | **$y = r_{\text{APS}} + \gamma\, \psi(s_{t+1}, a', w)^\top w$** |
# | 13 | $\text{loss}_\psi = \big(\psi(s_t, a_t, w)^\top w - y\big)^2$ |
# | 14 | $\text{loss}_\phi = -\phi(s_t)^\top w$, the von Mises–Fisher negative log-likelihood |
# | 15 | a gradient step on $\psi$ and $\phi$ (minibatches in practice) |
#
# One piece of it is yours to write here; the capstone, notebook 04d, has you write two more, the reward
# and the vMF loss, and train APS on them.
#
# ## Exercise: the n-step successor-feature TD target
#
# *About 43 minutes.*
#
# Line 12 regresses the scalar $\psi^\top w$. The library learns $\psi$ as a vector instead, with the
# *cumulant*
#
# $$c_i = \phi(s'_i) + \big(r_i - \phi(s'_i)^\top w\big)\, w,$$
#
# with $c_i^\top w = r_i$ for unit $w$: $\psi^\top w$ is trained on the paper's scalar target, while
# $\psi$'s other directions learn the discounted sum of $\phi$ (GPI scores $\psi(s, a, z_i)$ under a
# $w \neq z_i$). Why this form: whatever part of the reward $\phi(s'_i)^\top w$ does not explain,
# $r_i - \phi(s'_i)^\top w$ (here the kNN term), is put along $w$ alone. Projected on $w$ the cumulant
# gives back $r_i$ exactly; in every direction orthogonal to $w$ it is pure $\phi(s'_i)$, so those
# directions stay successor features. Over an n-step window $s'_1, \dots, s'_m$ ($m \le n$: a window stops
# early at an episode's end or where $w$ was redrawn), the target is
#
# $$y = \sum_{i=1}^{n} \gamma^{i-1}\, \mathrm{mask}_i\, c_i \;+\; \gamma^m\, \mathrm{alive}\;
# \psi_{\text{target}}(s'_m, a', w),$$
#
# with $\mathrm{mask}_i = 1$ for the $m$ steps of the window ($i \le m$) and 0 after.
#
# Write `my_sf_td_target(base, reward, w, mask, gamma, boot_psi, boot_steps, alive)`: `base` (B, n, d) is
# $\phi(s'_i)$, `reward` (B, n) is $r_i$, `w` (B, d), `mask` (B, n) is true on the $m$ valid steps,
# `boot_psi` (B, d) is $\psi_{\text{target}}(s'_m, a', w)$, `boot_steps` (B,) is $m$ and `alive` (B,) is
# false where the window ended the episode. Return $y$, shape (B, d).
# After a wrong attempt, `my_sf_td_target(*exercises.failing_case("sf_td_target"))` calls yours on the
# inputs it got wrong; once you have tried, `exercises.solution("sf_td_target")` shows a solution.

# %%
def my_sf_td_target(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
    raise NotImplementedError  # your code here


sf_td_target = exercises.check_sf_td_target(my_sf_td_target)

# %% [markdown]
# ## Algorithm 1 in ten lines
#
# *About 14 minutes.*
#
# Now the update itself, lines 10–14, for one replay batch of n-step windows, as in the authors' code
# (`AgentConfig.nstep_reward = "last"`): the reward of a window's last state $s'_m$ stands for the whole
# window, the target bootstraps with $\gamma^m$, and the kNN particles are those last states. The networks
# read the centred board, `learner.inputs(obs)`. The next cell pretrains APS for two rounds on the easy
# level for a replay batch, then runs the ten lines and the library's `Learner.update` on copies of the
# same learner.
#
# **Predict:** will the ten lines and `Learner.update` give the same two losses to six decimals, or only
# roughly (the library batches, masks and compiles its update differently)?

# %%
def aps_losses(learner, batch, td_target):
    """Algorithm 1, lines 10-14, on a replay batch of n-step windows (reward of the last state s'_m)."""
    cfg, w, rows = learner.config, batch.w, torch.arange(len(batch.w))
    x_t, x_m = learner.inputs(batch.obs), learner.inputs(batch.boot_obs)  # s_t and s'_m, centred
    phi_m = learner.phi(x_m)  # phi(s'_m), unit length: the features of both reward terms (h = phi)
    a_next = (learner.psi(x_m, w) * w[:, None]).sum(-1).argmax(1)  # line 10: argmax_a psi(s'_m, a, w)^T w
    r = cfg.exploit_weight * (phi_m * w).sum(1) + cfg.explore_weight * particle_entropy_reward(
        phi_m, phi_m, cfg.k, exclude_self=True, normaliser=learner.normaliser)  # line 11: Eq. 6
    boot, one = learner.psi_target(x_m, w)[rows, a_next], torch.ones(len(w), 1)
    y = td_target(phi_m[:, None], r[:, None], w, one, cfg.gamma, boot, batch.boot_steps, one[:, 0])  # 12
    loss_psi = ((learner.psi(x_t, w)[rows, batch.action] - y.detach()) ** 2).sum(1).mean()  # line 13
    loss_phi = -(phi_m * w).sum(1).mean()  # line 14: Eq. 5 on s'_m
    return loss_psi, loss_phi, r


round_steps = config.num_envs * gridworld.MAX_EPISODE_STEPS  # one round: every env plays one episode
kept = {}
short, _ = pretrain("aps", "easy", 2 * round_steps, seed, config, on_round=lambda end: kept.update(end=end))
agent = short.config
batch = kept["end"].replay.sample(agent.batch_size, agent.n_step, torch.Generator().manual_seed(seed))
loss_psi, loss_phi, r = aps_losses(copy.deepcopy(short), batch, sf_td_target)
library = {name: value.item() for name, value in copy.deepcopy(short).update(batch).items()}  # one step
print(f"a batch of {len(r)} windows of up to {agent.n_step} steps; mean r_APS {r.mean():.4f}")
print(f"loss_psi: ten lines {loss_psi:.6f}, Learner.update {library['loss_sf']:.6f}")
print(f"loss_phi: ten lines {loss_phi:.6f}, Learner.update {library['loss_vmf']:.6f}")
agree = np.allclose([loss_psi.item(), loss_phi.item()], [library["loss_sf"], library["loss_vmf"]], rtol=1e-5)
print(f"the ten lines compute the library's losses: {agree}")

# %% [markdown]
# The reward of line 11, term by term over the same batch: how large is each of Eq. 6's two terms after two
# rounds of pretraining?

# %%
with torch.no_grad():
    phi_last = short.phi(short.inputs(batch.boot_obs))  # phi(s'_m), as in the ten lines
    knn_term = particle_entropy_reward(phi_last, phi_last, agent.k, exclude_self=True,
                                       normaliser=copy.deepcopy(short).normaliser)
    terms = {"exploitation, phi(s')^T w": (phi_last * batch.w).sum(1), "exploration, the kNN term": knn_term}
fig, ax = plt.subplots(figsize=(7, 3))
for name, values in terms.items():
    ax.hist(values.numpy(), bins=30, alpha=0.6, label=f"{name} (mean {values.mean():.2f})")
ax.set_xlabel("reward per window")
ax.set_ylabel("windows")
ax.set_title(f"Eq. 6 term by term on one batch of {len(batch.w)} windows (easy, two rounds of APS)")
ax.legend()
plt.show()
print("mean over the batch: " + ", ".join(f"{name} {values.mean():.2f}" for name, values in terms.items())
      + f"; log 2 = {np.log(2):.2f}")

# %% [markdown]
# Both of Eq. 6's weights are 1, but its terms are not on one scale: divided by the running mean of the
# distances, the kNN term averages under $\log 2 \approx 0.69$ whatever the features (the line above),
# while $\phi(s')^\top w$ starts near 0 and grows only as $\phi$ learns to point at the skills. Notebook 04d
# measures what that balance does to the agent.

# %% [markdown]
# Besides the exercise's vector loss, the ten lines depart from Algorithm 1 in a few places, each
# documented in its configuration field (`help(TrainConfig)`, `help(AgentConfig)`):
#
# * **$w$ redrawn every 10 steps**, not once per episode (lines 3–4): the paper's appendix says so for its
#   experiments, and the authors' code does it (`TrainConfig.task_resample_every`); a window of the n-step
#   target stops where $w$ changed.
# * **$\phi(s')$ in the vMF loss** (line 14): Algorithm 1 writes $\phi(s_t)$; the library uses
#   $\phi(s'_m)$, the features whose reward the target just used.
# * **The last state's reward for the whole window** (`nstep_reward="last"`), as the authors' code does;
#   `"sum"` pays the exact discounted sum over the window instead.
# * **Double Q-learning**: $a'$ comes from the online $\psi$, its value from a target copy
#   $\psi_{\text{target}}$, refreshed every 100 updates as in the paper.
# * **An absorbing target while pretraining** (`TrainConfig.absorbing_target`): the agent stays on the
#   target until the round ends, paid $\phi(\text{target})^\top w$ like anywhere else, so "go to the
#   target and stay" is a skill it can learn; hence `alive` = 1 in the ten lines. Identification,
#   evaluation and fine-tuning keep the paper's protocol (+10 ends the episode).
# * **Centred inputs** (`normalise_observations`): fed the raw one-hot board, mostly entries always on,
#   most of $\phi$'s ReLUs die (102 of 128 in notebook 02c's run); the networks read the board minus its
#   running mean (`aps_teach.learner.inputs`).
#
# **Explain it.** Line 13 of the ten lines uses `y.detach()`. What would go wrong without it?
#
# <details><summary>Answer</summary>
#
# The target $y$ depends on $\phi$ (through the cumulant and the reward). Without `detach`, the gradient
# of $\text{loss}_\psi$ would also move $\phi$ to make the target easier to hit, e.g. by shrinking the
# reward differences $\psi$ must predict. TD learning treats the target as a constant (a semi-gradient
# method); $\phi$ is trained only by line 14. The library computes targets under `torch.no_grad()`.
# </details>

# %% [markdown]
# ## What this run found
#
# *About 1 minute.*
#
# Each line below is computed from an output above.

# %%
print(f"* the ten lines of Algorithm 1 compute the library's losses: {agree}")

# %% [markdown]
# ## Summary
#
# *About 2 minutes.*
#
# * APS is VISR's loop with APT's kNN term added to the reward, on the same $\phi$ (Eq. 6). You wrote the
#   TD target; the ten lines of Algorithm 1 built on it compute what the library computes.
# * The library departs from Algorithm 1 only for a reason, written in the field it concerns (the list
#   under the ten lines).
#
# **Key equations: APS's update**
#
# * what trains $\phi$: $L_\phi = -\mathbb{E}_{s', w}\big[\phi(s')^\top w\big]$ (Eq. 5), as in VISR;
# * what trains $\psi$: the n-step target $y = \sum_{i=1}^{m} \gamma^{i-1} c_i + \gamma^m
#   \psi_{\text{target}}(s'_m, a^*, w)$, with the cumulant $c_i = \phi(s'_i) + (r_i - \phi(s'_i)^\top w)\, w$,
#   so $c_i^\top w = r_i$.
#
# Next: notebook 04b puts APS on the grid (both reward terms as heatmaps, your seed of Figure 4, GPI at
# work); then 04c (where zero-shot success gets lost), 04d (the capstone), 04e (the variants) and 05 (the
# ablations).

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
