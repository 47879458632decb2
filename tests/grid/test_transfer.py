"""Zero-shot transfer: R^2 against numpy's least squares, scores against the exact references recomputed
from the seeded reward maps, a task exactly linear in stub features, the no-reward case, the benchmark's
files, reproducibility, clear errors and the CLI."""

import dataclasses
import json
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import gridworld  # noqa: E402
from aps_teach.grid import cell_maps, transfer  # noqa: E402
from aps_teach.grid.train import TrainConfig, evaluate, new_learner, task_data  # noqa: E402
from aps_teach.infra import seeds
from aps_teach.infra.stats import cluster_mean_with_ci, mean_with_ci  # noqa: E402
from aps_teach.infra.sweeps import RunSpec, read_rows  # noqa: E402
from aps_teach.learner.config import AgentConfig  # noqa: E402
from aps_teach.learner.tasks import sample_tasks  # noqa: E402
from aps_teach.studies import plots as study_plots
from gridworld.reward_maps import as_reward_map  # noqa: E402

OPEN = gridworld.resolve_level("open10")
AGENT = gridworld.LAYER_NAMES.index("agent")
AGENT_CONFIG = AgentConfig(hidden=16, batch_size=8, n_step=3, k=3, target_update_period=20)
TINY = TrainConfig(agent=AGENT_CONFIG, num_envs=2, learning_starts=100,
                   progress=False)
RANDOM_ACTS = TrainConfig(agent=AGENT_CONFIG, num_envs=4, epsilon_end=1.0, progress=False)
BUDGET = {"seeds": [3], "num_tasks": 2, "pretrain_steps": 800, "identify_steps": 200, "eval_episodes": 2,
          "config": TINY}


def box_task(seed=0):
    return gridworld.random_box_reward_map(OPEN, 2, 3, seed=seed)


def exact(layout, reward_map, horizon=100):
    """(optimal, random) expected returns, gridworld's dynamic programmes (tested against brute force)."""
    return tuple(reference(layout, reward_map, horizon)
                 for reference in (gridworld.optimal_return, gridworld.random_return))


def numpy_r2(features, rewards):
    """R^2 of the least-squares fit, computed with numpy in float64."""
    x, r = features.double().numpy(), rewards.double().numpy()
    c = np.linalg.lstsq(x, r, rcond=None)[0]
    return 1 - ((r - x @ c) ** 2).sum() / ((r - r.mean()) ** 2).sum(), c


class ColumnStub:
    """phi(s) = ([agent in column >= 6], [agent in column <= 5]); acts uniformly at random, or always
    `fixed_action`."""

    config = SimpleNamespace(feature_dim=2, task_conditioned=True, method="stub", gpi=True)

    def __init__(self, fixed_action=None):
        self.fixed_action = fixed_action
        self.table = None

    def set_observation_table(self, table):
        """The compiled engine's observations are state indices into `table`."""
        self.table = table

    def act(self, obs, w, epsilon, generator, gpi, explore=False):
        if self.fixed_action is not None:
            return torch.full((len(obs),), self.fixed_action)
        return torch.randint(4, (len(obs),), generator=generator)

    def features(self, obs):
        boards = self.table[obs] if obs.ndim == 1 else obs
        col = boards[:, AGENT].amax(1).float().argmax(1)
        right = (col >= 6).float()
        return torch.stack([right, 1 - right], 1)


