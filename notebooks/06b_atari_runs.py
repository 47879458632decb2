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
# # 06b · APS on Atari: augmentation, the replay, and real runs
#
# Notebook 06 showed what the agent sees, what the Atari protocol decides and how the frame replay builds
# n-step windows. Here the rest of the pipeline: each sampled batch is augmented, a replay of a million
# pictures must fit in memory, and the whole loop (pretrain without reward, identify the task, score
# zero-shot, fine-tune, score again) runs on the CPU at a toy budget, then on a GPU at the paper's.
#
# After this notebook you will be able to write the **random shift** augmentation; cost a replay of **1M
# transitions**; run the pipeline with `run_atari_sweep` and read its learning curves and **zero-shot**
# and **fine-tuned scores**; and **launch a GPU run** and point this notebook at its results.
#
# **Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first pass.
#
# **How long.** About 61 minutes of study: reading what it says and prints, its figures and the
# exercise; 3 to 6 minutes of compute on a 2-core CPU in teaching mode (the shorter on idle cores), most of
# it the live Breakout sweep (the last cell prints the wall time).

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
curve_games = None  # games whose learning curves section 5 draws, e.g. ("pong",); None: every game read
notebook_start = time.perf_counter()

# %%
import tempfile
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from aps_teach import course
from aps_teach.atari import augment
from aps_teach.atari import plots as atari_plots
from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.experiments import read_run_config
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.scores import reference_scores
from aps_teach.atari.sweep import run_atari_sweep, run_dirs
from aps_teach.course import exercises, fast_mode_banner
from aps_teach.infra.sweeps import read_rows
from aps_teach.studies import atari_study

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
# The augmentation below is shown on a real observation: 40 random steps into a game of the parameters
# cell's `game`, its 4 stacked frames.

# %%
envs = make_vector_env(game, 1, paper, seed, training=True)
envs.reset()
rng = np.random.default_rng(seed)
for _ in range(40):
    envs.step(rng.integers(envs.num_actions, size=1))
obs = envs.obs[0]  # (4, 84, 84) uint8
envs.close()

# %% [markdown]
# ## 1. Augmentation: a random shift, then intensity
#
# *About 22 minutes.*
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
# ## 2. The replay in memory
#
# *About 2 minutes.*
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
# ## 3. A tiny live run on the CPU
#
# *About 10 minutes.*
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
               pretrain_update_period=4, finetune_update_period=4, pretrain_steps=pretrain_steps,
               finetune_steps=finetune_steps,
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
# method); `aps-teach atari sweep` also draws `scores.png` (the figure of section 5).
#
# ## 4. Launching a real run on a GPU
#
# *About 2 minutes.*
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
# ## 5. Reading results: learning curves and scores
#
# *About 9 minutes.*
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
# DQN's row says 5,000 fine-tuning steps against APS's 3,000: a method with no task to identify fine-tunes on
# identification's reward steps too (2,000 + 3,000 here), so that both arms get the same reward steps
# (`reward_steps` in scores.csv).
#
# At the live run's budget both methods score about like random play (normalised scores near 0),
# zero-shot and fine-tuned alike; the paper compares 5M reward-free steps and 100K with rewards, over 26
# games and several seeds. With a real sweep, read the IQM first: the mean is pulled by the one or two
# games far above 1, the median ignores all but the middle game.
#
# ## 6. What learns on two CPU cores: the committed results
#
# *About 8 minutes.*
#
# No GPU was lent for the runs below; they come from the 2-core machine that builds this course, one
# single-threaded run per core (`aps-teach atari sweep`, `aps-teach atari study`). Before them, nothing
# learned an Atari game here: at the paper's fine-tuning learning rate (1e-3), a DQN trained from scratch lost
# every unit of ψ's hidden layer (Q the same in every state, one action played always; the diagnosis is in
# `aps_teach/atari/README.md`). With the rate at 1e-4 for every method, the **learning check** asks whether a
# DQN learns Kung Fu Master at all in 100k reward steps; its protocol was committed before its runs
# (`docs/preregistration/atari_learning_check.md`). Each dot is one seed's evaluation score (the mean raw
# score of the games it finished in 125k steps, ε = 0.05); the line is the training games' score, the band the
# range over seeds.

