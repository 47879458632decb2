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
# # 02 · VISR: skills from a discriminator
#
# Notebook 01 computed successor features ψ exactly, for features φ we chose. VISR (Hansen et al.,
# 2020) *learns* φ(s) without any reward, together with a family of policies, one per task vector w
# on the unit sphere. A new task then costs three moves: collect some rewards, fit r ≈ φ(s')ᵀw by
# least squares, act greedily on ψ(s, a, w)ᵀw. (The symbols are those of notebook 01's notation
# table.)
#
# **After this notebook you can**
#
# * say why VISR's reward is φ(s')ᵀw (the log-likelihood of a von Mises-Fisher discriminator) and
#   check it numerically;
# * pretrain VISR reward-free and set its coverage beside a random walk's;
# * say why the discriminator's loss can rise while it gets better, and measure it;
# * read VISR's pretraining loop written out (optional), checked against the library's weight for weight.
#
# **How long.** About 53 minutes of study: reading what it says and prints, its figures, predictions and
# questions, and about half a minute of compute in teaching mode on a 2-core CPU (longer on a busy
# machine). Notebook 02a finds a task's w by least squares (an exercise); 02b puts the pretrained agent to
# work: what its skills do, zero-shot and fine-tuning on the levels' tasks, the paper's Figure 4; 02c gives
# it any task on any maze.
#
# **What reproduces from the paper.** This notebook builds the pieces; notebook 02b sets what they do on
# the two levels beside the paper's Figure 4 (VISR well ahead of APT on the easy level, failing on the
# hard one), read from the committed 10-seed sweep.

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

from aps_teach.grid import experiments

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
# fast mode: one round of the 32 envs x 100 steps per phase (budgets are rounded up to whole rounds)
pretrain_steps = 3_200 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps
seed = 0

# %%
import inspect
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.stats import vonmises_fisher

import gridworld
from aps_teach import course
from aps_teach.grid import plots, train
from aps_teach.grid.random_policy import random_policy_stats
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.infra.phases import linear_schedule, single_thread
from aps_teach.infra.seeds import round_seeds
from aps_teach.learner import rewards, tasks, update

course.fast_mode_banner(FAST)
config = TrainConfig(progress=not FAST)  # the library's defaults
levels = ["easy", "hard"]  # the paper's two levels
VISR = plots.METHOD_COLOURS["visr"]
started = time.perf_counter()
d = config.agent.feature_dim
print(f"feature dimension d = {d} | {config.num_envs} envs in lockstep | w redrawn every "
      f"{config.task_resample_every} steps | epsilon {config.epsilon_start:g} -> {config.epsilon_end:g} "
      f"over the first {config.epsilon_decay_fraction:.0%} of pretraining | GPI over w + "
      f"{config.agent.gpi_samples} fresh skills | episodes of at most {gridworld.MAX_EPISODE_STEPS} steps")

# %% [markdown]
# ## The discriminator and its reward
#
# *About 13 minutes.*
#
# VISR has two networks: φ(s), an MLP whose output is divided by its norm so that it lies on the
# unit sphere in $\mathbb{R}^d$, and ψ(s, a, w), the successor features of *skill w*, the policy
# greedy on Q(s, a, w) = ψ(s, a, w)ᵀw. While pretraining, every copy of the environment draws a
# fresh w uniformly on the sphere every few steps and follows skill w.
#
# Good skills are *distinguishable*: from the state s' a skill reaches, one can tell which w
# produced it. VISR asks a discriminator to do that, a von Mises-Fisher distribution on the sphere
# centred on φ(s'), with concentration κ:
#
# $$q(w \mid s') = C_d(\kappa)\, \exp\!\big(\kappa\, \phi(s')^\top w\big).$$
#
# The normaliser $C_d(\kappa)$ depends on κ and d only, not on φ(s'); that is why φ is normalised.
# So with κ = 1 the log-likelihood is a dot product plus a constant, and VISR (Section 4.1 of the
# APS paper) uses it as the reward:
#
# $$r_{\text{VISR}}(s, a, s') = \log q(w \mid s') = \phi(s')^\top w + \text{const}.$$
#
# The same dot product, averaged over replayed (s', w) pairs, is the discriminator's loss; the paper
# writes it for APS, whose φ is trained the same way, as Eq. (5):
#
# $$L = -\,\mathbb{E}_{s', w}\big[\phi(s')^\top w\big]. \tag{5}$$
#
# The loss pulls φ(s') towards the w that produced s'; the reward pays skill w for reaching states
# the discriminator attributes to w. Together they raise a lower bound on the mutual information
# I(s'; w) = H(w) − H(w | s') ≥ H(w) + E[log q(w | s')].
#
# Check the "plus a constant" with SciPy's own von Mises-Fisher density: log q(w | s') − κ φ(s')ᵀw
# should be one number, whatever the centre φ(s') and the point w.
#
# **Predict.** How large will the spread of that difference be over 4 centres and 50 points: about 1,
# about 0.01, or at the precision of float64?

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
# *About 25 minutes.*
#
# `train.pretrain` runs the paper's training loop (its Algorithm 1, which notebook 04a lays out line by line
# for APS) with VISR's reward in place of APS's: a batch of
# environments in lockstep, ε-greedy actions on ψ(s, a, w)ᵀw, replayed n-step windows, one
# gradient step on the TD loss of ψ plus the loss of φ. The environments are built reward-free: the
# level's +1 and +10 never reach the learner. The three lines of the library that make it VISR,
# beside the lines of Algorithm 1 they implement:

