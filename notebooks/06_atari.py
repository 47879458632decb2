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
# # 06 · APS on Atari: what changes with pixels
#
# The learner is the gridworld's (`aps_teach.learner.agent.Learner`: ψ(s, a, w), φ(s) on the unit sphere,
# the two reward terms, least-squares task inference, GPI). What changes is the world around it:
# observations are pictures, a game has a protocol that decides what a step and an episode are, a replay of
# single frames must rebuild stacks and n-step windows, and the networks are convolutional. This notebook
# takes each change on a real game; notebook 06b augments the batches, sizes the replay, runs the whole
# pipeline on the CPU at a toy budget, and launches and reads a real run on a GPU.
#
# APS pretrains on the paper's equation (6) in notebook 01's notation (the paper writes the first term
# $\phi(s)^\top w$; this course, as the authors' code, evaluates $\phi$ at $s'$, the state reached):
#
# $$r_{\text{APS}}(s, a, s') = \underbrace{\phi(s')^\top w}_{\text{exploitation (4)}} +
#   \underbrace{\log\Big(1 + \frac{1}{k} \sum_{h^{(j)} \in N_k(h)} \lVert h - h^{(j)} \rVert\Big)}_{
#   \text{exploration (2)}}, \qquad h = \phi(s'). \tag{6}$$
#
# After this notebook you will be able to say what the agent **sees** and what the Atari **protocol**
# decides, the **autoreset step** included; read an **n-step window** of the frame replay and compare the
# authors' n-step intrinsic reward with the exact sum; and size the **conv encoder** against the
# gridworld's.
#
# **Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first pass.
#
# **How long.** About 38 minutes of study: reading what it says and prints and its figures; a few
# seconds of compute.

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
game = "breakout"  # short games (a random player loses its 5 lives in ~200 steps), so a game ends quickly
notebook_start = time.perf_counter()

# %%
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import torch

import gridworld
from aps_teach.atari import plots as atari_plots
from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.train import augment_batch
from aps_teach.course import fast_mode_banner
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig

fast_mode_banner(FAST)
paper = AtariConfig()  # every number of the protocol and of training, the paper's defaults


# %% [markdown]
# ## 1. What the agent sees
#
# *About 3 minutes.*
#
# An Atari agent sees the screen brought down to **84×84 grey levels**, and since one picture cannot show
# which way the ball moves, its observation is the **last 4 such frames**, stacked: a uint8 array
# (4, 84, 84). At the start of a game the stack holds zeros in place of the earlier frames.

# %%
envs = make_vector_env(game, 1, paper, seed, training=True)
first_obs = envs.reset().copy()
rng = np.random.default_rng(seed)
for _ in range(40):
    envs.step(rng.integers(envs.num_actions, size=1))
obs = envs.obs[0]
num_actions = envs.num_actions
envs.close()
print(f"{game}: {num_actions} actions; an observation is {obs.dtype} {obs.shape} = {obs.nbytes:,} bytes")
print("zero frames in the first observation of a game:",
      [k for k in range(paper.frame_stack) if not first_obs[0, k].any()])
atari_plots.plot_frames(obs, [f"frame t{k - 3:+d}" if k < 3 else "frame t (newest)" for k in range(4)])
plt.show()

# %% [markdown]
# ## 2. The protocol: what a step and an episode are
#
# *About 9 minutes.*
#
# The numbers live in `AtariConfig` (each field cites its line in the paper; `sources_table()` prints
# them all). The ones that shape what the learner sees:
#
# * **action repeat**: each action is held for 4 emulator frames; the observation is the pixel-wise max
#   of the last two (some games draw sprites on alternate frames only).
# * **no-op starts**: up to 30 no-op frames at each reset, so that a deterministic emulator starts in
#   varied states.
# * **episode cap**: 108,000 frames (30 minutes of play); the episode is truncated there.
# * **a lost life is a terminal transition while training only**; evaluation plays and scores whole
#   games.
# * **no sticky actions**, as in the paper (the Atari 100k setting).
# * **rewards clipped to ±1** for the learner in fine-tuning; scores are always the raw game score.
#
# One more rule is in no table. ale-py's vector environment resets a finished game **on the next step**:
# the step after a game ends ignores the action and returns the first observation of a new game. That
# "transition", from the last screen of one game to the first of the next, is not something the agent
# did; `make_vector_env` marks it `valid=False`. Below, the same random actions with the same seed are
# played under the training protocol (life loss terminal) and under evaluation.

