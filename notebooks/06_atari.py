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
# # 06 · APS on Atari: the same learner on pixels
#
# The learner is the gridworld's (`aps_teach.learner.agent.Learner`: ψ(s, a, w), φ(s) on the unit sphere,
# the two reward terms, least-squares task inference, GPI). What changes is the world around it:
# observations are pictures, a game has a protocol that decides what a step and an episode are, the
# networks are convolutional, sampled batches are augmented, and a replay of a million pictures must fit
# in memory. This notebook takes each change on a real game, runs the whole pipeline on the CPU at a toy
# budget, and shows how to launch and read a real run on a GPU.
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
# authors' n-step intrinsic reward with the exact sum; size the **conv encoder** and write the **random
# shift** augmentation; cost a replay of **1M transitions**; run the pipeline with `run_atari_sweep` and
# read its learning curves and **zero-shot** and **fine-tuned scores**; and **launch a GPU run**.
#
# **How long.** About 57 minutes of study: reading what it says and prints, its figures and the exercise;
# about a minute of compute on a 2-core CPU in teaching mode, most of it the live Breakout sweep, longer
# on a busy machine.

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
game = "breakout"  # short games (a random player loses its 5 lives in ~200 steps), so scores come quickly
methods = ("aps", "dqn")  # the live run: APS (pretrain, identify w, fine-tune) and the DQN baseline
pretrain_steps = 400 if FAST else 6_000  # reward-free env steps of the live run (the paper: 5M)
finetune_steps = 200 if FAST else 3_000  # env steps on the game's reward (the paper: 60K)
identify_steps = 400 if FAST else 2_000  # env steps of rollouts for task identification (the paper: 40K)
eval_steps = 800 if FAST else 8_000  # env steps of evaluation games (the paper: 125K)
num_envs = 2 if FAST else 8  # games stepped together
max_frames_per_episode = 800 if FAST else 108_000  # fast mode cuts games short so that some end
results_dir = None  # a sweep directory (the OUT of `aps-teach atari sweep`) to read instead of the live run
curve_games = None  # games whose learning curves section 9 draws, e.g. ("pong",); None: every game read
notebook_start = time.perf_counter()

# %%
import tempfile
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

import gridworld
from aps_teach.atari import augment
from aps_teach.atari import plots as atari_plots
from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.experiments import read_run_config
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.scores import reference_scores
from aps_teach.atari.sweep import run_atari_sweep, run_dirs
from aps_teach.atari.train import augment_batch
from aps_teach.course import exercises, fast_mode_banner
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig

fast_mode_banner(FAST)
paper = AtariConfig()  # every number of the protocol and of training, the paper's defaults


def cell(value) -> str:
    """A table cell: numbers with a decimal point to 3 decimals, anything else as it is."""
    try:
        return f"{float(value):.3f}" if "." in str(value) else str(value)
    except ValueError:
        return str(value)


def print_table(rows, columns):
    """Rows (dicts) as an aligned text table of the given columns."""
    text = [[str(c) for c in columns]] + [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in text) for i in range(len(columns))]
    for line in text:
        print("  ".join(value.rjust(width) for value, width in zip(line, widths, strict=True)))


# %% [markdown]
# ## 1. What the agent sees
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
# The learner's targets use n-step returns (n = 10 in the paper) over a window of $m \le n$ steps:
#
# $$y_t = \sum_{i=0}^{m-1} \gamma^i r_{t+i} + \gamma^m\, \text{alive}\; \psi(s_{t+m}, a', w),
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
# The authors' mode does a tenth of the φ and kNN work per update, and ψ learns from one state's reward
# per window instead of a discounted sum of up to n (`benchmarks/README.md` times pretraining with it).
#
# ## 4. The conv encoder
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
# ## 5. Augmentation: a random shift, then intensity
#
# With pixels a learner can overfit to exact positions. Each sampled stack is **shifted** by up to 4
# pixels (the picture padded with copies of its border, then an 84×84 window cropped at offsets drawn
# uniformly, `augment.random_shift`) and its brightness **scaled** by a random factor near 1. One draw per
# stack: the 4 frames move together.

