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
# # 05 · Ablations: which parts of APS matter, and how would you know?
#
# APS is a bundle of choices: $\phi$ doubles as the encoder $f$ of the exploration reward, the kNN
# estimate uses $k$ neighbours in $d$ dimensions, two reward terms are added with weights, $\psi$ is
# trained with a vector or a scalar loss, and actions come from GPI. An **ablation** changes one choice
# and measures what moves. This notebook and its two continuations are a set of small ablation exercises
# on the gridworlds, in the style of Spinning Up's: each states a hypothesis, runs a small sweep, plots
# it, and asks you to explain the result (no code to write: your part is the prediction, the choice of what
# to change next, and the explanation). This one sets up the measurement and tests the exploration
# reward's encoder and its $k$ (Exercises 1–2); 05b the feature dimension, the reward weights and a silent
# bug (Exercises 3–5); 05c the successor-feature loss, GPI, the X → Y study and zero-shot transfer
# (Exercises 6–8).
#
# **What you will be able to do.** Run a resumable, parallel sweep of configuration variants with
# `aps_teach.infra.sweeps` and read it back; choose a measurement that fits your compute budget and report it
# as a mean with a 95% interval, a dot for every run and a verdict computed from the numbers; test whether
# APS's shared encoder and its number of neighbours $k$ matter, and read a null result for what it is.
#
# **Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first pass.
#
# **How long.** About 56 minutes of study: reading what it says and prints, its figures and questions, two
# exercises and their sweeps, about 1.5 minutes of CPU in teaching mode, about a minute of wall time on two
# free cores and several on a busy machine (the last cell prints this run's wall and CPU time). Sweep
# results are kept on disk, so running a cell again costs nothing.
#
# **What reproduces from the paper, and what does not.** The paper's ablations (its Section 6, on Atari)
# find that sharing the encoder helps. Here, at a fraction of the budget and with a few seeds, the
# shared-encoder comparison does not separate either way (Exercise 1), and the committed Figure 4 (first
# section) is where the paper's main gridworld claim, "APS best", does not hold. Every conclusion here is
# tentative: it holds at this budget, with these seeds, and the intervals say how much that is worth.
#
# **A word on budgets.** One run at the library's default budget (that of the committed Figure 4) costs
# tens of seconds of one core. So the exercises measure what *pretraining alone* produced, at a fraction
# of the default pretraining budget (printed below), over a few seeds. The parameters cell below is where
# you make the sweeps bigger.

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
workers = 2  # processes running sweep runs in parallel
probe_level = "hard"  # the pretraining probes' level (why: see the Figure 4 section)
probe_seeds = [0] if FAST else [0, 1, 2]
# identification and evaluation run whole rounds of 32 envs x 100 steps: 3,200 steps is one round
# a probe does not fine-tune: its budget's finetune_steps go unused
probe_budget = experiments.Budget(pretrain_steps=2_400 if FAST else 32_000,
                                  identify_steps=800 if FAST else 3_200, eval_episodes=8 if FAST else 32)
k_values = [3, 10] if FAST else [3, 5, 10]

# %%
from aps_teach import course

course.fast_mode_banner(FAST)

# %%
import inspect
import json
import time

import matplotlib.pyplot as plt
import numpy as np

from aps_teach.course.probe_sweep import probe_sweep
from aps_teach.infra.stats import summarise
from aps_teach.infra.sweeps import read_rows
from aps_teach.studies import ablations
from aps_teach.studies import plots as study_plots
from aps_teach.studies.ablations import agent_overrides, show, tally

started = time.perf_counter()
# where this notebook's sweeps keep their results (per budget and default configuration, so a re-run
# resumes and a changed budget or library default never mixes in stale rows) and the processes that run them
sweep = probe_sweep("05_ablations", probe_level, probe_seeds, probe_budget, workers, FAST)

# %% [markdown]
# ## The full result first: Figure 4
#
# *About 11 minutes.*
#
# The repository's reproduction of the paper's Figure 4 ran every method on both key levels with 10
# seeds at the library's default budget (`aps-teach gridworld sweep`; the results ship with the package).
# Dark bars are zero-shot success, right after pretraining and task identification; full bars are
# success after fine-tuning on the task reward.

