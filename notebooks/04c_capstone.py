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
# # 04c · Capstone: APS on a reward you wrote, judged where exploring matters
#
# You have every piece APS is made of (notebook 04). Here you write the two that are APS's own, its
# reward (Eq. 6) and the von Mises–Fisher loss that trains $\phi$ (Eq. 5), train an agent on them, and
# have a judge look at the *agent*, not at your code. The judge works on the deep level, the three-room
# level of notebook 00 where a uniform random walk leaves about half of the states unvisited, so that
# exploring has something to win. Then you test the judge itself: can it fail a reward that lacks one of
# Eq. 6's two terms? And you meet a setting of the authors' code, the running distance normaliser, that
# changes the balance of the two terms.
#
# **What you will be able to do.** Write APS's reward and vMF loss and train APS on them; read a judge
# of the trained agent (exploration against a random walk, skills told apart) and say which mistakes it
# sees and which it cannot; explain why the vMF loss makes skills recognisable whatever the reward pays;
# and explain, with measured reward scales, why the kNN distance normaliser changes APS's zero-shot
# success.
#
# **How long.** About 44 minutes of study: reading what it says and prints, its figure, predictions and
# questions, two functions to write and about a minute and a half of compute on a 2-core CPU in teaching
# mode, longer on a busy machine (the last cell prints this run's time; the README's course table says
# how study time is counted). Notebooks 05, 05b and 05c follow with the ablations.

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
seed = 0
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
# coaching), then pretrains APS on the deep level with the parameters cell's budget and seed **on your
# functions**, even a wrong one, so that you see what it does. It judges the trained agent on two things:
#
# * **explores**: the visitation entropy of its pretraining (0 when one state takes every visit, 1 when
#   all are visited equally) is at least 0.08 above that of a uniform random walk of the same length
#   (`capstone.EXPLORE_MARGIN`);
# * **skills recognisable**: over states $s'$ from its replay, $\phi(s')^\top w$ with the skill $w$ that
#   reached $s'$ is at least 0.1 above the same with another skill's $w'$ (`capstone.RECOGNISABLE`).
#
# Both thresholds were set from agents measured at the library's default budget on seeds 0-2, between
# the numbers of a passing and a failing reward (their docstrings list them). It trains without the
# running distance normaliser of the authors' code (`knn_normalise=False`), so that your function is the
# whole reward; a later section shows what that changes.
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


yours = capstone.train_your_aps(my_aps_reward, my_vmf_loss, capstone.LEVEL, pretrain_steps, seed, config)

# %% [markdown]
# A sign error shows in the agent: paid for crowded states, it huddles and its visitation entropy falls
# below the random walk's; with the loss's sign flipped, $\phi$ is pushed *away* from the skill that
# reached each state and the gap turns negative (try both). But can the judge see a reward that lacks a
# whole term? The next cell trains two more agents the same way, one on VISR's reward (the exploitation
# term alone) and one on APT's (the kNN term alone), both with the correct vMF loss.
#
# **Predict:** which of the two fails, and on which judgement?

# %%
eq6 = exercises.APS_REWARD.reference  # Eq. 6, both weights 1
one_term = {"VISR's reward, phi(s')^T w alone": lambda phi, w, h, k: (phi * w).sum(1),
            "APT's reward, the kNN term alone": lambda phi, w, h, k: eq6(phi, w, h, k) - (phi * w).sum(1)}
judged = {"yours" if all(yours.yours) else "the library's (yours raised)": yours}
for name, reward in one_term.items():
    print(f"--- {name}")
    judged[name.split(",")[0]] = capstone.train_your_aps(reward, exercises.VMF_LOSS.reference, capstone.LEVEL,
                                                         pretrain_steps, seed, config)
failing = [name for name, result in list(judged.items())[1:] if not result.passed]
passing = [name for name, result in list(judged.items())[1:] if result.passed]
judge_verdict = (f"on {capstone.LEVEL} the judge fails {' and '.join(failing) or 'neither one-term reward'}"
                 + (f" and passes {' and '.join(passing)}" if passing else ""))
print(judge_verdict)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
names = list(judged)
margins = [r.measures.entropy - r.measures.walk_entropy for r in judged.values()]
gaps = [r.measures.own_skill - r.measures.other_skill for r in judged.values()]
for ax, values, line, title in ((axes[0], margins, capstone.EXPLORE_MARGIN,
                                 "visitation entropy above a random walk's"),
                                (axes[1], gaps, capstone.RECOGNISABLE, "skill gap phi^T w - phi^T w'")):
    ax.bar(names, values, color=["tab:green" if v >= line else "tab:red" for v in values])
    ax.axhline(line, color="black", linestyle="--", label="the judge's threshold")
    ax.set_ylim(min(0, *values), 1.4 * max(line, *values))
    ax.set_title(title)
    ax.legend(loc="upper right")
fig.suptitle(f"Three agents judged on {capstone.LEVEL} (seed {seed}): green passes, red fails")
fig.tight_layout()
plt.show()

