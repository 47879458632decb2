"""The random-policy baseline against an exact Markov-chain computation; its figure; the demo CLI."""

import numpy as np
import pytest

import gridworld
from aps_teach.cli import main
from aps_teach.files import atomic_path
from aps_teach.plots import level_image, plot_random_policy_overview, plot_visitation
from aps_teach.random_policy import random_policy_stats


def exact_random_policy(level: str, horizon: int):
    """P(success), P(each key) and expected visits per cell, by propagating the state distribution
    of the uniformly random policy through `Layout.step` (no pycolab, no sampling)."""
    layout = gridworld.resolve_level(level)
    start = 1 / len(layout.start_cells)
    alive = {(cell, ()): start for cell in layout.start_cells}
    visits = np.zeros(layout.shape)
    key_probability = dict.fromkeys(layout.key_names, 0.0)
    success = 0.0
    for state, p in alive.items():
        visits[state[0]] += p
    for _ in range(horizon):
        nxt = {}
        for state, p in alive.items():
            for action in range(4):
                (position, held), _, terminated = layout.step(state, action)
                visits[position] += p / 4
                if terminated:
                    success += p / 4
                    for name in held:
                        key_probability[name] += p / 4
                else:
                    nxt[(position, held)] = nxt.get((position, held), 0.0) + p / 4
        alive = nxt
    for (_, held), p in alive.items():  # truncated episodes
        for name in held:
            key_probability[name] += p
    return success, key_probability, visits


def test_random_policy_matches_the_exact_markov_chain():
    episodes, horizon = 1500, gridworld.MAX_EPISODE_STEPS
    stats = random_policy_stats("easy", episodes, seed=3, progress=False)
    success, key_probability, visits = exact_random_policy("easy", horizon)
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
    with pytest.raises(ValueError, match="episodes must be a positive integer"):
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


def test_demo_cli_writes_the_picture_and_prints_the_numbers(tmp_path, capsys):
    out = tmp_path / "demo.png"
    assert main(["demo", "--episodes", "4", "--seed", "1", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = random_policy_stats("easy", 4, seed=1, progress=False).summary()
    assert expected in printed
    assert main(["--episodes", "0", "--out", str(tmp_path / "bad.png"), "--no-progress"]) == 2
    assert "episodes must be a positive integer" in capsys.readouterr().err
    assert not (tmp_path / "bad.png").exists()


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
