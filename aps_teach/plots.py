"""Pure plotting functions: each takes data, draws on matplotlib axes, and returns what it drew.

Every figure in the notebooks and the command line comes from here; widgets are thin wrappers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import gridworld
from aps_teach.agents import Learner
from aps_teach.files import atomic_path
from aps_teach.random_policy import RandomPolicyStats
from aps_teach.rewards import particle_entropy_reward, vmf_reward
from aps_teach.stats import summarise
from aps_teach.sweeps import read_rows

_CHAR_LAYER = {".": "floor", "S": "floor", "#": "wall", "a": "green_key", "A": "green_passage",
               "b": "purple_key", "B": "purple_passage", "T": "target"}
START_COLOUR = np.array((198, 219, 239), dtype=np.uint8)
"""Light blue: the start region, where each episode begins on a random cell."""


def level_image(layout: gridworld.Layout) -> np.ndarray:
    """(H, W, 3) uint8 picture of a level: legend colours, start cells in light blue, no agent."""
    colour = dict(zip(gridworld.LAYER_NAMES, gridworld.COLOURS, strict=True))
    image = np.array([[colour[_CHAR_LAYER[char]] for char in row] for row in layout.art], dtype=np.uint8)
    for cell in layout.start_cells:
        image[cell] = START_COLOUR
    return image


def _grid_lines(ax, shape: tuple[int, int]) -> None:
    """White lines between the cells, as one collection (a grid of minor ticks draws 10x slower)."""
    height, width = shape
    rows = [[(-0.5, y), (width - 0.5, y)] for y in np.arange(-0.5, height, 1)]
    cols = [[(x, -0.5), (x, height - 0.5)] for x in np.arange(-0.5, width, 1)]
    ax.add_collection(LineCollection(rows + cols, colors="white", linewidths=0.5, zorder=1.5), autolim=False)
    ax.set_xticks([])
    ax.set_yticks([])


def plot_level(ax, layout: gridworld.Layout, title: str | None = None):
    """Draw a level with its legend colours and cell grid."""
    image = ax.imshow(level_image(layout))
    _grid_lines(ax, layout.shape)
    if title:
        ax.set_title(title)
    return image


def level_legend_handles() -> list[Patch]:
    """Legend patches for `plot_level` pictures."""
    colour = dict(zip(gridworld.LAYER_NAMES, gridworld.COLOURS / 255, strict=True))
    entries = [("start region", START_COLOUR / 255), ("agent", colour["agent"]), ("wall", colour["wall"]),
               ("green key", colour["green_key"]), ("purple key", colour["purple_key"]),
               ("closed passageway", colour["green_passage"]), ("target", colour["target"])]
    return [Patch(facecolor=c, edgecolor="grey", label=label) for label, c in entries]


def plot_visitation(ax, layout: gridworld.Layout, visits: np.ndarray, title: str | None = None):
    """Heatmap of the fraction of time spent on each cell (log colour scale).

    Walls are grey; free cells never visited stay white.
    """
    frequency = visits / visits.sum()
    shown = np.ma.masked_where(frequency == 0, frequency)
    image = ax.imshow(shown, cmap="viridis", norm=LogNorm(vmin=max(shown.min(), 1e-5), vmax=shown.max()))
    _draw_walls(ax, layout)
    _grid_lines(ax, layout.shape)
    if title:
        ax.set_title(title)
    return image


def state_grid(layout: gridworld.Layout, states, values, keys_held=()) -> np.ndarray:
    """(H, W) array of `values` at the positions of the `states` holding `keys_held`; NaN elsewhere."""
    grid = np.full(layout.shape, np.nan)
    for (position, held), value in zip(states, values, strict=True):
        if held == tuple(keys_held):
            grid[position] = value
    return grid


def _draw_walls(ax, layout: gridworld.Layout) -> None:
    wall_colour = np.append(gridworld.COLOURS[gridworld.LAYER_NAMES.index("wall")] / 255, 1.0)
    ax.imshow(np.where(layout.walls[..., None], wall_colour, 0.0))


def plot_state_values(ax, layout: gridworld.Layout, states, values, keys_held=(), title=None, **imshow):
    """Heatmap of one number per state, over the cells of the states holding `keys_held`."""
    title = title if title is not None else f"keys held: {', '.join(keys_held) or 'none'}"
    return plot_cell_map(ax, layout, state_grid(layout, states, values, keys_held), title, **imshow)


@dataclass(frozen=True)
class CellStates:
    """The reachable states of a level that hold `keys_held`: one per cell, with the env's observation."""

    layout: gridworld.Layout
    keys_held: tuple[str, ...]
    positions: tuple[tuple[int, int], ...]
    observations: torch.Tensor
    """(N, C, H, W) uint8: row i is what the agent sees standing on positions[i]."""

    def grid(self, values) -> np.ndarray:
        """(H, W) array with values[i] on positions[i] and NaN on every other cell (walls included)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (len(self.positions),):
            raise ValueError(f"need one value per cell ({len(self.positions)},), got {values.shape}")
        grid = np.full(self.layout.shape, np.nan)
        rows, cols = zip(*self.positions, strict=True)
        grid[list(rows), list(cols)] = values
        return grid


def held_key_sets(layout: gridworld.Layout) -> list[tuple[str, ...]]:
    """The combinations of keys held that some reachable state has, e.g. [(), ('green',)]."""
    return sorted({held for _, held in layout.reachable_states()}, key=lambda held: (len(held), held))


def cell_states(layout: gridworld.Layout, keys_held: Sequence[str] = ()) -> CellStates:
    """Every reachable state holding exactly `keys_held`, with the env's observation there (the level's
    compiled tables, `gridworld.compile_level`).

    Cells that no such state occupies (walls, closed passageways, keys not yet held, the target) are
    absent, so maps built on them are NaN there.
    """
    keys_held = (keys_held,) if isinstance(keys_held, str) else tuple(keys_held)
    unknown = sorted(set(keys_held) - set(layout.key_names))
    if unknown:
        raise ValueError(f"keys_held names keys {unknown} this level lacks; its keys: {layout.key_names}")
    held = tuple(name for name in layout.key_names if name in keys_held)
    if held not in held_key_sets(layout):
        raise ValueError(f"no reachable state holds exactly the keys {held}; valid: {held_key_sets(layout)}")
    compiled = gridworld.compile_level(layout)
    chosen = [i for i, (_, keys) in enumerate(compiled.states[:compiled.num_nonterminal]) if keys == held]
    positions = tuple(compiled.states[i][0] for i in chosen)
    return CellStates(layout, held, positions, torch.from_numpy(compiled.observations[chosen]))


def _task_vector(learner: Learner, w) -> torch.Tensor | None:
    if w is None:
        if learner.config.task_conditioned:
            raise ValueError(f"method {learner.config.method!r} needs a task vector w")
        return None
    w = torch.as_tensor(w, dtype=torch.float32)
    if w.shape != (learner.config.feature_dim,):
        raise ValueError(f"w must have shape ({learner.config.feature_dim},), got {tuple(w.shape)}")
    return w


@torch.no_grad()
def reward_maps(learner: Learner, cells: CellStates, particles: torch.Tensor | None, w=None,
                k: int | None = None) -> dict[str, np.ndarray]:
    """The intrinsic reward for reaching each cell, per term, as (H, W) maps with NaN off `cells`.

    explore (apt, aps) = particle_entropy_reward(h(s), h(particles), k), h = `Learner.knn_features`; the
    cell is not a particle, so nothing is excluded. With the learner's running normaliser its current
    mean m is a fixed scale (not updated): h / m^(1/exponent) turns each term into distance^exponent / m.
    exploit (visr, aps) = phi(s)^T w. total = exploit_weight * exploit + explore_weight * explore.
    `k` defaults to the learner's; w is ignored by apt. Distances are taken in float64: float32 `cdist`
    puts duplicates of a state ~1e-4 apart instead of 0.
    """
    cfg = learner.config
    k = cfg.k if k is None else k
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    w = _task_vector(learner, w)
    maps, total = {}, torch.zeros(len(cells.positions))
    if cfg.uses_knn:
        if particles is None or particles.ndim != 4 or particles.shape[1:] != cells.observations.shape[1:]:
            shape = None if particles is None else tuple(particles.shape)
            raise ValueError(f"particles must be (N, *{tuple(cells.observations.shape[1:])}), got {shape}")
        if len(particles) == 0:
            raise ValueError("the kNN reward needs at least one particle")
        scale = 1.0
        if learner.normaliser is not None and learner.normaliser.count > 0:
            scale = float(learner.normaliser.mean) ** (1 / cfg.knn_exponent)
        source = learner.knn_features(cells.observations).double() / scale
        target = learner.knn_features(particles).double() / scale
        explore = particle_entropy_reward(source, target, k, exponent=cfg.knn_exponent)
        maps["explore"], total = cells.grid(explore), total + cfg.explore_weight * explore.float()
    if cfg.task_conditioned:
        exploit = vmf_reward(learner.features(cells.observations), w)
        maps["exploit"], total = cells.grid(exploit), total + cfg.exploit_weight * exploit
    maps["total"] = cells.grid(total)
    return maps


@torch.no_grad()
def value_map(learner: Learner, cells: CellStates, w=None) -> dict[str, np.ndarray]:
    """Q(s, a) = psi(s, a, w)^T w at each cell: value = max_a Q and action = argmax_a Q (0 up, 1 down,
    2 left, 3 right), both (H, W) with NaN off `cells`. w=None: the fixed task of apt and dqn."""
    w = _task_vector(learner, w)
    w = learner.default_task(1)[0] if w is None else w
    q = learner.q_values(cells.observations, w.expand(len(cells.positions), -1))
    return {"value": cells.grid(q.amax(1)), "action": cells.grid(q.argmax(1))}


def plot_cell_map(ax, layout: gridworld.Layout, grid: np.ndarray, title: str | None = None, **imshow):
    """Heatmap of an (H, W) array (NaN cells left blank) with the level's walls and cell grid."""
    image = ax.imshow(grid, **{"cmap": "magma", **imshow})
    _draw_walls(ax, layout)
    _grid_lines(ax, layout.shape)
    if title:
        ax.set_title(title)
    return image