# %%
figure4 = read_rows(course.committed_result("gridworld/figure4.csv"))
methods, levels = ["visr", "apt", "aps", "dqn"], ["easy", "hard"]
study_plots.plot_figure4(figure4, methods, levels)
plt.show()
success = summarise(figure4, by=("level", "method", "phase"), value="success_rate")
print("success rate, mean [95% CI] over seeds (n)")
for level in levels:
    for method in methods:
        parts = [f"{phase} {m:.2f} [{lo:.2f}, {hi:.2f}] ({n})" for phase in ("zero_shot", "finetuned")
                 for m, lo, hi, n in [success[(level, method, phase)]]]
        print(f"  {level:>4} {method:>4}: " + ", ".join(parts))
once = [row for row in figure4 if row["phase"] == "finetuned"]  # one row per run
coverage = summarise(once, by=("level",), value="state_coverage")
for level in levels:
    m, lo, hi, n = coverage[(level,)]
    print(f"state coverage on {level}, all methods: {m:.2f} [{lo:.2f}, {hi:.2f}] over {n} runs")
seconds = [float(row["wall_seconds"]) for row in once]
print(f"one run took {np.mean(seconds):.0f} s on average (wall time, {min(seconds):.0f}-"
      f"{max(seconds):.0f} s)")
solved = sorted({row["method"] for row in once if row["level"] == "hard" and float(row["success_rate"]) > 0})
print(f"methods with a fine-tuned success above 0 on hard in some run: {solved or 'none'}")

# %% [markdown]
# **Explain it.** Where is zero-shot success well below fine-tuned success, for the same pretrained
# agent, and where not? Notebook 04c traced where zero-shot success gets lost (features, policy, task
# inference): which would you suspect here? And what does the hard level's row tell you about what
# *any* ablation of APS can show through success rates at this budget?
#
# <details><summary>Answer</summary>
#
# On the easy level VISR's zero-shot success is already close to its fine-tuned success; APT's and APS's
# are far below theirs. APT's pretrained policy carries no task at all (its $w$ is fixed), so there is
# nothing to infer and only fine-tuning can point it at the target. APS identifies the task like VISR,
# and notebook 04c found its features and task inference sound on the easy level: its policy ($\psi$ and
# GPI) is where zero-shot success is lost. Why is still open: 04c's pre-registered experiment showed none of
# the course's three explanations (the kNN return in $\psi$'s values, the distance normaliser, APS's own
# data). That is no effect shown, not each effect excluded: the normaliser's interval is wide enough to hold
# an effect as large as VISR's whole lead. Untested is the policy $\psi$'s targets were learned for. On the
# hard
# level every pretrained method is at 0 zero-shot and VISR and APS stay at 0 after fine-tuning, in every
# seed (the last line names the only methods that ever solved it). An ablation of APS measured by success
# on the hard level would compare zeros with zeros: it could not tell any two variants apart.
# </details>
#
# The coverage lines are why the probes below run on the hard level: where every run visits (nearly)
# every state, as a coverage near 1 on the easy level says, coverage cannot tell variants apart.
#
# ## The measuring instrument
#
# *About 5 minutes.*
#
# A variant measured by success rates needs whole runs, for every seed, and separates variants only
# where some succeed and some fail. So each ablation below measures what reward-free pretraining
# produced, with a *probe* (`aps_teach.studies.probes.run_probe_rows`): one pretraining of the variant, then,
# without any further training,
#
# * **coverage**: the fraction of the level's reachable (position, keys held) states the pretraining
#   visited;
# * **reward terms**: the mean of each intrinsic-reward term, $\phi(s')^\top w$ and the kNN reward, over
#   the last quarter of pretraining, what the learned behaviour earns rather than the random start;
# * **$\phi$ spread**: the per-dimension standard deviation of $\phi$ over the level's cells (0 would mean
#   $\phi$ collapsed to one vector);
# * **task R²**: how much of the level's own reward (keys and target) a least-squares fit on $\phi(s')$
#   explains, on data from the pretrained agent's random-$w$ behaviour;
# * its **cost**: wall and CPU seconds.
#
# Each sweep is a list of `RunSpec(method, level, seed, overrides)`, the overrides dotted config fields
# such as `("agent.k", 5)`; finished runs are kept and skipped, so rerunning a cell costs nothing, and the
# APS baseline, which needs no override, runs once for all ablations below (the appendix, notebook 08,
# shows how). `aps_teach.studies.ablations` does the bookkeeping: `run_variants` runs (or resumes) a set of
# labelled variants and returns their rows, and `show` prints the numbers behind each plot, with a
# verdict per comparison against the first variant (the rule is printed below): **separate** (the two
# 95% intervals do not overlap), **overlaps**, or **identical** (the same numbers to the last digit: the
# same runs by construction, or a knob that changes nothing). The set-up cell's
# `aps_teach.course.probe_sweep` chose the results folder and the worker processes; its `probe(variants)`,
# used below, is `run_variants` with the probe, on the probe level and seeds.
#
# A caution on the intervals: they are percentile bootstrap intervals over runs (seeds), and with a
# handful of seeds a bootstrap interval is too narrow more often than 5% of the time. Read "separate" as
# "worth a bigger sweep", not as a proof.

