"""Interactive reward heatmaps: ipywidgets controls over the arrays of `aps_teach.grid.cell_maps`, drawn by
`aps_teach.grid.plots`.

    explorer = reward_explorer(snapshots)          # from snapshots.pretrain_with_snapshots
    explorer = reward_explorer({"aps": aps_snaps, "visr": visr_snaps}, tasks={"inferred": w})

One figure, six panels: the exploration term, the exploitation term and their weighted sum for reaching
each cell; where the kNN particles are, where the agent has been, and the value max_a psi^T w with the
greedy action. Works with plain ipywidgets and the inline matplotlib backend (no ipympl, broken on
Colab): the figure is shown as a PNG image in a normal display output that each control change
replaces (its `display_id`), so without a widget frontend (CI, GitHub's viewer) the default view is
still there. A redraw updates the image artists in place, recomputes every panel (under 30 ms: small
networks on one thread) and renders the PNG at 80 dpi (0.2-0.3 s of one core:
benchmarks/explorer_redraw.py); the controls are disabled meanwhile. "Same colour scale at every
checkpoint" fixes each panel's colour limits to its range over all of the run's checkpoints, so that a
change of size between checkpoints shows.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from functools import partial

import ipywidgets as widgets
import numpy as np
import torch
from IPython.display import Image, display
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

import gridworld
from aps_teach.grid import cell_maps, plots
from aps_teach.grid.experiments import DEFAULT_IDENTIFY_STEPS
from aps_teach.grid.snapshots import Snapshot, visit_counts
from aps_teach.grid.train import single_thread
from aps_teach.grid.transfer import maze_layout, zero_shot_on_reward_map
from aps_teach.infra.checks import check_range, check_type
from aps_teach.learner.tasks import sample_tasks
from gridworld.reward_maps import as_reward_map

TERMS = {"explore": "exploration: kNN particle reward of {space}",
         "exploit": r"exploitation: $\phi(s')^\top w$", "total": "intrinsic reward (weighted sum)"}
KNN_SPACES = {"phi": r"$h = \phi(s')$", "g": r"$h = g(s')$ ($\phi$ before normalising)",
              "contrastive": r"$h = f(s')$", "observation": "the board $s'$", None: "$h$"}
"""How a panel names the space the learner's kNN reward measures distances in (`Learner.knn_space`)."""
COLORBAR_LABELS = {"explore": "reward", "exploit": "reward", "total": "reward", "particles": "particles",
                   "visits": "visits", "value": "value"}


SNAPSHOTS = "a list of Snapshots (from pretrain_with_snapshots), or a dict of run name -> such a list"


def _runs(snapshots: Sequence[Snapshot] | Mapping[str, Sequence[Snapshot]]) -> dict[str, list[Snapshot]]:
    """Run name -> its snapshots; an `InputTypeError` naming snapshots if they are not `SNAPSHOTS`."""
    named = snapshots if isinstance(snapshots, Mapping) else {None: snapshots}
    runs = {}
    for label, run in named.items():
        name = "snapshots" if label is None else f"snapshots[{label!r}]"
        run = list(check_type(name, run, Sequence, SNAPSHOTS))
        for snap in run:
            check_type(name, snap, Snapshot, SNAPSHOTS)
        runs[label if label is not None else run[0].method if run else ""] = run
    if not runs or not all(runs.values()):
        raise ValueError("reward_explorer needs at least one snapshot per run (see pretrain_with_snapshots)")
    arts = {snap.art for run in runs.values() for snap in run}
    if len(arts) > 1:
        raise ValueError("all snapshots must come from the same level; make one explorer per level")
    return runs


