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
# # 07 · Synthesis: where each method wins, and what was measured
#
# The course built three methods on one successor-feature learner, each for one thing:
#
# * **VISR** (notebook 02) is for *fast task inference from features*. Pretraining pays
#   $\log q(s \mid w) = \phi(s)^\top w$ (Eq. 4) and it acts with $Q(s, a, w) = \psi(s, a, w)^\top w$, so one
#   least-squares fit $r \approx \phi(s')^\top w$ of a task's rewards is a policy at once.
# * **APT** (03, 03b) is for *exploration by particle entropy*: it is paid
#   $\log\big(1 + \frac{1}{k}\sum_{h^{(j)} \in \mathrm{N}_k(h)} \lVert h - h^{(j)}\rVert\big)$ on $h = f(s')$
#   (Eq. 1), which pushes the visited states apart; one Q-function, no task vector, so a task is learnt by
#   fine-tuning.
# * **APS** (04, 04c, 05) is for *both, with one $\phi$*: VISR's reward plus APT's, the kNN term on VISR's own
#   features $h = \phi(s')$ (Eqs. 6-7), to explore like APT and then infer the task like VISR.
#
# What the course measured: the paper's gridworld claims on each level's one task (the Figure 4 sweep), and
# the **task-family study**: per method and seed one reward-free pretraining, then every task of a level's
# family (boxes in every room, boxes paying only with a key held, the target: 13, 22 and 22 tasks on easy,
# hard and deep), zero-shot and fine-tuned, each score normalised to 0 for a uniformly random policy and 1 for
# the optimum. The variants of APS that won it on deep were then put to a pre-registered test on levels and
# seeds no one had looked at; its answer, printed from the committed tables in the last section: **H1 does
# not hold; H2 holds on `fork-256k` only**.
#
# **What you will be able to do.** Read, per task class, where VISR, APT and APS win, with IQMs, 95%
# intervals and probabilities of improvement; rerun one seed of that study live; name the measured ceiling of
# APS and the variant and budget that lift it. Notebook 07b then decides the paper's own Section 4.3 claims
# and sets its Atari numbers beside them.
#
# **How long.** About 75 minutes of study: reading what it says and prints, its figures and predictions;
# one seed of the paper's three methods on one level, live at the study's budgets: about 3 minutes of
# compute on a quiet 2-core CPU, more on a busy one (the last cell prints this run's time).
#
# **The rule for every verdict.** A *beats* B when A's 95% interval lies wholly above B's (notebook 04,
# `docs/results.md`); a claim *holds*; is *not shown* where the intervals overlap (no difference found,
# which excludes no effect and is not a tie); *does not hold* only where the same rule shows its opposite;
# and there is *nothing to decide* when every method it compares scores 0, or every one 1
# (`stats.claim_verdict`, `stats.verdict_word`). Every verdict below is printed from the numbers it rests
# on; a measurement made elsewhere is cited with the notebook or page that prints it.

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

from aps_teach.studies import task_families as tf

FAST = os.environ.get("APS_TEACH_FAST") == "1"  # the test suite runs every notebook this way
live_level = "easy"  # the live slice: one level of the study, every task of its family
live_seeds = [0]  # the committed study has seeds 0-9
live_arms = ["visr", "apt", "aps"]  # any arms of FAMILY_ARMS (aps_teach.studies.arms)
study_budget = tf.FamilyBudget()  # the committed study's: 64k pretraining, 16k identification, 8k fine-tuning
pretrain_steps = 400 if FAST else study_budget.pretrain_steps
identify_steps = 200 if FAST else study_budget.identify_steps
finetune_steps = 200 if FAST else study_budget.finetune_steps
eval_episodes = 4 if FAST else study_budget.eval_episodes
notebook_start = time.perf_counter()

# %%
from aps_teach import course

course.fast_mode_banner(FAST)

# %%
import numpy as np

from aps_teach.grid.train import TrainConfig
from aps_teach.infra import stats
from aps_teach.infra.sweeps import RunSpec, read_rows
from aps_teach.studies import plots as study_plots
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.families_budget import budget_axis
from aps_teach.studies.verdicts import (
    COMPARED,
    CONTENDERS,
    PARENTS,
    PRIMARY_PHASE,
    interval_text,
    seed_scores,
    task_classes,
    verdict_text,
    welch_readings,
)