# %%
update_source = inspect.getsource(rewards.intrinsic_reward) + inspect.getsource(update.gradient_step)
for step, fragment in (("r = phi(s')^T w            (VISR's reward)", "exploit = vmf_reward("),
                       ("loss_psi = (psi^T w - y)^2  (vector form)", "loss = ((psi_sa - y)"),
                       ("loss_phi = -phi(s')^T w     (Eq. 5)", "vmf = vmf_loss(")):
    line = next(line for line in update_source.splitlines() if fragment in line)
    print(f"Algorithm 1: {step:<44} library: {line.strip()}")

# %% [markdown]
# (The library's ψ loss is the vector form ‖ψ(s, a, w) − y‖², which the paper's scalar
# (ψᵀw − yᵀw)² is a projection of; notebook 04a builds the target y itself, as an exercise.)
#
# One thing differs from the task while pretraining: the target is *absorbing*
# (`TrainConfig.absorbing_target`). Reaching it ends nothing; the agent stays on it until the round
# ends. If +10 ended the episode here too, a skill that found the target would be sent back to a
# start cell at once: "go to the target and stay" could not be a skill, and no w could ask for it
# later. We also keep the set of (position, keys held) states each run visits.
#
# **Predict.** VISR's reward never pays for a new state. After 64,000 reward-free steps, will it have
# visited every state of the easy level (79)? Of the hard level (123)? Will its skills pick up both keys
# of the hard level and reach the target?

# %%
def keep_round(end, run):
    """After each round: the states visited so far, phi of every state of the level, and the replay."""
    run["visited"].update(end.envs.visited)
    run["phi"].append(end.learner.features(end.envs.observation_table))  # (states, d), row = state index
    run["replay"] = end.replay


runs = {}
for level in levels:
    runs[level] = run = {"visited": set(), "phi": []}
    tick = time.perf_counter()
    run["learner"], run["log"] = pretrain("visr", level, pretrain_steps, seed, config,
                                          on_round=lambda end, run=run: keep_round(end, run))
    last, cover = run["log"].metrics[-1], run["log"].coverage
    print(f"{level}: {pretrain_steps:,} env steps in {time.perf_counter() - tick:.0f} s | "
          f"last round: vMF loss {last.get('loss_vmf', float('nan')):.3f} | states visited "
          f"{cover['states_visited']}/{cover['states_reachable']} | keys picked up {cover['keys_picked']} | "
          f"target reached {cover['target_reached']}")

# %% [markdown]
# The vMF loss is 0 when φ(s') is unrelated to w and −1 when it points exactly at w. Each round's value
# is the mean over that round's updates, each on a minibatch drawn from the whole replay so far: that
# data grows and changes as ε decays and the skills change, so the curve is not the score of one fixed
# discriminator on one fixed data set (the cell after the figure measures what that does). Beside it,
# coverage, against a uniformly random policy given as many steps. The first printed lines say which
# way the loss went in this run.

# %%
baseline = {level: random_policy_stats(level, pretrain_steps // gridworld.MAX_EPISODE_STEPS, seed=seed,
                                       progress=False) for level in levels}