# %%
verdicts = {}  # exercise -> the verdicts of its comparisons, tallied at the end
print(inspect.getsource(ablations.verdict))
probe = sweep.probe  # run_variants(probes.run_probe_rows, ...) on the probe level and seeds


# %% [markdown]
# ## Exercise 1: share the encoder, or not?
#
# *About 13 minutes.*
#
# **Hypothesis.** APS computes its kNN exploration reward in the space of $\phi$, the same features its
# task term uses ($h = \phi(s')$). The paper reports that this beats an APT-style encoder $f$ trained by
# contrastive learning: $\phi$ keeps what matters for the intrinsic reward. If so, the shared variant
# should cover more of the level, or learn more distinguishable skills (a larger $\phi(s')^\top w$ while
# pretraining).

# %%
encoders = {"shared phi": ("aps", agent_overrides(shared_encoder=True)),
            "contrastive f": ("aps", agent_overrides(shared_encoder=False))}
encoder_rows = probe(encoders)
probe_metrics = {"state_coverage": "state coverage in pretraining",
                 "reward_exploit": r"mean $\phi(s')^\top w$, late",
                 "task_r2": r"$R^2$ of the level's reward on $\phi$"}
study_plots.plot_ablation(encoder_rows, "variant", probe_metrics, list(encoders),
                          title=rf"APS on {probe_level}: kNN reward on $\phi$ vs on a contrastive encoder "
                                r"$f$", xlabel="kNN space")
plt.show()
verdicts["1 encoder"] = show(encoder_rows, probe_metrics, list(encoders))
for label in encoders:
    cpu = [float(r["probe_cpu_seconds"]) for r in encoder_rows if r["variant"] == label]
    print(f"{label}: {np.mean(cpu):.1f} CPU seconds per probe")

# %% [markdown]
# **Explain it.** Do the intervals separate? If they don't, which is it: no effect, or an effect too
# small for this many seeds? What does the contrastive encoder cost in compute (printed above), and what
# would you need to run to tell the two apart?
#
# <details><summary>Answer</summary>
#
# In teaching mode every metric overlaps, with differences a few hundredths wide and intervals about as
# wide as the differences. Three seeds cannot tell "no effect" from "a small effect": both look like
# this. The contrastive encoder costs an extra network and an InfoNCE loss, and noticeably more CPU per
# probe (printed above). To tell the two apart, first estimate the seed-to-seed spread (the dots),
# then choose the number of seeds that shrinks the interval (roughly as $1/\sqrt{n}$) below the
# difference you care about; and measure what the paper measured, fine-tuned score, on a level where
# some runs succeed and some fail. Neither the paper's claim nor its opposite is shown here.
# </details>
#
# ## Exercise 2: how many neighbours, k?
#
# *About 16 minutes.*
#
# **Hypothesis.** The particle reward averages the distances to the $k$ nearest neighbours. A small $k$
# is local and noisy; a large $k$ is smoother but blurs nearby structure. The paper searches
# $k \in \{3, 5, 10\}$. The exploration reward's size should grow with $k$ (more distant neighbours enter
# the average); whether coverage follows is the question.