def colour_limits(*grids: np.ndarray) -> tuple[float, float]:
    """(low, high) over the finite values of all `grids`, high > low; (0, 1) when there are none."""
    finite = np.concatenate([np.ravel(grid)[np.isfinite(np.ravel(grid))] for grid in grids])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return low, high if high > low else low + 1e-9


def set_cell_map(image, grid: np.ndarray, limits: tuple[float, float] | None = None) -> None:
    """Show a new (H, W) array in an image from `plot_cell_map`, its colours scaled to `limits` (low,
    high), by default to the array's own range."""
    image.set_data(grid)
    image.set_clim(*(limits if limits is not None else colour_limits(grid)))


def action_arrows(actions: np.ndarray) -> tuple[np.ma.MaskedArray, np.ma.MaskedArray]:
    """(U, V): the column and row step of each cell's action (H, W), masked where it is NaN."""
    moves = np.array(gridworld.layout.MOVES, dtype=float)
    missing = ~np.isfinite(actions)
    step = moves[np.where(missing, 0, actions).astype(int)]
    return np.ma.array(step[..., 1], mask=missing), np.ma.array(step[..., 0], mask=missing)


def plot_greedy_arrows(ax, actions: np.ndarray, color: str = "white"):
    """An arrow per cell for its greedy action (H, W; NaN: none); update with `set_UVC(*action_arrows(a))`."""
    rows, cols = np.indices(actions.shape)
    return ax.quiver(cols, rows, *action_arrows(actions), color=color, pivot="middle", angles="xy",
                     scale_units="xy", scale=1.7, width=0.012)