def test_r2_and_coefficients_match_numpy_least_squares():
    learner = new_learner("aps", transfer.maze_env("open10", box_task(), 100), seed=0, config=TINY)
    features, rewards = task_data(learner, transfer.maze_env("open10", box_task(), 100), 400, seed=5,
                                  config=RANDOM_ACTS)
    assert 0 < rewards.sum() < len(rewards)
    fit = transfer.fit_task(features, rewards, seed=5)
    r2, c = numpy_r2(features, rewards)
    assert fit.identified and fit.r2 == pytest.approx(r2, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(fit.coefficients.numpy(), c, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fit.w.numpy(), c / np.linalg.norm(c), atol=1e-6)


def test_task_row_uses_the_same_identification_data_and_the_exact_references():
    learner = new_learner("visr", transfer.maze_env("open10", box_task(), 100), seed=0, config=TINY)
    reward_map = box_task(seed=1)
    references = exact(OPEN, reward_map)
    row = transfer.transfer_task(learner, "open10", reward_map, 7, references=references, identify_steps=400,
                                 eval_episodes=4, config=RANDOM_ACTS)
    env = transfer.maze_env("open10", reward_map, 100)
    features, rewards = task_data(learner, env, 400, 7, RANDOM_ACTS)
    assert row["r2"] == pytest.approx(numpy_r2(features, rewards)[0], rel=1e-5, abs=1e-6)
    w = torch.tensor(row["w"])
    result = evaluate(learner, env, transfer.fit_task(features, rewards, 7).w, 4, 7, RANDOM_ACTS, gpi=True)
    assert row["return"] == result.mean_return
    opt, rand = references
    assert row["normalised_score"] == pytest.approx((result.mean_return - rand) / (opt - rand))
    assert torch.allclose(w.norm(), torch.tensor(1.0), atol=1e-5)


def test_a_task_linear_in_the_features_has_r2_one_and_others_less():
    reward_map = np.where(np.arange(12)[None, :] >= 6, 3.0, 1.0) * ~OPEN.walls
    config = TrainConfig(num_envs=2, progress=False)
    fit = transfer.identify(ColumnStub(), transfer.maze_env("open10", reward_map, 100), 400, 0, config)
    assert fit.identified and fit.r2 == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(fit.coefficients.numpy(), [3.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(fit.w.numpy(), np.array([3.0, 1.0]) / np.sqrt(10), atol=1e-6)
    one_cell_env = transfer.maze_env("open10", {(4, 8): 1.0}, 100)
    one_cell = transfer.identify(ColumnStub(), one_cell_env, 400, 0, config)
    assert one_cell.identified and one_cell.r2 < 0.5


LINE = ("#######",
        "#S....#",
        "#######")


def test_a_task_never_rewarded_in_the_identification_data_is_scored_with_a_random_w():
    stub, config = ColumnStub(fixed_action=2), TrainConfig(num_envs=2, progress=False)  # always left: stuck
    reward_map = as_reward_map(gridworld.resolve_level(LINE), {(1, 5): 1.0})
    layout = gridworld.resolve_level(LINE)
    references = transfer.task_references(layout, reward_map, 100)
    assert references[0] == 97.0  # the 4th step reaches (1, 5): steps 4..100 pay
    row = transfer.transfer_task(stub, LINE, reward_map, 4, references=references, identify_steps=200,
                                 eval_episodes=2, config=config)
    assert row["identified"] == 0 and np.isnan(row["r2"]) and row["return"] == 0.0
    expected_w = sample_tasks(1, 2, torch.Generator().manual_seed(4))[0]
    np.testing.assert_allclose(row["w"], expected_w.numpy(), atol=1e-6)
    assert row["normalised_score"] == pytest.approx(-references[1] / (97.0 - references[1]))
    assert row["normalised_score"] < 0


def test_an_optimal_policy_scores_one_at_the_env_horizon():
    # always right is optimal on LINE: the 4th step reaches (1, 5), so steps 4..30 pay; phi is constant there,
    # so the fit is a constant and R^2 = 0
    layout, config = gridworld.resolve_level(LINE), TrainConfig(num_envs=2, progress=False)
    reward_map = as_reward_map(layout, {(1, 5): 1.0})
    references = transfer.task_references(layout, reward_map, 30)
    row = transfer.transfer_task(ColumnStub(fixed_action=3), LINE, reward_map, 0, references=references,
                                 identify_steps=60, eval_episodes=2, config=config, horizon=30)
    assert (row["return"], row["optimal_return"], row["normalised_score"]) == (27.0, 27.0, 1.0)
    assert row["identified"] == 1 and row["r2"] == pytest.approx(0.0, abs=1e-12)


def test_zero_shot_on_a_painted_task_shows_fit_values_and_a_gpi_path():
    four = gridworld.resolve_level("fourroom")
    learner = new_learner("aps", transfer.maze_env("fourroom", np.zeros(four.shape), 100), 2, config=TINY)
    painted = {(1, 1): 1.0, (1, 2): 1.0, (9, 9): -1.0}
    shot = transfer.zero_shot_on_reward_map(learner, "fourroom", painted, seed=3, identify_steps=400,
                                            config=RANDOM_ACTS, horizon=30)
    env = transfer.maze_env("fourroom", shot.reward_map, 30)
    features, rewards = task_data(learner, env, 400, 3, RANDOM_ACTS)
    assert shot.fit.r2 == pytest.approx(numpy_r2(features, rewards)[0], rel=1e-5, abs=1e-6)
    cells = cell_maps.cell_states(four)
    expected = cells.grid((learner.features(cells.observations).double() @ shot.fit.coefficients).numpy())
    np.testing.assert_allclose(shot.fitted_reward, expected, equal_nan=True)
    values = cell_maps.value_map(learner, cells, shot.fit.w)
    np.testing.assert_allclose(shot.value, values["value"], equal_nan=True)
    np.testing.assert_array_equal(shot.action, values["action"])
    assert np.isnan(shot.value[four.walls]).all() and np.isfinite(shot.value[~four.walls]).all()
    path = shot.rollout.positions
    start = gridworld.make("fourroom", reward_map=shot.reward_map).reset(seed=3)[1]["position"]
    assert len(path) == 31 and path[0] == start
    assert shot.rollout.total_reward == sum(shot.reward_map[p] for p in path[1:])
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) <= 1 for a, b in zip(path, path[1:], strict=False))


def _without_seconds(rows):
    return [{k: v for k, v in row.items() if "seconds" not in k} for row in rows]


def test_benchmark_writes_rows_scored_by_the_exact_references_and_a_figure_reproducibly(tmp_path):
    report = transfer.run_transfer("aps", "open10", **BUDGET, out_dir=tmp_path / "a")
    rows = read_rows(tmp_path / "a" / "aps-open10.csv")
    assert report.results == tmp_path / "a" / "aps-open10.csv" and len(rows) == 2
    assert {"method", "maze", "seed", "task", "normalised_score", "return", "optimal_return", "random_return",
            "r2", "identified", "w", "phi_spread", "task_seconds", "pretrain_seconds",
            "config_hash"} <= set(rows[0])
    for task, row in enumerate(rows):
        assert (row["method"], row["maze"], row["seed"], row["task"]) == ("aps", "open10", "3", str(task))
        reward_map = gridworld.random_box_reward_map(OPEN, 2, 3, seed=seeds.task_seed(3, task))
        opt, rand = exact(OPEN, reward_map)
        assert (float(row["optimal_return"]), float(row["random_return"])) == pytest.approx((opt, rand))
        assert float(row["normalised_score"]) == pytest.approx((float(row["return"]) - rand) / (opt - rand))
        assert float(row["pretrain_seconds"]) > 0 and row["identified"] in ("0", "1")
    scores = [float(row["normalised_score"]) for row in rows]
    assert report.summary["normalised_score"] == pytest.approx(np.mean(scores))
    interval = (report.summary["score_low"], report.summary["score_high"])
    assert interval == pytest.approx((np.mean(scores),) * 2)  # one seed: whole seeds resampled, none varies
    assert not (tmp_path / "a" / "transfer.png").exists()  # the pipeline returns data; views draw
    assert study_plots.write_transfer_figure(tmp_path / "a").read_bytes().startswith(b"\x89PNG")
    again = transfer.run_transfer("aps", "open10", **BUDGET, out_dir=tmp_path / "b")
    assert _without_seconds(read_rows(tmp_path / "b" / "aps-open10.csv")) == _without_seconds(rows)
    assert _without_seconds(again.rows) == _without_seconds(report.rows)


def test_plot_transfer_bars_are_the_group_means():
    rng = np.random.default_rng(0)
    groups = [("visr", "open10"), ("visr", "fourroom"), ("aps", "open10"), ("aps", "fourroom")]
    rows = [{"method": m, "maze": z, "seed": s, "task": t, "normalised_score": rng.normal(i),
             "r2": rng.random(), "identified": 1}
            for i, (m, z) in enumerate(groups) for s in range(2) for t in range(3)]
    rows[0]["identified"], rows[0]["r2"] = 0, float("nan")
    fig = study_plots.plot_transfer(rows)
    bars = fig.axes[0].containers
    for container, method in zip([c for c in bars if hasattr(c, "patches")], ["visr", "aps"], strict=True):
        heights = [patch.get_height() for patch in container.patches]
        means = [np.mean([r["normalised_score"] for r in rows if r["method"] == method and r["maze"] == maze])
                 for maze in ("open10", "fourroom")]
        np.testing.assert_allclose(heights, means)
    for method, container in zip(["visr", "aps"], [c for c in bars if hasattr(c, "patches")], strict=True):
        (segments,) = container.errorbar.lines[2]  # the intervals resample whole seeds
        for maze, segment in zip(("open10", "fourroom"), segments.get_segments(), strict=True):
            mine = [r for r in rows if r["method"] == method and r["maze"] == maze]
            expected = cluster_mean_with_ci([r["normalised_score"] for r in mine], [r["seed"] for r in mine])
            np.testing.assert_allclose(segment[:, 1], expected[1:])
    assert "1 tasks saw no reward" in fig.axes[1].get_title()
    plt.close(fig)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "apt"}, "method 'apt' is not one of the valid methods for transfer: visr, aps"),
    ({"method": "dqn"}, "valid methods for transfer: visr, aps"),
    ({"method": "diayn"}, "unknown method 'diayn'; valid methods for transfer: visr, aps"),
    ({"maze": "easy"}, "unknown maze 'easy'; valid mazes: open10, fourroom"),
    ({"maze": LINE}, "built-in maze name"),
    ({"num_tasks": 0}, "num_tasks must be an integer >= 1"),
    ({"eval_episodes": -1}, "eval_episodes must be an integer >= 1"),
    ({"seeds": []}, "at least one seed"),
    ({"num_boxes": 0}, "need integers 1 <= num_boxes"),
    ({"num_boxes": 1, "box_size": 12}, "every policy earns the same"),
])
def test_bad_input_is_refused_before_any_training(kwargs, message):
    args = {"method": "aps", "maze": "open10", **kwargs}
    with pytest.raises(ValueError, match=message):
        transfer.run_transfer(args.pop("method"), args.pop("maze"), **args)