PAPER = ("visr", "apt", "aps")
LEVELS = ("easy", "hard", "deep")
families = tf.read_family_studies([course.committed_result(folder) for folder in (
    "task_families", "task_families_budget/pretrain_256000", "task_families_budget/pretrain_1000000")])
study = families[64_000]  # 3 levels x 10 seeds x 7 arms
committed_seeds = len({r["seed"] for r in study})
classes = read_rows(course.committed_result("task_families/classes.csv"))
family_verdicts = read_rows(course.committed_result("task_families/verdicts.csv"))
improvements = read_rows(course.committed_result("task_families/improvement.csv"))
print("committed task-family studies: " + "; ".join(
    f"{steps:,} pretraining steps, {len({r['run_key'] for r in rows})} runs, "
    f"{len({r['seed'] for r in rows})} seeds" for steps, rows in families.items()))


def show(s):
    return f"{s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}]"


def at_bound(s):
    """An interval (iqm, low, high) within tf.FLOOR of 0, the random policy's score, counts as [0, 0]: failing
    policies differ from 0 by Monte Carlo noise alone; one within it of 1, the task's optimum, as [1, 1]."""
    if max(abs(s[1]), abs(s[2])) <= tf.FLOOR:
        return (0.0, 0.0)
    return (1.0, 1.0) if min(s[1], s[2]) >= 1 - tf.FLOOR else s[1:]


def wins(scores, a, b):
    """The course's rule on one column: a's interval wholly above b's."""
    return stats.beats([scores[a][1:]], [scores[b][1:]])


def claim(holds, scores):
    """`stats.claim_verdict`: True, False, or None when every interval compared is at 0, or every one at 1."""
    return stats.claim_verdict(holds, [at_bound(s) for s in scores])


def word(verdict, refuted=False):
    """How a verdict reads: "holds", "not shown", "does not hold" only where its opposite is shown
    (`refuted`), or "nothing to decide" (`stats.verdict_word`)."""
    return stats.verdict_word(verdict, refuted)


def class_scores(table, level, keys, phase="finetuned"):
    """arm -> (iqm, low, high) of the committed class table's keys-needed class, and the class's tasks."""
    rows = [r for r in table if (r["level"], r["grouping"], r["class"], r["phase"]) ==
            (level, "keys_needed", keys, phase)]
    return {r["arm"]: tuple(float(r[k]) for k in ("iqm", "low", "high")) for r in rows}, rows[0]["tasks"]

# %% [markdown]
# ## Where each method wins, class by class
#
# *About 19 minutes.*
#
# The committed study (`results/task_families/`, `docs/studies.md`): 64k reward-free pretraining steps, then
# per task 16k steps of the skills under random $w$ to identify the task (VISR, APS), and 8k steps of
# fine-tuning from epsilon 0.3; 10 seeds. A task class is the tasks needing the same number of keys: the
# **start-room tasks** (0 keys), the **one-key tasks** (1: a box in the room behind the first key, or a box
# that pays only with that key held) and the **two-key tasks** (2). The budget axis below also reads one room,
# **the room behind the first key** (room A): its boxes are some of the one-key tasks, not all. Per class the
# score is the interquartile mean (IQM) over seeds x tasks with a 95% stratified-bootstrap interval, each
# task's seeds resampled. Over a whole level, P(X > Y) is the probability that X scores above Y on a task of
# the level, seed against seed (`stats.improvement_with_ci`): 0.5 is a tie.
#
# **Predict first**: on which classes does APS beat both its parents after fine-tuning?

# %%
predicted_aps_wins = None  # your guess: a set of (level, keys) such as {("deep", "1")}, or set() for none

# %% [markdown]
# The figure is the committed one, redrawn by `study_plots.plot_families` from the study's rows: per class the
# light bar is fine-tuned, the narrow dark bar zero-shot, and k/N the tasks solved (mean score at least 0.5).
# Besides the paper's three it shows this repository's two APS variants (below) and DQN from scratch. APT's
# dark bars dip below 0, below a uniformly random policy: with no task to infer, APT acts greedily on the
# values of its exploration reward, and that policy settles into a short loop (a measurement not rerun
# here: APT's greedy episodes, `rollouts.greedy_rollout`, visit far fewer distinct cells than a random walk's
# do), so it stands on fewer of the cells a task pays for.