# %%
check_dir = course.committed_result("atari/learning_check")
check_rows = read_rows(check_dir / "scores.csv")
print_table(read_rows(check_dir / "arms.csv"), ["game", "arm", "seeds", "mean", "low", "high", "scores"])
for row in read_rows(check_dir / "verdicts.csv"):
    welch = f"Welch's [{float(row['welch_low']):+.1f}, {float(row['welch_high']):+.1f}]"
    marginal = ", marginal" if row["marginal"] == "yes" else ""
    print(f"{row['game']}, {row['comparison']}: {atari_study.score_interval(row)} ({welch}): "
          f"{row['reading']}{marginal}")
atari_plots.plot_study_curves(check_dir, check_rows)
plt.show()

# %% [markdown]
# The check passes: DQN's evaluation lies above the random arm's by the registered interval, and Welch's
# interval agrees, so the learner does learn an Atari game on the CPU. It is a plain DQN (the paper's network,
# 10-step double-Q targets); the paper's Table 2 lists data-efficient Rainbow (DER), a stronger from-scratch
# learner, at 14,346 on this game after the same 100k reward steps.
#
# The **first study** (`docs/preregistration/atari_first.md`, committed before its runs) asks whether APS,
# pretrained without reward for 250k steps (one update every 4), then given its task vector and 60k
# fine-tuning steps, scores above DQN trained from scratch on the same 100k reward steps, on Boxing, Kung Fu
# Master and Freeway, seeds 0-2, with a random arm. Its runs take the machine about a day, so they land
# game by game: the cell below reads whatever has landed and says what is still to come.

# %%
try:
    study_dir = course.committed_result("atari/first")
except FileNotFoundError:
    study_dir = None
    print("the first study's results are not committed yet: its runs are under way")
if study_dir is not None:
    study_rows = read_rows(study_dir / "scores.csv")
    registered = ("boxing", "kung_fu_master", "freeway")
    landed = [g for g in registered if {("aps", g), ("dqn", g), ("random", g)} <= {
        (r["method"], r["game"]) for r in study_rows}]
    print(f"games with every arm in: {', '.join(landed) or 'none'}; still to come: "
          f"{', '.join(g for g in registered if g not in landed) or 'none'}")
    print_table(read_rows(study_dir / "arms.csv"), ["game", "arm", "seeds", "mean", "low", "high", "scores"])
    for row in read_rows(study_dir / "verdicts.csv"):
        kind = "primary" if row["primary"] == "True" else "secondary"
        marginal = ", marginal (Welch's interval reads otherwise)" if row["marginal"] == "yes" else ""
        print(f"{kind:>9} {row['game']}, {row['comparison']}: {atari_study.score_interval(row)}: "
              f"{row['reading']}{marginal}")
    atari_plots.plot_study_curves(study_dir, study_rows)
    plt.show()

# %% [markdown]
# **Budgets, side by side.** The paper's Table 2 reports, after 100k reward steps, APS at 36.3 on Boxing,
# 22,412 on Kung Fu Master and 27.1 on Freeway, against DrQ (from scratch) at 6.0, 9,111 and 9.8 and random
# play at 0.1, 258.5 and 0.0; its APS was pretrained for 5M reward-free steps (its table; its text says 250M)
# with one update per step. Ours: 250k reward-free steps at one update every 4, a twentieth of the table's
# steps and an eightieth of its updates, and the same 100k reward steps. Read ours against our own DQN and
# random arms, not against the paper's column: the budgets differ.
#
# ## Summary
#
# *About 2 minutes.*
#
# - Each sampled stack is shifted by up to 4 pixels and its brightness scaled, one draw for its 4 frames;
#   the replay stores single uint8 frames: 7.1 GB per 1M transitions instead of 28 or 56 as stacks.
# - Every run reports a zero-shot score (identified w, GPI over w and 10 fresh tasks) and a fine-tuned one.
# - `run_atari_sweep` / `aps-teach atari sweep` write everything to files; section 5 reads any sweep
#   directory, your GPU runs included.
# - On two CPU cores, DQN from scratch learns Kung Fu Master in 100k reward steps (the pre-registered
#   learning check, section 6); the first study, APS against it, lands game by game.
#
# **Where next.** `aps-teach atari run --help` lists every option; `aps_teach/atari/README.md` has the
# table of the paper's settings with the line each comes from.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