fig, (loss_ax, cover_ax) = plt.subplots(1, 2, figsize=(11, 3.8))
for level, style in zip(levels, ("-", "--"), strict=True):
    metrics = runs[level]["log"].metrics
    rows = [row for row in metrics if "loss_vmf" in row]
    first, lowest, final = rows[0]["loss_vmf"], min(row["loss_vmf"] for row in rows), rows[-1]["loss_vmf"]
    trend = "fell" if final < first - 0.01 else "rose" if final > first + 0.01 else "stayed within 0.01"
    print(f"{level}: vMF loss {first:.3f} in the first round with updates, lowest {lowest:.3f}, "
          f"{final:.3f} in the last: it {trend} over pretraining")
    loss_ax.plot([row["env_steps"] for row in rows], [row["loss_vmf"] for row in rows], style, color=VISR,
                 label=f"visr, {level}")
    cover_ax.plot([row["env_steps"] for row in metrics], [row["state_coverage"] for row in metrics], style,
                  color=VISR, label=f"visr, {level}")
    random = baseline[level]
    cover_ax.axhline(random.distinct_states / random.reachable_states, linestyle=style, color="grey",
                     label=f"random policy, {level}")
    visr_states = runs[level]["log"].coverage["states_visited"]
    compared = "more states than" if visr_states > random.distinct_states else \
        "as many states as" if visr_states == random.distinct_states else "fewer states than"
    print(f"{level}: VISR visited {visr_states}, a random policy ({random.episodes} episodes) "
          f"{random.distinct_states} of {random.reachable_states}: VISR visited {compared} the random policy")
loss_ax.set_xlabel("env steps")
loss_ax.set_ylabel(r"vMF loss $-\phi(s')^\top w$")
loss_ax.set_title("discriminator loss per round")
loss_ax.legend(frameon=False)
cover_ax.set_xlabel("env steps")
cover_ax.set_ylabel("fraction of reachable states visited")
cover_ax.set_title("coverage during pretraining")
cover_ax.set_ylim(0, 1.05)
cover_ax.legend(frameon=False, fontsize="small", loc="lower right")
fig.tight_layout()

# %% [markdown]
# ### Why the logged loss can rise
#
# A rising loss need not mean a worse discriminator: the data it is scored on changes. Its pairs are
# (s'_m, w), s'_m the last state of a replayed n-step window (the TD target's window, n = 10 steps here),
# and a window ends early where its env's w is redrawn, every 10 steps. Call the 10 steps one env spends
# under one w a *stretch*: the loss sees one pair per stretch. On N such pairs no unit φ
# goes below a *floor*, reached by giving each state the normalised sum of the w its pairs carry:
#
# $$-\frac{1}{N}\sum_{(s', w)} \phi(s')^\top w \;\ge\; -\frac{1}{N}\sum_{s}
#   \Big\lVert \sum_{(s', w):\, s' = s} w \Big\rVert .$$
#
# A state that ended a few stretches can point φ at their w; one that ended hundreds, of unrelated w,
# cannot. The cell computes the floor on the replay after each round, and the loss of each round's φ on
# one fixed set of pairs, the last round's.

# %%
def vmf_floor(states, ws, num_states):
    """The lowest -mean phi(s')^T w over pairs (states, ws) of any unit phi: -sum_s ||sum of s's w|| / N."""
    sums = torch.zeros(num_states, ws.shape[-1]).index_add_(0, states, ws)
    return float(-sums.norm(dim=1).sum() / len(states))


every = config.task_resample_every
stretches = gridworld.MAX_EPISODE_STEPS // every  # stretches of one w per env and round
floors = {}
for level in levels:
    run = runs[level]
    run["vmf"] = [row["loss_vmf"] for row in run["log"].metrics if "loss_vmf" in row]  # the logged loss
    ends = torch.arange(every - 1, run["replay"].size, every)  # the replay rows where a stretch ends
    states, ws = run["replay"].data["next_obs"][ends], run["replay"].data["w"][ends]  # (stretches, envs)
    fixed = states[-stretches:].flatten(), ws[-stretches:].flatten(0, 1)  # the last round's pairs
    floor, above, held_out = [], [], []
    for k, phi in enumerate(run["phi"], start=1):  # phi after round k, one row per state
        so_far = states[:k * stretches].flatten(), ws[:k * stretches].flatten(0, 1)
        floor.append(vmf_floor(*so_far, len(phi)))
        above.append(float(rewards.vmf_loss(phi[so_far[0]], so_far[1])) - floor[-1])
        held_out.append(float(rewards.vmf_loss(phi[fixed[0]], fixed[1])))
    floors[level] = floor
    print(f"{level}: floor {floor[0]:.3f} after round 1, {floor[-1]:.3f} after round {len(floor)} (each "
          f"round's phi at most {max(above):.3f} above it) | on the last round's pairs {held_out[0]:.3f} "
          f"after round 1, {held_out[-1]:.3f} after round {len(held_out)}")
    rose, floor_rose = run["vmf"][-1] > run["vmf"][0] + 0.01, floor[-1] > floor[0] + 0.01
    improved = held_out[-1] < held_out[0] - 0.01
    print(f"{level}: " + ("the logged loss did not rise in this run" if not rose else
                          "the logged loss rose with its floor while phi improved on fixed pairs: the rise "
                          "is the data's, not a worse discriminator" if floor_rose and improved else
                          "the logged loss rose, and the floor and the fixed pairs do not account for it"))