# %%
fig = study_plots.plot_families(study, by="keys_needed")

# %%
aps_wins = set()
for level in LEVELS:
    for keys in sorted({r["class"] for r in classes
                        if (r["level"], r["grouping"]) == (level, "keys_needed")}):
        scores, tasks = class_scores(classes, level, keys)
        said = [word(claim(wins(scores, a, b), [scores[a], scores[b]]), wins(scores, b, a))
                for a, b in (("visr", "apt"), ("apt", "visr"))]
        both = claim(wins(scores, "aps", "visr") and wins(scores, "aps", "apt"), [scores[a] for a in PAPER])
        aps_wins |= {(level, keys)} if both else set()
        beaten = wins(scores, "visr", "aps") or wins(scores, "apt", "aps")
        verdicts = (f"VISR beats APT: {said[0]}; APT beats VISR: {said[1]}; APS beats both: "
                    f"{word(both, beaten)}")
        if both is None:
            verdicts = f"every claim: {word(both)}"
        print(f"{level}, {keys} key{'' if keys == '1' else 's'} ({tasks} tasks), fine-tuned: " + ", ".join(
            f"{a} {show(scores[a])}" for a in PAPER) + "; " + verdicts)

# %%
for level in LEVELS:
    p = {(r["arm"], r["than"], r["phase"]): tuple(float(r[k]) for k in ("probability", "low", "high"))
         for r in improvements if r["level"] == level}
    tuned_visr, tuned_apt, zero_visr = (p["aps", "visr", "finetuned"], p["aps", "apt", "finetuned"],
                                        p["aps", "visr", "zero_shot"])
    print(f"{level}: P(APS > VISR) fine-tuned {show(tuned_visr)}, zero-shot {show(zero_visr)}; P(APS > APT) "
          f"fine-tuned {show(tuned_apt)}; fine-tuned, APS above VISR more often than not: "
          f"{word(tuned_visr[1] > 0.5, tuned_visr[2] < 0.5)}, above APT: "
          f"{word(tuned_apt[1] > 0.5, tuned_apt[2] < 0.5)}; zero-shot, below VISR: "
          f"{word(zero_visr[2] < 0.5, zero_visr[1] > 0.5)}")
judged = {arm: [r for r in family_verdicts if r["arm"] == arm] for arm in CONTENDERS}
print("class cells (level x grouping x class x phase, every protocol) with an interval above both parents': "
      + "; ".join(f"{arm} {sum(r['verdict'] == 'beats both' for r in rows)} of {len(rows)}"
                  for arm, rows in judged.items()))
for r in family_verdicts:
    if r["verdict"] == "beats both":
        print(f"  {r['arm']}, {r['level']}, {r['grouping']} {r['class']}, {r['phase']}: "
              f"{float(r['iqm']):.2f} [{float(r['low']):.2f}, {float(r['high']):.2f}] against visr "
              f"{float(r['visr_iqm']):.2f}, apt "
              f"{float(r['apt_iqm']):.2f}")
if predicted_aps_wins is None:
    print("no prediction written: fill in the cell above the figure, then compare")
else:
    print(f"your prediction: {sorted(predicted_aps_wins)}; measured: {sorted(aps_wins)}")

# %% [markdown]
# The two variants are this repository's (notebook 04e): APS with the kNN reward as a successor feature of
# its own (`knn_feature`), and with $\psi$ also conditioned on the exploration weight
# (`explore_conditioned`). The line of class cells counts every cell the study's tables hold: the tasks
# grouped three ways, by keys needed (above), by room (`room behind A`, the room behind the first key) and by
# kind (`kind target`, the level's own target; `kind keyed box`, a box that pays only while a key is held);
# and every fine-tuning protocol the study ran, each the same for every method: `finetuned` (epsilon from
# 0.3, the default, the one above), `finetuned_epsilon_1` (epsilon from 1, as a learner from scratch
# explores) and `finetuned_exploring` (the exploration reward kept while fine-tuning). The cells overlap and
# 225 comparisons were made, so one cell alone is weak evidence; the budget axis below shows whether a
# winning cell recurs at another budget.
#
# ## Live: one seed of the study on `easy`
#
# *About 8 minutes.*
#
# The library's protocol, `task_families.run_family_rows`: pretrain once, then for every task of the family
# identify $w$ (VISR, APS), evaluate zero-shot, fine-tune a copy and evaluate it. Only the default fine-tuning
# protocol runs here (the study also ran `finetuned_epsilon_1` and `finetuned_exploring`, above). At the
# study's budgets and settings the rows should be the committed rows of the same seed, number for number. The
# table sets the live seed's mean over a class's tasks beside the committed IQM over every seed x tasks. One
# seed's mean is not that IQM, and it may well fall outside its 95% interval: the interval says where the
# IQM over ten seeds lies, not where any one seed lands (seeds differ by far more than the IQM's
# uncertainty). The check is the last line: the live rows equal the committed rows of the same seed.