# %%
def play_one_game(training: bool, extra_steps: int = 60):
    """Random play of `game` until the step after the first game's end plus `extra_steps`; every step."""
    envs = make_vector_env(game, 1, paper, seed, training=training)
    envs.reset()
    rng = np.random.default_rng(seed)
    steps, after_end = [], None
    while after_end is None or len(steps) < after_end + extra_steps:
        steps.append(envs.step(rng.integers(envs.num_actions, size=1)))
        if after_end is None and not steps[-1].valid[0]:
            after_end = len(steps)
    envs.close()
    return steps, envs.episode_returns


train_steps, train_returns = play_one_game(training=True)
eval_steps_played, eval_returns = play_one_game(training=False)
autoreset = [t for t, tr in enumerate(train_steps) if not tr.valid[0]]
terminal = {name: [t for t, tr in enumerate(steps[:autoreset[0]]) if tr.terminated[0]]  # the first game
            for name, steps in (("training", train_steps), ("evaluation", eval_steps_played))}
print(f"first game: terminal steps while training {terminal['training']} "
      f"({len(terminal['training'])} terminals), while evaluating {terminal['evaluation']} "
      f"({len(terminal['evaluation'])} terminal)")
print(f"score of the first game (all lives): {train_returns[0]} in both")
assert train_returns[0] == eval_returns[0]  # the same game: the protocols differ only in what is terminal
reset_step = train_steps[autoreset[0]]
print(f"autoreset steps: {autoreset}; its reward {reset_step.reward[0]}, valid {reset_step.valid[0]}, "
      "zero frames in its next observation:",
      [k for k in range(paper.frame_stack) if not reset_step.next_obs[0, k].any()])
atari_plots.plot_frames([reset_step.obs[0, -1], reset_step.next_obs[0, -1]],
                        [f"step {autoreset[0]}: the last screen\nof the ended game",
                         "its 'next' screen:\na new game"])
plt.show()

# %% [markdown]
# Stored as a transition, the autoreset step would teach the learner that a game's final screen leads,
# at no cost, to a fresh one, and a bootstrapped target would carry value from the new game back into the
# old one. The frame replay keeps the row (it holds the next observation of the step before) but never
# samples it. Sample many transitions of the game above and the start of the next: none jumps into the
# new game (the only next observation with 3 zero frames is a new game's first).

# %%
replay = FrameReplay(capacity=len(train_steps) + 8, num_envs=1, frame_shape=(84, 84), stack=4, task_dim=5,
                     store_rewards=True)
w = torch.zeros(1, 5)
for tr in train_steps:
    replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid, reward=tr.reward)
windows = replay.sample(2048, 1, torch.Generator().manual_seed(seed))  # one-step windows: transitions
next_stacks = windows.next_obs[:, 0]  # the s' of each sampled transition
jumps = int((next_stacks[:, :3].flatten(1) == 0).all(1).sum())
print(f"{len(train_steps)} steps stored as {replay.count} rows, "
      f"{int((~replay.data['valid'][:replay.count]).sum())} of them not transitions "
      f"(the autoreset step and the {paper.frame_stack - 1} older frames of the first stack)")
print(f"sampled transitions that jump into a new game: {jumps} of {len(next_stacks)}")
print(f"a replay that stored every step would give about {len(next_stacks) / len(train_steps):.0f} "
      f"(1 step in {len(train_steps)})")

