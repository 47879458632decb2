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
# # 02c · VISR on any task: paint a reward, act zero-shot
#
# The key levels give VISR one task each. The promise of successor features is more: pretrain once
# without reward, then serve *any* task whose reward is close to linear in φ, by least squares and
# GPI, without training. This notebook tests that promise on an open maze where you paint the task.
#
# **After this notebook you can**
#
# * say why the networks read centred observations, and see what raw one-hot boards do to φ's units;
# * paint a reward map, infer its w, and read the fit's R² beside the policy's score;
# * score a zero-shot policy between a random policy (0) and the optimum (1), both exact by
#   dynamic programming, and set one painted task beside the committed transfer benchmark.
#
# **Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first pass.
#
# **How long.** About 37 minutes of study: reading what it says and prints, its figures, predictions and
# questions, and painting a task; about a minute of compute in its committed run, on a quiet 2-core CPU. It
# follows notebooks 02 and 02a (VISR's discriminator, skills, task inference) and 02b (zero-shot and
# fine-tuning on the key levels).
#
# **What reproduces.** The paper tests transfer on Atari, not on mazes; this benchmark is the
# course's own. The committed results (printed below) say VISR lands about half to two thirds of the
# way from random to optimal on box tasks it never saw, with every interval above 0.

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
pretrain_steps = 3_200 if FAST else experiments.DEFAULT_PRETRAIN_STEPS  # reward-free env steps per learner
identify_steps = 3_200 if FAST else experiments.DEFAULT_IDENTIFY_STEPS  # env steps of (phi, r) pairs
eval_episodes = 8 if FAST else experiments.DEFAULT_EVAL_EPISODES  # greedy episodes scoring the painted task
maze = "open10"  # the maze to paint on: "open10" or "fourroom"
seed = 0

# %%
import time
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np

import gridworld
from aps_teach import course
from aps_teach.course.widgets import zero_shot_painter
from aps_teach.grid import plots, transfer
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.infra.sweeps import read_rows

course.fast_mode_banner(FAST)
config = TrainConfig(progress=not FAST)  # the library's defaults
started = time.perf_counter()
for name in gridworld.MAZES:
    row = transfer.summarise_transfer(read_rows(course.committed_result(f"transfer/visr-{name}.csv")))
    print(f"committed transfer, visr on {name}: normalised score {row['normalised_score']:.2f} "
          f"[{row['score_low']:.2f}, {row['score_high']:.2f}] over {row['tasks']} tasks x {row['seeds']} "
          f"seeds ({row['rows']} pairs) | mean R^2 {row['mean_r2']:.2f} | interval above 0: "
          f"{row['score_low'] > 0}")

# %% [markdown]
# ## Why the networks read centred inputs
#
# *About 14 minutes.*
#
# The observation is a one-hot board, one channel per kind of object. About 100 of the maze's 800
# entries (walls, floor) are on in *every* state and only a handful differ between states. Fed raw,
# the always-on entries dominate every first-layer activation and Adam moves their weights
# together; a ReLU unit pushed below zero on one state tends to be below zero on all of them, and
# then it gets no gradient ever again. By default the networks read
#
# $$x = \text{board} - m,$$
#
# m the running mean of the observations trained on, and only the board entries that vary between
# the level's states (`aps_teach.learner.inputs`): what reaches φ is what tells states apart. What that buys
# is measured below, not assumed: the units raw boards kill, and, in the next section, whether their loss
# costs a painted task.
#
# Pretrain VISR on the maze twice, reward-free, exactly as in notebook 02: once with the default,
# once with `AgentConfig.normalise_observations` switched off. `transfer.dead_units` counts φ's
# hidden units that output 0 on every state of the maze; `transfer.feature_spread` is the mean over
# dimensions of φ's standard deviation across cells (0: φ is one vector everywhere).
#
# **Predict.** How many of φ's 128 hidden units will be dead after pretraining on raw boards, and on
# centred inputs? Will the raw network's φ still tell the cells apart?