# %%
budget = tf.FamilyBudget(pretrain_steps, identify_steps, finetune_steps, eval_episodes,
                         protocols=("finetuned",))
config = TrainConfig(num_envs=2, learning_starts=150, progress=False) if FAST else TrainConfig(progress=False)
live, started = [], time.perf_counter()
for arm in live_arms:
    for seed in live_seeds:
        method, overrides = FAMILY_ARMS[arm]
        live += tf.run_family_rows(RunSpec(method, live_level, seed, overrides), budget, config)
print(f"{len(live_arms) * len(live_seeds)} runs on {live_level}, {len({r['task'] for r in live})} tasks "
      f"each: "
      f"{budget.pretrain_steps:,} pretraining, {budget.identify_steps:,} identification and "
      f"{budget.finetune_steps:,} fine-tuning steps; {time.perf_counter() - started:.0f} s")


def mean_score(rows, arm, keys, phase, seeds):
    return np.mean([float(r["normalised_score"]) for r in rows
                    if arm_name(r["method"], r["overrides"], FAMILY_ARMS) == arm and int(r["seed"]) in seeds
                    and (r["level"], r["phase"]) == (live_level, phase) and float(r["keys_needed"]) == keys])


committed_rows = {(r["method"], r["overrides"], int(r["seed"]), r["task"], r["phase"]): r["normalised_score"]
                  for r in study if r["level"] == live_level}
same = [abs(float(committed_rows[r["method"], r["overrides"], r["seed"], r["task"], r["phase"]])
            - r["normalised_score"]) < 1e-9 for r in live]
print(f"{'class':<8}{'arm':<6}{'live, mean over tasks':>22}{f'committed, {committed_seeds} seeds':>24}   "
      "(fine-tuned)")
for keys in sorted({float(r["keys_needed"]) for r in live}):
    scores, _ = class_scores(classes, live_level, f"{keys:g}")
    for arm in live_arms:
        live_mean = mean_score(live, arm, keys, "finetuned", live_seeds)
        print(f"{keys:g} key{'' if keys == 1 else 's'} {arm:<6}{live_mean:>22.2f}{show(scores[arm]):>24}")
if budget == tf.FamilyBudget(protocols=("finetuned",)) and config == TrainConfig(progress=False):
    print(f"live rows equal to the committed rows of seed {live_seeds}: {sum(same)} of {len(same)}"
          + ("" if all(same) else ": another CPU or PyTorch build; read them against the intervals"))
else:
    print("the live budget differs from the committed study's: read the live means against the intervals")

# %% [markdown]
# ## The measured ceiling, and the variant that lifts it
#
# *About 19 minutes.*
#
# At the study's budgets the paper's APS wins no class. Two measurements on `deep` say where its ceiling
# lies: **coverage**, the share of the level's (position, keys held) states visited while pretraining; and
# the classes **behind both keys**, where every arm scores about 0: for lack of data? The pretraining replay,
# relabelled by each task's reward, says whether the data ever held that reward.

# %%
cover = {}
for arm in (*PAPER, *CONTENDERS[1:], "random"):
    runs = {r["run_key"]: float(r["state_coverage"]) for r in study
            if r["level"] == "deep" and arm_name(r["method"], r["overrides"], FAMILY_ARMS) == arm}
    cover[arm] = stats.mean_with_ci(list(runs.values()))
print(f"coverage on deep, 64k pretraining steps, {committed_seeds} seeds: "
      + ", ".join(f"{a} {show(s)}" for a, s in cover.items()))
