"""Gridworld figures: each function takes data (levels, visit counts, the arrays of
`aps_teach.grid.cell_maps`, rollouts), draws on matplotlib axes and returns what it drew. What every figure
module shares (the methods' colours, `save_figure`) is `aps_teach.infra.figures`; the colours are named here
too, as `plots.METHOD_COLOURS`, for the notebooks that draw with them. Study figures are in
`aps_teach.studies.plots`, Atari figures in `aps_teach.atari.plots`; widgets are thin wrappers over these.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import gridworld
from aps_teach.grid.cell_maps import state_grid
from aps_teach.grid.random_policy import RandomPolicyStats
from aps_teach.infra.figures import METHOD_COLOURS as METHOD_COLOURS
from aps_teach.infra.figures import method_colour

_CHAR_LAYER = {".": "floor", "S": "floor", "#": "wall", "T": "target",
               **{key: f"{name}_key" for name, (key, _) in gridworld.KEYS.items()},
               **{passage: f"{name}_passage" for name, (_, passage) in gridworld.KEYS.items()}}
START_COLOUR = np.array((198, 219, 239), dtype=np.uint8)
"""Light blue: the start region, where each episode begins on a random cell."""


def level_image(layout: gridworld.Layout) -> np.ndarray:
    """(H, W, 3) uint8 picture of a level: legend colours, start cells in light blue, no agent."""
    image = np.array([[gridworld.LAYER_COLOURS[_CHAR_LAYER[char]] for char in row] for row in layout.art],
                     dtype=np.uint8)
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


def level_legend_handles(key_names: Sequence[str] = ("green", "purple")) -> list[Patch]:
    """Legend patches for `plot_level` pictures, one for each key of `key_names`."""
    colour = {name: np.array(rgb) / 255 for name, rgb in gridworld.LAYER_COLOURS.items()}
    entries = [("start region", START_COLOUR / 255), ("agent", colour["agent"]), ("wall", colour["wall"]),
               *((f"{name} key", colour[f"{name}_key"]) for name in key_names),
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


def _draw_walls(ax, layout: gridworld.Layout) -> None:
    wall_colour = np.append(np.array(gridworld.LAYER_COLOURS["wall"]) / 255, 1.0)
    ax.imshow(np.where(layout.walls[..., None], wall_colour, 0.0))


def plot_state_values(ax, layout: gridworld.Layout, states, values, keys_held=(), title=None, **imshow):
    """Heatmap of one number per state, over the cells of the states holding `keys_held`."""
    title = title if title is not None else f"keys held: {', '.join(keys_held) or 'none'}"
    return plot_cell_map(ax, layout, state_grid(layout, states, values, keys_held), title, **imshow)


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
        planes = [*(f"{name}_key" for name in result.key_rates), "target"]
        bars = row[2].bar(names, rates, color=[np.array(gridworld.LAYER_COLOURS[p]) / 255 for p in planes])
        row[2].bar_label(bars, labels=[f"{rate:.1%}" for rate in rates])
        row[2].set_ylim(0, 1.1)
        row[2].set_ylabel("fraction of episodes")
        row[2].set_title("random policy: milestones reached")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    shown = {"green", "purple"}.union(*(result.key_rates for result in stats))
    keys = [name for name in gridworld.KEYS if name in shown]
    fig.legend(handles=level_legend_handles(keys), loc="lower center", ncol=5 + len(keys), frameon=False)
    return fig


PATH_COLOURS = ("#d62728", "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#1f77b4", "#7f7f7f")
"""Line colours of `plot_paths`, none of them a key's, the target's or the floor's."""


def mark_target(ax, layout: gridworld.Layout) -> None:
    """A star on the level's target cell, in the target's colour (nothing on a maze without one)."""
    if layout.target is not None:
        row, col = layout.target
        ax.plot(col, row, "*", color=np.array(gridworld.LAYER_COLOURS["target"]) / 255, markersize=16,
                markeredgecolor="black", markeredgewidth=0.8)


def target_handle() -> Line2D:
    """The legend entry of `mark_target`."""
    return Line2D([], [], color=np.array(gridworld.LAYER_COLOURS["target"]) / 255, marker="*", markersize=13,
                  markeredgecolor="black", linestyle="", label="target")


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