def plot_random_policy_overview(stats: Sequence[RandomPolicyStats]):
    """One row per level: the level, where a random policy goes, and how often it gets each milestone."""
    fig, axes = plt.subplots(len(stats), 3, figsize=(12, 3.8 * len(stats)), squeeze=False,
                             gridspec_kw={"width_ratios": [1, 1.2, 1]})
    for row, result in zip(axes, stats, strict=True):
        layout = gridworld.resolve_level(result.level)
        plot_level(row[0], layout, title=f"{result.level} level")
        image = plot_visitation(row[1], layout, result.visits,
                                title=f"random policy: time on each cell ({result.episodes} episodes)")
        fig.colorbar(image, ax=row[1], fraction=0.046, label="fraction of steps")
        names = [f"{name} key" for name in result.key_rates] + ["target"]
        rates = [*result.key_rates.values(), result.success_rate]
        bars = row[2].bar(names, rates, color=["#2ca02c", "#9467bd"][: len(result.key_rates)] + ["#ff7f0e"])
        row[2].bar_label(bars, labels=[f"{rate:.1%}" for rate in rates])
        row[2].set_ylim(0, 1.1)
        row[2].set_ylabel("fraction of episodes")
        row[2].set_title("random policy: milestones reached")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.legend(handles=level_legend_handles(), loc="lower center", ncol=7, frameon=False)
    return fig