for other in ("visr", "apt"):
    apart = cover[other][1] - cover["aps"][2]  # the gap between the two intervals
    touching = round(cover[other][1], 2) <= round(cover["aps"][2], 2)  # as printed, two decimals
    print(f"{other.upper()} beats APS in coverage on deep: {word(wins(cover, other, 'aps'))}"
          + (f", marginal: the intervals are {apart:.3f} apart and touch at two decimals"
             if touching and apart > 0 else ""))
for level in ("hard", "deep"):
    rows = [r for r in classes if (r["level"], r["grouping"], r["class"]) == (level, "keys_needed", "2")]
    print(f"{level}, 2 keys ({rows[0]['tasks']} tasks), every arm in every phase and protocol ({len(rows)} "
          f"IQMs): highest {max(float(r['iqm']) for r in rows) + 0.0:.3f}, highest interval end "
          f"{max(float(r['high']) for r in rows) + 0.0:.3f}")
    held = {}
    for arm in ("visr", "aps", *CONTENDERS[1:]):
        held[arm] = [np.mean([int(r["identified"]) for r in study
                              if (r["level"], r["phase"], r["keys_needed"]) == (level, phase, "2")
                              and arm_name(r["method"], r["overrides"], FAMILY_ARMS) == arm])
                     for phase in ("zero_shot_relabelled", "zero_shot")]
    print("  share of (task, seed) pairs whose data held the task's reward, pretraining replay / 16k "
          "identification steps: " + ", ".join(f"{arm} {a:.2f} / {b:.2f}" for arm, (a, b) in held.items()))

# %% [markdown]
# So on the two-key tasks the data is often there and no arm turns it into a policy: the ceiling
# there is not the data (`docs/results.md` names it per level: $\psi$ on hard, $\phi$ on deep). In front of
# it, APS explores less than VISR: it covers less of deep, intervals apart. The **budget axis**
# (`results/task_families_budget/`) pretrains longer on deep, 256k and 1M steps, the same 8k fine-tuning.
# The figure: per budget, the IQM over seeds x the family's 22 tasks (left) and for the level's own target
# (right); the lines below it judge each budget.
#
# **Predict first**: at 256k, does any arm beat both VISR and APT in the room behind the first key (room A)?
# At 1M, over the whole family?

# %%
fig = study_plots.plot_family_budgets(families)

# %%
def interval(row, prefix=""):
    """(iqm, low, high) of a row of the library's tables: its own, or a parent's (prefix "visr_", "apt_")."""
    return tuple(row[f"{prefix}{end}"] for end in ("iqm", "low", "high"))


for steps in (256_000, 1_000_000):
    rows = families[steps]  # every seed of this budget's study
    runs = {(arm_name(r["method"], r["overrides"], FAMILY_ARMS), r["run_key"]): float(r["state_coverage"])
            for r in rows if r["level"] == "deep"}
    arms = list(dict.fromkeys(arm for arm, _ in runs))
    print(f"{steps:,} pretraining steps, {len({r['seed'] for r in rows})} seeds, coverage: " + ", ".join(
        f"{arm} {np.mean([c for (a, _), c in runs.items() if a == arm]):.2f}" for arm in arms))
    for grouping, name, where in (("room", "behind A", "the room behind the first key (room A)"),
                                  ("keys_needed", "2", "the two-key tasks")):
        judged = [row for row in tf.class_verdicts(tf.class_aggregates(rows, "deep", grouping, "finetuned"))
                  if row[grouping] == name]  # the library's verdicts: above both intervals and the floor
        parents = ", ".join(f"{arm} {show(interval(judged[0], f'{arm}_'))}" for arm in PARENTS)
        print(f"  {where}, fine-tuned: {parents}; " + "; ".join(
            f"{row['arm']} {show(interval(row))}: {row['verdict']}" for row in judged))
    scores = {r["arm"]: interval(r) for r in budget_axis({steps: rows})
              if (r["phase"], r["tasks"]) == ("finetuned", "family")}
    beats_both = {arm: claim(wins(scores, arm, "visr") and wins(scores, arm, "apt"), scores.values())
                  for arm in CONTENDERS}
    print("  every task, fine-tuned IQM: " + ", ".join(f"{arm} {show(scores[arm])}" for arm in PARENTS)
          + "; " + "; ".join(f"{arm} {show(scores[arm])} beats both: "
                             f"{word(said, any(wins(scores, parent, arm) for parent in PARENTS))}"
                             for arm, said in beats_both.items()))
    for parent in PARENTS:
        p = tf.improvement(rows, "deep", "aps", parent, "finetuned")
        print(f"  every task, fine-tuned: P(APS > {parent.upper()}) {show(p)}; above {parent.upper()} more "
              f"often than not: {word(p[1] > 0.5, p[2] < 0.5)}")

