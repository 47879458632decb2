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
# # 04d · Capstone: APS on a reward you wrote, judged where exploring matters
#
# You have every piece APS is made of (notebooks 04 and 04a). Here you write the two that are APS's own, its
# reward (Eq. 6) and the von Mises–Fisher loss that trains $\phi$ (Eq. 5), train an agent on them, and
# have a judge look at the *agent*, not at your code. The judge works on the deep level, the three-room
# level of notebook 00 where a uniform random walk leaves about half of the states unvisited, so that
# exploring has something to win. Then you test the judge itself: can it fail a reward that lacks one of
# Eq. 6's two terms? And you meet a setting of the authors' code, the running distance normaliser, that
# changes the balance of the two terms.
#
# **What you will be able to do.** Write APS's reward and vMF loss and train APS on them; read a judge
# of the trained agents (exploration against a control trained on the same seed without the exploration
# term, skills told apart, on three seeds) and say which mistakes it sees and which it cannot; explain why
# the vMF loss makes skills recognisable whatever the reward pays; and show, with measured reward scales,
# that the kNN distance normaliser is a weight in disguise.
#
# **How long.** About 81 minutes of study: reading what it says and prints, its figure, predictions and
# questions, two functions to write and about six and a half minutes of compute on a 2-core CPU in teaching
# mode, nearly four of them the capstone cell, which trains again at each attempt; longer on a busy machine
# (the last cell prints this run's time; the README's course table says how study time is counted). Notebooks
# 05, 05b and 05c follow with the ablations.

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

from aps_teach.grid import experiments

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
seeds = (3, 4, 5)  # the judge's seeds (capstone.JUDGED_SEEDS)
seed = 0  # the normaliser section's seed, one of the seeds 0-2 its prose quotes
# reward-free env steps per agent; random-w rollouts for task inference; greedy episodes per evaluation:
# the library's defaults (those the judge's thresholds were chosen at) unless FAST
pretrain_steps = 800 if FAST else experiments.DEFAULT_PRETRAIN_STEPS
identify_steps = 800 if FAST else experiments.DEFAULT_IDENTIFY_STEPS
eval_episodes = 8 if FAST else experiments.DEFAULT_EVAL_EPISODES
learning_starts = 400 if FAST else 1_600  # env steps before the first update (the library's: 1600)
notebook_start = time.perf_counter()

# %%
from aps_teach import course

course.fast_mode_banner(FAST)

# %%
import matplotlib.pyplot as plt

from aps_teach.course import capstone, exercises
from aps_teach.grid.train import TrainConfig, evaluate, identify_task, pretrain
from aps_teach.studies.probes import late_reward_terms

config = TrainConfig(progress=False, learning_starts=learning_starts)

# %% [markdown]
# ## Capstone: APS on a reward you wrote
#
# *About 64 minutes.*
#
# Write the two functions:
#
# * `my_aps_reward(phi, w, h, k)`: Eq. 6 with both weights 1, for a batch of $B$ reached states whose
#   $h$ rows are also the particles. `phi` and `w` are (B, d) unit rows, `h` is (B, d_h); return (B,):
#
# $$r_i = \phi_i^\top w_i + \log\Big(1 + \frac{1}{k} \sum_{j \in \mathrm{N}_k(i)}
# \lVert h_i - h_j \rVert\Big),$$
#
#   with $\mathrm{N}_k(i)$ the $k$ rows of `h` nearest to row $i$, row $i$ itself left out.
# * `my_vmf_loss(phi, w)`: Eq. 5 on the batch, the scalar $-\frac{1}{B} \sum_i \phi_i^\top w_i$.
#
# `capstone.train_your_aps` compares both with the library on random inputs (the usual one-line
# coaching), then pretrains APS on the deep level with the parameters cell's budget **on your functions**,
# even a wrong one, so that you see what it does, once on each of three seeds. Beside each agent it trains a
# *control* on the same seed: the same vMF loss, but the reward $\phi(s')^\top w$ alone (VISR's), so the
# pair differs in the exploration term and nothing else. It judges the agents on two things:
#
# * **explores**: the visitation entropy of pretraining (0 when one state takes every visit, 1 when all
#   are visited equally) is above the control's on every seed, and by at least 0.01 on average
#   (`capstone.EXPLORE_GAIN`);
# * **skills recognisable**: on every seed, over states $s'$ from its replay, $\phi(s')^\top w$ with the
#   skill $w$ that reached $s'$ is at least 0.1 above the same with another skill's $w'$
#   (`capstone.RECOGNISABLE`).
#
# A verdict from one seed is a verdict on that seed's luck, so the judge asks for the same answer on every
# seed. Its thresholds were chosen by looking at agents trained at the library's default budget on seeds 0-2
# (their docstrings list the numbers: there Eq. 6's gain over its control was 0.018 to 0.053, written two
# ways, its skill gap 0.15 to 0.17) and then fixed; it judges other seeds, 3, 4 and 5
# (`capstone.JUDGED_SEEDS`), and how often it errs was measured with them unchanged
# (`course.judge_calibration`, `results/capstone_judge/rows.csv`): on 12 fresh seeds (6-17), each 3-seed
# subset one judge (220 per reward): false fail 0 of 440 (a correct Eq. 6, written two ways, failing), false
# pass 0 of 440 (paying crowded states, or a reversed vMF loss, passing); a judge of one seed alone errs on 3
# of 48 (reward, seed) pairs; APT's reward alone passes 220 of 220, and 12 of 12 seeds alone. The next cell
# recomputes these rates from the committed rows. The subsets share seeds, so 0 of 440 does not mean never:
# Eq. 6's gain over its control was above 0 on every calibration seed, but as low as 0.002 (seed 8), and its
# smallest three-seed mean was 0.014 against the 0.01 asked. A verdict is evidence, not proof.

