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
# # 08 · Appendix: the engineering behind the numbers
#
# The course's notebooks print verdicts computed from committed results and from live runs. This
# appendix is about what makes those numbers trustworthy, and where their limits are: how a run is
# named and fingerprinted, when the same seed gives the same digits and why another CPU may not, and how
# a sweep of runs is written so that an interrupted one resumes and a finished one is never run twice.
# None of it is needed to understand APS; all of it is needed to *reproduce* anything.
#
# **What you will be able to do.** Say what a configuration hash covers and check a live run's hash
# against a results file's; show that a seed reproduces a run bit for bit on one machine, and watch a
# one-ulp difference in a single weight grow until two runs part ways; compare a live run of Figure 4
# with the committed file row by row and read a mismatch for what it is; write a sweep of `RunSpec`s with
# overrides and resume it.
#
# **Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first pass.
#
# **How long.** About 26 minutes of study: reading what it says and prints, its figures, predictions and
# questions; under a minute of compute on a 2-core CPU in teaching mode (the last cell prints this run's
# time).

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
level = "easy"
drift_steps = 6_400 if FAST else 32_000  # reward-free steps of the two runs one ulp apart
# the live Figure 4 run: the committed sweep's budget, so that it can be compared with the file's rows
# (whole rounds: 32 envs x 100 steps, 3,200 env steps, is one round)
budget = experiments.Budget(3_200, 3_200, 3_200, 8) if FAST else experiments.Budget()
sweep_budget = experiments.Budget(3_200, 3_200, 3_200, 4)  # the toy sweep: a few seconds a run
notebook_start = time.perf_counter()

# %%
from aps_teach import course

course.fast_mode_banner(FAST)

# %%
import dataclasses
import tempfile
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from aps_teach.grid.experiments import Budget
from aps_teach.grid.sweep import run_gridworld_rows
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.infra.sweeps import RunSpec, config_hash, read_rows, run_sweep

config = TrainConfig(progress=False)

# %% [markdown]
# ## A run's fingerprint: the configuration hash
#
# *About 3 minutes.*
#
# A results row is only worth comparing with another if both came from the same configuration. Every
# row the library writes carries `config_hash(budget, config)`: the first 12 hex digits of a SHA-256 of
# the budget and the whole `TrainConfig` (the agent's settings included) written as sorted JSON. Any
# field that changes, however small, changes the hash; the same fields give the same hash on every
# machine and in every Python session.
#
# **Predict:** will the default budget and configuration give the committed Figure 4's hash? Will
# `k = 11` instead of 10?

# %%
file_rows = read_rows(course.committed_result("gridworld/figure4.csv"))
file_hashes = sorted({row["config_hash"] for row in file_rows})
default_hash = config_hash(Budget(), config)
tweaked = dataclasses.replace(config, agent=dataclasses.replace(config.agent, k=11))
print(f"figure4.csv was written with configuration hash {', '.join(file_hashes)}")
whose = "the file's" if default_hash in file_hashes else "another"
print(f"the default budget and TrainConfig: {default_hash} ({whose})")
print(f"the same with k = 11: {config_hash(Budget(), tweaked)}")
print(f"this notebook's live run: {config_hash(budget, config)}"
      + (" (the file's: its rows can be compared)" if config_hash(budget, config) in file_hashes else
         " (another configuration: nothing will be compared)"))

# %% [markdown]
# ## Same seed, same digits; one ulp apart, other runs
#
# *About 8 minutes.*
#
# Every entry point takes a seed, and every random draw comes from generators seeded from it: the
# networks' initial weights, the environments' resets, $\epsilon$-greedy and the replay's samples. So two
# runs with one seed on one machine compute the same floating-point operations in the same order and end
# bit for bit equal.
#
# That guarantee stops at the machine. Floating-point addition is not associative, and another CPU (its
# vector width) or another PyTorch build (its kernels) may add the same numbers in another order: the
# result differs in the last bit. Does one bit matter? The next cell trains APS twice with the same seed,
# and in the second run nudges *one* weight of $\psi$ by one ulp (the smallest step a float32 can take)
# after the first round. Then it measures, round by round, the largest difference between the two
# runs' weights.
#
# **Predict:** after the nudge, will the two runs stay within a few ulps of each other, or drift apart?

# %%
def weights(learner) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in learner.psi.parameters()])


def run(nudge: bool):
    """APS pretrained on `level`; the psi weights after every round; with `nudge`, one weight moved by
    one ulp after the first round."""
    trace = []

    def on_round(end):
        if nudge and end.round == 1:
            with torch.no_grad():
                first = next(end.learner.psi.parameters()).view(-1)
                first[0] = torch.nextafter(first[0], torch.tensor(float("inf")))
        trace.append(weights(end.learner))

    learner, log = pretrain("aps", level, drift_steps, seed, config, on_round=on_round)
    return trace, log