# %%
generator = torch.Generator().manual_seed(seed)
stack = torch.from_numpy(obs)[None]  # (1, 4, 84, 84)
shifted = augment.shift(stack, torch.tensor([0]), torch.tensor([2 * paper.shift_pad]), paper.shift_pad)
both = augment.intensity(shifted, scale=0.3, generator=generator)  # 0.3 to make it visible (paper: 0.05)
atari_plots.plot_frames([stack[0, -1], shifted[0, -1], both[0, -1]],
                        ["frame", "shifted down 4, left 4", "then intensity x"
                         f"{float(both[0, -1].sum() / shifted[0, -1].float().sum()):.2f}"])
plt.show()

# %% [markdown]
# **Exercise: the random shift.** Write `my_shift(x, dy, dx, pad)`: `x` is a (B, S, H, W) batch of
# stacks, `dy` and `dx` are (B,) integer offsets in $[0, 2\,\text{pad}]$. Pad every side of every image by
# `pad` copies of its border pixels, then crop the H×W window whose top-left corner is row `dy[b]`,
# column `dx[b]` of the padded image. In one formula, with $\text{clip}$ to the image's rows and columns,
#
# $$\text{out}[b, :, i, j]
#   = x\big[b, :, \text{clip}(i + dy_b - \text{pad}),\ \text{clip}(j + dx_b - \text{pad})\big].$$
#
# It must work on uint8 frames and on floats, on non-square images and with pad 0. The checker compares
# yours with the library's on such cases; until yours passes, `shift` below is the library's.
# After a wrong attempt, `my_shift(*exercises.failing_case("shift"))` calls yours on the inputs it got
# wrong; once you have tried, `exercises.solution("shift")` shows a solution.
#
# <details><summary>A hint, if you want one</summary>
#
# PyTorch can pad with copies of the border; look at the `mode` argument of `torch.nn.functional.pad`.
# Or build the clipped row and column indices of the formula and index with them.
#
# </details>

# %%
def my_shift(x, dy, dx, pad):
    raise NotImplementedError  # your code


shift = exercises.check_shift(my_shift)

# %% [markdown]
# ## 6. The replay in memory
#
# The paper's replay is unbounded: 5M pretraining steps. Storing each transition as (stack, next stack)
# repeats every frame 8 times; the frame replay stores each frame once, with the step's action, w and
# flags, and rebuilds stacks by index. `FrameReplay.bytes_per_transition` counts the bytes (a stack of 4
# frames counts as a frame 4 times as tall).

# %%
frame = (paper.frame_size, paper.frame_size)
layouts = {"single frames (FrameReplay)": frame,
           "one stack per transition": (4 * paper.frame_size, paper.frame_size),
           "obs + next obs stacks": (8 * paper.frame_size, paper.frame_size)}
for name, shape in layouts.items():
    per = FrameReplay.bytes_per_transition(shape, paper.feature_dim, store_rewards=True)
    print(f"{name:>28}: {per:,} bytes per transition, 1M transitions: {per * 1e6 / 1e9:.2f} GB")

# %% [markdown]
# 7.1 GB fits on one 16 GB GPU next to the networks; 28 GB or 56 GB would not. A run checks its device's
# free memory first and says so if the replay would not fit (`--atari.replay-capacity` bounds it).
#
# ## 7. A tiny live run on the CPU
#
# The whole pipeline, per method: pretrain without rewards (not DQN), identify w by least squares on
# rollouts with the game's reward (VISR, APS) and score the agent **zero-shot** under it (GPI over w and
# 10 fresh tasks, as the paper does), then fine-tune ψ on the clipped reward and score it again (GPI off).
# `run_atari_sweep` runs games × methods × seeds, a run directory each, and writes the score files. The
# networks are shrunk (8 channels per conv layer, 64 hidden units; n = 3) to fit a CPU.
#
# **These budgets are far too small for the scores to mean anything**: thousands of steps where the
# paper uses millions. This section shows the loop and the files it writes, not a result.