# %%
from aps_teach.course import committed_result, judge_calibration

calibration_rows = judge_calibration.read_rows(committed_result("capstone_judge/rows.csv"))
calibration = judge_calibration.rates(calibration_rows)
print(f"the judge, calibrated {judge_calibration.stated(calibration)}")

# %% [markdown]
# **Before you train, what the judge cannot see.** It cannot see a missing exploitation term: APT's reward
# alone, the kNN term without $\phi(s')^\top w$, passes it (the rates above). The judge looks at behaviour,
# and the vMF loss makes skills recognisable whatever the reward pays, while the kNN term alone explores
# about as much as Eq. 6. A pass says your reward explores and your loss trains $\phi$; only the coaching
# line checks that your reward pays $\phi(s')^\top w$.
#
# The agents are trained once per session: the controls are shared by
# every reward judged with the same vMF loss. It trains without the running distance normaliser of the
# authors' code (`knn_normalise=False`), so that your function is the whole reward; a later section shows
# what that changes.
# After a wrong attempt, `my_aps_reward(*exercises.failing_case("aps_reward"))` and
# `my_vmf_loss(*exercises.failing_case("vmf_loss"))` call yours on the inputs they got wrong; once you
# have tried, `exercises.solution("aps_reward")` and `exercises.solution("vmf_loss")` show solutions.
#
# **Predict:** with the kNN term's sign flipped (crowded states paid), which judgement fails? With the vMF
# loss's sign flipped?

# %%
def my_aps_reward(phi, w, h, k):
    raise NotImplementedError  # your code here


def my_vmf_loss(phi, w):
    raise NotImplementedError  # your code here


yours = capstone.train_your_aps(my_aps_reward, my_vmf_loss, capstone.LEVEL, pretrain_steps, seeds, config)

# %% [markdown]
# A sign error shows in the agents: paid for crowded states, they huddle and their visitation entropy falls
# below the control's; with the loss's sign flipped, $\phi$ is pushed *away* from the skill that reached each
# state and the gap turns negative (try both). But can the judge see a reward that lacks a whole term? The
# next cell judges two more rewards the same way, both with the correct vMF loss: VISR's, the exploitation
# term alone (the control itself, so its gain is 0 on every seed: the judge's first question is exactly
# what this reward lacks), and APT's, the kNN term alone.
#
# **Predict:** you were told that the judge passes APT's reward, which lacks $\phi(s')^\top w$, most of the
# time. Will it pass on these three seeds? Which will be closer to the control: its gains or Eq. 6's?

# %%
eq6 = exercises.APS_REWARD.reference  # Eq. 6, both weights 1
one_term = {"VISR's reward, phi(s')^T w alone": capstone.exploit_only,
            "APT's reward, the kNN term alone": lambda phi, w, h, k: eq6(phi, w, h, k) - (phi * w).sum(1)}
judged = {"yours" if all(yours.yours) else "the library's (yours raised)": yours}
for name, reward in one_term.items():
    print(f"--- {name}")
    judged[name.split(",")[0]] = capstone.train_your_aps(reward, exercises.VMF_LOSS.reference, capstone.LEVEL,
                                                         pretrain_steps, seeds, config)
failing = [name for name, result in list(judged.items())[1:] if not result.passed]
passing = [name for name, result in list(judged.items())[1:] if result.passed]
judge_verdict = (f"on {capstone.LEVEL} the judge fails {' and '.join(failing) or 'neither one-term reward'}"
                 + (f" and passes {' and '.join(passing)}" if passing else ""))
