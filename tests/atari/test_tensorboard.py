"""With tensorboard installed, a phase's TensorBoard scalars are its metrics.csv columns, point for point."""

import csv
import math

import pytest

from aps_teach.atari.train import pretrain
from tests.atari.test_train import tiny

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def test_tensorboard_scalars_are_the_metrics_rows(tmp_path):
    pretrain("aps", "pong", seed=0, config=tiny(), run_dir=tmp_path)
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    events = event_accumulator.EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"updates", "epsilon", "loss_sf", "loss_vmf", "reward_explore", "env_steps_per_s"} <= tags
    for tag in tags:
        logged = {e.step: e.value for e in events.Scalars(tag)}
        expected = {int(r["env_steps"]): float(r[tag]) for r in rows
                    if r.get(tag) not in (None, "") and math.isfinite(float(r[tag]))}
        assert logged.keys() == expected.keys(), tag
        assert all(logged[s] == pytest.approx(v, rel=1e-6) for s, v in expected.items()), tag
    assert "env_steps" not in tags  # the x axis, not a curve


def test_no_tensorboard_files_when_switched_off(tmp_path):
    pretrain("aps", "pong", seed=0, config=tiny(tensorboard=False), run_dir=tmp_path)
    assert (tmp_path / "metrics.csv").exists() and not (tmp_path / "tensorboard").exists()