class RewardExplorer:
    """The controls, the figure and its artists; `update()` redraws from the controls' values."""

    def __init__(self, runs: dict[str, list[Snapshot]], tasks: Mapping[str, torch.Tensor],
                 keys_held: Sequence[str] = (), k: int | None = None):
        first = next(iter(runs.values()))[-1]
        self.runs, self.layout = runs, gridworld.Layout.parse(first.art)
        config = first.learner.config
        dims = {snap.learner.config.feature_dim for run in runs.values() for snap in run}
        bad = [name for name, w in tasks.items() if any(torch.as_tensor(w).shape != (d,) for d in dims)]
        if not tasks or bad:
            raise ValueError(f"tasks must map names to vectors of shape ({', '.join(map(str, dims))},); "
                             f"bad: {bad or 'none given'}")
        self.tasks = {name: torch.as_tensor(w, dtype=torch.float32) for name, w in tasks.items()}
        held_options = cell_maps.held_key_sets(self.layout)
        held = cell_maps.cell_states(self.layout, keys_held).keys_held  # validates and orders keys_held
        k = config.k if k is None else k
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        # the particles of one update: a state per sampled window ('last'), or every window state ('sum')
        self.batch = config.batch_size * (config.n_step if config.nstep_reward == "sum" else 1)
        self.cells = {keys: cell_maps.cell_states(self.layout, keys) for keys in held_options}
        style = {"description_width": "initial"}
        self.controls = {
            "method": widgets.Dropdown(options=list(runs), description="method", style=style),
            "checkpoint": widgets.SelectionSlider(options=self._checkpoints(next(iter(runs))),
                                                  description="env steps", continuous_update=False,
                                                  style=style),
            "keys_held": widgets.Dropdown(options=[(", ".join(h) or "none", h) for h in held_options],
                                          value=held, description="keys held", style=style),
            "k": widgets.IntSlider(value=k, min=1, max=max(30, k), description="k",
                                   continuous_update=False, style=style),
            "w": widgets.Dropdown(options=list(self.tasks), description="task w", style=style),
            "particles": widgets.Dropdown(options=[(f"{self.batch}, a training batch", "batch"),
                                                   ("all stored", "all")],
                                          description="kNN particles", style=style),
            "fixed_scale": widgets.Checkbox(value=False, description="same colour scale at every checkpoint",
                                            style=style),
        }
        self._limits: dict[tuple, dict[str, tuple[float, float]]] = {}
        self.controls["checkpoint"].value = len(next(iter(runs.values()))) - 1
        self.controls["method"].layout.display = None if len(runs) > 1 else "none"
        self.figure, self.images, self.arrows = self._draw()
        self._handle, self._quiet = None, False
        self.controls["method"].observe(self._method_changed, names="value")
        for name in ("checkpoint", "keys_held", "k", "w", "particles", "fixed_scale"):
            self.controls[name].observe(self._control_changed, names="value")
        self.update()

    def _checkpoints(self, label: str) -> list[tuple[str, int]]:
        return [(f"{snap.env_steps:,}", i) for i, snap in enumerate(self.runs[label])]

    def _control_changed(self, change) -> None:
        if not self._quiet:
            self.update()

    def _method_changed(self, change) -> None:
        """A new run has its own checkpoints: show its last one, redrawing once."""
        slider, self._quiet = self.controls["checkpoint"], True
        try:
            slider.options = self._checkpoints(change["new"])
            slider.value = len(self.runs[change["new"]]) - 1
        finally:
            self._quiet = False
        self.update()

    def _draw(self):
        fig = Figure(figsize=(14, 8.2))
        axes = fig.subplots(2, 3)
        empty = np.full(self.layout.shape, np.nan)
        images = {name: plots.plot_cell_map(ax, self.layout, empty, title)
                  for (name, title), ax in zip(TERMS.items(), axes[0], strict=True)}  # titled when drawn
        images["particles"] = plots.plot_cell_map(axes[1, 0], self.layout, empty, cmap="viridis")
        images["visits"] = plots.plot_cell_map(axes[1, 1], self.layout, empty, cmap="viridis")
        images["value"] = plots.plot_cell_map(axes[1, 2], self.layout, empty, cmap="cividis")
        arrows = plots.plot_greedy_arrows(axes[1, 2], empty)
        for name, image in images.items():
            colorbar = fig.colorbar(image, ax=image.axes, fraction=0.046, label=COLORBAR_LABELS[name])
            colorbar.locator = MaxNLocator(4)  # fewer tick labels: laying out text is most of a redraw
        wall = np.array(gridworld.LAYER_COLOURS["wall"]) / 255
        legend = [Patch(facecolor="white", edgecolor="grey", label="white: no state there with these keys "
                        "held (behind a closed passageway, the key itself, the target), or a term the method "
                        "lacks"),
                  Patch(facecolor=wall, edgecolor="grey", label="wall"),
                  Line2D([], [], color="black", marker=r"$\rightarrow$", markersize=12, linestyle="",
                         label="greedy action")]
        fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False)
        fig.subplots_adjust(left=0.02, right=0.95, top=0.88, bottom=0.06, wspace=0.3, hspace=0.25)
        return fig, images, arrows

    @property
    def snapshot(self) -> Snapshot:
        return self.runs[self.controls["method"].value][self.controls["checkpoint"].value]

    def arrays(self, snap: Snapshot | None = None) -> dict[str, np.ndarray]:
        """What the panels show for the controls' current values (at checkpoint `snap`, by default the
        slider's), from the pure functions of `cell_maps`."""
        c, snap = self.controls, snap or self.snapshot
        cells, w = self.cells[c["keys_held"].value], self.tasks[c["w"].value]
        particles = snap.particles[: self.batch if c["particles"].value == "batch" else None]
        maps = cell_maps.reward_maps(snap.learner, cells, particles, w, c["k"].value)
        values = cell_maps.value_map(snap.learner, cells, w if snap.learner.config.task_conditioned else None)
        counts = visit_counts(particles, self.layout.key_names)
        cell_index = tuple(np.array(cells.positions).T)
        zero = np.zeros(self.layout.shape)
        return {**{term: maps.get(term, np.full(self.layout.shape, np.nan)) for term in TERMS},
                "particles": cells.grid(counts.get(cells.keys_held, zero)[cell_index]),
                "visits": cells.grid(snap.visits.get(cells.keys_held, zero)[cell_index]),
                "value": values["value"], "action": values["action"]}

    def run_limits(self) -> dict[str, tuple[float, float]]:
        """Each panel's colour limits over every checkpoint of the current run, for the other controls'
        values (computed once per combination)."""
        c = self.controls
        key = (c["method"].value, c["keys_held"].value, c["w"].value, c["k"].value, c["particles"].value)
        if key not in self._limits:
            every = [self.arrays(snap) for snap in self.runs[c["method"].value]]
            self._limits[key] = {name: plots.colour_limits(*(arrays[name] for arrays in every))
                                 for name in self.images}
        return self._limits[key]

    def update(self) -> None:
        """Recompute the panels for the controls' values, redraw them in place, refresh the display; the
        controls are disabled meanwhile."""
        c = self.controls
        for control in c.values():
            control.disabled = True
        try:
            self._redraw()
        finally:
            for name, control in c.items():
                control.disabled = name == "w" and not self.snapshot.learner.config.task_conditioned

    def _redraw(self) -> None:
        c, snap = self.controls, self.snapshot
        with single_thread():  # small networks: ~10x faster than intra-op threads on a shared CPU
            arrays = self.arrays()
            limits = self.run_limits() if c["fixed_scale"].value else {}
        for name, image in self.images.items():
            plots.set_cell_map(image, arrays[name], limits.get(name))
        self.arrows.set_UVC(*plots.action_arrows(arrays["action"]))
        config = snap.learner.config
        unused = {"explore": not config.uses_knn, "exploit": not config.task_conditioned, "total": False}
        for term, title in TERMS.items():
            note = f"\n(not used by {config.method})" if unused[term] else ""
            self.images[term].axes.set_title(title.format(space=KNN_SPACES[snap.learner.knn_space]) + note)
        fixed = "" if config.task_conditioned else f"\n($w = e_1$, the fixed task of {config.method})"
        self.images["value"].axes.set_title(r"value $\max_a \psi(s, a, w)^\top w$ and greedy action" + fixed)
        held = ", ".join(c["keys_held"].value) or "none"
        particles = self.batch if c["particles"].value == "batch" else len(snap.particles)
        self.images["particles"].axes.set_title(f"kNN particles per cell\n({particles} replayed next "
                                                f"states, keys held: {held})")
        self.images["visits"].axes.set_title(f"visits per cell, whole replay\n(keys held: {held})")
        task = f", w = {c['w'].value}" if config.task_conditioned else ""
        self.figure.suptitle(f"{c['method'].value} on the {snap.level} level after {snap.env_steps:,} env "
                             f"steps: reward for reaching each cell (keys held: {held}, "
                             f"k = {c['k'].value}{task})")
        if self._handle is not None:
            self._handle.update(self.image())

    def image(self) -> Image:
        """The figure as a PNG image (a plain display output, unlike a matplotlib figure object)."""
        return _png(self.figure)

    def show(self) -> None:
        """Display the controls and, as a normal output that control changes replace, the figure."""
        c = self.controls
        display(widgets.VBox([widgets.HBox([c["method"], c["checkpoint"], c["keys_held"]]),
                              widgets.HBox([c["k"], c["w"], c["particles"]]), c["fixed_scale"]]))
        self._handle = display(self.image(), display_id=True)