trace_a, log_a = run(nudge=False)
trace_a2, log_a2 = run(nudge=False)
trace_b, log_b = run(nudge=True)
same_seed = all(torch.equal(a, b) for a, b in zip(trace_a, trace_a2, strict=True))
print(f"two runs, one seed, this machine: every weight after every round bit for bit equal: {same_seed}")
gap = [(a - b).abs().max().item() for a, b in zip(trace_a, trace_b, strict=True)]
for round_number in sorted({1, 2, (len(gap) + 1) // 2, len(gap)}):
    print(f"one ulp apart: largest weight difference after round {round_number}: {gap[round_number - 1]:.2e}")
grew = gap[-1] > 1e3 * gap[0]
print(f"visitation entropy: {log_a.coverage['visitation_entropy']:.4f} and "
      f"{log_b.coverage['visitation_entropy']:.4f}")
drift_verdict = ("the one-ulp difference grew by more than a thousandfold: the runs parted ways" if grew else
                 "the one-ulp difference stayed within a thousandfold of itself")
print(drift_verdict)

fig, ax = plt.subplots(figsize=(6, 3))
ax.semilogy(range(1, len(gap) + 1), np.maximum(gap, 1e-12), marker="o")
ax.set_xlabel(f"round ({config.num_envs} envs x 100 steps)")
ax.set_ylabel("max |weight difference|")
ax.set_title(f"APS on {level}, seed {seed}: one weight nudged by one ulp after round 1")
fig.tight_layout()
plt.show()

# %% [markdown]
# Training amplifies a difference: a slightly different weight picks a different action somewhere, that
# changes what the replay holds, which changes every later minibatch. So a run reproduces another digit
# for digit only on the same CPU with the same PyTorch build, and elsewhere it is one more sample from
# the same distribution. That is why every claim in this course is decided from intervals over seeds,
# never from one run's digits.
#
# ## Your seed against the committed file
#
# *About 5 minutes.*
#
# The test of that on your machine: run one method of the committed Figure 4 with the sweep's budget and
# seed 0, and compare its zero-shot and fine-tuned rows with the file's, number for number. (In fast mode
# the budget differs, the hash says so, and nothing is compared.)
#
# **Predict:** will your machine reproduce the file's numbers exactly?

# %%
spec = RunSpec("visr", level, seed)
tick = time.perf_counter()
live_rows = [row for row in run_gridworld_rows(spec, budget) if row["phase"] in ("zero_shot", "finetuned")]
print(f"ran {spec.key} with hash {config_hash(budget, config)} in {time.perf_counter() - tick:.0f} s")
comparable = config_hash(budget, config) in file_hashes
stored = {(row["run_key"], row["phase"]): row for row in file_rows}
checks = []
for row in live_rows:
    filed = stored.get((spec.key, row["phase"])) if comparable else None
    same = filed is not None and float(filed["success_rate"]) == row["success_rate"] and \
        float(filed["return"]) == row["return"]
    checks += [same] if filed is not None else []
    shown = f"{float(filed['success_rate']):.3f}, {float(filed['return']):.3f}" if filed else "-"
    print(f"{row['phase']:<10} success {row['success_rate']:.3f}, return {row['return']:.3f} | "
          f"the file: {shown} | identical: {same if filed else '-'}")
print(f"rows identical to the file's: {sum(checks)} of {len(checks)} compared")
reproduction = ("nothing compared (another configuration)" if not checks else
                "every compared row reproduces the file's" if all(checks) else
                f"{len(checks) - sum(checks)} rows differ: read them against the file's spread over seeds")
print(f"reproduction: {reproduction}")

# %% [markdown]
# A differing row is not a bug: the file was written on one 2-core CPU with one PyTorch build, and the
# last section showed what one ulp becomes. Compare it with the spread of the file's seeds instead,
# as notebook 04b does with its bars.
#
# ## Sweeps: specs, keys and resuming
#
# *About 4 minutes.*
#
# A sweep is a list of `RunSpec(method, env, seed, overrides)`. The overrides are dotted config fields,
# `(("agent.k", 5),)`, and a spec's `key` names the run: `method-env-seed`, plus a hash of the
# overrides when there are any. `run_sweep(specs, run, results_csv)` hands the pending specs to worker
# processes, appends each finished run's rows to the CSV (atomically: a crash never leaves half a row) and
# skips every spec whose key is already in it. So an interrupted sweep resumes where it stopped, a
# finished one costs nothing to run again, and a variant equal to the default gets *no* override, so it
# has the default's key and runs once for every ablation that needs it (notebook 05 builds its ablations
# this way). The results file also records the sweep's configuration, and a sweep of another
# configuration into it is refused rather than mixed in.
#
# **Predict:** the second call below asks for the same two runs plus one more. How many will it run?

# %%
scratch = Path(tempfile.mkdtemp())  # trial runs go to a scratch folder, never to results/
results = scratch / "toy_sweep.csv"
specs = [RunSpec("visr", level, seed), RunSpec("visr", level, seed, (("agent.feature_dim", 8),))]
for one in specs:
    print(f"{one.key}: overrides {one.overrides or 'none'}")
toy_run = partial(run_gridworld_rows, budget=sweep_budget)
first = run_sweep(specs, toy_run, results, workers=2, progress=False)
second = run_sweep([*specs, RunSpec("visr", level, seed + 1)], toy_run, results, workers=2, progress=False)
print(f"first call: ran {len(first.completed)}, skipped {len(first.skipped)}")
print(f"second call: ran {len(second.completed)}, skipped {len(second.skipped)} (already in {results.name})")
keys = sorted({row["run_key"] for row in read_rows(results)})
print(f"{results.name} now holds {len(keys)} runs: {', '.join(keys)}")

# %% [markdown]
# ## Summary
#
# *About 2 minutes.*
#
# * A configuration hash fingerprints the budget and the whole configuration; rows are compared only
#   under one hash.
# * One seed gives the same digits on one machine; one ulp of difference grows until two runs part ways,
#   so another CPU or PyTorch build gives another sample, and claims rest on intervals over seeds.
# * A sweep is a list of specs with keys; results are appended atomically, finished runs are skipped,
#   and an interrupted sweep resumes.

# %%
print(f"* {drift_verdict}")
print(f"* your seed against the file: {reproduction}")
print(f"notebook wall time: {time.perf_counter() - notebook_start:.0f} s")