# %% [markdown]
# These intervals resample (task, seed) pairs, yet a seed's tasks share one pretraining. Read per seed, as
# the held-out test below registered, every win of the explore-conditioned variant on deep rests on one
# class of four tasks, and the kNN-feature variant's at 1M survives leaving out any one (notebook 04e prints
# it).

# %% [markdown]
# ## The held-out test
#
# *About 17 minutes.*
#
# A win found where it was looked for proves little, so the variants were tested where no one had looked,
# under a protocol committed before any run (`docs/preregistration/held_out.md`): two new levels (`detour`,
# `fork`), fresh seeds 10-19, one metric, per seed the fine-tuned mean over the level's family. H1
# (explore-conditioned) and H2 (kNN feature) hold if the variant beats both parents, robustly to leaving out
# any one class, on both 256k parts. Secondary: H3, each at 1M on `detour`; H4, conditioning against the
# kNN-feature variant at its mean exploration weight; H5, APS against VISR; and DQN given the whole budget.
# Two arms are *equivalent* only when the 90% interval of their difference lies within $\pm 0.05$; "no
# difference found" is not a tie.
#
# **Predict first**: does the variants' win on deep survive a level they were not designed on?

# %%
parts = {}
for part in ("detour-256k", "fork-256k", "detour-1m"):
    try:
        parts[part] = {name: read_rows(course.committed_result(f"held_out/{part}/{name}.csv"))
                       for name in ("verdicts", "pairs", "summary")}
    except FileNotFoundError:
        print(f"{part}: not committed yet")
registered = read_rows(course.committed_result("held_out/hypotheses.csv"))
outcome = {row["hypothesis"]: row["outcome"] for row in registered if row["hypothesis"] in ("H1", "H2")}
print(f"H1: {outcome['H1']}; H2: {outcome['H2']}")
for part, tables in parts.items():
    for row in tables["verdicts"]:
        against = "; ".join(f"against {parent.upper()} {interval_text(row, parent + '_')} "
                            f"{row[parent + '_reading']}" for parent in PARENTS)
        print(f"{part}, {row['contender']}: {verdict_text(row)} ({against})")
for row in registered:  # H1 and H2 from the part verdicts above (H3: the detour-1m lines)
    if row["hypothesis"] in ("H1", "H2"):
        print(f"{row['hypothesis']} ({row['about']}; {row['parts']}): {row['outcome']}")
for number, (x, y) in COMPARED.items():
    for part, tables in parts.items():
        for row in tables["pairs"]:
            if (row["x"], row["y"]) == (x, y):
                print(f"{number}, {part}, {x} against {y}: {interval_text(row)}, 90% "
                      f"[{float(row['low90']):+.3f}, {float(row['high90']):+.3f}]: {row['reading']}")
for part, tables in parts.items():
    dqn = [row for row in tables["pairs"] if row["y"] == "dqn, equal budget"]
    if dqn:
        print(f"{part}, against DQN given the whole budget on the task's reward "
              f"({len(dqn[0]['tasks'].split('; '))} tasks, one per class): "
              + "; ".join(f"{row['x']} {interval_text(row)} {row['reading']}" for row in dqn))

# %% [markdown]
# The registered intervals resample seeds. Welch's $t$ interval of the same scores is a reasonable other
# choice; a reading the two disagree on is *marginal* (`verdicts.welch_readings` reads each both ways).

# %%
marginal, readings = [], 0
for part in parts:
    rows = read_rows(course.committed_result(f"held_out/{part}/task_families.csv"), tf.COLUMNS)
    for row in welch_readings(rows, rows[0]["level"], part):
        readings += 1
        if row["marginal"] == "yes":
            marginal.append(row)
            print(f"marginal: {part}, {row['reading']}: {row['registered']}; under Welch's interval: "
                  f"{row['welch']}")