# %%
ks = {f"k={k}": ("aps", agent_overrides(k=k)) for k in k_values}
k_rows = probe(ks)
k_metrics = {"reward_explore": "mean kNN reward, late", "state_coverage": "state coverage in pretraining"}
study_plots.plot_ablation(k_rows, "variant", k_metrics, list(ks),
                          title=f"APS on {probe_level}: neighbours $k$", xlabel="$k$")
plt.show()
verdicts["2 k"] = show(k_rows, k_metrics, list(ks))

# %% [markdown]
# **Explain it.** The kNN distances are divided by their running mean before the log
# (`AgentConfig.knn_normalise`):
#
# $$r^{\text{kNN}}_i = \log\Big(1 + \frac{1}{k}\sum_{j \in \mathrm{N}_k(i)}
# \frac{\lVert h_i - h_j \rVert}{m}\Big), \qquad m = \text{running mean of all neighbour distances}.$$
#
# Why does the reward still depend on $k$? Does a larger reward mean more exploration? Look at the
# coverage panel before you answer.
#
# <details><summary>Answer</summary>
#
# Dividing by $m$ makes the *average* of the inner mean about 1 for every $k$, so the mean reward would be
# about $\log 2 \approx 0.69$ if every particle had the same mean distance. They do not, and $\log(1 + x)$
# is concave: the more the inner mean varies between particles, the further the average reward falls
# below $\log 2$ (Jensen's inequality). Averaging over 3 neighbours varies much more between particles
# (a state with a few copies in the batch gets a mean near 0) than averaging over 10, so the reward grows
# with $k$ towards $\log 2$, as the teaching-mode numbers do. A larger reward is not more exploration: a
# constant added to every state's reward changes no decision. Coverage, which is what exploration is for,
# does not move with $k$ in a way these seeds can separate.
# </details>
#
# ## Summary
#
# *About 4 minutes.*
#
# - An ablation is only as good as its measurement. Fine-tuned success is what the paper reports, but it
#   costs a whole run per variant and seed, and it cannot separate variants that all succeed or all fail
#   (the hard level's row of Figure 4); the pretraining probes (coverage, reward terms, $\phi$ spread,
#   task $R^2$) are cheap enough to sweep.
# - Report every variant as a mean with a 95% interval and show the individual runs. With a few seeds the
#   intervals are wide; overlapping intervals read "not settled at this budget", not "no effect". The cell
#   below counts how this notebook's comparisons came out, exercise by exercise.
# - A larger reward is not more exploration: the kNN reward grew with $k$ through Jensen's inequality,
#   while coverage, what exploration is for, did not move with it in a way these seeds separate.
#
# **Where next.** `aps_teach.infra.sweeps.run_sweep` with `probes.run_probe_rows`, or
# `aps_teach.studies.ablations.run_variants` and `show` as here, run any sweep of your own;
# `aps-teach gridworld sweep --help` runs the full pipeline at scale from the command line. The paper's
# Section 6 and its ablation table are the full-scale version of Exercise 1.
#
# Next: notebook 05b sweeps the feature dimension $d$ and the weights of APS's two reward terms, and
# hands you a colleague's sweep with a silent bug to find.

# %%
print("\n".join(tally(verdicts, "Exercises 1-2")))
sweep.executor.shutdown()  # the workers exit, so their CPU time is counted below (on Windows it reads 0)
cpu = os.times()
print(f"wall time of this notebook: {time.perf_counter() - started:.0f} s; CPU time: "
      f"{cpu.children_user + cpu.children_system:.0f} s in the worker processes, "
      f"{cpu.user + cpu.system:.0f} s in this kernel")
print("config of every sweep:", json.dumps(sweep.budgets))