print(judge_verdict)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
width = 0.8 / len(seeds)
for ax, measure, line, title in ((axes[0], "gain", 0.0, "visitation entropy minus the control's"),
                                 (axes[1], "gap", capstone.RECOGNISABLE, "skill gap phi^T w - phi^T w'")):
    for i, result in enumerate(judged.values()):
        values = [getattr(seed_measures, measure) for seed_measures in result.measures.seeds]
        passed = result.measures.explores if measure == "gain" else result.measures.recognisable
        ax.bar([i + (j - (len(values) - 1) / 2) * width for j in range(len(values))], values, width * 0.9,
               color="tab:green" if passed else "tab:red", edgecolor="black")
    ax.axhline(line, color="black", linestyle="--",
               label="every seed above this" if measure == "gain" else "every seed at least this")
    if measure == "gain":
        ax.axhline(capstone.EXPLORE_GAIN, color="black", linestyle=":", label="the mean at least this")
    ax.set_xticks(range(len(judged)), list(judged))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
fig.suptitle(f"Three rewards judged on {capstone.LEVEL}, one bar per seed {seeds}: green passes, red fails")
fig.tight_layout()
plt.show()

# %% [markdown]
# **Explain it.** At the default budget the judge passes APT's reward alone on the judged seeds 3-5 (gains
# over the control 0.039, 0.032 and 0.033, against Eq. 6's 0.058, 0.037 and 0.022), as it did on the seeds its
# thresholds were chosen on (0-2: 0.026, 0.065 and 0.021; Eq. 6's 0.044, 0.047 and 0.035 as the library writes
# it, 0.019, 0.053 and 0.018 as the worked solution writes it) and on every calibration seed (6-17: 0.021 to
# 0.054; Eq. 6's 0.002 to 0.050). Why can no judge of exploration or of recognisable skills tell it from Eq.
# 6, though it lacks $\phi(s')^\top w$? And why is a verdict from one seed, against a fixed margin, worth less
# than it looks?
#
# <details><summary>Answer</summary>
#
# The vMF loss trains $\phi$ towards the skill $w$ of whatever state $w$ reached, whatever the reward paid:
# with the reward or without it, $\phi$ follows where the skills go, so the skills come out recognisable.
# Paying $\phi(s')^\top w$ would make the skills go where $\phi$ points, but $\phi$ already points where they
# go. And the kNN term alone, on the same $\phi$, explores about as much as Eq. 6 (the gains above), so a
# threshold that fails it would fail Eq. 6 on some seed too. What the exploitation term adds does not show
# in these two measures, at 64k steps or at 1M (`docs/course.md` lists every measure tried); the coaching
# line names the missing term instead.
#
# The seed sets the networks' first weights and every random draw, and at this budget it moves an agent's
# visitation entropy by a good part of what the exploration term adds: the control's ranged from 0.697 to
# 0.723 over seeds 0-2 (0.696 to 0.729 over seeds 6-17), while Eq. 6 added 0.018 to 0.053 (0.002 to 0.050).
# Even rounding moves it: the library's Eq. 6 and the worked solution's compute the same numbers but for the
# last bits, and on seed 0 one gained 0.044, the other 0.019, the tiny difference growing over 64,000 steps of
# training. A margin set between two rewards' values decides on a seed's luck: asked to beat a random walk's
# entropy by 0.08, APT's reward passes on seeds 1 and 2 and fails on seed 0. A control on the same seed shares
# that luck, and asking every seed shows whether the answer holds. </details>

# %% [markdown]
# ## The distance normaliser: a weight in disguise
#
# *About 8 minutes.*
#
# The capstone trains without the running normaliser of the authors' code, which divides each neighbour
# distance by the running mean $m$ of all neighbour distances so far:
# $\log\big(1 + \frac{1}{k} \sum_j \lVert h_i - h_j \rVert / m\big)$. The library's APS keeps it. The next
# cell trains APS both ways on easy, on one seed, and prints the mean of each term of Eq. 6 over the last
# quarter of pretraining (`probes.late_reward_terms`) and the zero-shot success on easy's task.
#
# **Predict:** the normaliser makes the mean neighbour term 1, so the kNN term near
# $\log 2 \approx 0.69$. Without it, $h = \phi(s')$ is a unit vector, and nearest neighbours are close.
# With which setting is the kNN term larger?

# %%
settings = {"with the normaliser (the library's default)": config,
            "without it (the capstone's setting)": capstone.training_config(config)}