# %%
live = replace(paper, conv_channels=(8, 8, 8), psi_hidden=64, phi_hidden=64, n_step=3,
               batch_size=16 if FAST else 32, min_replay_size=64 if FAST else paper.min_replay_size,
               update_period=4, pretrain_steps=pretrain_steps, finetune_steps=finetune_steps,
               epsilon_decay_steps=min(paper.epsilon_decay_steps, pretrain_steps // 2),
               task_id_steps=identify_steps, eval_steps=eval_steps,
               max_frames_per_episode=max_frames_per_episode)
# one torch thread: small networks gain little from more, and the timing stays steady on a shared machine
train_config = AtariTrainConfig(atari=live, num_envs=num_envs, log_every=max(pretrain_steps // 10, num_envs),
                                checkpoint_every=10 ** 9, threads=1, progress=False, tensorboard=False)
live_dir = Path(tempfile.mkdtemp(prefix="aps-teach-atari-"))
print(f"live run: {game}, methods {', '.join(methods)}, 1 seed: {pretrain_steps} reward-free steps, "
      f"{finetune_steps} fine-tuning steps, {eval_steps} evaluation steps, {num_envs} envs -> {live_dir}")
if results_dir is None:
    started = time.perf_counter()
    report = run_atari_sweep([game], methods, 1, train_config, live_dir, progress=False)
    print(f"finished {sorted(report.completed)} in {time.perf_counter() - started:.0f} s; "
          f"failures: {dict(report.failures) or 'none'}")
else:
    print(f"skipped: reading {results_dir} instead")

# %%
sweep_dir = Path(results_dir) if results_dir is not None else live_dir
for path in sorted(sweep_dir.rglob("*")):
    if path.is_file() and "tensorboard" not in path.parts and path.name != ".lock":
        print(f"{str(path.relative_to(sweep_dir)):<48} {path.stat().st_size:>10,} bytes")

# %% [markdown]
# Each run directory holds `config.json` (everything needed to resume or re-run it), `pretrain/` and
# `finetune/` (`metrics.csv`, a row per `log_every` env steps; `checkpoint.pt`), `task.json` (the
# identified w) and `scores.csv`. The sweep adds `scores.csv` (one row per run) and `summary.csv` (per
# method); `aps-teach atari sweep` also draws `scores.png` (the figure of section 9).
#
# ## 8. Launching a real run on a GPU
#
# The same code runs on CUDA: give `--device cuda`. One run at the paper's settings (5M pretraining
# steps, then 40K steps of task identification, 60K of fine-tuning, 125K of evaluation):
#
# ```bash
# aps-teach atari run --out runs/pong-aps --game Pong --method aps --device cuda
# ```
#
# After a stop, the same command with `--resume` continues from the last checkpoint (weights, optimiser,
# counters, random state; written every `--checkpoint-every` env steps). A sweep over games, methods and
# seeds:
#
# ```bash
# # this machine: one run per visible GPU at a time (--gpus 0 1 to choose them)
# aps-teach atari sweep --out results/atari --games atari26 --methods aps dqn --seeds 3 --device cuda
# # a Ray cluster (after `ray start` on each machine): one GPU per run
# aps-teach atari sweep --out results/atari --games atari26 --methods aps dqn --seeds 3 --device cuda \
#     --executor ray --ray-address auto
# ```
#
# Given again, the same sweep command skips finished runs and resumes unfinished ones. Budgets are
# options (`aps-teach atari sweep --help`).
#
# **On Colab**: Runtime → Change runtime type → a GPU; then in a cell
#
# ```
# %pip install "aps-teach @ git+https://github.com/aps-teach/aps-teach@v0.1.0"
# !aps-teach atari run --out /content/runs/pong-aps --game Pong --method aps --device cuda \
#     --atari.pretrain-steps 500000 --atari.replay-capacity 1000000
# ```
#
# A Colab session ends after some hours, and its disk with it: write `--out` to a mounted Google Drive
# folder and give the same command with `--resume` in a new session.
#
# ## 9. Reading results: learning curves and scores
#
# Everything below reads files only: set `results_dir` in the parameters cell to the `--out` of your GPU
# sweep and run from there; without it, it reads the live run above. First the pretraining curves from
# each run's `pretrain/metrics.csv` (DQN has none): APS's two reward terms and the SF loss, one figure
# per game (`curve_games` chooses them).

# %%
run_games = sorted({read_run_config(d)[1] for d in run_dirs(sweep_dir)})  # unfinished runs too
for rom in curve_games or run_games:
    fig = atari_plots.plot_atari_curves(sweep_dir, ["reward_explore", "reward_exploit", "loss_sf"],
                                        phase="pretrain", games=[rom])
    fig.suptitle(f"{rom}: pretraining", y=1.02)
    plt.show()

# %% [markdown]
# Read the SF loss as a TD error, not as a score: ψ grows from near 0 towards the discounted sum of
# unit-norm features (up to 1/(1 − γ) = 100 per dimension) and its bootstrapped targets grow with it, so
# its squared error can rise without anything diverging. Only a loss that kept rising once ψ's scale had
# settled would be a problem; about 1,500 updates (6,000 steps, one update per 4) are too few to tell.
#
# Fine-tuning: the mean raw score of the games that ended in each logging interval (training protocol,
# ε-greedy), and the SF loss on the clipped reward; APS's ψ predicts 5 dimensions, DQN's one value, so
# the two losses are not on one scale.

# %%
for rom in curve_games or run_games:
    fig = atari_plots.plot_atari_curves(sweep_dir, ["score", "loss_sf"], phase="finetune", games=[rom])
    fig.suptitle(f"{rom}: fine-tuning", y=1.02)
    plt.show()

# %% [markdown]
# The score table: per run, its zero-shot row (`checkpoint` pretrain; APS and VISR) and its fine-tuned
# row, each with the mean score of the finished evaluation games and its human-normalised value
# (score − random) / (human − random). Then the aggregates over games per method and checkpoint (each
# game the mean of its seeds): mean, median, interquartile mean (IQM, the mean of the middle half) and
# how many games are above human.

# %%
scores = read_rows(sweep_dir / "scores.csv")
print_table(scores, ["method", "game", "seed", "checkpoint", "gpi", "finetune_steps", "games", "score",
                     "human_normalised"])
for rom in sorted({row["game"] for row in scores}):
    random_score, human_score = reference_scores(rom)
    print(f"{rom}: random play {random_score}, human {human_score}")
print()
print_table(read_rows(sweep_dir / "summary.csv"), ["method", "checkpoint", "games", "mean", "median", "iqm",
                                                   "superhuman"])
atari_plots.plot_atari_scores([{**row, "method": f"{row['method']} zero-shot"}
                               if row["checkpoint"] == "pretrain" else row for row in scores])
plt.show()

# %% [markdown]
# At the live run's budget both methods score about like random play (normalised scores near 0),
# zero-shot and fine-tuned alike; the paper compares 5M reward-free steps and 100K with rewards, over 26
# games and several seeds. With a real sweep, read the IQM first: the mean is pulled by the one or two
# games far above 1, the median ignores all but the middle game.
#
# ## Summary
#
# - The learner is the gridworld's; Atari changes the inputs (4 stacked 84×84 grey frames), the networks
#   (a conv torso, tens of times the parameters), the batches (random shift and intensity) and the replay
#   (single uint8 frames: 7.1 GB per 1M transitions instead of 28 or 56).
# - The protocol decides what a transition is: a lost life is terminal while training only, the autoreset
#   step is never one (`valid=False`), and n-step windows stop at a game's end and where w changes. A
#   pretraining window earns its last state's intrinsic reward, as in the authors' code
#   (`nstep_reward="last"`; `"sum"`, the exact sum, does ten times the φ and kNN work).
# - Every run reports a zero-shot score (identified w, GPI over w and 10 fresh tasks) and a fine-tuned one.
# - `run_atari_sweep` / `aps-teach atari sweep` write everything to files; section 9 reads any sweep
#   directory, your GPU runs included.
#
# **Where next.** `aps-teach atari run --help` lists every option; `aps_teach/atari/README.md` has the
# table of the paper's settings with the line each comes from.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