primary = [row for row in marginal if row["part"] in ("detour-256k", "fork-256k")
           and row["reading"].endswith("against both parents")]
print(f"{len(marginal)} of {readings} registered readings turn over under Welch's interval, "
      f"{len(primary)} of them a verdict H1 or H2 is decided from")

# %% [markdown]
# **H1 does not hold; H2 holds on `fork-256k` only** (the first line above; the same under Welch's
# interval). On `detour` at 256k each variant beats APT only, with no difference from VISR found (not a
# tie). On `fork` both beat both parents, only the kNN-feature variant robustly: the explore-conditioned
# one's lead is lost without any one of three classes.
# Conditioning $\psi$ on the exploration weight shows no gain (H4): equivalent on `detour` at 256k by the
# registered interval, marginally, and no difference found elsewhere. The paper's APS (H5) shows no
# difference from VISR on `detour` at 256k and falls below it on `fork`. And DQN given the whole budget on
# the task's reward scores above both variants on both levels.
#
# With budget the answer on `detour` changes (H3): at 1M both variants beat both parents, the kNN-feature one
# robustly, the explore-conditioned one robustly only by the registered interval (under Welch's it is lost
# without `behind B`, the room behind the second door). There their gap opens (the next cell): at 1M the
# three arms with the kNN feature score in that room and the paper's three do not. The paper's APS is
# equivalent to VISR at 1M (H5) by the registered interval, again marginally.

# %%
for part in ("detour-256k", "detour-1m"):
    if part not in parts:
        continue
    rows = read_rows(course.committed_result(f"held_out/{part}/task_families.csv"), tf.COLUMNS)
    tasks = sorted({r["task"] for r in rows if r["phase"] == PRIMARY_PHASE})
    room = task_classes(rows[0]["level"], tasks)["behind B"]
    arms = [arm for arm in FAMILY_ARMS
            if arm != "dqn, equal budget" and seed_scores(rows, arm, tasks=room)]
    print(f"{part}, fine-tuned, mean over seeds behind B ({len(room)} tasks): " + ", ".join(
        f"{arm} {np.mean(list(seed_scores(rows, arm, tasks=room).values())) + 0.0:.2f}"
        for arm in arms))

# %% [markdown]
# ## Summary: one story
#
# *About 3 minutes.*
#
# * **VISR** (task inference): fine-tuned, it beats APT on every level's one-key tasks; zero-shot, APS stays
#   behind it.
# * **APT** (exploration): on deep it covers the most states of the paper's three, yet fine-tunes from a
#   task-free policy, below VISR on the one-key tasks.
# * **APS as the paper writes it** (64k pretraining, 8k fine-tuning, 10 seeds): fine-tuned, no difference
#   from VISR is found (P(APS > VISR) near one half on every level; not shown to be a tie); zero-shot, it is
#   below VISR on every level. It beats APT, beats both on no class, and on deep covers less than VISR (0.58
#   against 0.63, the intervals 0.003 apart: marginal). Held out (H5) it is nowhere above VISR: below it on
#   `fork` at 256k, no difference found on `detour` at 256k, equivalent on `detour` at 1M, marginally.
# * **The variants** (the kNN reward as a successor feature of its own; with $\psi$ conditioned on the
#   exploration weight too) explore like APT. Pre-registered, on levels and seeds no one had looked at:
#   **H1 does not hold; H2 holds on `fork-256k` only**; conditioning shows no gain (H4), and DQN given the
#   whole budget beats both. With budget they pull ahead: on `detour` at 1M both beat both parents (H3; the
#   explore-conditioned one's robustness marginal), as on deep at 1M (exploratory). At 1M the paper's APS
#   covers nearly every state of deep (0.99), and still no difference from VISR is found.
# * **The ceiling**: the level's own target, a two-key task: with the family study's 8k fine-tuning steps no
#   arm reaches it at any budget here, though the data often holds its reward; with Figure 4's 32k, APT
#   alone reaches it on some seeds of deep (notebook 07b prints it).
#
# Next: notebook 07b decides the paper's own gridworld claims, with their measured mechanisms, and sets the
# paper's Atari numbers beside them.

# %%
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