normaliser = {}
for label, setting in settings.items():
    learner, log = pretrain("aps", "easy", pretrain_steps, seed, setting)
    terms = late_reward_terms(log)
    w = identify_task(learner, "easy", identify_steps, seed, setting)
    zero_shot = evaluate(learner, "easy", w, eval_episodes, seed, setting).success_rate
    normaliser[label] = (terms["reward_exploit"], terms["reward_explore"], zero_shot)
    print(f"APS on easy {label}: per step phi(s')^T w {terms['reward_exploit']:.2f}, kNN term "
          f"{terms['reward_explore']:.2f} ({terms['reward_explore'] / terms['reward_exploit']:.1f} times "
          f"phi^T w); zero-shot success {zero_shot:.2f}")
(_, on_knn, on_zero), (_, off_knn, off_zero) = normaliser.values()
normaliser_verdict = (f"the normaliser makes the kNN term {on_knn / off_knn:.1f} times larger; zero-shot "
                      f"success {on_zero:.2f} with it, {off_zero:.2f} without: "
                      + ("higher without it" if off_zero > on_zero else
                         "not higher without it" if off_zero < on_zero else "the same"))
print(normaliser_verdict)

# %% [markdown]
# Eq. 6 adds its two terms with weight 1, but their scales are set by the features. $\phi(s')^\top w$ is about
# 0.2 to 0.3 per step, with the normaliser or without it. The kNN term without the normaliser measures
# distances between unit vectors of neighbouring states, which are small; the normaliser divides them by their
# running mean and so lifts the term towards $\log 2 \approx 0.69$ whatever the features' scale, though
# below it (the log of a quantity whose mean is 1 averages below $\log 2$; the line above prints 0.57).
# That is a change of weight, not of form: with the normaliser the exploration term outweighs
# $\phi(s')^\top w$ about 2.5 to 1, without it about 1.3 to 1 (seeds 0-2 alike). Does the weight decide
# zero-shot success? On the three seeds first measured (0-2; seed 0 is the line above) APS scored higher
# without the normaliser on two, and so it looked like it. Fresh seeds say otherwise: in notebook 04c's
# pre-registered experiment (it prints these) the paper's APS scored 0.61 without the normaliser and 0.38
# with it, a paired difference of +0.23 [-0.09, +0.55] over its fresh seeds: no effect shown, and none
# excluded; VISR scored 0.89. Three seeds suggested an effect; the fresh ones do not confirm it.

# %% [markdown]
# ## What this run found
#
# *About 2 minutes.*
#
# Each line below is computed from an output above. The last is one seed's: the fresh seeds of notebook 04c
# do not confirm that the normaliser moves zero-shot success, so read it as that seed's outcome, not a
# finding.

# %%
trained_on = "your reward and loss" if all(yours.yours) else "the library's reward and loss (yours raised)"
print(f"* the capstone's agents, on {trained_on}: {'passed' if yours.passed else 'not yet passed'} on "
      f"{capstone.LEVEL} over seeds {seeds}, the seeds "
      f"{'agreeing' if yours.measures.seeds_agree else 'disagreeing'}")
print(f"* {judge_verdict}")
print(f"* {normaliser_verdict}")

# %% [markdown]
# ## Summary
#
# *About 3 minutes.*
#
# * You wrote APS's reward (Eq. 6) and vMF loss (Eq. 5) and trained APS on them; a judge looked at the
#   agents on the deep level, on three seeds: does each explore beyond a control trained on its seed
#   without the exploration term, can its features tell its skills apart?
# * The judge sees sign errors (paying crowded states falls below the control; a reversed vMF loss blurs
#   the skills) and a missing exploration term (VISR's reward is the control itself). It cannot see a
#   missing exploitation term: the vMF loss makes skills recognisable whatever the reward pays, and the kNN
#   term alone explores about as much as Eq. 6, so APT's reward passes on every seed (and in all 220
#   three-seed judges of the calibration).
# * A judge of behaviour can only fail what behaviour shows, and a verdict from one seed is one seed's
#   luck: compare with a control that shares the seed, and ask every seed. A judge's thresholds are chosen on
#   some seeds and its error rates measured on others: tuned on seeds 0-2, this one judges seeds 3-5, and on
#   seeds 6-17 it failed no correct reward and passed no wrong one (0 of 440 each way), by a thin margin for
#   the correct ones.
# * The distance normaliser is a weight in disguise: it lifts the kNN term towards $\log 2$ per step,
#   about twice its size without it. Its effect on zero-shot success, suggested by three seeds, is not shown
#   by ten (notebook 04c).
#
# Next: notebook 04e goes beyond the paper, to the two variants of APS that win the task-family study;
# then notebooks 05, 05b and 05c run the ablations (reward weights, k, shared encoder, feature size, GPI,
# SF loss) as small resumable sweeps.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
