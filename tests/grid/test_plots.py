"""The gridworld figures of aps_teach.grid.plots draw the arrays they are given: greedy arrows, cell maps,
the zero-shot panels."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import gridworld  # noqa: E402
from aps_teach.grid import cell_maps, plots  # noqa: E402

HARD = gridworld.resolve_level("hard")


def test_arrows_point_along_the_greedy_moves():
    actions = np.array([[0.0, 1.0], [2.0, np.nan], [3.0, 0.0]])  # up, down / left, none / right, up
    u, v = plots.action_arrows(actions)
    np.testing.assert_array_equal(u.filled(9), [[0, 0], [-1, 9], [1, 0]])
    np.testing.assert_array_equal(v.filled(9), [[-1, 1], [0, 9], [0, -1]])
    fig, ax = plt.subplots()
    quiver = plots.plot_greedy_arrows(ax, actions)
    np.testing.assert_array_equal(quiver.U[~quiver.Umask], u.compressed())
    np.testing.assert_array_equal(quiver.Umask, np.isnan(actions).ravel())
    plt.close(fig)


def test_cell_map_images_show_the_grid_and_rescale():
    cells = cell_maps.cell_states(HARD)
    grid = cells.grid(np.linspace(-1, 2, len(cells.positions)))
    fig, ax = plt.subplots()
    image = plots.plot_cell_map(ax, HARD, np.full(HARD.shape, np.nan), "t")
    plots.set_cell_map(image, grid)
    np.testing.assert_array_equal(np.ma.filled(image.get_array(), np.nan), grid)
    assert image.get_clim() == (-1.0, 2.0)
    plt.close(fig)


def test_zero_shot_panels_show_the_task_the_fit_on_its_scale_the_values_and_the_path():
    from types import SimpleNamespace

    layout = gridworld.resolve_level("open10")
    task = np.zeros(layout.shape)
    task[2, 2:4] = 1.0
    fitted = np.where(layout.walls, np.nan, 0.25)
    fitted[5, 5] = -0.5
    actions = np.where(layout.walls, np.nan, 3.0)
    path = [(4, 4), (3, 4), (2, 4), (2, 3)]
    shot = SimpleNamespace(reward_map=task, fitted_reward=fitted, value=np.where(layout.walls, np.nan, 2.0),
                           action=actions, fit=SimpleNamespace(r2=0.125, identified=True),
                           rollout=SimpleNamespace(positions=path, total_reward=1.0))
    fig, axes = plt.subplots(1, 3)
    drawn = plots.plot_zero_shot(axes, layout, shot)
    shown = np.ma.filled(drawn["task"].get_array(), np.nan)
    np.testing.assert_array_equal(np.isnan(shown), layout.walls)  # walls blank, free cells 0 or 1
    np.testing.assert_array_equal(shown[~layout.walls], task[~layout.walls])
    assert drawn["task"].get_clim() == drawn["fitted"].get_clim() == (-0.5, 1.0)  # one scale for both
    np.testing.assert_array_equal(drawn["path"].get_xdata(), [4, 4, 4, 3])
    np.testing.assert_array_equal(drawn["path"].get_ydata(), [4, 3, 2, 2])
    assert "$R^2$ = 0.125" in axes[1].get_title() and "return 1 in 3 steps" in axes[0].get_title()
    legend = [text.get_text() for text in axes[0].get_legend().get_texts()]
    assert legend == ["greedy GPI path", "start of a path", "end of a path"]  # the markers explained
    arrows = drawn["arrows"]  # action 3 (right) everywhere: one column to the right, no row change
    np.testing.assert_array_equal(arrows.U[~arrows.Umask], np.ones((~layout.walls).sum()))
    np.testing.assert_array_equal(arrows.V[~arrows.Umask], np.zeros((~layout.walls).sum()))
    plt.close(fig)
    shot.fit = SimpleNamespace(r2=float("nan"), identified=False)
    shot.fitted_reward = np.full(layout.shape, np.nan)
    fig, axes = plt.subplots(1, 3)
    drawn = plots.plot_zero_shot(axes, layout, shot)
    assert "no reward seen" in axes[1].get_title() and drawn["task"].get_clim() == (0.0, 1.0)
    plt.close(fig)


def test_method_table_draws_marks_text_and_the_highlighted_row():
    columns = ("objective", "exploration", "visual")
    rows = {"APT": (r"$\max H(s)$", True, True), "MEPOL": ("x", "state-based only", False),
            "APS": ("y", True, True)}
    fig, ax = plt.subplots()
    drawn = plots.plot_method_table(ax, columns, rows, highlight="APS", groups=(0,))
    assert drawn["APT", "objective"].get_text() == r"$\max H(s)$"
    check = drawn["APT", "exploration"]
    assert (check.get_text(), check.get_color()) == plots.MARKS[True]
    assert drawn["MEPOL", "visual"].get_text() == plots.MARKS[False][0]
    assert drawn["MEPOL", "exploration"].get_text() == "\u2713*"
    bands = [patch for patch in ax.patches if patch.get_gid() == "highlight"]
    assert len(bands) == 1 and np.allclose(bands[0].get_y() + bands[0].get_height() / 2, 3)  # APS is row 3
    plt.close(fig)
    fig, ax = plt.subplots()
    try:
        plots.plot_method_table(ax, columns, {"APT": ("only one cell",)})
    except ValueError as error:
        assert "1 cells for 3 columns" in str(error)
    else:
        raise AssertionError("a short row must be refused")
    plt.close(fig)