def reward_explorer(snapshots: Sequence[Snapshot] | Mapping[str, Sequence[Snapshot]],
                    tasks: Mapping[str, torch.Tensor] | None = None, *, keys_held: Sequence[str] = (),
                    k: int | None = None, num_sampled_tasks: int = 4, seed: int = 0,
                    show: bool = True) -> RewardExplorer:
    """Heatmaps of the intrinsic reward per cell, with controls for checkpoint, method, keys held, k, w.

    `snapshots`: one run's list, or run name -> list (all on one level). `tasks`: name -> w to choose
    from (e.g. an inferred task); `num_sampled_tasks` directions drawn uniformly on the sphere (seeded)
    are added. `show=False` builds without displaying (tests; `explorer.show()` later).
    """
    runs = _runs(snapshots)
    dim = next(iter(runs.values()))[0].learner.config.feature_dim
    sampled = sample_tasks(num_sampled_tasks, dim, torch.Generator().manual_seed(seed)) \
        if num_sampled_tasks else torch.zeros(0, dim)
    choices = {**(tasks or {}), **{f"sampled #{i + 1}": w for i, w in enumerate(sampled)}}
    explorer = RewardExplorer(runs, choices, keys_held, k)
    if show:
        explorer.show()
    return explorer


PNG_DPI = 80
"""Pixels per inch of the widgets' figures (the explorer: 1,120 x 656); rendering at 100 is slower."""


