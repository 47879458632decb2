"""Atari figures: the frames of an observation, learning curves from run directories' metrics.csv, and
human-normalised scores per game and method. Each function takes data or run directories, draws and
returns the figure; `write_scores_figure` draws a sweep directory's OUT/scores.png.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from aps_teach.atari.experiments import SCORE_COLUMNS
from aps_teach.atari.scores import run_aggregates
from aps_teach.atari.sweep import run_dirs, summary_rows
from aps_teach.infra.figures import method_colour, save_figure
from aps_teach.infra.files import read_json
from aps_teach.infra.sweeps import read_rows


def plot_frames(frames, titles: Sequence[str] | None = None, size: float = 2.2):
    """One row of grey images (uint8 0-255 or floats on that scale, shown on a fixed 0-255 grey scale so
    that an intensity change stays visible), e.g. the 4 frames of an Atari observation. Returns the figure."""
    frames = [np.asarray(frame, dtype=float) for frame in frames]
    titles = list(titles) if titles is not None else [""] * len(frames)
    if len(titles) != len(frames) or not frames or any(frame.ndim != 2 for frame in frames):
        raise ValueError(f"need one title per frame and 2-D frames, got {len(frames)} frames of shapes "
                         f"{[frame.shape for frame in frames]} and {len(titles)} titles")
    fig, axes = plt.subplots(1, len(frames), figsize=(size * len(frames), size * 1.1), squeeze=False)
    for ax, frame, title in zip(axes[0], frames, titles, strict=True):
        ax.imshow(frame, cmap="gray", vmin=0, vmax=255)
        ax.set_title(title, fontsize="small")
        ax.set_axis_off()
    fig.tight_layout()
    return fig


def plot_atari_curves(runs, metrics: str | Sequence[str] = "score", phase: str = "finetune",
                      games: Sequence[str] | None = None):
    """One panel per column of `metrics`: its value against env steps in each run's `phase`/metrics.csv,
    one line per run (its gid the run directory's name), coloured by the run's method; the legend names
    each method once, with its number of runs.

    `runs`: a sweep directory, a run directory or a list of them (see `sweep.run_dirs`); `games` keeps the
    runs of those games (ROM ids, as in config.json) only. Runs without that phase (dqn has no pretraining)
    are left out, and so are empty cells (no game ended in an interval, no update yet). Returns the figure."""
    if phase not in ("pretrain", "finetune"):
        raise ValueError(f"phase must be pretrain or finetune, got {phase!r}")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    dirs = [(d, read_json(d / "config.json", "an Atari run's config", "restore it, or move the run out of "
                          f"{runs}")) for d in run_dirs(runs)]
    if games is not None:
        dirs = [(d, saved) for d, saved in dirs if saved["game"] in games]
        if not dirs:
            raise ValueError(f"no run of the games {list(games)} in {runs}")
    dirs = [(d, saved["method"]) for d, saved in dirs if (d / phase / "metrics.csv").exists()]
    methods = list(dict.fromkeys(method for _, method in dirs))
    fig, axes = plt.subplots(1, len(metrics), figsize=(0.8 + 4.2 * len(metrics), 3.5), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        drawn = dict.fromkeys(methods, 0)
        for directory, method in dirs:
            rows = read_rows(directory / phase / "metrics.csv", {"env_steps": "int"})
            points = [(int(row["env_steps"]), float(row[metric])) for row in rows if row.get(metric)]
            if points:
                x, y = zip(*points, strict=True)
                ax.plot(x, y, marker="o", markersize=3, alpha=0.8, gid=directory.name,
                        color=method_colour(method, methods.index(method)))
                drawn[method] += 1
        for m, (method, count) in enumerate(drawn.items()):
            if count:  # one legend entry per method (an empty line carries it)
                ax.plot([], [], color=method_colour(method, m), label=f"{method} ({count} runs)")
        ax.set_xlabel(f"env steps ({phase})")
        ax.set_ylabel(metric)
        ax.set_title(metric if ax.lines else f"{metric}: no values")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    return fig


def plot_study_curves(out: str | os.PathLike, rows: Sequence[dict]):
    """One panel per game of a sweep directory `out` with its scores.csv `rows`: for each method that trains
    on the reward, the training games' mean score (epsilon-greedy, metrics.csv's `score`) against the reward
    steps seen (task identification's, then fine-tuning's), the seeds' mean as a line and their range as a
    band; each seed's evaluation score as a dot at the run's reward steps, a zero-shot score (aps, visr) as a
    hollow dot at identification's; the random arm's mean evaluation score as a dashed line. Returns the
    figure."""
    games = list(dict.fromkeys(row["game"] for row in rows))
    methods = list(dict.fromkeys(row["method"] for row in rows if row["method"] != "random"))
    if not games:
        raise ValueError("no scores.csv row to draw")
    fig, axes = plt.subplots(1, len(games), figsize=(0.8 + 4.2 * len(games), 3.6), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        for m, method in enumerate(methods):
            colour, curves = method_colour(method, m), []
            for row in (r for r in rows if r["game"] == game and r["method"] == method):
                steps = int(row["reward_steps"] or 0)
                identify = steps - int(row["finetune_steps"]) if row["checkpoint"] == "finetune" else steps
                if row["checkpoint"] == "pretrain":
                    ax.scatter([identify], [float(row["score"])], s=22, facecolors="none", edgecolors=colour,
                               zorder=3, gid=f"{method}/zero-shot")
                    continue
                ax.scatter([steps], [float(row["score"])], s=18, color=colour, zorder=3, gid=f"{method}/eval")
                run = Path(out) / "runs" / f"{method}-{game}-seed{row['seed']}"
                metrics = run / "finetune" / "metrics.csv"
                points = {int(r["env_steps"]) + identify: float(r["score"])
                          for r in read_rows(metrics, {"env_steps": "int"}) if r.get("score")}
                curves.append(points)
            if curves:
                xs = sorted(set.intersection(*(set(c) for c in curves)))
                values = np.array([[c[x] for x in xs] for c in curves])
                ax.plot(xs, values.mean(0), color=colour, gid=f"{method}/mean",
                        label=f"{method} ({len(curves)} seeds)")
                if len(curves) > 1:
                    ax.fill_between(xs, values.min(0), values.max(0), color=colour, alpha=0.2,
                                    gid=f"{method}/range")
        random = [float(r["score"]) for r in rows if r["game"] == game and r["method"] == "random"]
        if random:
            ax.axhline(np.mean(random), color="grey", linestyle="--", linewidth=1, gid="random",
                       label=f"random ({len(random)} seeds)")
        ax.set_title(game)
        ax.set_xlabel("reward steps")
        ax.set_ylabel("score per game")
        ax.legend(frameon=False, fontsize="x-small")
    fig.suptitle("training games (epsilon 0.1): seeds' mean and range; dots: evaluation (epsilon 0.05), "
                 "hollow: zero-shot", fontsize="small")
    fig.tight_layout()
    return fig


def plot_atari_scores(rows: Sequence[dict], methods: Sequence[str] | None = None):
    """Human-normalised score per game and method (a sweep's scores.csv rows: game, method, seed,
    human_normalised): a bar at the mean over seeds and each seed as a black dot on it; dashed lines at
    0 (random play) and 1 (the human reference); the legend gives each method's IQM over runs x games
    with its 95% stratified-bootstrap interval (`scores.run_aggregates`; zero width with one seed per
    game). Games without reference scores (empty human_normalised) are left out and counted in the title.
    Returns the figure."""
    scored = [row for row in rows if str(row["human_normalised"]).strip() not in ("", "None", "nan")]
    games = sorted(dict.fromkeys(row["game"] for row in scored))
    methods = list(methods or dict.fromkeys(row["method"] for row in scored))
    if not games:
        raise ValueError(f"no row with a human-normalised score among {len(rows)} rows")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 + 0.45 * len(games) * len(methods)), 4))
    width = 0.8 / len(methods)
    for m, method in enumerate(methods):
        colour = method_colour(method, m)
        xs, means, dots_x, dots_y, runs = [], [], [], [], []
        for g, game in enumerate(games):
            values = [float(row["human_normalised"]) for row in scored
                      if row["method"] == method and row["game"] == game]
            if values:
                x = g + (m - (len(methods) - 1) / 2) * width
                xs.append(x)
                means.append(float(np.mean(values)))
                dots_x += [x] * len(values)
                dots_y += values
                runs.append(values)
        label = method  # a method asked for without scores
        if runs:
            iqm = run_aggregates(runs)
            label += f": IQM {iqm['iqm_runs']:.2f} [{iqm['iqm_runs_low']:.2f}, {iqm['iqm_runs_high']:.2f}]"
        ax.bar(xs, means, width * 0.9, color=colour, alpha=0.7, label=label, gid=f"{method}/mean")
        ax.scatter(dots_x, dots_y, s=12, color="black", zorder=3, gid=f"{method}/seeds",
                   label="one seed" if m == 0 else None)
    ax.axhline(0, color="grey", linewidth=0.8, linestyle="--", gid="random")
    ax.axhline(1, color="grey", linewidth=0.8, linestyle=":", gid="human")
    long = len(games) > 6
    ax.set_xticks(range(len(games)), games, rotation=45 if long else 0, ha="right" if long else "center")
    ax.set_ylabel("human-normalised score\n(0 random, 1 human)")
    dropped = len(rows) - len(scored)
    ax.set_title("mean over seeds (bar) and each seed (dot); legend: IQM over runs x games, 95% CI"
                 + (f"\n{dropped} runs without reference scores left out" if dropped else ""))
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig


def write_scores_figure(out: str | os.PathLike) -> Path | None:
    """OUT/scores.png: `plot_atari_scores` of a sweep's OUT/scores.csv, each zero-shot row (checkpoint
    pretrain) as the method "<method> zero-shot"; None while no run with reference scores has finished (as
    `sweep.write_summary`)."""
    rows = read_rows(Path(out) / "scores.csv", SCORE_COLUMNS)
    if not summary_rows(rows):
        return None
    fig = plot_atari_scores([{**row, "method": f"{row['method']} zero-shot"}
                             if row.get("checkpoint") == "pretrain" else row for row in rows])
    path = Path(out) / "scores.png"
    save_figure(fig, path)
    plt.close(fig)  # written, not shown (a notebook would otherwise display it)
    return path


def write_study_curves(out: str | os.PathLike) -> Path | None:
    """OUT/curves.png: `plot_study_curves` of a sweep's OUT/scores.csv (the figure of an Atari study and of
    `aps-teach atari compare`); None while no run has finished."""
    rows = read_rows(Path(out) / "scores.csv", SCORE_COLUMNS)
    if not rows:
        return None
    fig = plot_study_curves(out, rows)
    path = Path(out) / "curves.png"
    save_figure(fig, path)
    plt.close(fig)  # written, not shown
    return path