# %% [markdown]
# **Explain it.** Nothing in φ(s')ᵀw pays for reaching a *new* state. Why can VISR's coverage still
# keep up with a random walk on a small level, and why may it fall behind on a larger one?
#
# <details><summary>Answer</summary>
#
# Early in pretraining ε is close to 1, so VISR *is* a random walk for a while, and thousands of
# randomly drawn w push skills in many directions. But each skill is paid for being
# distinguishable, not for being far away: a skill that parks in a corner of the start room is
# perfectly identifiable. Once ε has decayed, nothing pushes the skills into rooms they rarely
# reach, so on the hard level (two passageways to open) VISR can end up with fewer states than a
# random walk; the lines above say how it went in this run.
# </details>

# %% [markdown]
# ## VISR's pretraining loop, written out (optional)
#
# *About 6 minutes.*
#
# Optional: `train.pretrain` runs this loop; here it is in plain code on the library's pieces (the env
# batch, `Learner.act`, `Learner.update`, `NStepReplay`, each round's seeds). Every round resets the envs
# and each env redraws w on the sphere every `task_resample_every` steps, so every episode starts with a
# fresh w; ε decays linearly over the first half of the budget; each step of the batch goes into the
# replay and, after `learning_starts` steps, is followed by `updates_per_step` updates on n-step windows.
# Drawing its random numbers in the library's order, on one thread as the library does (sums added in
# another order can change the last bits), it should end with the very weights `train.pretrain` gave
# above. It is as slow as that run (the time is printed).

# %%
def visr_pretrain(level, steps, seed, config):
    """VISR's reward-free pretraining, written out: the learner, the mean vMF loss -phi(s')^T w of each
    round with updates, and the coverage."""
    config = train.with_method(config, "visr")
    agent = config.agent
    envs = train.env_batch(level, config, reward_free=True, absorbing_target=config.absorbing_target)
    learner = train.learner_for(envs, agent, seed)  # untrained networks, seeded
    num_envs, horizon = config.num_envs, envs.horizon
    rounds = math.ceil(steps / (num_envs * horizon))
    total = rounds * num_envs * horizon  # the budget rounded up to whole rounds
    obs_shape, obs_dtype = envs.replay_obs
    replay = NStepReplay(rounds * horizon, num_envs, obs_shape, agent.feature_dim, store_rewards=False,
                         obs_dtype=obs_dtype)  # room for every step; reward-free: no reward column
    vmf_per_round = []
    for index in range(rounds):
        reset_seeds, gen = round_seeds(seed, "pretrain", index, num_envs)  # gen: w, actions, minibatches
        obs = envs.reset(reset_seeds)
        losses = []
        for t in range(horizon):
            env_steps = (index * horizon + t) * num_envs
            if t % config.task_resample_every == 0:  # a fresh skill for every env
                w = tasks.sample_tasks(num_envs, agent.feature_dim, gen)
            eps = linear_schedule(config.epsilon_start, config.epsilon_end,
                                  config.epsilon_decay_fraction * total, env_steps)
            action = learner.act(obs, w, eps, gen, gpi=False)  # epsilon-greedy on psi(s, a, w)^T w
            out = envs.step(action, last=t == horizon - 1)  # the round's last step ends every episode
            replay.add(obs=obs, action=action, w=w, next_obs=out["next_obs"], terminated=out["terminated"],
                       ended=out["ended"])
            learner.observe(out["next_obs"])  # the running mean that centres the inputs (02c shows why)
            obs = out["obs"]  # s', or a fresh start where an episode ended
            if env_steps + num_envs > config.learning_starts:
                for _ in range(config.updates_per_step):
                    stats = learner.update(replay.sample(agent.batch_size, agent.n_step, gen))
                    losses.append(float(stats["loss_vmf"]))
        if losses:
            vmf_per_round.append(sum(losses) / len(losses))
    return learner, vmf_per_round, envs.coverage()