def _png(figure: Figure) -> Image:
    """`figure` rendered as a PNG display object (light compression: most of a redraw is rendering)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=PNG_DPI, pil_kwargs={"compress_level": 1})
    return Image(data=buffer.getvalue(), format="png")


def _valued_cells(cells):
    """`cells` as given, once it is not a list of bare (row, col) cells: a ValueError naming cells and the
    valid forms, for a list of cells without their values (its values are not the cells')."""
    bare = isinstance(cells, list | tuple) and len(cells) > 0 and all(
        isinstance(cell, list | tuple) and len(cell) == 2
        and all(isinstance(x, int | np.integer) for x in cell) for cell in cells)
    if bare:
        example = tuple(int(x) for x in cells[0])
        raise ValueError(f"cells must be {{(row, col): value}}, a list of ((row, col), value) pairs or an "
                         f"H x W array; got a list of cells without values ({cells[0]!r}, ...): give each "
                         f"its value, e.g. {{{example}: 1.0}}")
    return cells


PAINT_STYLES = {1: "success", -1: "danger", 0: "info"}
"""Button style of a painted cell by the sign of its reward (green, red, blue)."""


class RewardPainter:
    """A toggle button per free cell of a maze: switching one on paints the value box's reward there,
    off erases it; walls are disabled buttons. `reward_map()` is the painted (H, W) array, built by
    `gridworld.reward_maps.as_reward_map` from the painted {(row, col): value} cells (`painted`), the
    same pure path a fast-mode notebook takes with a list of cells."""

    def __init__(self, layout: gridworld.Layout, value: float = 1.0, cells=None):
        self.layout = layout
        value = check_range("value", value, -gridworld.layout.MAX_REWARD, gridworld.layout.MAX_REWARD)
        self.value = widgets.FloatText(value=value, description="reward",
                                       style={"description_width": "initial"})
        self.painted: dict[tuple[int, int], float] = {}
        self.buttons: dict[tuple[int, int], widgets.ToggleButton] = {}
        self._callbacks: list = []
        size = widgets.Layout(width="30px", height="30px", padding="0")
        wall = "#{:02x}{:02x}{:02x}".format(*gridworld.LAYER_COLOURS["wall"])
        children = []
        for row, col in np.ndindex(layout.shape):
            if layout.walls[row, col]:
                children.append(widgets.Button(disabled=True, layout=size, style={"button_color": wall}))
                continue
            button = widgets.ToggleButton(layout=size, tooltip=f"({row}, {col})")
            button.observe(partial(self._toggled, (row, col)), names="value")
            self.buttons[row, col] = button
            children.append(button)
        self.grid = widgets.GridBox(children, layout=widgets.Layout(
            grid_template_columns=f"repeat({layout.shape[1]}, 30px)", grid_gap="1px"))
        if cells is not None:
            initial = as_reward_map(layout, _valued_cells(cells))
            for row, col in np.argwhere(initial != 0):
                self.painted[int(row), int(col)] = float(initial[row, col])
                self.buttons[int(row), int(col)].value = True

    def _toggled(self, cell: tuple[int, int], change) -> None:
        if change["new"]:
            self.painted.setdefault(cell, float(self.value.value))
        else:
            self.painted.pop(cell, None)
        button, reward = self.buttons[cell], self.painted.get(cell)
        button.description = "" if reward is None else f"{reward:g}"
        button.button_style = "" if reward is None else PAINT_STYLES[int(np.sign(reward))]
        for callback in self._callbacks:
            callback(self.reward_map())

    def reward_map(self) -> np.ndarray:
        """The painted task, (H, W): the painted values, 0 elsewhere."""
        return as_reward_map(self.layout, self.painted)

    def on_change(self, callback) -> None:
        """Call `callback(reward_map)` after every toggle."""
        self._callbacks.append(callback)

    def show(self) -> None:
        display(widgets.VBox([self.value, self.grid]))


def reward_painter(maze: str | Sequence[str] | gridworld.Layout, value: float = 1.0, cells=None, *,
                   on_change=None, show: bool = True) -> RewardPainter:
    """Paint a reward-map task on a target-free maze (a name, ASCII art or a Layout) by toggling cells.

    `value` starts the value box; `cells` pre-paints a task ({(row, col): value}, a list of such pairs,
    or an H x W array); `on_change(reward_map)` is called after each toggle. `show=False` builds without
    displaying (tests; `painter.show()` later).
    """
    layout = maze_layout(maze.art if isinstance(maze, gridworld.Layout) else maze)
    painter = RewardPainter(layout, value, cells)
    if on_change is not None:
        painter.on_change(on_change)
    if show:
        painter.show()
    return painter


class ZeroShotPainter:
    """A `RewardPainter` and a button that runs `transfer.zero_shot_on_reward_map` on the painted task and
    redraws `plots.plot_zero_shot` (a PNG in a normal display output, like `RewardExplorer`)."""

    def __init__(self, learner, maze, cells, seed: int, identify_steps: int, config, horizon: int):
        self.learner, self.maze, self.seed = learner, maze, seed
        self.options = {"identify_steps": identify_steps, "config": config, "horizon": horizon}
        self.painter = RewardPainter(maze_layout(maze), 1.0, cells)
        self.button = widgets.Button(description="infer w and act", button_style="primary")
        self.button.on_click(lambda _: self.update())
        self._handle = None
        self.update()

    def update(self) -> None:
        """Infer w for the painted task, roll out, redraw; `shot` holds the result, `figure` the drawing. The
        button is disabled meanwhile."""
        self.button.disabled, self.button.description = True, "computing..."
        try:
            self.shot = zero_shot_on_reward_map(self.learner, self.maze, self.painter.reward_map(), self.seed,
                                                **self.options)
            # constrained layout makes room for the colorbar labels, and for the path legend once it is
            # the figure's: below the first panel it is wider than the panel, and fixed margins clipped it
            self.figure = Figure(figsize=(14, 4.6), layout="constrained")
            axes = self.figure.subplots(1, 3)
            plots.plot_zero_shot(axes, self.painter.layout, self.shot)
            legend = axes[0].get_legend()
            legend.remove()
            self.figure.legend(handles=legend.legend_handles, loc="outside lower left", ncol=3, frameon=False,
                               fontsize="small")
            w = ", ".join(f"{x:.2f}" for x in self.shot.fit.w.tolist())
            self.figure.suptitle(f"zero-shot on the painted task: $w$ = ({w})")
            self.image = _png(self.figure)
        finally:
            self.button.disabled, self.button.description = False, "infer w and act"
        if self._handle is not None:
            self._handle.update(self.image)

    def show(self) -> None:
        display(widgets.VBox([self.painter.value, self.painter.grid, self.button]))
        self._handle = display(self.image, display_id=True)


def zero_shot_painter(learner, maze: str | Sequence[str], cells=None, *, seed: int = 0,
                      identify_steps: int = DEFAULT_IDENTIFY_STEPS, config=None,
                      horizon: int = gridworld.MAX_EPISODE_STEPS, show: bool = True) -> ZeroShotPainter:
    """Paint a task on `maze` and watch a learner pretrained there act on it zero-shot: w, the R^2 of the
    fit, the fitted reward, the value map and the greedy GPI path, redrawn by the button.

    `cells` pre-paints the task (as in `reward_painter`), so without a widget frontend (or in fast mode)
    a list of cells is the whole interface; the result is in `.shot` (a `transfer.ZeroShot`).
    """
    painter = ZeroShotPainter(learner, maze, cells, seed, identify_steps, config, horizon)
    if show:
        painter.show()
    return painter