# %%
maze_layout = transfer.maze_layout(maze)
maze_task_free = transfer.maze_env(maze, np.zeros(maze_layout.shape), gridworld.MAX_EPISODE_STEPS)
learners, dead, spread = {}, {}, {}
for inputs, centred in (("centred inputs", True), ("raw boards", False)):
    variant = replace(config, agent=replace(config.agent, normalise_observations=centred))
    tick = time.perf_counter()
    learners[inputs], log = pretrain("visr", maze_task_free, pretrain_steps, seed, variant)
    dead[inputs] = transfer.dead_units(learners[inputs], maze)
    spread[inputs] = transfer.feature_spread(learners[inputs], maze_layout)
    print(f"{maze}, {inputs}: pretrained in {time.perf_counter() - tick:.0f} s | states visited "
          f"{log.coverage['states_visited']}/{log.coverage['states_reachable']} | spread of phi over the "
          f"cells {spread[inputs]:.4f} | hidden units of phi dead on every state: {dead[inputs]} of "
          f"{config.agent.hidden}")
print(f"raw boards left more of phi's units dead than centred inputs: "
      f"{dead['raw boards'] > dead['centred inputs']}")
spread_kept = spread["raw boards"] >= 0.8 * spread["centred inputs"]
print(f"raw boards kept phi's spread over the cells (at least 80% of the centred one's): {spread_kept}: "
      + (f"the {config.agent.hidden - dead['raw boards']} units still alive separate the cells"
         if spread_kept else "the surviving units no longer separate the cells as well"))

# %% [markdown]
# **Explain it.** A dead unit is capacity lost for good. What happens to VISR once *all but a few*
# of φ's units are dead?
#
# <details><summary>Answer</summary>
#
# While the units still alive separate the cells, φ keeps working with fewer units; that is what
# the spread above measures, and the line under it says whether that was so in this run. If they died
# too, φ would be a constant: every skill's reward φ(s')ᵀw the same everywhere, nothing to tell skills
# apart, and ψ one behaviour for all of them. That state is self-consistent, since with a constant φ
# the vMF loss and the gradient that would spread φ out both vanish on average over w. Dead units are
# capacity lost with no way back, so the raw network is one bad stretch of training away from it even
# when, as the printed spread may show, it still works today. This notebook does not show that collapse:
# on this maze and seed the raw network keeps its spread and, below, scores the painted task about as well.
# The docstring of `aps_teach.learner.inputs` records an earlier version of this library that fed raw
# boards and ended there on this maze; the centring is kept as insurance against it, at no measured cost.
# </details>
#
# ## Paint a task
#
# *About 17 minutes.*
#
# A reward map pays R[cell] at every step for the cell the agent is on; episodes run to the step
# limit and start anywhere. With a widget frontend (Jupyter, Colab) toggle cells in the grid (each
# gets the value in the "reward" box) and press **infer w and act**; elsewhere, and in the saved
# notebook, edit `painted_cells` and rerun the cell. `widgets.zero_shot_painter` runs
# `transfer.zero_shot_on_reward_map`: identification data on the painted task, least squares for w
# (notebook 02a's `infer_task`: the fit's coefficients c, the reward it believes φ(s')ᵀc, and
# w = c / ‖c‖) and its R², then the value map max_a ψ(s, a, w)ᵀw and one greedy GPI
# episode, side by side.

# %%
painted_cells = [((row, col), 1.0) for row in (1, 2, 3) for col in (8, 9, 10)]  # a corner, 3 x 3
painter = zero_shot_painter(learners["centred inputs"], maze, painted_cells, seed=seed,
                            identify_steps=identify_steps, config=config)
shot = painter.shot
print(f"reward seen during identification: {shot.fit.identified} | R^2 = {shot.fit.r2:.3f} | greedy GPI "
      f"episode: return {shot.rollout.total_reward:g}, {len(set(shot.rollout.positions))} distinct cells: "
      + ("it never stood on a painted cell" if shot.rollout.total_reward == 0 else
         "it collected the painted reward"))
moves, counts = np.unique(shot.action[np.isfinite(shot.action)], return_counts=True)
print("greedy action of policy w, cells per action:",
      {gridworld.ACTIONS[int(move)]: int(count) for move, count in zip(moves, counts, strict=True)})

# %% [markdown]
# How good is that? `transfer.transfer_task` scores the same task over `eval_episodes` greedy GPI
# episodes from uniform start cells, against exact references by dynamic programming: the best
# possible expected return and a uniformly random policy's. The normalised score is
#
# $$\text{score} = \frac{G - G_{\text{random}}}{G_{\text{optimal}} - G_{\text{random}}},$$
#
# 0 for random, 1 for optimal. G is a mean over `eval_episodes` sampled episodes while the references
# are expected returns, so a policy that is optimal can score a little above 1 by chance. Both
# learners, centred and raw, are scored on the painted task.
#
# **Predict.** Will the network with most of its units dead score clearly below the centred one on
# this task?

