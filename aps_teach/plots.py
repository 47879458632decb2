"""Pure plotting functions: each takes data, draws on matplotlib axes, and returns what it drew.

Every figure in the notebooks and the command line comes from here; widgets are thin wrappers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.patches import Patch

import gridworld
from aps_teach.files import atomic_path
from aps_teach.random_policy import RandomPolicyStats
from aps_teach.stats import summarise

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
    ax.set_xticks(np.arange(-0.5, shape[1], 1), minor=True)
    ax.set_yticks(np.arange(-0.5, shape[0], 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)


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
    image = ax.imshow(state_grid(layout, states, values, keys_held), **{"cmap": "magma", **imshow})
    _draw_walls(ax, layout)
    _grid_lines(ax, layout.shape)
    ax.set_title(title if title is not None else f"keys held: {', '.join(keys_held) or 'none'}")
    return image


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
        colour = METHOD_COLOURS.get(method, f"C{m}")
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


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> None:
    """Write `fig` to `path` atomically (the format comes from the suffix)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
