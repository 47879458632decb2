"""The heatmap arrays of aps_teach.plots against brute force: one observation per cell built with
env.reset(options=...), rewards recomputed cell by cell, hand-worked distances, and bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import gridworld  # noqa: E402
from aps_teach import plots  # noqa: E402
from aps_teach.agents import AgentConfig, Learner  # noqa: E402
from aps_teach.rewards import particle_entropy_reward  # noqa: E402

HARD = gridworld.resolve_level("hard")
OBS_SHAPE = (len(gridworld.LAYER_NAMES), *HARD.shape)


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def _learner(**config) -> Learner:
    return Learner(AgentConfig(**{"feature_dim": 5, **config}), OBS_SHAPE, 4, seed=3)


ENV = gridworld.PassagewayEnv("hard")


def _observe(position, keys_held=()):
    return torch.as_tensor(ENV.reset(options={"position": position, "keys_held": keys_held})[0])


def _particles(n=40, seed=0):
    """Observations of n random reachable states of the hard level."""
    states = HARD.reachable_states()
    rng = np.random.default_rng(seed)
    return torch.stack([_observe(*states[i]) for i in rng.integers(len(states), size=n)])


def _per_cell(layout, keys_held, value_of):
    """Brute force: value_of(observation) on every cell the agent can stand on holding keys_held, else NaN.

    Network outputs for one row and for a batch differ in float32 rounding (~1e-7): compare with atol."""
    states = set(layout.reachable_states())
    grid = np.full(layout.shape, np.nan)
    for row in range(layout.shape[0]):
        for col in range(layout.shape[1]):
            if ((row, col), keys_held) in states:
                grid[row, col] = float(value_of(_observe((row, col), keys_held)))
    return grid


def test_cell_states_cover_the_reachable_cells_with_their_observations():
    cells = plots.cell_states(HARD, ["green"])
    expected = {position for position, held in HARD.reachable_states() if held == ("green",)}
    assert set(cells.positions) == expected and len(cells.positions) == len(expected)
    agent = gridworld.LAYER_NAMES.index("agent")
    for position, obs in zip(cells.positions, cells.observations, strict=True):
        assert obs[agent].nonzero().tolist() == [list(position)]
        assert obs.sum(0).eq(1).all()  # one-hot planes
    assert cells.observations[:, gridworld.LAYER_NAMES.index("green_key")].sum() == 0  # held: gone
    assert cells.observations[:, gridworld.LAYER_NAMES.index("purple_key")].sum() == len(expected)
    grid = cells.grid(np.arange(len(expected)))
    assert np.isnan(grid[HARD.walls]).all() and np.isnan(grid[HARD.target]) and np.isnan(grid[6, 7])
    assert grid[cells.positions[5]] == 5


def test_exploration_map_is_the_knn_reward_at_each_cell():
    learner = _learner(method="aps", knn_normalise=False)
    particles = _particles()
    h_particles = learner.features(particles).double()
    cells = plots.cell_states(HARD, ("green",))
    maps = plots.reward_maps(learner, cells, particles, torch.tensor([0.0, 1, 0, 0, 0]), k=3)
    expected = _per_cell(HARD, ("green",), lambda obs: particle_entropy_reward(
        learner.features(obs[None]).double(), h_particles, 3))
    np.testing.assert_allclose(maps["explore"], expected, rtol=1e-5, atol=1e-6)
    assert np.isnan(maps["explore"][HARD.walls]).all()
    assert np.isfinite(maps["explore"]).sum() == len(cells.positions)


def test_normaliser_mean_is_a_fixed_scale_and_is_not_updated():
    learner = _learner(method="aps", knn_exponent=2.0)
    learner.normaliser.load_state_dict({"mean": torch.tensor(0.3, dtype=torch.float64), "count": 50})
    particles = _particles(seed=1)
    h_particles = learner.features(particles).double().numpy()
    maps = plots.reward_maps(learner, plots.cell_states(HARD), particles, torch.ones(5) / 5**0.5, k=4)

    def brute(obs):
        h = learner.features(obs[None]).double().numpy()
        distances = np.sort(np.linalg.norm(h_particles - h, axis=1))
        return np.log1p(np.mean(distances[:4] ** 2 / 0.3))

    np.testing.assert_allclose(maps["explore"], _per_cell(HARD, (), brute), rtol=1e-5, atol=1e-6)
    assert learner.normaliser.count == 50 and float(learner.normaliser.mean) == pytest.approx(0.3)


def test_exploit_and_total_maps():
    learner = _learner(method="aps", explore_weight=0.5, exploit_weight=2.0)
    w = torch.tensor([0.6, 0.0, -0.8, 0.0, 0.0])
    maps = plots.reward_maps(learner, plots.cell_states(HARD, ("green", "purple")), _particles(), w)
    expected = _per_cell(HARD, ("green", "purple"), lambda obs: (learner.features(obs[None])[0] @ w).item())
    np.testing.assert_allclose(maps["exploit"], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(maps["total"], 0.5 * maps["explore"] + 2.0 * maps["exploit"], rtol=1e-6)
    assert sorted(maps) == ["exploit", "explore", "total"]


def test_visr_has_no_exploration_term_and_apt_none_for_exploitation():
    visr = _learner(method="visr", exploit_weight=3.0)
    w = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0])
    maps = plots.reward_maps(visr, plots.cell_states(HARD), None, w)
    assert sorted(maps) == ["exploit", "total"]
    np.testing.assert_allclose(maps["total"], 3.0 * maps["exploit"])
    apt = _learner(method="apt", knn_normalise=False)
    particles = _particles()
    maps = plots.reward_maps(apt, plots.cell_states(HARD), particles, k=2)
    assert sorted(maps) == ["explore", "total"]
    h = apt.knn_features(particles).double()
    reward = lambda obs: particle_entropy_reward(apt.knn_features(obs[None]).double(), h, 2)  # noqa: E731
    expected = _per_cell(HARD, (), reward)
    np.testing.assert_allclose(maps["explore"], expected, rtol=1e-5, atol=1e-6)


def test_observation_space_distances_by_hand():
    """Two one-hot observations that differ only in the agent's cell are sqrt(4) = 2 apart (agent and
    floor planes each differ on two cells); the same state is 0 apart."""
    learner = _learner(method="apt", representation="observation", knn_normalise=False)
    particle = _observe((5, 1))[None]
    maps = plots.reward_maps(learner, plots.cell_states(HARD), particle, k=1)
    assert maps["explore"][5, 1] == 0.0
    assert maps["explore"][7, 3] == pytest.approx(np.log(3.0))


def test_value_map_is_the_argmax_of_psi_transpose_w():
    learner = _learner(method="visr")
    w = torch.tensor([0.5, 0.5, 0.5, -0.5, 0.0])
    got = plots.value_map(learner, plots.cell_states(HARD, ("green",)), w)
    q_of = lambda obs: learner.q_values(obs[None], w[None])[0].tolist()  # noqa: E731
    np.testing.assert_allclose(got["value"], _per_cell(HARD, ("green",), lambda o: max(q_of(o))), rtol=1e-5)
    np.testing.assert_array_equal(got["action"], _per_cell(HARD, ("green",), lambda o: np.argmax(q_of(o))))
    apt = _learner(method="apt")  # w=None: apt's fixed task e_1
    np.testing.assert_allclose(plots.value_map(apt, plots.cell_states(HARD))["value"],
                               plots.value_map(apt, plots.cell_states(HARD), torch.eye(5)[0])["value"])


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
    cells = plots.cell_states(HARD)
    grid = cells.grid(np.linspace(-1, 2, len(cells.positions)))
    fig, ax = plt.subplots()
    image = plots.plot_cell_map(ax, HARD, np.full(HARD.shape, np.nan), "t")
    plots.set_cell_map(image, grid)
    np.testing.assert_array_equal(np.ma.filled(image.get_array(), np.nan), grid)
    assert image.get_clim() == (-1.0, 2.0)
    plt.close(fig)


W5 = torch.ones(5)


@pytest.mark.parametrize(("call", "message"), [
    (lambda learner, cells, p: plots.reward_maps(learner, cells, p, W5, k=0), "k must be >= 1"),
    (lambda learner, cells, p: plots.reward_maps(learner, cells, p, W5[:4]), r"w must have shape \(5,\)"),
    (lambda learner, cells, p: plots.reward_maps(learner, cells, p), "needs a task vector w"),
    (lambda learner, cells, p: plots.reward_maps(learner, cells, p[:0], W5), "at least one particle"),
    (lambda learner, cells, p: plots.reward_maps(learner, cells, p[:, :3], W5), "particles must be"),
    (lambda learner, cells, p: plots.reward_maps(learner, cells, None, W5), "particles must be"),
    (lambda learner, cells, p: plots.value_map(learner, cells, torch.ones(6)), r"w must have shape \(5,\)"),
    (lambda learner, cells, p: plots.cell_states(HARD, ("red",)), r"lacks; its keys: \('green', 'purple'\)"),
    (lambda learner, cells, p: plots.cell_states(HARD, ("purple",)), "no reachable state holds exactly"),
    (lambda learner, cells, p: cells.grid([1.0, 2.0]), "one value per cell"),
])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(ValueError, match=message):
        call(_learner(method="aps"), plots.cell_states(HARD), _particles(n=5))


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


def _fake_run(directory, method, pretrain_rows, finetune_rows):
    """A run directory as the Atari pipeline writes it: config.json and <phase>/metrics.csv."""
    import csv
    import json

    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"game": "pong", "method": method, "seed": 0}))
    for phase, rows in (("pretrain", pretrain_rows), ("finetune", finetune_rows)):
        if rows is None:
            continue
        (directory / phase).mkdir()
        with (directory / phase / "metrics.csv").open("w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def test_atari_curves_draw_each_runs_csv_values_in_its_methods_colour(tmp_path):
    sweep = tmp_path / "sweep"
    def rows(*points):
        return [{"env_steps": steps, "score": score, "loss_sf": loss} for steps, score, loss in points]

    _fake_run(sweep / "runs" / "aps-pong-seed0", "aps", rows((100, "", 2.5), (200, -21, 1.5)),
              rows((50, -20, 0.5), (100, -19, "")))
    _fake_run(sweep / "runs" / "dqn-pong-seed0", "dqn", None, rows((50, "", 0.25), (100, -18.5, 0.125)))
    (sweep / "runs" / "not-a-run").mkdir()  # no config.json: ignored
    fig = plots.plot_atari_curves(sweep, ["score", "loss_sf"], phase="finetune")
    score, loss = fig.axes
    lines = {line.get_gid(): line for line in score.lines if line.get_gid()}
    assert set(lines) == {"aps-pong-seed0", "dqn-pong-seed0"}
    np.testing.assert_array_equal(lines["aps-pong-seed0"].get_xydata(), [[50, -20], [100, -19]])
    np.testing.assert_array_equal(lines["dqn-pong-seed0"].get_xydata(), [[100, -18.5]])  # empty cell left out
    assert lines["aps-pong-seed0"].get_color() == plots.METHOD_COLOURS["aps"]
    assert lines["dqn-pong-seed0"].get_color() == plots.METHOD_COLOURS["dqn"]
    assert score.get_legend_handles_labels()[1] == ["aps (1 runs)", "dqn (1 runs)"]  # one entry per method
    loss_lines = {line.get_gid(): line.get_xydata().tolist() for line in loss.lines if line.get_gid()}
    assert loss_lines == {"aps-pong-seed0": [[50, 0.5]], "dqn-pong-seed0": [[50, 0.25], [100, 0.125]]}
    plt.close(fig)
    fig = plots.plot_atari_curves([sweep / "runs" / "aps-pong-seed0", sweep / "runs" / "dqn-pong-seed0"],
                                  "loss_sf", phase="pretrain")  # dqn has no pretraining: left out
    (ax,) = fig.axes
    assert [(line.get_gid(), line.get_xydata().tolist()) for line in ax.lines if line.get_gid()] == [
        ("aps-pong-seed0", [[100, 2.5], [200, 1.5]])]
    assert ax.get_legend_handles_labels()[1] == ["aps (1 runs)"]
    plt.close(fig)
    fig = plots.plot_atari_curves(sweep, "loss_sf", games=["pong"])
    assert len([line for line in fig.axes[0].lines if line.get_gid()]) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="no run of the games"):
        plots.plot_atari_curves(sweep, games=["breakout"])
    with pytest.raises(FileNotFoundError, match="no Atari run directory"):
        plots.plot_atari_curves(tmp_path / "empty")
    with pytest.raises(ValueError, match="phase must be"):
        plots.plot_atari_curves(sweep, phase="evaluate")


def test_atari_scores_draw_seed_means_as_bars_and_every_seed_as_a_dot():
    def row(method, game, seed, normalised):
        return {"method": method, "game": game, "seed": seed, "human_normalised": normalised}

    rows = [row("aps", "pong", 0, "0.5"), row("aps", "pong", 1, "1.5"), row("aps", "breakout", 0, "-0.25"),
            row("dqn", "pong", 0, "0.125"), row("dqn", "adventure", 0, "")]  # adventure: no reference
    fig = plots.plot_atari_scores(rows)
    (ax,) = fig.axes
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["breakout", "pong"]  # adventure left out
    bars = {container.get_label(): [p.get_height() for p in container] for container in ax.containers}
    assert bars == {"aps": [-0.25, 1.0], "dqn": [0.125]}  # aps on pong: mean of 0.5 and 1.5
    dots = {c.get_gid(): c.get_offsets() for c in ax.collections}
    np.testing.assert_array_equal(np.sort(dots["aps/seeds"][:, 1]), [-0.25, 0.5, 1.5])
    np.testing.assert_array_equal(dots["dqn/seeds"][:, 1], [0.125])
    aps_x = sorted(p.get_x() + p.get_width() / 2 for p in ax.containers[0])
    np.testing.assert_allclose(np.unique(dots["aps/seeds"][:, 0]), aps_x)  # the dots sit on their bars
    references = {line.get_gid(): line.get_ydata()[0] for line in ax.lines}
    assert references == {"random": 0, "human": 1}
    assert "1 runs without reference scores" in ax.get_title()
    plt.close(fig)
    with pytest.raises(ValueError, match="no row with a human-normalised score"):
        plots.plot_atari_scores([row("aps", "adventure", 0, "")])


def test_plot_frames_shows_each_frame_on_one_grey_scale():
    frames = [np.full((4, 5), 10, dtype=np.uint8), np.arange(20.0).reshape(4, 5) * 12]
    fig = plots.plot_frames(frames, ["a", "b"])
    images = [ax.images[0] for ax in fig.axes]
    np.testing.assert_array_equal(images[1].get_array(), frames[1])
    assert [image.get_clim() for image in images] == [(0, 255), (0, 255)]
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
    plt.close(fig)
    with pytest.raises(ValueError, match="one title per frame"):
        plots.plot_frames(frames, ["a"])
