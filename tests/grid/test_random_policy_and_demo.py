"""The random-policy baseline against an exact Markov-chain computation; its figure; the demo CLI."""

import numpy as np
import pytest
from matplotlib.colors import to_hex

import gridworld
from aps_teach.cli.main import main
from aps_teach.grid.plots import (
    level_image,
    level_legend_handles,
    plot_random_policy_overview,
    plot_visitation,
)
from aps_teach.grid.random_policy import exact_random_policy, random_policy_stats
from aps_teach.infra.files import atomic_path


def test_random_policy_matches_the_exact_markov_chain():
    """Sampled episodes through pycolab vs the exact distribution through `Layout.step`."""
    episodes, horizon = 1500, gridworld.MAX_EPISODE_STEPS
    stats = random_policy_stats("easy", episodes, seed=3, progress=False)
    exact = exact_random_policy("easy", horizon)
    success, key_probability, visits = exact.success_by_step[-1], exact.key_probability, exact.expected_visits
    tolerance = lambda p: 4 * np.sqrt(p * (1 - p) / episodes)  # noqa: E731
    assert abs(stats.success_rate - success) < tolerance(success)
    assert abs(stats.key_rates["green"] - key_probability["green"]) < tolerance(key_probability["green"])
    assert abs(stats.mean_return - (key_probability["green"] + 10 * success)) < 0.2
    frequency, expected = stats.visits / stats.visits.sum(), visits / visits.sum()
    assert np.abs(frequency - expected).max() < 0.01
    assert stats.reachable_states == 79 and stats.distinct_states == 79


def test_random_policy_is_reproducible_and_rejects_bad_input():
    a = random_policy_stats("hard", 20, seed=5, progress=False)
    b = random_policy_stats("hard", 20, seed=5, progress=False)
    np.testing.assert_array_equal(a.visits, b.visits)
    assert a.summary() == b.summary()
    with pytest.raises(ValueError, match="episodes must be an integer >= 1"):
        random_policy_stats("hard", 0)
    with pytest.raises(ValueError, match="valid levels: easy, hard"):
        random_policy_stats("medium", 5)


def test_overview_figure_shows_the_numbers_it_was_given():
    stats = [random_policy_stats(level, 10, seed=0, progress=False) for level in ("easy", "hard")]
    fig = plot_random_policy_overview(stats)
    bar_axes = [ax for ax in fig.axes if ax.get_title() == "random policy: milestones reached"]
    assert len(bar_axes) == len(stats)
    for ax, result in zip(bar_axes, stats, strict=True):
        heights = [bar.get_height() for bar in ax.patches]
        assert heights == [*result.key_rates.values(), result.success_rate]
    colours = [to_hex(bar.get_facecolor()) for bar in bar_axes[1].patches]
    assert colours == ["#2ca02c", "#9467bd", "#ff7f0e"]  # green key, purple key, target
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == ["start region", "agent", "wall", "green key", "purple key", "closed passageway",
                      "target"]


def test_visitation_heatmap_shows_frequencies_and_level_image_uses_the_legend():
    import matplotlib.pyplot as plt

    layout = gridworld.resolve_level("easy")
    visits = np.arange(100).reshape(10, 10)
    image = plot_visitation(plt.figure().add_subplot(), layout, visits)
    np.testing.assert_allclose(image.get_array().data[5, 5], visits[5, 5] / visits.sum())
    picture = level_image(layout)
    colour = dict(zip(gridworld.LAYER_NAMES, gridworld.COLOURS.tolist(), strict=True))
    assert picture[layout.target].tolist() == colour["target"]
    assert picture[layout.key_cells["green"]].tolist() == colour["green_key"]


def test_level_pictures_and_legends_show_any_key():
    layout = gridworld.Layout.parse(["#######",
                                     "#SdDcC#",
                                     "#aA..T#"])
    picture = level_image(layout)
    assert picture[1, 2].tolist() == list(gridworld.LAYER_COLOURS["red_key"])
    assert picture[1, 4].tolist() == list(gridworld.LAYER_COLOURS["cyan_key"])
    assert picture[1, 3].tolist() == picture[1, 5].tolist() == [0, 0, 0]  # closed passageways: black
    handles = level_legend_handles(layout.key_names)
    keys = [(handle.get_label(), to_hex(handle.get_facecolor())) for handle in handles[3:6]]
    assert keys == [("green key", "#2ca02c"), ("cyan key", "#17becf"), ("red key", "#d62728")]


def test_demo_cli_writes_the_picture_and_prints_the_numbers(tmp_path, capsys):
    out = tmp_path / "demo.png"
    assert main(["demo", "--episodes", "4", "--seed", "1", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = random_policy_stats("easy", 4, seed=1, progress=False).summary()
    assert expected in printed
    assert main(["demo", "--episodes", "0", "--out", str(tmp_path / "bad.png"), "--no-progress"]) == 2
    assert "episodes must be an integer >= 1" in capsys.readouterr().err
    assert not (tmp_path / "bad.png").exists()


def test_every_command_writes_under_runs_by_default_never_into_the_committed_results(tmp_path, monkeypatch,
                                                                                   capsys):
    """`demo` used to write results/demo/gridworlds.png into the checkout, which then shipped in the wheel."""
    from aps_teach.cli.demo import DemoConfig
    from aps_teach.cli.gridworld import Transfer
    from aps_teach.grid.experiments import Budget
    from aps_teach.grid.quickstart import QuickstartConfig
    from aps_teach.grid.sweep import figure4_config
    from aps_teach.infra.sweeps import default_sweep_dir

    defaults = [DemoConfig().out, QuickstartConfig().out, Transfer().results_dir(),
                default_sweep_dir("figure4", figure4_config(Budget(pretrain_steps=1)))]
    assert [path.parts[0] for path in defaults] == ["runs"] * 4
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--episodes", "2", "--no-progress"]) == 0
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == \
        ["runs", "runs/demo", "runs/demo/gridworlds.png"]
    assert capsys.readouterr().out.endswith("wrote runs/demo/gridworlds.png\n")


def test_atomic_path_leaves_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "result.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["result.txt"]
    with atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and len(list(tmp_path.iterdir())) == 1


def test_exact_random_policy_on_a_corridor_by_hand():
    """'#SaT#': from S, the key is one step right (p 1/4 per step; left/up/down stay put)."""
    corridor = ["#####", "#SaT#", "#####", "##A##"]  # the passageway walled off: the key only pays
    exact = exact_random_policy(corridor, horizon=2)
    # t=1: right to the key (1/4). t=2: from the key, right to the target (1/4 * 1/4).
    np.testing.assert_allclose(exact.success_by_step, [0, 0, 1 / 16])
    # key held at the end: reached at t=1 (1/4) or at t=2 after staying at t=1 (3/4 * 1/4)
    assert exact.key_probability["green"] == pytest.approx(1 / 4 + 3 / 16)
    assert exact.expected_visits.sum() == pytest.approx(3)