def test_painted_tasks_need_a_target_free_maze():
    learner = new_learner("aps", "easy", seed=0, config=TINY)
    with pytest.raises(ValueError, match="without a target"):
        transfer.zero_shot_on_reward_map(learner, gridworld.LEVELS["easy"], {(1, 1): 1.0}, seed=0)


def test_cli_transfer_writes_the_library_numbers(tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    argv = ["transfer", "--out", str(tmp_path), "--method", "visr", "--maze", "fourroom", "--tasks", "2",
            "--seeds", "1", "--pretrain-steps", "400", "--identify-steps", "200", "--eval-episodes", "2",
            "--boxes", "1", "--box-size", "2", "--train.num-envs", "2", "--train.learning-starts", "100",
            "--train.no-progress", "--train.agent.hidden", "16", "--train.agent.batch-size", "8"]
    assert gridworld_main(argv) == 0
    out = capsys.readouterr().out
    assert "normalised score" in out and str(tmp_path / "visr-fourroom.csv") in out
    assert str(tmp_path / "transfer.png") in out
    assert (tmp_path / "transfer.png").read_bytes()[:4] == b"\x89PNG"  # the command draws it
    rows = read_rows(tmp_path / "visr-fourroom.csv")
    config = TrainConfig(agent=AgentConfig(method="visr", hidden=16, batch_size=8), num_envs=2,
                         learning_starts=100, progress=False)
    library = transfer.run_transfer("visr", "fourroom", seeds=[0], num_tasks=2, pretrain_steps=400,
                                    identify_steps=200, eval_episodes=2, num_boxes=1, box_size=2,
                                    config=config)
    assert [float(r["normalised_score"]) for r in rows] == [r["normalised_score"] for r in library.rows]
    assert [r["box_size"] for r in rows] == ["2", "2"]


def test_a_summary_is_of_one_method_on_one_maze():
    row = {"method": "aps", "maze": "open10", "seed": 0, "normalised_score": 0.5, "r2": 0.3, "identified": 1,
           "phi_spread": 0.1}
    with pytest.raises(ValueError, match="one method on one maze, got \\[\\]"):
        transfer.summarise_transfer([])
    with pytest.raises(ValueError, match="one method on one maze"):
        transfer.summarise_transfer([row, {**row, "method": "visr"}])
    unseen = {**row, "normalised_score": -0.1, "r2": float("nan"), "identified": 0}
    summary = transfer.summarise_transfer([row, unseen])
    assert (summary["normalised_score"], summary["mean_r2"], summary["unidentified"]) == \
        pytest.approx((0.2, 0.3, 1))
    # seed 0's two tasks score 0, seed 1's four score 1: resampling the two seeds gives 0 (1/4), 4/6 (1/2)
    # or 1 (1/4); resampling the six rows as independent would not reach 0 or 1 at 2.5%
    rows = [{**row, "seed": seed, "task": task, "normalised_score": float(seed)}
            for seed, tasks in ((0, 2), (1, 4)) for task in range(tasks)]
    summary = transfer.summarise_transfer(rows)
    assert (summary["normalised_score"], summary["score_low"], summary["score_high"]) == (4 / 6, 0.0, 1.0)
    assert summary["rows"] == 6 and summary["seeds"] == 2 and summary["tasks"] == 4  # a seed's, not rows


def test_the_committed_transfer_summaries_count_twenty_tasks_of_each_of_five_seeds():
    """Issue 58: 02c and 04c printed "100 tasks x 5 seeds" for 20 tasks x 5 seeds (the summary's task count
    was its number of rows); the README and docs/results.md say 20 tasks x 5 seeds."""
    from aps_teach import course

    for name in ("visr-open10", "aps-fourroom"):
        rows = read_rows(course.committed_result(f"transfer/{name}.csv"), transfer.TRANSFER_COLUMNS)
        summary = transfer.summarise_transfer(rows)
        assert (summary["tasks"], summary["seeds"], summary["rows"]) == (20, 5, 100), name
    assert 0 < mean_with_ci([float(r["normalised_score"]) for r in rows])[1]


def test_feature_spread_is_the_spread_of_phi_over_the_cells_and_zero_when_collapsed():
    four = gridworld.resolve_level("fourroom")
    learner = new_learner("visr", transfer.maze_env("fourroom", np.zeros(four.shape), 100), 0, config=TINY)
    env = gridworld.PassagewayEnv("fourroom", reward_map=np.zeros(four.shape))
    observations = torch.stack([torch.as_tensor(env.reset(options={"position": cell})[0])
                                for cell in four.start_cells])
    expected = learner.features(observations).numpy().std(0, ddof=1).mean()
    assert transfer.feature_spread(learner, four) == pytest.approx(expected, rel=1e-5) and expected > 0
    with torch.no_grad():
        learner.phi.input.weight.zero_()  # every cell gets the same hidden layer: phi collapses
    assert transfer.feature_spread(learner, four) == 0.0


def test_r2_of_nearly_collinear_features_is_the_float64_least_squares_one():
    # four copies of one feature, 1e-6 apart, and a reward that depends on those tiny differences: w
    # rounded to float32 is off the minimiser's line by enough to move R^2 in the 4th digit
    rng = np.random.default_rng(0)
    base, noise = rng.normal(size=(400, 1)), rng.normal(size=(400, 4))
    features = torch.as_tensor(base + 1e-6 * noise, dtype=torch.float32)
    rewards = torch.as_tensor((noise[:, 0] - noise[:, 1] > 0.5).astype(np.float32))
    assert np.linalg.cond(features.double().numpy()) > 1e6
    fit = transfer.fit_task(features, rewards, seed=0)
    assert fit.r2 == pytest.approx(numpy_r2(features, rewards)[0], rel=1e-7)
    assert fit.w.dtype == torch.float32


def test_transfer_acts_with_gpi_only_when_the_learner_config_says_so():
    """transfer_task scores with GPI exactly when the learner's config says so. GPI and plain greedy acting
    often tie on an untrained learner (which seed first differs depends on the CPU's rounding), so the first
    learner seed where they differ is the case."""
    reward_map = box_task(seed=1)
    env = transfer.maze_env("open10", reward_map, 100)

    def learner_and_w(seed: int, gpi: bool):
        config = dataclasses.replace(TINY, agent=dataclasses.replace(AGENT_CONFIG, gpi=gpi))
        learner = new_learner("aps", env, seed=seed, config=config)
        return learner, transfer.identify(learner, env, 200, 7, config).w, config

    def scored(seed: int) -> dict[bool, float]:
        learner, w, config = learner_and_w(seed, True)
        return {gpi: evaluate(learner, env, w, 8, 7, config, gpi=gpi).mean_return for gpi in (True, False)}

    found = ((seed, r) for seed in range(8) if (r := scored(seed))[True] != r[False])
    seed, returns = next(found, (None, None))
    assert seed is not None, "GPI and greedy acting tie for every seed: this test cannot tell them apart"
    for gpi in (True, False):
        learner, _, config = learner_and_w(seed, gpi)
        row = transfer.transfer_task(learner, "open10", reward_map, 7, references=exact(OPEN, reward_map),
                                     identify_steps=200, eval_episodes=8, config=config)
        assert row["return"] == returns[gpi]


def test_sweep_rows_are_run_transfer_rows_with_the_overrides_applied():
    spec = RunSpec("visr", "open10", 3, (("agent.hidden", 16), ("agent.batch_size", 8), ("agent.gpi", False),
                                         ("num_envs", 2), ("learning_starts", 100)))
    budget = {"num_tasks": 2, "pretrain_steps": 400, "identify_steps": 200, "eval_episodes": 2}
    rows = transfer.run_transfer_rows(spec, budget)
    config = TrainConfig(agent=AgentConfig(hidden=16, batch_size=8, gpi=False), num_envs=2,
                         learning_starts=100, progress=False)
    direct = transfer.run_transfer("visr", "open10", seeds=[3], config=config, **budget).rows
    assert _without_seconds(rows) == [{**row, "overrides": json.dumps(spec.overrides)}
                                      for row in _without_seconds(direct)]