# %% [markdown]
# ## 3. n-step windows, by hand
#
# *About 16 minutes.*
#
# The learner's targets use n-step returns (n = 10 in the paper) over a window of $m \le n$ steps, written
# here in the paper's scalar form, a reward $r$ and the value $\psi^\top w$; the library learns the vector
# form, the cumulant $c$ of notebook 04a in place of $r$ and $\psi$ in place of $\psi^\top w$, over the same
# windows:
#
# $$y_t = \sum_{i=0}^{m-1} \gamma^i r_{t+i} + \gamma^m\, \text{alive}\; \psi(s_{t+m}, a', w)^\top w,
#   \qquad a' = \arg\max_a \psi(s_{t+m}, a, w)^\top w.$$
#
# A window must stop at the end of a game and, while pretraining, where the env's task $w$ was redrawn
# (every 10 steps): a window's return is for one task. The replay returns `mask` (the first $m$ steps
# count), `boot_steps` ($m$) and `boot_alive` (0 after a terminal: nothing is bootstrapped).
#
# A hand case with 1×1 "frames" whose value is the step number + 1 (0 is padding), a stack of 2,
# rewards equal to the step number: game A is steps 0–3 and ends at step 3; step 4 is the autoreset
# step; game B starts at step 5 (its first stack is [0, 6]); w is redrawn at step 8.

# %%
hand = FrameReplay(capacity=16, num_envs=1, frame_shape=(1, 1), stack=2, task_dim=1, store_rewards=True)
game_starts, game_ends, autoreset_steps, num_hand_steps, new_w = {0, 5}, {3}, {4}, 10, 8
for k in range(num_hand_steps):
    stack = [0 if k in game_starts else k, k + 1]  # frame of step k is k + 1
    hand.add(np.array(stack, dtype=np.uint8).reshape(1, 2, 1, 1), np.array([0]), np.full((1, 1), k >= new_w),
             terminated=np.array([k in game_ends]), truncated=np.array([False]),
             valid=np.array([k not in autoreset_steps]), reward=np.array([float(k)], dtype=np.float32))
offset = hand.stack - 1  # the first add also writes the older frames of its stack: step k is row k + 1
starts = [k for k in range(num_hand_steps - 1) if k not in autoreset_steps]
win = hand.gather(torch.tensor(starts) + offset, torch.zeros(len(starts), dtype=torch.long), n_step=4)
print("start  | obs stack | mask         | rewards      | m | alive | bootstrap from")
for i, k in enumerate(starts):
    print(f"step {k} | {win.obs[i].flatten().tolist()}    | {win.mask[i].int().tolist()} | "
          f"{[int(r) for r in win.reward[i] * win.mask[i]]} | {int(win.boot_steps[i])} | "
          f"{bool(win.boot_alive[i])!s:5} | {win.boot_obs[i].flatten().tolist()}")

# %% [markdown]
# Read the rows. From step 0 all four steps are in game A and the last is terminal: m = 4, nothing
# bootstrapped. From step 1 the window stops after step 3 (`mask` [1, 1, 1, 0]): the next step is the
# autoreset step, and game B's stack [0, 6] never enters a target of game A. Game B's windows from steps
# 5–7 stop before step 8, where w changed, and bootstrap from [8, 9]; the window from step 8 is short
# because step 9's next observation is not written yet. The real replay rebuilds its 84×84 stacks the
# same way, zeros included.
#
# **Which reward does a window earn while pretraining?** The paper does not say. Its authors' code
# (rll-research/url_benchmark, `replay_buffer.py` and `agent/aps.py`) computes the intrinsic reward of the
# state n steps ahead only: y = c(s_{t+m}) + γ^m ψ(s_{t+m}), the kNN particles being those B last states.
# That is `AtariConfig.nstep_reward = "last"`, the default here; `"sum"` is the exact
# Σ_{i<m} γ^i c(s_{t+i+1}), φ and the kNN over all B × n window states (task rewards are always summed).
# The cell times one update of each on section 2's frames (paper networks, B = 32, n = 10; CPU time, best
# of 3) and prints the mean of each reward term.

# %%
mode_replay = FrameReplay(capacity=len(train_steps) + 8, num_envs=1, frame_shape=(84, 84), stack=4,
                          task_dim=5, store_rewards=False)
mode_w = torch.nn.functional.normalize(torch.ones(1, 5), dim=1)  # one task: windows cut at episode ends
for tr in train_steps:
    mode_replay.add(tr.obs, tr.action, mode_w, tr.terminated, tr.truncated, tr.valid)