tick = time.perf_counter()
with single_thread():  # one thread, as train.pretrain runs
    mine, my_vmf, my_coverage = visr_pretrain("easy", pretrain_steps, seed, config)
library, library_log = runs["easy"]["learner"], runs["easy"]["log"]
theirs = library.state_dict()["modules"]
checks = {"updates": mine.updates == library.updates, "per-round vMF losses": my_vmf == runs["easy"]["vmf"],
          "coverage": my_coverage == library_log.coverage,
          "weights": all(torch.equal(value, theirs[net][name]) for net, values in
                         mine.state_dict()["modules"].items() for name, value in values.items())}
print(f"written out, easy: {pretrain_steps:,} env steps in {time.perf_counter() - tick:.0f} s | updates "
      f"{mine.updates:,} (library {library.updates:,}) | last round's vMF loss {my_vmf[-1]:.4f} (library "
      f"{runs['easy']['vmf'][-1]:.4f}) | states visited {my_coverage['states_visited']} (library "
      f"{library_log.coverage['states_visited']})")
differ = [name for name, same in checks.items() if not same]
loop_verdict = (f"differs from train.pretrain on easy in: {', '.join(differ)}" if differ else
                f"bit-identical to train.pretrain on easy: {', '.join(checks)}")
print(f"the loop written out: {loop_verdict}")

# %% [markdown]
# ## What this run found
#
# *About 2 minutes.*

# %%
for level in levels:
    run, random = runs[level], baseline[level]
    print(f"{level:>5}: states visited in pretraining {run['log'].coverage['states_visited']}/"
          f"{random.reachable_states} (random policy, same steps: {random.distinct_states}) | vMF loss "
          f"{run['vmf'][0]:.3f} -> {run['vmf'][-1]:.3f}, its floor on the replay {floors[level][0]:.3f} -> "
          f"{floors[level][-1]:.3f}")
print(f"the pretraining loop written out: {loop_verdict}")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# ## Summary
#
# *About 3 minutes.*
#
# * VISR's φ is a von Mises-Fisher discriminator: log q(w | s') = κ φ(s')ᵀw + const, so one dot
#   product is both its training signal (Eq. 5) and the skills' reward.
# * A skill w is the greedy policy on ψ(s, a, w)ᵀw. Skills become distinguishable, but nothing in
#   their reward asks them to go anywhere new.
# * The logged vMF loss is scored on the replay as it fills, and the lowest loss any φ could reach there
#   rises as each state collects the w of many stretches; so it can rise while, on one fixed set of
#   pairs, the discriminator's loss falls (the verdict lines say what happened in this run).
#
# **Key equations: VISR** (notation of notebook 01)
#
# * a skill: $w$ uniform on the unit sphere in $\mathbb{R}^d$, redrawn every 10 steps;
# * its reward, the discriminator's log-likelihood with unit $\phi$ and $w$:
#   $r(s, a, s') = \log q(w \mid s') - \text{const} = \phi(s')^\top w$;
# * what trains $\phi$: $L_\phi = -\mathbb{E}_{s', w}\big[\phi(s')^\top w\big]$ (Eq. 5);
# * what trains $\psi$: TD towards
#   $\psi(s, a, w) = \mathbb{E}\big[\sum_{t \ge 0} \gamma^t \phi(s_{t+1})\big]$;
# * acting: $Q(s, a \mid w) = \psi(s, a, w)^\top w$, with GPI $\max_i \psi(s, a, z_i)^\top w$.
#
# **Next.** Notebook 02a gives the pretrained skills a task: a reward, turned into a direction w by least
# squares, which you write. Notebook 02b then watches what single skills do and acts on each level's task
# with the identified w, zero-shot and then fine-tuned, beside the paper's Figure 4.
#
# **Try it.** In the written-out loop, redraw w every 20 steps instead of 10 (its check against the
# library then fails, as it should) and compare the states visited and the vMF loss.
