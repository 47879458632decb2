"""`TrainConfig.compile`: pretraining's updates made by `update.gradient_step` compiled with torch.compile
give the uncompiled run's weights up to float rounding, alone and in a seed group; the option leaves
configuration records (and so the fingerprints of earlier runs) as they were; without a working compiler
backend it is a one-line error before anything is written.

The suite compiles with the aot_eager backend (dynamo's capture and AOT autograd's graphs, in seconds); the
inductor backend the option uses generates C++ (about a minute per pretraining on a 2-core machine:
`benchmarks/pretrain_speed.py --compile` times it)."""

from dataclasses import replace

import pytest
import torch
from torch._dynamo.utils import counters

from aps_teach.grid import train
from aps_teach.grid.train import TrainConfig, pretrain_seeds
from aps_teach.infra.sweeps import config_dict, config_hash
from tests.learner.test_group import CONFIG, STEPS


def weights(learner) -> list[torch.Tensor]:
    return [p for module in learner._modules().values() for p in module.parameters()]


@pytest.mark.parametrize("seeds", [[0], [0, 1]], ids=["alone", "group of 2"])
def test_compiled_pretraining_gives_the_uncompiled_weights(monkeypatch, seeds):
    monkeypatch.setattr(train, "COMPILE_BACKEND", "aot_eager")
    eager = pretrain_seeds("aps", "easy", STEPS, seeds, CONFIG)
    counters.clear()
    compiled = pretrain_seeds("aps", "easy", STEPS, seeds, replace(CONFIG, compile=True))
    assert counters["stats"]["unique_graphs"] >= 3  # dynamo captured the update (between its graph breaks)
    for (a, _), (b, _) in zip(eager, compiled, strict=True):
        assert a.updates == b.updates > 100
        for p, q in zip(weights(a), weights(b), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_the_option_leaves_configuration_records_as_they_were():
    assert "compile" not in config_dict(TrainConfig())
    assert config_hash(TrainConfig()) == config_hash(TrainConfig(compile=False))
    assert config_dict(TrainConfig(compile=True))["compile"] is True


def test_compile_without_a_working_backend_is_a_clear_error(tmp_path, capsys, no_cpp_compiler):
    from aps_teach.cli.main import main

    with pytest.raises(ValueError, match=r"^compile \(--train.compile\): torch.compile does not work on cpu"):
        TrainConfig(compile=True)
    out = tmp_path / "run"
    assert main(["gridworld", "pretrain", "--out", str(out), "--train.compile"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "drop compile (--train.compile)" in err
    assert not out.exists()  # nothing written