METHOD_COLOURS = {"visr": "#1f77b4", "apt": "#2ca02c", "aps": "#d62728", "dqn": "#7f7f7f"}
OTHER_COLOURS = ("#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
"""Colours of other names (variants, X->Y pairs), none of them a method's."""


def method_colour(method: str, index: int) -> str:
    """A method's own colour, or else the `index`-th of `OTHER_COLOURS` (cycling)."""
    return METHOD_COLOURS.get(method, OTHER_COLOURS[index % len(OTHER_COLOURS)])


def plot_figure4(rows, methods: Sequence[str] | None = None, levels: Sequence[str] | None = None):
    """The paper's Figure 4 form: success rate per method, grouped by level. Each bar's dark lower
    part is the zero-shot success and its full (light) height the fine-tuned success, both means
    over seeds with 95% bootstrap intervals. `rows` have method, level, phase, success_rate."""
    summary = summarise(rows, by=("level", "method", "phase"), value="success_rate")
    levels = list(levels or dict.fromkeys(level for level, _, _ in summary))
    methods = list(methods or dict.fromkeys(method for _, method, _ in summary))
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(methods) * len(levels), 4))
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
    ax.set_xticks(range(len(levels)), [f"{level} level" for level in levels])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate")
    ax.set_title("zero-shot (dark) and fine-tuned (full bar) success, mean and 95% CI over seeds")
    ax.legend(title="method", frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig


def plot_transfer(rows: Sequence[dict]):
    """Left: mean normalised score per maze and method with 95% bootstrap intervals (tasks x seeds).
    Right: each task's score against the R^2 of its least-squares fit (tasks without reward in their
    identification data have no R^2 and are counted in the title)."""
    summary = summarise(rows, by=("maze", "method"), value="normalised_score")
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
    bars.set_title("zero-shot transfer, mean and 95% CI over tasks x seeds")
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
    the zero-shot transfer score (0 random, 1 optimal); means and 95% intervals over seeds (tasks x seeds
    for transfer). dqn, which does not pretrain, is drawn as a flat reference line."""
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
                       value="normalised_score")
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
                    if method == "dqn":  # no pretraining: one value, drawn across the budgets
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
                  title: str | None = None, xlabel: str | None = None, dot_label: str = "one run (seed)"):
    """One panel per metric (column -> axis label): for each value of column `by` (in `order`), the mean of
    its rows with a 95% bootstrap interval (red), and every row (`dot_label`) as a grey dot. NaN values
    are left out of both; a panel's title counts them."""
    order = list(order or dict.fromkeys(str(row[by]) for row in rows))
    fig, axes = plt.subplots(1, len(metrics), figsize=(0.8 + 3.3 * len(metrics), 3.6), squeeze=False)
    for ax, (metric, label) in zip(axes[0], metrics.items(), strict=True):
        summary = summarise(rows, by=(by,), value=metric, drop_nan=True)
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


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> None:
    """Write `fig` to `path` atomically (the format comes from the suffix)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")


PATH_COLOURS = ("#d62728", "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#1f77b4", "#7f7f7f")
"""Line colours of `plot_paths`, none of them a key's, the target's or the floor's."""


def path_marker_handles() -> list[Line2D]:
    """Legend entries for the markers of `draw_path`: a circle at the start, a cross at the end."""
    return [Line2D([], [], color="grey", marker="o", markersize=7, linestyle="", label="start of a path"),
            Line2D([], [], color="grey", marker="X", markersize=9, markeredgecolor="white", linestyle="",
                   label="end of a path")]


def draw_path(ax, path, colour, label: str | None = None, shift: float = 0.0):
    """Draw a path (a list of (row, col) cells) as a line through its cell centres, shifted by `shift` cells
    along both axes, with a circle at its start and a cross at its end. Returns the line."""
    rows, cols = np.asarray(path, dtype=float).reshape(-1, 2).T + shift
    (line,) = ax.plot(cols, rows, color=colour, linewidth=2, alpha=0.85, label=label)
    ax.plot(cols[0], rows[0], "o", color=colour, markersize=7)
    ax.plot(cols[-1], rows[-1], "X", color=colour, markersize=9, markeredgecolor="white")
    return line


def plot_paths(ax, layout: gridworld.Layout, paths, labels, title: str | None = None, spread: float = 0.3):
    """Draw each path (a list of (row, col) cells) over the level picture as a line through its cell
    centres, in colour i of PATH_COLOURS (cycled); path i of n is shifted by (i / (n-1) - 1/2) * spread
    cells along both axes so overlapping paths stay apart. A circle marks each start, a cross each end.
    Returns the lines."""
    plot_level(ax, layout, title)
    return [draw_path(ax, path, PATH_COLOURS[i % len(PATH_COLOURS)], label,
                      (i / max(len(paths) - 1, 1) - 0.5) * spread)
            for i, (path, label) in enumerate(zip(paths, labels, strict=True))]


def plot_zero_shot(axes, layout: gridworld.Layout, shot) -> dict:
    """Three panels of a `transfer.ZeroShot` on `layout`: the task's reward map with the greedy GPI path,
    the reward the least-squares fit believes in, phi(s')^T c (same colour scale, R^2 in the title), and
    the value max_a psi(s, a, w)^T w with greedy-action arrows. Returns the images and the path line."""
    fig = axes[0].figure
    task = np.where(layout.walls, np.nan, shot.reward_map)
    both = np.concatenate([task[np.isfinite(task)], shot.fitted_reward[np.isfinite(shot.fitted_reward)]])
    scale = {"vmin": both.min(), "vmax": both.max() if both.max() > both.min() else both.min() + 1e-9}
    steps = len(shot.rollout.positions) - 1
    title = f"the task, and the greedy GPI path\n(return {shot.rollout.total_reward:g} in {steps} steps)"
    drawn = {"task": plot_cell_map(axes[0], layout, task, title, cmap="viridis", **scale)}
    drawn["path"] = draw_path(axes[0], shot.rollout.positions, PATH_COLOURS[0], "greedy GPI path")
    axes[0].legend(handles=[drawn["path"], *path_marker_handles()], loc="upper center",
                   bbox_to_anchor=(0.5, -0.02), frameon=False, fontsize="small", ncol=3)
    fit = f"$R^2$ = {shot.fit.r2:.3f}" if shot.fit.identified else "no reward seen: $w$ drawn at random"
    drawn["fitted"] = plot_cell_map(axes[1], layout, shot.fitted_reward,
                                    f"what the linear fit believes: $\\phi(s')^\\top c$\n({fit})",
                                    cmap="viridis", **scale)
    drawn["value"] = plot_cell_map(axes[2], layout, shot.value,
                                   "value $\\max_a \\psi(s, a, w)^\\top w$\n"
                                   "and greedy action (policy $w$ alone)", cmap="cividis")
    drawn["arrows"] = plot_greedy_arrows(axes[2], shot.action)
    for ax, name, label in zip(axes, ("task", "fitted", "value"), ("reward", "reward", "value"), strict=True):
        fig.colorbar(drawn[name], ax=ax, fraction=0.046, label=label)
    return drawn


def plot_run_overview(layout: gridworld.Layout, learner: Learner, particles: torch.Tensor, w, zero_shot,
                      finetuned, adaptation, title: str = ""):
    """One pretrained learner on its key level `layout`, in one figure. A row per set of keys held: the two
    terms of the intrinsic reward for reaching each cell (the kNN exploration term against `particles`, and
    phi^T w with the identified w), and the value max_a psi(s, a, w)^T w with greedy arrows and the path
    (`zero_shot`, a `rollouts.Rollout`, drawn where it holds those keys; `finetuned` dashed). Right: success
    against fine-tuning steps (`adaptation` points of `experiments.GridworldResult`)."""
    held_sets = held_key_sets(layout)
    fig = plt.figure(figsize=(12.5, 3.3 * len(held_sets)))
    grid = fig.add_gridspec(len(held_sets), 4, width_ratios=(1, 1, 1, 1.15))
    for r, held in enumerate(held_sets):
        cells = cell_states(layout, held)
        maps = reward_maps(learner, cells, particles if learner.config.uses_knn else None, w)
        values = value_map(learner, cells, w)
        keys = ", ".join(held) or "none"
        panels = [("explore", f"exploration term (kNN particle reward)\nkeys held: {keys}", "magma"),
                  ("exploit", f"exploitation term $\\phi(s)^\\top w$\nkeys held: {keys}", "viridis")]
        for c, (name, label, cmap) in enumerate(panels):
            ax = fig.add_subplot(grid[r, c])
            if name in maps:
                fig.colorbar(plot_cell_map(ax, layout, maps[name], label, cmap=cmap), ax=ax, fraction=0.046)
            else:
                ax.set_axis_off()
        ax = fig.add_subplot(grid[r, 2])
        image = plot_cell_map(ax, layout, values["value"],
                              f"value $\\max_a \\psi(s,a,w)^\\top w$, greedy path\nkeys held: {keys}",
                              cmap="cividis")
        fig.colorbar(image, ax=ax, fraction=0.046)
        plot_greedy_arrows(ax, values["action"])
        for rollout, style, label in ((zero_shot, "-", "zero-shot"), (finetuned, "--", "fine-tuned")):
            if rollout is None:
                continue
            path = [p for p, k in zip(rollout.positions, rollout.keys_held, strict=True) if k == held]
            if path:
                line = draw_path(ax, path, PATH_COLOURS[0 if style == "-" else 1], label)
                line.set_linestyle(style)
    paths = [Line2D([], [], color=PATH_COLOURS[0], linewidth=2, label="greedy path, zero-shot"),
             Line2D([], [], color=PATH_COLOURS[1], linewidth=2, linestyle="--",
                    label="greedy path, fine-tuned")]
    ax = fig.add_subplot(grid[:, 3])
    steps = [point["finetune_steps"] for point in adaptation]
    ax.plot(steps, [point["success_rate"] for point in adaptation], "o-", color=method_colour(
        learner.config.method, 0), label="success rate")
    ax.legend(handles=[*ax.get_lines(), *paths, *path_marker_handles()], frameon=False, fontsize="small",
              loc="center right")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("fine-tuning env steps (0 = zero-shot)")
    ax.set_ylabel("success rate (greedy episodes)")
    ax.set_title(f"success: zero-shot {adaptation[0]['success_rate']:.2f}, "
                 f"fine-tuned {adaptation[-1]['success_rate']:.2f}")
    note = "white: no state with those keys held there (a key not yet held, the target, a closed passageway)"
    fig.suptitle((title + "\n" if title else "") + note + "; grey: walls", fontsize="medium")
    fig.tight_layout()
    return fig


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


def atari_run_dirs(runs) -> list[Path]:
    """The run directories of an Atari sweep directory (its runs/*/ holding a config.json), of one run
    directory, or of a list of run directories; FileNotFoundError if there is none."""
    paths = [Path(runs)] if isinstance(runs, str | os.PathLike) else [Path(run) for run in runs]
    found = []
    for path in paths:
        if (path / "config.json").exists():
            found.append(path)
        else:
            found += sorted(p.parent for p in path.glob("runs/*/config.json"))
    if not found:
        raise FileNotFoundError(f"no Atari run directory (a folder with config.json, or a sweep's runs/*/) "
                                f"in {[str(p) for p in paths]}")
    return found


def plot_atari_curves(runs, metrics: str | Sequence[str] = "score", phase: str = "finetune",
                      games: Sequence[str] | None = None):
    """One panel per column of `metrics`: its value against env steps in each run's `phase`/metrics.csv,
    one line per run (its gid the run directory's name), coloured by the run's method; the legend names
    each method once, with its number of runs.

    `runs`: a sweep directory, a run directory or a list of them (see `atari_run_dirs`); `games` keeps the
    runs of those games (ROM ids, as in config.json) only. Runs without that phase (dqn has no pretraining)
    are left out, and so are empty cells (no game ended in an interval, no update yet). Returns the figure."""
    if phase not in ("pretrain", "finetune"):
        raise ValueError(f"phase must be pretrain or finetune, got {phase!r}")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    dirs = [(d, json.loads((d / "config.json").read_text())) for d in atari_run_dirs(runs)]
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
            rows = read_rows(directory / phase / "metrics.csv")
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


def plot_atari_scores(rows: Sequence[dict], methods: Sequence[str] | None = None):
    """Human-normalised score per game and method (a sweep's scores.csv rows: game, method, seed,
    human_normalised): a bar at the mean over seeds and each seed as a black dot on it; dashed lines at
    0 (random play) and 1 (the human reference). Games without reference scores (empty
    human_normalised) are left out and counted in the title. Returns the figure."""
    scored = [row for row in rows if str(row["human_normalised"]).strip() not in ("", "None", "nan")]
    games = sorted(dict.fromkeys(row["game"] for row in scored))
    methods = list(methods or dict.fromkeys(row["method"] for row in scored))
    if not games:
        raise ValueError(f"no row with a human-normalised score among {len(rows)} rows")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 + 0.45 * len(games) * len(methods)), 4))
    width = 0.8 / len(methods)
    for m, method in enumerate(methods):
        colour = method_colour(method, m)
        xs, means, dots_x, dots_y = [], [], [], []
        for g, game in enumerate(games):
            values = [float(row["human_normalised"]) for row in scored
                      if row["method"] == method and row["game"] == game]
            if values:
                x = g + (m - (len(methods) - 1) / 2) * width
                xs.append(x)
                means.append(float(np.mean(values)))
                dots_x += [x] * len(values)
                dots_y += values
        ax.bar(xs, means, width * 0.9, color=colour, alpha=0.7, label=method, gid=f"{method}/mean")
        ax.scatter(dots_x, dots_y, s=12, color="black", zorder=3, gid=f"{method}/seeds",
                   label="one seed" if m == 0 else None)
    ax.axhline(0, color="grey", linewidth=0.8, linestyle="--", gid="random")
    ax.axhline(1, color="grey", linewidth=0.8, linestyle=":", gid="human")
    long = len(games) > 6
    ax.set_xticks(range(len(games)), games, rotation=45 if long else 0, ha="right" if long else "center")
    ax.set_ylabel("human-normalised score\n(0 random, 1 human)")
    dropped = len(rows) - len(scored)
    ax.set_title("mean over seeds (bar) and each seed (dot)"
                 + (f"; {dropped} runs without reference scores left out" if dropped else ""))
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig
