"""Snapshots of a tiny pretraining run, and the reward explorer: every control redraws the panels with
the arrays of the pure functions in aps_teach.grid.cell_maps; bad input is refused."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

import gridworld  # noqa: E402
from aps_teach.course import widgets  # noqa: E402
from aps_teach.grid import cell_maps, plots, snapshots
from aps_teach.grid.train import TrainConfig  # noqa: E402
from aps_teach.learner.config import AgentConfig  # noqa: E402

HARD = gridworld.resolve_level("hard")
TINY = TrainConfig(agent=AgentConfig(feature_dim=5, batch_size=32, n_step=5), num_envs=2, learning_starts=300,
                   progress=False)  # one round = 200 env steps


@pytest.fixture(scope="module")
def runs():
    learner, log, aps = snapshots.pretrain_with_snapshots("aps", "hard", 600, seed=0, every_rounds=2,
                                                          config=TINY, max_particles=350)
    _, _, apt = snapshots.pretrain_with_snapshots("apt", "hard", 400, seed=0, config=TINY)
    return {"aps": aps, "apt": apt, "final": learner, "log": log}


def test_snapshots_every_few_rounds_and_after_the_last(runs):
    aps = runs["aps"]
    assert [(s.round, s.env_steps) for s in aps] == [(2, 400), (3, 600)]
    assert [len(s.particles) for s in aps] == [350, 350]
    assert [(s.env_steps, len(s.particles)) for s in runs["apt"]] == [(400, 400)]  # fewer than 2000
    assert all(s.method == "aps" and s.level == "hard" and s.art == HARD.art for s in aps)
    assert runs["log"].metrics[-1]["updates"] > 0
    # frozen copies: the last equals the returned learner, the first was taken before more training
    final = runs["final"].phi.state_dict()
    assert all(torch.equal(v, final[k]) for k, v in aps[-1].learner.phi.state_dict().items())
    assert not all(torch.equal(v, final[k]) for k, v in aps[0].learner.phi.state_dict().items())
    assert not any(p.requires_grad for p in aps[0].learner.phi.parameters())
    one_hot = aps[0].particles.sum(1)
    assert (one_hot == 1).all()


def test_visit_counts_match_the_agent_positions_by_hand():
    env = gridworld.PassagewayEnv("hard")
    states = [((5, 1), ()), ((5, 1), ()), ((2, 2), ("green",)), ((6, 5), ("green", "purple"))]
    obs = [torch.as_tensor(env.reset(options={"position": p, "keys_held": h})[0]) for p, h in states]
    env.reset(options={"position": (2, 8), "keys_held": ("green", "purple")})
    obs.append(torch.as_tensor(env.step(0)[0]))  # up onto the target: drawn over the agent
    counts = snapshots.visit_counts(torch.stack(obs), HARD.key_names)
    assert sorted(counts) == [(), ("green",), ("green", "purple")]
    assert counts[()][5, 1] == 2 and counts[()].sum() == 2
    assert counts[("green",)][2, 2] == 1 and counts[("green",)].sum() == 1
    assert counts[("green", "purple")][6, 5] == 1 and counts[("green", "purple")].sum() == 1


def test_keys_held_are_read_from_the_planes_of_any_key():
    compiled = gridworld.compile_level(["#######",
                                        "#SaAdD#",
                                        "#c.CT.#"])
    boards = torch.tensor(compiled.observations)
    keys = compiled.layout.key_names
    assert keys == ("green", "cyan", "red")
    assert snapshots.keys_held_in(boards, keys) == [held for _, held in compiled.states]
    assert {("cyan",), ("green", "red"), ("green", "cyan", "red")} <= {held for _, held in compiled.states}


def _shown(explorer):
    return {name: np.ma.filled(image.get_array(), np.nan) for name, image in explorer.images.items()}


def _expected(snapshot, keys_held, w, k, particles):
    """The panels from the pure functions, given the control values."""
    cells = cell_maps.cell_states(HARD, keys_held)
    maps = cell_maps.reward_maps(snapshot.learner, cells, snapshot.particles[:particles], w, k)
    nan = np.full(HARD.shape, np.nan)
    values = cell_maps.value_map(snapshot.learner, cells,
                             w if snapshot.learner.config.task_conditioned else None)
    return {"explore": maps.get("explore", nan), "exploit": maps.get("exploit", nan), "total": maps["total"],
            "value": values["value"], "action": values["action"]}


def _assert_shows(explorer, snapshot, keys_held, w, k, particles):
    shown, want = _shown(explorer), _expected(snapshot, keys_held, w, k, particles)
    for name in ("explore", "exploit", "total", "value"):
        # the widget computes on one thread: float32 sums in another order, ~1e-7 apart
        np.testing.assert_allclose(shown[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    u, v = plots.action_arrows(want["action"])
    np.testing.assert_array_equal(explorer.arrows.U[~explorer.arrows.Umask], u.compressed())
    np.testing.assert_array_equal(explorer.arrows.V[~explorer.arrows.Umask], v.compressed())


def test_every_control_redraws_with_the_pure_functions(runs):
    w_mine = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])
    explorer = widgets.reward_explorer({"aps": runs["aps"], "apt": runs["apt"]}, {"mine": w_mine}, show=False)
    controls, aps = explorer.controls, runs["aps"]
    batch = TINY.agent.batch_size  # the default 'last' n-step reward: one particle per sampled window
    state = {"snapshot": aps[-1], "keys_held": (), "w": w_mine, "k": TINY.agent.k, "particles": batch}
    _assert_shows(explorer, **state)
    before = _shown(explorer)
    sampled = explorer.tasks["sampled #2"]
    changes = [("k", 3, "k", 3), ("keys_held", ("green",), "keys_held", ("green",)),
               ("w", "sampled #2", "w", sampled), ("particles", "all", "particles", 350),
               ("checkpoint", 0, "snapshot", aps[0])]
    for control, value, key, new in changes:
        controls[control].value = value
        state[key] = new
        _assert_shows(explorer, **state)
        after = _shown(explorer)
        assert not np.allclose(after["total"], before["total"], equal_nan=True), control
        before = after
    controls["method"].value = "apt"
    assert controls["checkpoint"].value == len(runs["apt"]) - 1 and controls["w"].disabled
    apt = runs["apt"][-1]  # "all" particles: all of apt's own (400, not aps's 350)
    _assert_shows(explorer, **{**state, "snapshot": apt, "particles": len(apt.particles)})
    assert np.isnan(_shown(explorer)["exploit"]).all()
    assert "not used by apt" in explorer.images["exploit"].axes.get_title()
    explore_title = explorer.images["explore"].axes.get_title
    assert explore_title() == "exploration: kNN particle reward of $h = f(s')$"
    controls["method"].value = "aps"  # APS's h is phi itself (Eq. 6, a shared encoder)
    assert explore_title() == r"exploration: kNN particle reward of $h = \phi(s')$"


def test_particle_and_visit_panels_count_the_agent_positions(runs):
    explorer = widgets.reward_explorer(runs["aps"], show=False, keys_held=["green"])
    explorer.controls["particles"].value = "all"
    snap, agent = runs["aps"][-1], gridworld.LAYER_NAMES.index("agent")
    green_only = (snap.particles[:, gridworld.LAYER_NAMES.index("green_key")].sum((1, 2)) == 0) & \
        (snap.particles[:, gridworld.LAYER_NAMES.index("purple_key")].sum((1, 2)) > 0)
    counts = snap.particles[green_only, agent].sum(0).numpy().astype(float)
    cells = cell_maps.cell_states(HARD, ("green",))
    shown = _shown(explorer)
    np.testing.assert_array_equal(shown["particles"], cells.grid([counts[p] for p in cells.positions]))
    np.testing.assert_array_equal(shown["visits"],
                                  cells.grid([snap.visits[("green",)][p] for p in cells.positions]))


@pytest.fixture
def shown(monkeypatch):
    """What `widgets.display` is asked to show, in order: ("display", obj) and, for a display_id handle,
    ("update", obj)."""
    calls = []

    class Handle:
        def update(self, obj):
            calls.append(("update", obj))

    def fake_display(obj, display_id=False):
        calls.append(("display", obj))
        return Handle() if display_id else None

    monkeypatch.setattr(widgets, "display", fake_display)
    return calls


def test_show_displays_the_figure_as_a_normal_output_that_controls_update(runs, shown):
    explorer = widgets.reward_explorer(runs["aps"], show=True)
    assert [kind for kind, _ in shown] == ["display", "display"]
    assert isinstance(shown[0][1], ipywidgets.VBox) and shown[1][1].data.startswith(b"\x89PNG")
    explorer.controls["k"].value = 2
    assert [kind for kind, _ in shown] == ["display", "display", "update"]
    assert shown[2][1].data.startswith(b"\x89PNG") and shown[2][1].data != shown[1][1].data


@pytest.mark.parametrize(("make", "message"), [
    (lambda r: widgets.reward_explorer([], show=False), "at least one snapshot"),
    (lambda r: widgets.reward_explorer({"aps": r["aps"], "apt": []}, show=False), "at least one snapshot"),
    (lambda r: widgets.reward_explorer({"a": r["aps"], "b": [_easy_copy(r["aps"][0])]}, show=False),
     "same level"),
    (lambda r: widgets.reward_explorer(r["aps"], {"bad": torch.ones(3)}, show=False), r"shape \(5,\)"),
    (lambda r: widgets.reward_explorer(r["aps"], k=0, show=False), "k must be >= 1"),
    (lambda r: widgets.reward_explorer(r["aps"], keys_held=("red",), show=False), "lacks"),
    (lambda r: snapshots.pretrain_with_snapshots("aps", "hard", 400, 0, every_rounds=0), "every_rounds"),
])
def test_bad_input_is_refused_clearly(runs, make, message):
    with pytest.raises(ValueError, match=message):
        make(runs)


def _easy_copy(snapshot):
    return snapshots.Snapshot(**{**snapshot.__dict__, "art": gridworld.resolve_level("easy").art})


FOURROOM = gridworld.resolve_level("fourroom")


def test_reward_painter_paints_the_toggled_cells_with_the_value_box():
    seen = []
    painter = widgets.reward_painter("fourroom", value=2.0, on_change=seen.append, show=False)
    expected = np.zeros(FOURROOM.shape)
    assert np.array_equal(painter.reward_map(), expected)
    painter.buttons[1, 1].value = True
    expected[1, 1] = 2.0
    painter.value.value = -0.5
    painter.buttons[3, 5].value = True  # the doorway between the upper rooms
    expected[3, 5] = -0.5
    np.testing.assert_array_equal(painter.reward_map(), expected)
    assert (painter.buttons[1, 1].description, painter.buttons[3, 5].description) == ("2", "-0.5")
    painter.buttons[1, 1].value = False
    expected[1, 1] = 0.0
    np.testing.assert_array_equal(painter.reward_map(), expected)
    assert len(seen) == 3 and np.array_equal(seen[-1], expected)
    assert painter.buttons[1, 1].description == "" and painter.buttons[1, 1].button_style == ""
    env = gridworld.make("fourroom", reward_map=painter.reward_map())
    env.reset(options={"position": (3, 4)})
    assert env.step(3)[1] == -0.5  # right, onto the painted doorway


def test_reward_painter_walls_are_disabled_and_cannot_be_toggled():
    painter = widgets.reward_painter(FOURROOM, show=False)
    cells = list(np.ndindex(FOURROOM.shape))
    assert set(painter.buttons) == {cell for cell in cells if not FOURROOM.walls[cell]}
    for cell, child in zip(cells, painter.grid.children, strict=True):
        if FOURROOM.walls[cell]:
            assert child.disabled and not isinstance(child, ipywidgets.ToggleButton)
            assert not hasattr(child, "value")  # nothing to toggle
        else:
            assert child is painter.buttons[cell] and not child.disabled


def test_reward_painter_starts_from_a_list_of_cells_and_refuses_walls_and_targets():
    cells = [((2, 2), 0.5), ((9, 9), 1.0)]
    painter = widgets.reward_painter("open10", cells=cells, show=False)
    expected = np.zeros((12, 12))
    expected[2, 2], expected[9, 9] = 0.5, 1.0
    np.testing.assert_array_equal(painter.reward_map(), expected)
    assert painter.buttons[2, 2].value and painter.buttons[9, 9].description == "1"
    with pytest.raises(ValueError, match=r"wall cells \[\(0, 0\)\]"):
        widgets.reward_painter("open10", cells={(0, 0): 1.0}, show=False)
    with pytest.raises(ValueError, match="without a target"):
        widgets.reward_painter(gridworld.resolve_level("easy"), show=False)


def test_reward_painter_show_displays_the_value_box_and_the_grid(monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "display", lambda obj, **kwargs: shown.append(obj))
    painter = widgets.reward_painter("open10")
    assert len(shown) == 1 and list(shown[0].children) == [painter.value, painter.grid]


def test_zero_shot_painter_infers_the_painted_task_and_redraws_on_the_button(shown):
    from aps_teach.grid import transfer
    from aps_teach.grid.train import new_learner

    config = TrainConfig(num_envs=2, epsilon_end=1.0, progress=False)
    learner = new_learner("visr", transfer.maze_env("open10", np.zeros((12, 12)), 20), seed=0, config=config)
    cells = [((1, 1), 1.0), ((1, 2), 1.0)]
    painter = widgets.zero_shot_painter(learner, "open10", cells, seed=4, identify_steps=200, config=config,
                                        horizon=20)
    expected = transfer.zero_shot_on_reward_map(learner, "open10", cells, 4, identify_steps=200,
                                                config=config, horizon=20)
    assert torch.equal(painter.shot.fit.w, expected.fit.w)
    assert painter.shot.rollout.positions == expected.rollout.positions
    assert [kind for kind, _ in shown] == ["display", "display"]
    assert shown[0][1].children[-1] is painter.button and shown[1][1].data.startswith(b"\x89PNG")
    painter.painter.buttons[9, 9].value = True
    assert len(shown) == 2  # painting alone does not rerun the inference
    painter.button.click()
    assert [kind for kind, _ in shown] == ["display", "display", "update"]
    assert painter.shot.reward_map[9, 9] == 1.0 and shown[2][1].data != shown[1][1].data


def _inside(extent, figure) -> bool:
    box = figure.bbox
    return box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1


def test_zero_shot_painter_draws_its_legend_and_colorbar_labels_inside_the_figure():
    from aps_teach.grid import transfer
    from aps_teach.grid.train import new_learner

    config = TrainConfig(num_envs=2, epsilon_end=1.0, progress=False)
    learner = new_learner("visr", transfer.maze_env("open10", np.zeros((12, 12)), 20), seed=0, config=config)
    painter = widgets.zero_shot_painter(learner, "open10", [((1, 1), 1.0)], seed=4, identify_steps=200,
                                        config=config, horizon=20, show=False)
    figure = painter.figure
    FigureCanvasAgg(figure).draw()
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend())]
    extent = legends[0].get_window_extent()
    assert len(legends) == 1 and _inside(extent, figure), extent
    assert [text.get_text() for text in legends[0].get_texts()] == ["greedy GPI path", "start of a path",
                                                                   "end of a path"]
    labels = [ax.yaxis.label for ax in figure.axes if ax.get_ylabel()]  # the three colorbars'
    assert len(labels) == 3 and all(_inside(label.get_window_extent(), figure) for label in labels)


def test_fixed_scale_keeps_the_colour_limits_across_checkpoints(runs):
    explorer = widgets.reward_explorer(runs["aps"], show=False)
    controls, aps = explorer.controls, runs["aps"]
    w = explorer.tasks[controls["w"].value]
    every = [_expected(snap, (), w, TINY.agent.k, TINY.agent.batch_size) for snap in aps]
    own = {}
    for checkpoint in range(len(aps)):  # the default: each checkpoint scaled to its own range
        controls["checkpoint"].value = checkpoint
        own[checkpoint] = explorer.images["total"].get_clim()
        finite = every[checkpoint]["total"][np.isfinite(every[checkpoint]["total"])]
        assert own[checkpoint] == pytest.approx((finite.min(), finite.max()), rel=1e-5)
    assert own[0] != pytest.approx(own[1])
    controls["fixed_scale"].value = True
    fixed = {}
    for checkpoint in range(len(aps)):
        controls["checkpoint"].value = checkpoint
        fixed[checkpoint] = {name: image.get_clim() for name, image in explorer.images.items()}
    assert fixed[0] == fixed[1]
    for name in ("explore", "exploit", "total", "value"):  # the range over both checkpoints
        both = np.concatenate([e[name][np.isfinite(e[name])] for e in every])
        assert fixed[0][name] == pytest.approx((both.min(), both.max()), rel=1e-5, abs=1e-6), name
    assert all(image.colorbar.ax.get_ylabel() for image in explorer.images.values())  # labelled


def test_controls_are_disabled_while_computing(runs, monkeypatch):
    explorer = widgets.reward_explorer({"aps": runs["aps"], "apt": runs["apt"]}, show=False)
    seen = []
    compute = explorer.arrays
    monkeypatch.setattr(explorer, "arrays", lambda *a: seen.append(
        [c.disabled for c in explorer.controls.values()]) or compute(*a))
    explorer.controls["k"].value = 4
    assert seen and all(all(states) for states in seen)
    assert not any(c.disabled for c in explorer.controls.values())
    explorer.controls["method"].value = "apt"  # apt has no task: w stays disabled after the redraw
    assert [name for name, c in explorer.controls.items() if c.disabled] == ["w"]


def test_zero_shot_painter_button_is_disabled_while_computing(monkeypatch):
    from types import SimpleNamespace

    made, states = {}, []

    def fake_zero_shot(learner, maze, reward_map, seed, **options):
        if "painter" in made:
            states.append((made["painter"].button.disabled, made["painter"].button.description))
        return SimpleNamespace(fit=SimpleNamespace(w=torch.ones(2)))

    monkeypatch.setattr(widgets, "zero_shot_on_reward_map", fake_zero_shot)
    monkeypatch.setattr(plots, "plot_zero_shot", lambda axes, layout, shot: axes[0].legend(
        handles=[Line2D([], [], label="path")], loc="upper center", bbox_to_anchor=(0.5, -0.02)))
    made["painter"] = painter = widgets.zero_shot_painter(None, "open10", show=False)
    painter.button.click()
    assert states == [(True, "computing...")]
    assert not painter.button.disabled and painter.button.description == "infer w and act"