def plot_run_overview(layout: gridworld.Layout, maps: dict[tuple[str, ...], dict[str, np.ndarray]],
                      method: str, zero_shot, finetuned, adaptation, title: str = ""):
    """One pretrained learner on its key level `layout`, in one figure, from its `cell_maps.overview_maps`.
    A row per set of keys held: the two terms of the intrinsic reward for reaching each cell (the kNN
    exploration term, and phi^T w with the identified w), and the value max_a psi(s, a, w)^T w with greedy
    arrows and the path (`zero_shot`, a `rollouts.Rollout`, drawn where it holds those keys; `finetuned`
    dashed). Right: success against fine-tuning steps (`adaptation` points of
    `experiments.GridworldResult`), in `method`'s colour."""
    fig = plt.figure(figsize=(12.5, 3.3 * len(maps)))
    grid = fig.add_gridspec(len(maps), 4, width_ratios=(1, 1, 1, 1.15))
    for r, (held, held_maps) in enumerate(maps.items()):
        keys = ", ".join(held) or "none"
        panels = [("explore", f"exploration term (kNN particle reward)\nkeys held: {keys}", "magma"),
                  ("exploit", f"exploitation term $\\phi(s)^\\top w$\nkeys held: {keys}", "viridis")]
        for c, (name, label, cmap) in enumerate(panels):
            ax = fig.add_subplot(grid[r, c])
            if name in held_maps:
                fig.colorbar(plot_cell_map(ax, layout, held_maps[name], label, cmap=cmap), ax=ax,
                             fraction=0.046)
                mark_target(ax, layout)
            else:
                ax.set_axis_off()
        ax = fig.add_subplot(grid[r, 2])
        image = plot_cell_map(ax, layout, held_maps["value"],
                              f"value $\\max_a \\psi(s,a,w)^\\top w$, greedy path\nkeys held: {keys}",
                              cmap="cividis")
        fig.colorbar(image, ax=ax, fraction=0.046)
        plot_greedy_arrows(ax, held_maps["action"])
        mark_target(ax, layout)
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
    ax.plot(steps, [point["success_rate"] for point in adaptation], "o-", color=method_colour(method, 0),
            label="success rate")
    ax.legend(handles=[*ax.get_lines(), *paths, *path_marker_handles(), target_handle()], frameon=False,
              fontsize="small", loc="center right")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("fine-tuning env steps (0 = zero-shot)")
    ax.set_ylabel("success rate (greedy episodes)")
    ax.set_title(f"success: zero-shot {adaptation[0]['success_rate']:.2f}, "
                 f"fine-tuned {adaptation[-1]['success_rate']:.2f}")
    note = "white: no state with those keys held there (a key not yet held, the target, a closed passageway)"
    fig.suptitle((title + "\n" if title else "") + note + "; grey: walls", fontsize="medium")
    fig.tight_layout()
    return fig


MARKS = {True: ("\u2713", "tab:green"), False: ("\u2717", "tab:red"),
         "state-based only": ("\u2713*", "tab:orange")}
"""How `plot_method_table` draws a mark: True a green check, False a red cross, "state-based only" an
orange check with a star (the property holds only from explicit states, not from pixels)."""


def plot_method_table(ax, columns: Sequence[str], rows: dict[str, Sequence], highlight: str | None = None,
                      groups: Sequence[int] = ()) -> dict[tuple[str, str], object]:
    """A comparison of methods as a grid on `ax`: a row per method (`rows`: name -> one cell per column),
    a cell either text (mathtext allowed) or a key of `MARKS`. The `highlight` row sits on a shaded band;
    a rule is drawn below the rows whose 0-based indices are in `groups`. Returns the drawn texts by
    (row name, column)."""
    for name, cells in rows.items():
        if len(cells) != len(columns):
            raise ValueError(f"row {name!r} has {len(cells)} cells for {len(columns)} columns")
    if highlight is not None and highlight not in rows:
        raise ValueError(f"highlight {highlight!r} is not a row; rows: {list(rows)}")
    widths = [max([len(columns[c])] + [len(str(cells[c])) if isinstance(cells[c], str)
                                       and cells[c] not in MARKS else 2 for cells in rows.values()])
              for c in range(len(columns))]
    names_width = max(len(name) for name in rows) + 2  # column edges in characters, about
    steps = np.concatenate([[0], np.cumsum([max(w, 6) + 2 for w in widths])])
    edges = np.concatenate([[0], names_width + steps])
    ax.set_xlim(0, edges[-1])
    ax.set_ylim(len(rows) + 0.5, -1)
    ax.set_axis_off()
    drawn = {}
    for c, column in enumerate(("", *columns)):
        ax.text((edges[c] + edges[c + 1]) / 2, -0.4, column, ha="center", va="center", fontweight="bold")
    ax.axhline(0.0, color="black", linewidth=1)
    for r, (name, cells) in enumerate(rows.items(), start=1):
        if name == highlight:
            ax.axhspan(r - 0.5, r + 0.5, color="gold", alpha=0.3, zorder=0, gid="highlight")
        ax.text(edges[0] + 0.5, r, name, ha="left", va="center",
                fontweight="bold" if name == highlight else None)
        for c, cell in enumerate(cells, start=1):
            mark = isinstance(cell, bool) or cell in MARKS
            text, colour = MARKS[cell] if mark else (cell, "black")
            drawn[name, columns[c - 1]] = ax.text((edges[c] + edges[c + 1]) / 2, r, text, ha="center",
                                                  va="center", color=colour,
                                                  fontsize="large" if mark else None)
        if r - 1 in groups:
            ax.axhline(r + 0.5, color="grey", linewidth=0.6)
    ax.axhline(len(rows) + 0.5, color="black", linewidth=1)
    return drawn
