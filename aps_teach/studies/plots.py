"""Study figures: Figure 4 (success per method and level), zero-shot transfer, the budget study's curves,
ablations. Each function takes result rows (as the CSVs hold them), draws and returns the figure; the
`write_*` functions draw the figure of a results directory into it (what the command line writes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from aps_teach.grid.sweep import FIGURE4_COLUMNS
from aps_teach.grid.transfer import transfer_rows
from aps_teach.infra.figures import method_colour, save_figure
from aps_teach.infra.stats import mean_with_ci, solved_count, summarise
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.config import pretrains
from aps_teach.studies.aps_parts import ARMS
from aps_teach.studies.aps_parts import COLUMNS as PARTS_COLUMNS
from aps_teach.studies.aps_parts import RESULTS as PARTS_RESULTS
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.budget import is_main_grid, study_rows
from aps_teach.studies.families_budget import BUDGET_ARMS, budget_axis
from aps_teach.studies.finetune import ARMS as FINETUNE_ARMS
from aps_teach.studies.finetune import COLUMNS as FINETUNE_COLUMNS
from aps_teach.studies.finetune import RESULTS as FINETUNE_RESULTS
from aps_teach.studies.held_out import Protocol, read_part
from aps_teach.studies.task_families import COLUMNS as FAMILY_COLUMNS
from aps_teach.studies.task_families import RESULTS as FAMILY_RESULTS
from aps_teach.studies.task_families import class_aggregates
from aps_teach.studies.verdicts import PRIMARY_PHASE, interval_text, part_verdicts, seed_scores
from aps_teach.studies.zero_shot import LINKS, capping_links, read_diagnosis
from aps_teach.studies.zero_shot_fix import FIX_CLASS_COLUMNS, FIX_COLUMNS
from aps_teach.studies.zero_shot_loss import ARMS as LOSS_ARMS
from aps_teach.studies.zero_shot_loss import COLUMNS as LOSS_COLUMNS
from aps_teach.studies.zero_shot_loss import RESULTS as LOSS_RESULTS
from aps_teach.studies.zero_shot_loss import WITH_KNN, WITHOUT_KNN
from aps_teach.studies.zero_shot_loss import successes as loss_successes


def plot_figure4(rows, methods: Sequence[str] | None = None, levels: Sequence[str] | None = None):
    """The paper's Figure 4 form, and the adaptation behind it. Top: success rate per method, grouped by
    level; each bar's dark lower part is the zero-shot success and its full (light) height the fine-tuned
    success, both means over seeds with 95% bootstrap intervals, and above it k/N, the seeds that solve the
    level (`stats.solved_count`) fine-tuned. Below, one panel per level: mean success against fine-tuning
    steps (0 = zero-shot). `rows` have method, level, phase, finetune_steps, success_rate."""
    summary = summarise(rows, by=("level", "method", "phase"), value="success_rate")
    levels = list(levels or dict.fromkeys(level for level, _, _ in summary))
    methods = list(methods or dict.fromkeys(method for _, method, _ in summary))
    fig = plt.figure(figsize=(max(7.0, 1.6 + 1.1 * len(methods) * len(levels)), 7.2))
    grid = fig.add_gridspec(2, len(levels), height_ratios=(1.2, 1))
    ax = fig.add_subplot(grid[0, :])
    width = 0.8 / len(methods)
    for m, method in enumerate(methods):
        colour = method_colour(method, m)
        for phase, alpha in (("finetuned", 0.35), ("zero_shot", 1.0)):
            stats = [summary.get((level, method, phase)) for level in levels]
            x = [i + (m - (len(methods) - 1) / 2) * width for i, s in enumerate(stats) if s]
            means = [s[0] for s in stats if s]
            errors = [[s[0] - s[1] for s in stats if s], [s[2] - s[0] for s in stats if s]]
            ax.bar(x, means, width * 0.92, color=colour, alpha=alpha, yerr=errors, capsize=3,
                   error_kw={"alpha": 0.8, "linewidth": 1}, label=method if phase == "finetuned" else None,
                   gid=f"{method}/{phase}")
        for i, level in enumerate(levels):
            finetuned = [float(row["success_rate"]) for row in rows if row["method"] == method
                         and row["level"] == level and row["phase"] == "finetuned"]
            if finetuned:
                k, n = solved_count(finetuned)
                high = summary[(level, method, "finetuned")][2]
                ax.text(i + (m - (len(methods) - 1) / 2) * width, min(high, 1.0) + 0.02, f"{k}/{n}",
                        ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(range(len(levels)), [f"{level} level" for level in levels])
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("success rate")
    ax.set_title("zero-shot (dark) and fine-tuned (full bar) success, mean and 95% CI over seeds; "
                 "k/N: seeds that solve it fine-tuned", fontsize="medium")
    ax.legend(title="method", frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    curves = summarise([row for row in rows if "finetune_steps" in row],
                       by=("level", "method", "finetune_steps"), value="success_rate")
    for i, level in enumerate(levels):
        panel = fig.add_subplot(grid[1, i])
        for m, method in enumerate(methods):
            points = sorted((int(steps), s[0]) for (lv, me, steps), s in curves.items()
                            if lv == level and me == method)
            if points:
                panel.plot(*zip(*points, strict=True), "o-", color=method_colour(method, m), label=method,
                           markersize=3)
        panel.set_ylim(-0.02, 1.02)
        panel.set_title(f"{level}: success along fine-tuning", fontsize="medium")
        panel.set_xlabel("fine-tuning env steps")
        if i == 0:
            panel.set_ylabel("mean success rate")
    fig.tight_layout()
    return fig


def plot_transfer(rows: Sequence[dict]):
    """Left: mean normalised score per maze and method over tasks x seeds, with 95% cluster-bootstrap
    intervals over seeds (a seed's tasks share its pretraining: whole seeds resampled, `transfer.
    summarise_transfer`'s interval). Right: each task's score against the R^2 of its least-squares fit
    (tasks without reward in their identification data have no R^2 and are counted in the title)."""
    summary = summarise(rows, by=("maze", "method"), value="normalised_score", cluster="seed")
    mazes = list(dict.fromkeys(maze for maze, _ in summary))
    methods = list(dict.fromkeys(method for _, method in summary))
    fig, (bars, scatter) = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / len(methods)
    for m, method in enumerate(methods):
        colour = method_colour(method, m)
        stats = [(i, summary[(maze, method)]) for i, maze in enumerate(mazes) if (maze, method) in summary]
        x = [i + (m - (len(methods) - 1) / 2) * width for i, _ in stats]
        errors = [[s[0] - s[1] for _, s in stats], [s[2] - s[0] for _, s in stats]]
        bars.bar(x, [s[0] for _, s in stats], width * 0.92, yerr=errors, capsize=3, color=colour,
                 label=method)
        for i, maze in enumerate(mazes):
            mine = [row for row in rows if row["method"] == method and row["maze"] == maze]
            if mine:
                r2, score = ([float(row[key]) for row in mine] for key in ("r2", "normalised_score"))
                scatter.scatter(r2, score, s=18, alpha=0.7, color=colour, marker="os^Dv<>"[i % 7],
                                label=f"{method}, {maze}")
    for ax in (bars, scatter):
        ax.axhline(0, color="grey", linewidth=0.8, linestyle="--")
        ax.axhline(1, color="grey", linewidth=0.8, linestyle=":")
    bars.set_xticks(range(len(mazes)), mazes)
    bars.set_ylabel("normalised score (0 random, 1 optimal)")
    bars.set_title("zero-shot transfer: mean over tasks x seeds,\n95% CI resampling whole seeds")
    bars.legend(title="method", frameon=False)
    unidentified = sum(1 for row in rows if not int(row["identified"]))
    scatter.set_xlabel(r"$R^2$ of $r \approx \phi(s')^\top c$ on the identification data")
    scatter.set_ylabel("normalised score")
    note = f"\n({unidentified} tasks saw no reward: no $R^2$, not shown)" if unidentified else ""
    scatter.set_title(f"score against how linear the task is in $\\phi${note}")
    scatter.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    return fig


def _curve(ax, summary: dict, keys: Sequence, x: Sequence[float], colour: str, style: str, label: str | None,
           alpha: float = 1.0):
    """A line through the means of `summary[key]` for each key (at x) with a shaded 95% interval."""
    shown = [(xi, summary[k]) for xi, k in zip(x, keys, strict=True) if k in summary]
    if not shown:
        return
    xs, stats = zip(*shown, strict=True)
    ax.plot(xs, [s[0] for s in stats], style, color=colour, label=label, marker="o", markersize=4,
            alpha=alpha)
    ax.fill_between(xs, [s[1] for s in stats], [s[2] for s in stats], color=colour, alpha=0.12 * alpha,
                    linewidth=0)


def plot_study_budget(levels: Sequence[dict], transfer: Sequence[dict]):
    """The budget study: one row of panels per feature dimension d; per key level, success against
    pretraining steps (fine-tuned solid, zero-shot dashed, with the last identification budget), per maze
    the zero-shot transfer score (0 random, 1 optimal); means and 95% intervals over seeds (for transfer
    the mean over tasks x seeds, its interval resampling whole seeds with their tasks). dqn, which does not
    pretrain, is drawn as a flat reference line."""
    dims = sorted({int(row["feature_dim"]) for row in [*levels, *transfer]})
    names = list(dict.fromkeys(str(row["level"]) for row in levels))
    mazes = list(dict.fromkeys(str(row["maze"]) for row in transfer))
    budgets = sorted({int(row["pretrain_steps"]) for row in [*levels, *transfer]} - {0})
    last_id = max(int(row["identify_steps"]) for row in levels) if levels else 0
    methods = list(dict.fromkeys(str(row["method"]) for row in [*levels, *transfer]))
    chosen = [row for row in levels if row["phase"] == "finetuned" or (
        row["phase"] == "zero_shot" and int(row["identify_steps"]) in (0, last_id))]
    summary = summarise(chosen, by=("feature_dim", "level", "method", "phase", "pretrain_steps"),
                        value="success_rate")
    scores = summarise(transfer, by=("feature_dim", "maze", "method", "pretrain_steps"),
                       value="normalised_score", cluster="seed")
    panels = len(names) + len(mazes)
    fig, axes = plt.subplots(len(dims), panels, figsize=(3.4 * panels, 3.0 * len(dims)), squeeze=False,
                             sharex=True)
    for r, d in enumerate(dims):
        for c, name in enumerate(names + mazes):
            ax = axes[r][c]
            for m, method in enumerate(methods):
                colour = method_colour(method, m)
                if name in mazes:
                    keys = [(str(d), name, method, str(b)) for b in budgets]
                    _curve(ax, scores, keys, budgets, colour, "-", method if c == len(names) else None)
                    continue
                for phase, style in (("finetuned", "-"), ("zero_shot", "--")):
                    if not pretrains(method):  # no pretraining: one value, drawn across the budgets
                        stat = summary.get((str(d), name, method, phase, "0"))
                        if stat and phase == "finetuned":
                            ax.axhline(stat[0], color=colour, linestyle=":", label="dqn (fine-tuned)"
                                       if r == c == 0 else None)
                        continue
                    keys = [(str(d), name, method, phase, str(b)) for b in budgets]
                    _curve(ax, summary, keys, budgets, colour, style,
                           f"{method} ({phase.replace('_', '-')})" if r == c == 0 else None)
            ax.set_xscale("log")
            ax.set_xticks(budgets, [f"{b // 1000}k" for b in budgets])
            ax.minorticks_off()
            ax.axhline(0, color="grey", linewidth=0.6)
            ax.set_title(f"{name}, d = {d}" + (" (transfer)" if name in mazes else ""))
            ax.set_ylabel("normalised score" if name in mazes else "success rate")
            if name not in mazes:
                ax.set_ylim(-0.02, 1.02)
            if r == len(dims) - 1:
                ax.set_xlabel("pretraining env steps")
    axes[0][0].legend(frameon=False, fontsize="x-small")
    if mazes:
        axes[0][len(names)].legend(frameon=False, fontsize="x-small")
    fig.tight_layout()
    return fig


def plot_study_identify(levels: Sequence[dict]):
    """Zero-shot success against task-identification steps, per key level and d (panels), for each
    method with a task to identify and pretraining budget (line shade: darker = longer pretraining)."""
    rows = [row for row in levels if row["phase"] == "zero_shot" and int(row["identify_steps"]) > 0]
    summary = summarise(rows, by=("feature_dim", "level", "method", "pretrain_steps", "identify_steps"),
                        value="success_rate")
    dims = sorted({int(row["feature_dim"]) for row in rows})
    names = list(dict.fromkeys(str(row["level"]) for row in rows))
    ids = sorted({int(row["identify_steps"]) for row in rows})
    budgets = sorted({int(row["pretrain_steps"]) for row in rows})
    fig, axes = plt.subplots(1, len(dims) * len(names), figsize=(3.4 * len(dims) * len(names), 3.2),
                             squeeze=False)
    for p, (d, name) in enumerate((d, name) for d in dims for name in names):
        ax = axes[0][p]
        for m, method in enumerate(dict.fromkeys(str(row["method"]) for row in rows)):
            for b, budget in enumerate(budgets):
                keys = [(str(d), name, method, str(budget), str(i)) for i in ids]
                _curve(ax, summary, keys, ids, method_colour(method, m), "-",
                       f"{method}, {budget // 1000}k pretraining" if p == 0 else None,
                       alpha=0.35 + 0.65 * (b + 1) / len(budgets))
        ax.set_xscale("log")
        ax.set_xticks(ids, [f"{i / 1000:g}k" for i in ids])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{name}, d = {d}")
        ax.set_xlabel("identification env steps")
        ax.set_ylabel("zero-shot success")
    axes[0][0].legend(frameon=False, fontsize="x-small")
    fig.tight_layout()
    return fig


def plot_study_adaptation(levels: Sequence[dict], pretrain_steps: int | None = None,
                          feature_dim: int | None = None):
    """Success against fine-tuning steps (0 = zero-shot), per key level, for one pretraining budget and d
    (default: the largest of each), every method, dqn included; means and 95% intervals over seeds."""
    pretrain_steps = pretrain_steps or max(int(row["pretrain_steps"]) for row in levels)
    feature_dim = feature_dim or max(int(row["feature_dim"]) for row in levels)
    last_id = max(int(row["identify_steps"]) for row in levels)
    rows = [row for row in levels if int(row["feature_dim"]) == feature_dim
            and int(row["pretrain_steps"]) in (0, pretrain_steps)
            and (row["phase"] != "zero_shot" or int(row["identify_steps"]) in (0, last_id))]
    summary = summarise(rows, by=("level", "method", "finetune_steps"), value="success_rate")
    names = list(dict.fromkeys(str(row["level"]) for row in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for m, method in enumerate(dict.fromkeys(str(row["method"]) for row in rows)):
            steps = sorted({int(row["finetune_steps"]) for row in rows
                            if row["level"] == name and row["method"] == method})
            _curve(ax, summary, [(name, method, str(s)) for s in steps], steps, method_colour(method, m), "-",
                   method)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("fine-tuning env steps")
        ax.set_ylabel("success rate")
        ax.set_title(f"{name}: adaptation ({pretrain_steps // 1000}k pretraining, d = {feature_dim})")
    axes[0][0].legend(frameon=False, fontsize="small")
    fig.tight_layout()
    return fig


def plot_ablation(rows, by: str, metrics: dict[str, str], order: Sequence[str] | None = None,
                  title: str | None = None, xlabel: str | None = None, dot_label: str = "one run (seed)",
                  cluster: str | None = None):
    """One panel per metric (column -> axis label): for each value of column `by` (in `order`), the mean of
    its rows with a 95% bootstrap interval (red), and every row (`dot_label`) as a grey dot. NaN values
    are left out of both; a panel's title counts them. Rows that are not independent (e.g. transfer
    rows, a seed's tasks sharing its pretraining) name their `cluster` column ("seed"): the interval then
    resamples whole clusters (`stats.summarise`)."""
    order = list(order or dict.fromkeys(str(row[by]) for row in rows))
    fig, axes = plt.subplots(1, len(metrics), figsize=(0.8 + 3.3 * len(metrics), 3.6), squeeze=False)
    for ax, (metric, label) in zip(axes[0], metrics.items(), strict=True):
        summary = summarise(rows, by=(by,), value=metric, drop_nan=True, cluster=cluster)
        for i, name in enumerate(order):
            values = [float(row[metric]) for row in rows if str(row[by]) == name]
            values = [v for v in values if not np.isnan(v)]
            offsets = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(len(values))
            ax.scatter(i + 0.22 + offsets, values, s=14, color="grey", alpha=0.8,
                       label=dot_label if i == 0 else None)
        shown = [(i, summary[(name,)]) for i, name in enumerate(order) if (name,) in summary]
        means = [s[0] for _, s in shown]
        errors = [[s[0] - s[1] for _, s in shown], [s[2] - s[0] for _, s in shown]]
        ax.errorbar([i for i, _ in shown], means, yerr=errors, fmt="o", color="#d62728", capsize=4,
                    label="mean, 95% CI", zorder=3)
        long = max(map(len, order)) * len(order) > 30  # labels that would overlap side by side
        ax.set_xticks(range(len(order)), order, rotation=25 if long else 0, ha="right" if long else "center")
        ax.set_xlim(-0.5, len(order) - 0.5)
        ax.set_xlabel(xlabel or by)
        ax.set_ylabel(label)
        dropped = sum(1 for row in rows if np.isnan(float(row[metric])))
        ax.set_title(label + (f"\n({dropped} NaN runs left out)" if dropped else ""))
    axes[0][0].legend(frameon=False, fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


PARTS_MEASURES = {"state_coverage": "coverage of the states", "visitation_entropy": "visitation entropy",
                  "zero_shot": "zero-shot success", "finetuned": "fine-tuned success"}


def plot_parts(rows: Sequence[dict], levels: Sequence[str] | None = None):
    """The APS-parts study (`aps_parts`): one row of panels per measure (pretraining's coverage and
    visitation entropy, zero-shot and fine-tuned success), one column per level; per arm the mean over
    seeds with its 95% bootstrap interval and every seed as a dot; success panels name k/N, the seeds
    that solve the level; the random walk is a dashed line in the coverage panels."""
    rows = [{**row, "arm": arm_name(row["method"], row["overrides"], ARMS)} for row in rows]
    levels = list(levels or dict.fromkeys(row["level"] for row in rows))
    arms = [arm for arm in ARMS if any(row["arm"] == arm for row in rows)]
    fig, axes = plt.subplots(len(PARTS_MEASURES), len(levels), figsize=(4.6 * len(levels), 12.5),
                             squeeze=False, sharey="row")
    for r, (measure, label) in enumerate(PARTS_MEASURES.items()):
        success = measure in ("zero_shot", "finetuned")
        for c, level in enumerate(levels):
            ax = axes[r][c]
            mine = [row for row in rows if row["level"] == level]
            shown = [arm for arm in arms if arm != "random"]
            walk = [float(row[measure]) for row in mine if row["arm"] == "random"] if not success else []
            if walk:
                ax.axhline(np.mean(walk), color="black", linestyle="--", linewidth=1, label="random walk")
            for i, arm in enumerate(shown):
                if success:
                    picked = [row for row in mine if row["arm"] == arm and row["phase"] == measure]
                    values = [float(row["success_rate"]) for row in picked]
                else:
                    picked = [row for row in mine if row["arm"] == arm and row["phase"] == "finetuned"]
                    values = [float(row[measure]) for row in picked]
                if not values:
                    continue
                colour = method_colour(ARMS[arm][0], i)
                mean, low, high = mean_with_ci(values)
                ax.bar(i, mean, 0.8, color=colour, alpha=0.45 if arm != ARMS[arm][0] else 0.9)
                ax.errorbar(i, mean, yerr=[[mean - low], [high - mean]], color="black", capsize=3)
                ax.scatter(i + np.linspace(-0.2, 0.2, len(values)), values, s=8, color="black", zorder=3)
                if success:
                    k, n = solved_count(values)
                    ax.text(i, 1.03, f"{k}/{n}", ha="center", fontsize="x-small")
            ax.set_xticks(range(len(shown)), shown, rotation=60, ha="right", fontsize="small")
            ax.set_ylim(0, 1.12)
            if c == 0:
                ax.set_ylabel(label)
            if r == 0:
                ax.set_title(f"{level} level")
            if not success and r == 0 and c == 0 and ax.get_legend_handles_labels()[0]:
                ax.legend(frameon=False, fontsize="small", loc="lower left")
    fig.suptitle("APS's parts at the same budget: arms of APS, VISR, APT, DQN (mean, 95% CI, seeds as dots)")
    fig.tight_layout()
    return fig


def plot_finetune(rows: Sequence[dict]):
    """The fine-tuning study (`studies.finetune`): per method, mean success against fine-tuning steps for each
    protocol arm (top), and the range of max_a Q over the level's states, mean over seeds, against the
    task's own optimal values (grey band; bottom)."""
    methods = list(dict.fromkeys(row["method"] for row in rows))
    arms = [arm for arm in FINETUNE_ARMS if any(row["arm"] == arm for row in rows)]
    fig, axes = plt.subplots(2, len(methods), figsize=(4.4 * len(methods), 7.5), squeeze=False, sharex=True)
    colours = dict(zip(arms, plt.get_cmap("tab10").colors, strict=False))
    for c, method in enumerate(methods):
        mine = [row for row in rows if row["method"] == method]
        for arm in arms:
            steps = sorted({int(row["finetune_steps"]) for row in mine if row["arm"] == arm})
            if not steps:
                continue
            at = {step: [row for row in mine if row["arm"] == arm and int(row["finetune_steps"]) == step]
                  for step in steps}
            style = "-" if "absorbing" in arm else "--"
            axes[0][c].plot(steps, [np.mean([float(r["success_rate"]) for r in at[s]]) for s in steps], style,
                            color=colours[arm], label=arm, marker="o", markersize=3)
            for key in ("value_min", "value_max"):
                axes[1][c].plot(steps, [np.mean([float(r[key]) for r in at[s]]) for s in steps], style,
                                color=colours[arm])
        optimal = mine[0]
        axes[1][c].axhspan(float(optimal["optimal_value_min"]), float(optimal["optimal_value_max"]),
                           color="grey", alpha=0.3, label="the task's optimal values")
        seeds = len({row["seed"] for row in mine})
        axes[0][c].set_title(f"{method}: success along fine-tuning ({seeds} seeds)", fontsize="medium")
        axes[0][c].set_ylim(-0.02, 1.02)
        axes[1][c].set_title(f"{method}: min and max over states of max_a Q", fontsize="medium")
        axes[1][c].set_xlabel("fine-tuning env steps")
    axes[0][0].set_ylabel("mean success rate")
    axes[1][0].set_ylabel("value (task units)")
    handles = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels(),
                                                                          strict=True)}
    fig.legend(handles.values(), handles.keys(), frameon=False, fontsize="small", loc="center left",
               bbox_to_anchor=(1, 0.5), title="fine-tuning protocol")
    fig.tight_layout()
    return fig


def plot_families(rows: Sequence[dict], by: str = "room", levels: Sequence[str] | None = None):
    """The task-family study: one panel per level, the tasks grouped by `by` (room, keys_needed or kind, in
    the order of the keys they need); per arm a light bar, the fine-tuned normalised score (0 random, 1
    optimal), with a narrow dark bar inside it, the zero-shot score, each the IQM over seeds x tasks with its
    95% stratified-bootstrap interval (`task_families.class_aggregates`), and above it k/N, the class's
    tasks the arm solves fine-tuned."""
    levels = list(levels or dict.fromkeys(row["level"] for row in rows if row["phase"] != "random_walk"))
    arms = [arm for arm, (method, _) in FAMILY_ARMS.items() if method != "random"]
    widest = max(len({str(row[by]) for row in rows if row["level"] == level}) for level in levels)
    fig, axes = plt.subplots(1, len(levels), figsize=(max(5.0, 2.3 * widest) * len(levels) + 1.5, 4.6),
                             squeeze=False)
    for ax, level in zip(axes[0], levels, strict=True):
        phases = {phase: {(row["arm"], row[by]): row for row in class_aggregates(rows, level, by, phase)}
                  for phase in ("zero_shot", "finetuned")}
        needed: dict[str, float] = {}
        for row in rows:
            if row["level"] == level and row["phase"] == "finetuned":
                needed[str(row[by])] = min(needed.get(str(row[by]), np.inf), float(row["keys_needed"]))
        classes = sorted(needed, key=lambda value: (needed[value], value))
        width = 0.8 / len(arms)
        for a, arm in enumerate(arms):
            colour = method_colour(arm, a)
            for phase, alpha, share in (("finetuned", 0.35, 0.92), ("zero_shot", 1.0, 0.45)):
                stats = [(i, phases[phase].get((arm, value))) for i, value in enumerate(classes)]
                stats = [(i, s) for i, s in stats if s]
                if not stats:
                    continue
                x = [i + (a - (len(arms) - 1) / 2) * width for i, _ in stats]
                means = [s["iqm"] for _, s in stats]
                errors = [[s["iqm"] - s["low"] for _, s in stats], [s["high"] - s["iqm"] for _, s in stats]]
                ax.bar(x, means, width * share, color=colour, alpha=alpha, yerr=errors, capsize=2,
                       error_kw={"alpha": 0.8, "linewidth": 1}, label=arm if phase == "finetuned" else None,
                       gid=f"{level}/{arm}/{phase}")
                if phase == "finetuned":
                    for xi, (_, s) in zip(x, stats, strict=True):
                        ax.text(xi, min(s["high"], 1.0) + 0.02, f"{s['solved']}/{s['tasks']}", ha="center",
                                va="bottom", fontsize="xx-small")
        ax.axhline(0, color="grey", linewidth=0.8)
        labels = [f"{value} keys" if by == "keys_needed" else value for value in classes]
        ax.set_xticks(range(len(classes)), labels, fontsize="small")
        ax.set_ylim(-0.25, 1.15)
        ax.set_title(f"{level}", fontsize="medium")
        if ax is axes[0][0]:
            ax.set_ylabel("normalised score (0 random, 1 optimal), IQM")
    axes[0][-1].legend(title="arm", frameon=False, loc="upper left", bbox_to_anchor=(1, 1), fontsize="small")
    fig.suptitle("fine-tuned (light) and zero-shot (narrow, dark) normalised score: IQM over seeds x tasks,\n"
                 "95% stratified-bootstrap CI; k/N: the class's tasks solved fine-tuned", fontsize="medium")
    fig.tight_layout()
    return fig


def plot_family_budgets(studies: dict[int, Sequence[dict]], level: str = "deep"):
    """The budget axis of the task-family study: against pretraining env steps (log scale), per arm the IQM
    normalised score over seeds x tasks with its 95% stratified-bootstrap band
    (`families_budget.budget_axis`), fine-tuned (solid) and zero-shot (dashed); left the whole family of
    `level`, right its own target task."""
    points = budget_axis(studies, level)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, tasks in zip(axes, ("family", "target"), strict=True):
        for a, arm in enumerate(BUDGET_ARMS):
            for phase, style in (("finetuned", "-"), ("zero_shot", "--")):
                line = [p for p in points if (p["arm"], p["phase"], p["tasks"]) == (arm, phase, tasks)]
                if not line:
                    continue
                x = [p["pretrain_steps"] for p in line]
                ax.plot(x, [p["iqm"] for p in line], style, marker="o", color=method_colour(arm, a),
                        label=f"{arm}, {phase.replace('_', '-')}")
                ax.fill_between(x, [p["low"] for p in line], [p["high"] for p in line],
                                color=method_colour(arm, a), alpha=0.12, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("pretraining env steps")
        ax.axhline(0, color="grey", linewidth=0.8)
        which = "every task of the family" if tasks == "family" else "the level's target alone"
        ax.set_title(f"{level}: {which}", fontsize="medium")
    axes[0].set_ylabel("normalised score (0 random, 1 optimal), IQM")
    axes[1].legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1), fontsize="small")
    fig.suptitle("the budget axis: IQM over seeds x tasks with 95% stratified-bootstrap bands",
                 fontsize="medium")
    fig.tight_layout()
    return fig


def write_family_budgets_figure(out_path: str | Path, studies: dict[int, Sequence[dict]],
                                level: str = "deep") -> Path | None:
    """out_path: `plot_family_budgets` of `studies` (pretraining env steps -> a task-family study's rows,
    `task_families.read_family_studies`); None while none holds a task row."""
    if not any(row["phase"] != "random_walk" for rows in studies.values() for row in rows):
        return None
    return _write(plot_family_budgets(studies, level), Path(out_path))


def plot_held_out(parts: dict[str, Sequence[dict]], protocol: Protocol):
    """The held-out study: one panel per part that has rows (two to a row), per arm but the random walk the
    registered primary metric, the mean over seeds of each seed's mean fine-tuned score over the family (light
    bar; dots: the seeds; 95% bootstrap interval over seeds), and the same zero-shot (narrow, dark bar), each
    normalised (0 random, 1 optimal); the title carries each contender's registered verdict."""
    drawn = [part for part in protocol.parts if parts.get(part.name)]
    columns = min(2, len(drawn))
    rows_of_panels = -(-len(drawn) // columns)
    fig, axes = plt.subplots(rows_of_panels, columns, figsize=(6.2 * columns, 4.4 * rows_of_panels),
                             squeeze=False, sharey=True)
    for ax, part in zip(axes.flat, drawn, strict=False):
        rows = parts[part.name]
        arms = [arm for arm in part.arms if arm != "random"]
        for a, arm in enumerate(arms):
            colour = method_colour(arm, a)
            for phase, alpha, share in ((PRIMARY_PHASE, 0.35, 0.8), ("zero_shot", 1.0, 0.35)):
                scores = list(seed_scores(rows, arm, phase).values())
                if not scores:
                    continue
                mean, low, high = mean_with_ci(scores)
                ax.bar(a, mean, share, color=colour, alpha=alpha, yerr=[[mean - low], [high - mean]],
                       capsize=2, error_kw={"alpha": 0.8, "linewidth": 1}, gid=f"{part.name}/{arm}/{phase}")
                if phase == PRIMARY_PHASE:
                    ax.scatter(np.full(len(scores), a + 0.25), scores, s=6, color=colour, zorder=3)
        verdicts = {row["contender"]: row["verdict"] + {"yes": " (robust)", "no": " (not robust)", "": ""}[
            row["robust"]] for row in part_verdicts(rows, part.level)}
        ax.axhline(0, color="grey", linewidth=0.8)
        labels = [arm.replace(", ", ",\n", 1) + ("\n(one task per class)" if arm == "dqn, equal budget"
                                                  else "") for arm in arms]
        ax.set_xticks(range(len(arms)), labels, fontsize="x-small", rotation=60, ha="right")
        title = f"{part.level}, {part.pretrain_steps:,} pretraining steps"
        if verdicts:
            title += "\n" + "; ".join(f"{name.removeprefix('aps, ')}: {verdict}" for name, verdict in
                                      verdicts.items())
        ax.set_title(title, fontsize="small")
        if ax in axes[:, 0]:
            ax.set_ylabel("family mean, normalised score")
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    fig.suptitle("held-out levels: fine-tuned (light, dots: seeds) and zero-shot (narrow, dark) family\n"
                 "mean, mean over seeds with 95% bootstrap intervals over seeds", fontsize="medium")
    fig.tight_layout()
    return fig


def write_held_out_figure(out_path: str | Path, out_dir: str | Path, protocol: Protocol) -> Path | None:
    """out_path: `plot_held_out` of the parts' results in out_dir; None while no part has rows."""
    parts = {part.name: read_part(out_dir, part) for part in protocol.parts}
    if not any(parts.values()):
        return None
    return _write(plot_held_out(parts, protocol), Path(out_path))


def plot_zero_shot_loss(rows: Sequence[dict]):
    """The zero-shot-loss experiment: per arm, zero-shot success on easy (mean over seeds, 95% interval) with
    the kNN return in the values (dark) and without it (light), each seed a dot."""
    found = loss_successes(rows)
    arms = [arm for arm in LOSS_ARMS if any((arm, values) in found for values in (WITH_KNN, WITHOUT_KNN))]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.5 * len(arms)), 4.2))
    for offset, values, alpha in ((-0.2, WITH_KNN, 0.9), (0.2, WITHOUT_KNN, 0.4)):
        for i, arm in enumerate(arms):
            if (arm, values) not in found:
                continue
            scores = list(found[arm, values].values())
            mean, low, high = mean_with_ci(scores)
            colour = method_colour(LOSS_ARMS[arm][0].split("->")[-1], i)
            ax.bar(i + offset, mean, 0.38, color=colour, alpha=alpha, yerr=[[mean - low], [high - mean]],
                   capsize=3, label=values if i == next(j for j, a in enumerate(arms) if (a, values) in found)
                   else None, gid=f"{arm}/{values}")
            ax.plot([i + offset] * len(scores), scores, "k.", markersize=3, alpha=0.6)
    ax.set_xticks(range(len(arms)), [arm.replace(", ", ",\n") for arm in arms], fontsize="small")
    ax.set_ylim(-0.05, 1.1)
    ax.set_ylabel("zero-shot success on easy")
    ax.set_title("What costs APS zero-shot success on easy: values with the kNN return (dark) or without "
                 "(light),\nmean over seeds with 95% bootstrap interval; dots: seeds", fontsize="medium")
    ax.legend(frameon=False, loc="upper left", fontsize="small")
    fig.tight_layout()
    return fig


def write_zero_shot_loss_figure(out_dir: str | Path) -> Path | None:
    """OUT/zero_shot_loss.png: `plot_zero_shot_loss` of OUT/zero_shot_loss.csv; None while it holds no row."""
    rows = read_rows(Path(out_dir) / LOSS_RESULTS, LOSS_COLUMNS)
    return _write(plot_zero_shot_loss(rows), Path(out_dir) / "zero_shot_loss.png") if rows else None


LINK_COLOURS = {"phi": "#8c6bb1", "identification": "#fdae61", "psi": "#74add1"}
"""The zero-shot chain's links in the diagnosis figure."""


def plot_capping_links(links: Sequence[dict]):
    """The zero-shot diagnosis (`zero_shot.capping_links` rows of one level): one panel per arm, per task
    class the score zero-shot lost to each link stacked (phi, identification, psi), zero-shot's own score a
    black dot and the capping link named under its bar. The stack can pass 1 where the planner on the
    identified reward beat the best fit's (each loss is clipped at 0, not at the others' sum)."""
    arms = list(dict.fromkeys(row["arm"] for row in links))
    classes = list(dict.fromkeys(row["task_class"] for row in links))
    fig, axes = plt.subplots(1, len(arms), figsize=(3.2 * len(arms), 4.8), sharey=True, squeeze=False)
    top = 1.0
    for ax, arm in zip(axes[0], arms, strict=True):
        rows = {row["task_class"]: row for row in links if row["arm"] == arm}
        for i, task_class in enumerate(classes):
            row = rows.get(task_class)
            if row is None:
                continue
            bottom = 0.0
            for link in LINKS:
                lost = float(row[f"lost_to_{link}"])
                ax.bar(i, lost, 0.7, bottom=bottom, color=LINK_COLOURS[link],
                       gid=f"{arm}/{task_class}/{link}", label=f"lost to {link}")
                bottom += lost
            top = max(top, bottom)
            score = min(1.0, max(0.0, float(row["zero_shot"])))
            ax.plot(i, score, "k.", markersize=7, label="zero-shot score")
            ax.text(i, -0.04, row["capping_link"][:5], ha="center", va="top", fontsize="x-small")
        ax.set_xticks(range(len(classes)), classes, rotation=60, ha="right", fontsize="x-small")
        ax.set_title(arm, fontsize="small")
    axes[0][0].set_ylim(-0.12, top + 0.05)
    axes[0][0].set_ylabel("normalised score")
    handles, labels = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), frameon=False, fontsize="small", loc="upper right", ncol=4)
    fig.suptitle(f"Where zero-shot loses its score on {links[0]['level']}: per task class, the mean over "
                 "tasks x seeds lost to each link;\nunder each bar the link that caps it", fontsize="medium",
                 x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def write_zero_shot_figure(out_dir: str | Path) -> Path | None:
    """OUT/zero_shot.png: `plot_capping_links` of OUT/zero_shot.csv; None while it holds no row."""
    rows = read_diagnosis(out_dir)
    return _write(plot_capping_links(capping_links(rows)), Path(out_dir) / "zero_shot.png") if rows else None


def plot_fix(verdicts: Sequence[dict], classes: Sequence[dict]):
    """A zero-shot fix judged (`zero_shot_fix.fix_verdicts` and `fix_by_class` rows): one panel per arm, per
    task class the mean zero-shot score in the registered study (light) and under the fix (dark), and in the
    panel's title the family score's change with its 95% interval and reading."""
    fix = ", ".join(f"{key} = {value}" for key, value in json.loads(verdicts[0]["fix"] or "[]"))
    fig, axes = plt.subplots(1, len(verdicts), figsize=(3.2 * len(verdicts), 4.6), sharey=True, squeeze=False)
    for i, (ax, verdict) in enumerate(zip(axes[0], verdicts, strict=True)):
        rows = [row for row in classes if row["arm"] == verdict["arm"]]
        colour = method_colour(verdict["arm"].split(",")[0], i)
        for offset, key, alpha, label in ((-0.2, "zero_shot_registered", 0.35, "registered"),
                                          (0.2, "zero_shot_fixed", 1.0, fix or "fixed")):
            ax.bar([j + offset for j in range(len(rows))], [float(row[key]) for row in rows], 0.38,
                   color=colour, alpha=alpha, label=label, gid=f"{verdict['arm']}/{key}")
        ax.set_xticks(range(len(rows)), [row["task_class"] for row in rows], rotation=60, ha="right",
                      fontsize="x-small")
        ax.set_title(f"{verdict['arm']}\n{interval_text(verdict, digits=2)}, {verdict['reading']}",
                     fontsize="small")
    axes[0][0].legend(frameon=False, fontsize="x-small", loc="upper left")
    axes[0][0].set_ylabel("zero-shot normalised score")
    fig.suptitle("The zero-shot fix judged: per task class the mean over tasks x seeds, registered (light) "
                 "and fixed (dark);\ntitles: the family score's change, 95% interval resampling seeds",
                 fontsize="medium", x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def write_fix_figure(out_dir: str | Path) -> Path | None:
    """OUT/fix.png: `plot_fix` of OUT/fix_verdicts.csv and OUT/fix_classes.csv; None while either is empty."""
    verdicts = read_rows(Path(out_dir) / "fix_verdicts.csv", FIX_COLUMNS)
    classes = read_rows(Path(out_dir) / "fix_classes.csv", FIX_CLASS_COLUMNS)
    return _write(plot_fix(verdicts, classes), Path(out_dir) / "fix.png") if verdicts and classes else None


def _write(fig, path: Path) -> Path:
    """Save `fig` to `path` and close it (written, not shown: a notebook would otherwise display it)."""
    save_figure(fig, path)
    plt.close(fig)
    return path


def write_figure4(out_dir: str | Path, methods: Sequence[str] | None = None,
                  levels: Sequence[str] | None = None) -> Path | None:
    """OUT/figure4.png: `plot_figure4` of every row in OUT/figure4.csv; None while it holds no row."""
    rows = read_rows(Path(out_dir) / "figure4.csv", FIGURE4_COLUMNS)
    return _write(plot_figure4(rows, methods, levels), Path(out_dir) / "figure4.png") if rows else None


def write_parts_figure(out_dir: str | Path) -> Path | None:
    """OUT/aps_parts.png: `plot_parts` of OUT/aps_parts.csv; None while it holds no row."""
    rows = read_rows(Path(out_dir) / PARTS_RESULTS, PARTS_COLUMNS)
    return _write(plot_parts(rows), Path(out_dir) / "aps_parts.png") if rows else None


def write_finetune_figure(out_dir: str | Path) -> Path | None:
    """OUT/finetune.png: `plot_finetune` of OUT/finetune.csv; None while it holds no row."""
    rows = read_rows(Path(out_dir) / FINETUNE_RESULTS, FINETUNE_COLUMNS)
    return _write(plot_finetune(rows), Path(out_dir) / "finetune.png") if rows else None


def write_families_figure(out_dir: str | Path, by: str = "room") -> Path | None:
    """OUT/task_families.png: `plot_families` of OUT/task_families.csv; None while it holds no task row."""
    rows = read_rows(Path(out_dir) / FAMILY_RESULTS, FAMILY_COLUMNS)
    if not any(row["phase"] != "random_walk" for row in rows):
        return None
    return _write(plot_families(rows, by), Path(out_dir) / "task_families.png")


def write_transfer_figure(out_dir: str | Path) -> Path:
    """OUT/transfer.png: `plot_transfer` of every method and maze with results in OUT
    (`transfer.transfer_rows`)."""
    return _write(plot_transfer(transfer_rows(out_dir)), Path(out_dir) / "transfer.png")


def write_study_figures(out_dir: str | Path) -> list[Path]:
    """From OUT's study CSVs (`study.study_rows`), for the grid's default gamma and fine-tuning epsilon
    (`study.is_main_grid`): study_budget.png, study_identify.png and study_adaptation.png (at the arms'
    budget and d); none while OUT holds no such key-level row."""
    every, transfer, grid = study_rows(out_dir)
    levels = [row for row in every if is_main_grid(row, grid["train"])]
    adaptation = {"pretrain_steps": grid["arm_pretrain_steps"], "feature_dim": grid["arm_feature_dim"]}
    figures = []
    for name, draw in (("study_budget", lambda: plot_study_budget(levels, transfer)),
                       ("study_identify", lambda: plot_study_identify(levels)),
                       ("study_adaptation", lambda: plot_study_adaptation(levels, **adaptation))):
        if levels:
            figures.append(_write(draw(), Path(out_dir) / f"{name}.png"))
    return figures