# %% [markdown]
# **Explain it.** Whatever the line above says of APT's reward on this seed, it is a close call: at the
# default budget on seeds 0-2 APT's reward passed on seeds 1 and 2 and missed the exploration margin on
# seed 0 by 0.006, while VISR's failed on all three by 0.017 or more. Why can a judge of the agent not
# tell APT's reward from Eq. 6, though it lacks $\phi(s')^\top w$? And why does VISR's reward fail on
# deep, when on the easy level (where a random walk already visits every state) it passed a judge of
# exploration?
#
# <details><summary>Answer</summary>
#
# The vMF loss trains $\phi$ towards the skill $w$ of whatever state $w$ reached, whatever the reward paid:
# with the reward or without it, $\phi$ follows where the skills go, so the skills come out recognisable.
# Paying $\phi(s')^\top w$ would make the skills go where $\phi$ points, but $\phi$ already points where they
# go. And the kNN term alone, on the same $\phi$, explores at least as much as Eq. 6 (at the default budget on
# seeds 0-2, 0.074 to 0.110 above the walk's entropy against Eq. 6's 0.092 to 0.098), so no exploration
# threshold fails it without failing Eq. 6 on some seed. What the exploitation term adds does not show in
# these two measures; the coaching line names the missing term instead. Nor is this a verdict on the budget:
# trained 16 times as long (1M steps, seeds 0 and 1), APT's reward alone and Eq. 6 reached visitation
# entropies of 0.863 and 0.862, then 0.859 and 0.859, and their skills steered as far (docs/course.md lists
# every measure tried). VISR's reward pays nothing for new states; on easy, $\epsilon$-greedy skills cover the
# small level about as evenly as anything, so the exploration term has nothing to win. On deep its agent still
# beats a random walk, but by less than Eq. 6's (0.045 to 0.063 on seeds 0-2), and the margin sits between the
# two. </details>

# %% [markdown]
# ## The distance normaliser: why the capstone's APS acts more like VISR
#
# The capstone trains without the running normaliser of the authors' code, which divides each
# neighbour distance by the running mean of all neighbour distances seen so far:
# $\log\big(1 + \frac{1}{k} \sum_j \lVert h_i - h_j \rVert / m\big)$. The library's APS keeps it (its
# default, and the committed Figure 4 sweep's). Does that change more than a constant? The next cell
# trains APS both ways on the easy level, on the same seed, prints the mean of each term of Eq. 6 over
# the last quarter of pretraining (`probes.late_reward_terms`), and the zero-shot success on the easy
# level's task, as notebook 04 reports it.
#
# **Predict:** the normaliser makes the mean neighbour term 1, so the kNN term near
# $\log 2 \approx 0.69$. Without it, $h = \phi(s')$ is a unit vector, and nearest neighbours are close.
# With which setting is the kNN term larger, and which agent acts more like VISR?

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
# running mean and so lifts the term to a little under $\log 2$ whatever the features' scale (the log of a
# quantity whose mean is 1 averages below $\log 2$; the lines above print both). That is a change of weight,
# not of form: with the normaliser the exploration term outweighs $\phi(s')^\top w$ about 2.5 to 1, without it
# about 1.3 to 1 (seeds 0-2 alike), so the capstone's APS sits nearer VISR (exploration weight 0), the method
# with the highest zero-shot success on easy in the committed sweep (notebook 04). Zero-shot success is noisy
# from seed to seed: measured at this notebook's default budget on seeds 0-2, the library's APS scored 0.28,
# 0.00 and 0.13, the capstone's (Eq. 6 without the normaliser) 1.00, 0.67 and 0.00, and VISR's reward alone
# 1.00, 1.00 and 0.92: higher without the normaliser on two seeds of three, and on average (0.56 against
# 0.14). The APS-parts study (`docs/studies.md`) turns the same dial on purpose, with the normaliser:
# exploration weight 3 scored 0.00 zero-shot on easy (5 seeds), weight 0 (VISR) 0.88.

# %% [markdown]
# ## What this run found
#
# Each line below is computed from an output above.

# %%
trained_on = "your reward and loss" if all(yours.yours) else "the library's reward and loss (yours raised)"
print(f"* the capstone's agent, on {trained_on}: {'passed' if yours.passed else 'not yet passed'} on "
      f"{capstone.LEVEL}")
print(f"* {judge_verdict}")
print(f"* {normaliser_verdict}")

# %% [markdown]
# ## Summary
#
# * You wrote APS's reward (Eq. 6) and vMF loss (Eq. 5) and trained APS on them; a judge looked at the
#   agent on the deep level: does it explore well beyond a random walk, can its features tell its skills
#   apart?
# * The judge sees sign errors (paying crowded states huddles the agent; a reversed vMF loss blurs its
#   skills) and a missing exploration term: VISR's reward alone explores less than Eq. 6 on deep, below
#   the margin, on every seed measured. It cannot reliably see a missing exploitation term: the vMF loss
#   makes skills recognisable whatever the reward pays, and the kNN term alone explores about as much as
#   Eq. 6, so APT's reward lands on either side of the margin by a hair, seed by seed.
# * A judge of behaviour can only fail what behaviour shows, and only where the level lets it show: on the
#   easy level, which a random walk covers, nothing about exploring can fail.
# * The distance normaliser is a weight in disguise: it lifts the kNN term to near $\log 2$ per step,
#   about twice its size without it, which tilts Eq. 6 away from VISR's $\phi(s')^\top w$; on easy the
#   capstone's APS, without it, had the higher zero-shot success on two seeds of three.
#
# Next: notebook 04d goes beyond the paper, to the two variants of APS that win the task-family study;
# then notebooks 05, 05b and 05c run the ablations (reward weights, k, shared encoder, feature size, GPI,
# SF loss) as small resumable sweeps.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