# %%
references = transfer.task_references(maze_layout, shot.reward_map, gridworld.MAX_EPISODE_STEPS)
scores = {}
for inputs, learner in learners.items():
    row = transfer.transfer_task(learner, maze, shot.reward_map, seed, references=references,
                                 identify_steps=identify_steps, eval_episodes=eval_episodes, config=config)
    scores[inputs] = row["normalised_score"]
    print(f"{inputs}: return {row['return']:.2f} | optimal {row['optimal_return']:.2f} | random "
          f"{row['random_return']:.2f} | normalised score {row['normalised_score']:.3f} | "
          f"R^2 {row['r2']:.3f}")
gap = scores["centred inputs"] - scores["raw boards"]
print(f"centred minus raw, normalised score: {gap:+.3f}: "
      + ("alike (within 0.05): the dead units did not cost this task" if abs(gap) <= 0.05 else
         "centred inputs score higher" if gap > 0 else "raw boards score higher"))

# %% [markdown]
# One painted task is one sample. The committed benchmark ran random box tasks (two 3 × 3 boxes
# paying 1 per step), 20 on each of 5 seeds (printed at the top): 100 (task, seed) pairs; here is where
# your task's score falls among them. Yours is one box, theirs two, so the ranking sets a task of another
# kind among them: a placing, not a like-for-like comparison.
#
# **Predict.** Is one corner box an easy or a hard task compared with the benchmark's?

# %%
committed_scores = [float(row["normalised_score"])
                    for row in read_rows(course.committed_result(f"transfer/visr-{maze}.csv"))]
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.hist(committed_scores, bins=np.linspace(min(-0.2, min(committed_scores)), 1.05, 26),
        color=plots.METHOD_COLOURS["visr"], alpha=0.7,
        label=f"committed: {len(committed_scores)} (task, seed) pairs, two boxes each")
for (inputs, score), style in zip(scores.items(), ("-", ":"), strict=True):
    ax.axvline(score, color="black", linestyle=style, label=f"your painted task, {inputs}")
ax.axvline(0, color="grey", linewidth=1)
ax.set_xlabel("normalised score (0 random, 1 optimal)")
ax.set_ylabel("tasks")
ax.set_title(f"VISR zero-shot on {maze}")
ax.legend(frameon=False, fontsize="small", loc="upper left")
fig.tight_layout()
below = sum(s < scores["centred inputs"] for s in committed_scores)
print(f"your task (centred inputs) scores above {below} of {len(committed_scores)} committed (task, seed) "
      "pairs of two-box tasks")
print(f"whole notebook: {time.perf_counter() - started:.0f} s")

# %% [markdown]
# **Explain it.** R² and the score measure different things. Which, and how can a task have a low R²
# and still a high score?
#
# <details><summary>Answer</summary>
#
# R² says how much of the painted reward's variance a linear function of φ explains *on the
# identification data*, where random skills went. The score says whether the policy of the fitted
# w, with GPI, then collects the reward from anywhere on the maze. A sparse reward (a few painted
# cells among 100) is mostly zeros, which a linear fit explains poorly, but the *direction* of w can
# still point at the painted corner; since skills were trained to reach the states that maximise
# φ(s')ᵀw, that direction is all the policy needs.
# </details>
#
# ## Summary
#
# *About 2 minutes.*
#
# * The networks read centred observations on the entries that vary. On raw one-hot boards many of
#   φ's units die. The verdict lines above say whether the survivors still separated the cells in
#   this run and how the two networks' scores compared; a network with every unit dead would have a
#   constant φ and follow no task, so dead units are a risk carried even where they cost nothing yet.
# * Any reward map becomes a task: identification data, least squares for w, and GPI. The R² of
#   the fit and the normalised score between random and optimal say how linear the task is in φ and
#   how well the policy does.
#
# **Next.** Notebook 03 builds APT's reward, a particle estimate of entropy; 04 combines it with
# VISR into APS; the painter above takes an APS learner as well (`zero_shot_painter(learner, maze)`).
#
# **Try it.** Paint a stripe across the maze, or a task in two far corners, and watch R² and the
# score; set `maze = "fourroom"` in the parameters cell.