for mode in ("last", "sum"):
    mode_learner = AtariLearner(replace(paper, nstep_reward=mode), "aps", num_actions, seed)
    mode_generator = torch.Generator().manual_seed(seed)
    seconds = []
    for _ in range(3):
        batch = mode_replay.sample(paper.batch_size, paper.n_step, mode_generator, window_obs=mode == "sum")
        started = time.process_time()  # CPU time: steadier than the wall clock on a shared machine
        mode_stats = mode_learner.update(augment_batch(batch, paper, mode_generator, windows=mode == "sum"))
        seconds.append(time.process_time() - started)
    states = paper.batch_size * (paper.n_step if mode == "sum" else 1)
    print(f"{mode:>4}: phi and kNN on {states:3d} states per update, {1e3 * min(seconds):5.0f} CPU ms per "
          f"update; mean reward terms: exploit {float(mode_stats['reward_exploit']):+.3f}, "
          f"explore {float(mode_stats['reward_explore']):.3f}")

# %% [markdown]
# The authors' mode does a tenth of the φ and kNN work per update, yet the update is only about a fifth
# cheaper (the CPU times above): φ and the kNN are a small share of an update, whose cost is mostly ψ's
# and the target network's passes and the backward pass over the 32 sampled windows, the same in both
# modes. ψ also learns from one state's reward per window instead of a discounted sum of up to n
# (`benchmarks/README.md` times pretraining with it). The exploit term near 1 is this cell's doing, not the
# method's: one fresh learner updates three times on windows of one task w, and the vMF loss turns φ of
# these near-identical screens onto that w at once (the printed +0.998 is after the third update of the
# "last" mode). In a run, w is redrawn every 10
# steps and φ must tell the skills apart.
#
# ## 4. The conv encoder
#
# *About 3 minutes.*
#
# φ and ψ read stacks through the conv layers of the paper's tables (32, 64, 64 channels; kernels 8,
# 4, 3; strides 4, 2, 1; 84 → 20 → 9 → 7 pixels a side). φ adds 1024 ELU units and 5 outputs on the
# sphere; ψ has 512 ReLU units and one MLP per feature dimension conditioned on w. Their call
# signatures are the gridworld networks', so `AtariLearner` is `Learner` with other networks.

# %%
def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


level = gridworld.resolve_level("hard")
grid_learner = Learner(AgentConfig(method="aps"), (len(gridworld.LAYER_NAMES), *level.shape), 4, seed)
atari_learner = AtariLearner(paper, "aps", num_actions, seed)
side = paper.conv_output_size()
print(f"conv output: {paper.conv_channels[-1]} x {side} x {side} = {paper.conv_channels[-1] * side ** 2} "
      "features per stack")
print(f"gridworld APS: phi {count(grid_learner.phi):,} parameters, psi {count(grid_learner.psi):,}")
print(f"Atari APS ({game}, {num_actions} actions): phi {count(atari_learner.phi):,} parameters, "
      f"psi {count(atari_learner.psi):,}")
print(f"pixels make phi {count(atari_learner.phi) / count(grid_learner.phi):.0f}x and psi "
      f"{count(atari_learner.psi) / count(grid_learner.psi):.0f}x bigger")

# %% [markdown]
# Most of φ's weights are in its first fully connected layer (3136 × 1024): the conv layers are small,
# the picture they produce is not. And each update runs φ on the sampled next states too (the rewards
# need φ(s'): one per window with `nstep_reward="last"`, every window state with `"sum"`).
#
# ## Summary
#
# *About 1 minute.*
#
# - The learner is the gridworld's; Atari changes the inputs (4 stacked 84×84 grey frames) and the networks
#   (a conv torso, tens of times the parameters).
# - The protocol decides what a transition is: a lost life is terminal while training only, the autoreset
#   step is never one (`valid=False`), and n-step windows stop at a game's end and where w changes. A
#   pretraining window earns its last state's intrinsic reward, as in the authors' code
#   (`nstep_reward="last"`; `"sum"`, the exact sum, does ten times the φ and kNN work).
#
# Next: notebook 06b augments the sampled batches (an exercise), sizes the replay, runs APS and DQN on
# Breakout on the CPU at a toy budget, and launches and reads a real run on a GPU.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
