"""The Atari figures of aps_teach.atari.plots: learning curves from run directories, scores per game and
method, frames; each checked against the numbers it was given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from aps_teach.atari import plots as atari_plots  # noqa: E402
from aps_teach.grid import plots  # noqa: E402


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
    fig = atari_plots.plot_atari_curves(sweep, ["score", "loss_sf"], phase="finetune")
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
    runs = [sweep / "runs" / "aps-pong-seed0", sweep / "runs" / "dqn-pong-seed0"]
    fig = atari_plots.plot_atari_curves(runs, "loss_sf", phase="pretrain")  # dqn has no pretraining: left out
    (ax,) = fig.axes
    assert [(line.get_gid(), line.get_xydata().tolist()) for line in ax.lines if line.get_gid()] == [
        ("aps-pong-seed0", [[100, 2.5], [200, 1.5]])]
    assert ax.get_legend_handles_labels()[1] == ["aps (1 runs)"]
    plt.close(fig)
    fig = atari_plots.plot_atari_curves(sweep, "loss_sf", games=["pong"])
    assert len([line for line in fig.axes[0].lines if line.get_gid()]) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="no run of the games"):
        atari_plots.plot_atari_curves(sweep, games=["breakout"])
    with pytest.raises(FileNotFoundError, match="no Atari run directory"):
        atari_plots.plot_atari_curves(tmp_path / "empty")
    with pytest.raises(ValueError, match="phase must be"):
        atari_plots.plot_atari_curves(sweep, phase="evaluate")


def test_atari_scores_draw_seed_means_as_bars_and_every_seed_as_a_dot():
    def row(method, game, seed, normalised):
        return {"method": method, "game": game, "seed": seed, "human_normalised": normalised}

    rows = [row("aps", "pong", 0, "0.5"), row("aps", "pong", 1, "1.5"), row("aps", "breakout", 0, "-0.25"),
            row("dqn", "pong", 0, "0.125"), row("dqn", "adventure", 0, "")]  # adventure: no reference
    fig = atari_plots.plot_atari_scores(rows)
    (ax,) = fig.axes
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["breakout", "pong"]  # adventure left out
    bars = {container.get_label(): [p.get_height() for p in container] for container in ax.containers}
    # aps on pong: mean of 0.5 and 1.5. The legend: the IQM over runs x games, -0.25, 0.5, 1.5 (three: none
    # cut) -> 1.75 / 3; pong's two seeds resampled: 0.5 0.5 -> 0.75 / 3 (1/4), 1.5 1.5 -> 2.75 / 3 (1/4)
    assert bars == {"aps: IQM 0.58 [0.25, 0.92]": [-0.25, 1.0], "dqn: IQM 0.12 [0.12, 0.12]": [0.125]}
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
        atari_plots.plot_atari_scores([row("aps", "adventure", 0, "")])


def test_plot_frames_shows_each_frame_on_one_grey_scale():
    frames = [np.full((4, 5), 10, dtype=np.uint8), np.arange(20.0).reshape(4, 5) * 12]
    fig = atari_plots.plot_frames(frames, ["a", "b"])
    images = [ax.images[0] for ax in fig.axes]
    np.testing.assert_array_equal(images[1].get_array(), frames[1])
    assert [image.get_clim() for image in images] == [(0, 255), (0, 255)]
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
    plt.close(fig)
    with pytest.raises(ValueError, match="one title per frame"):
        atari_plots.plot_frames(frames, ["a"])
