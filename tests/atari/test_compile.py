"""`--compile`: the update step (augment -> targets -> losses -> optimiser step, `UpdateStep`) compiled by
torch.compile gives the eager step's weights within float tolerance after a few updates, its learner's
checkpoint loads into an eager learner, and without a working compiler backend `--compile` is a one-line
error before anything is written.

The suite compiles with the aot_eager backend: dynamo's capture of the whole step and AOT autograd's graphs
(where a lost in-place update of the kNN normaliser showed up), in seconds. The inductor backend of
`--compile` (C++ code generation; about 3 minutes of compiling on a 2-core machine) runs with
APS_TEACH_SLOW=1."""

import os
import shutil

import numpy as np
import pytest
import torch

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.train import augment_batch
from aps_teach.atari.update_step import UpdateStep
from aps_teach.infra import phases
from tests.atari.test_agent import SMALL

needs_compiler = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                    reason="torch.compile on CPU needs a C++ compiler")


def _replay():
    """Random frames of 2 envs, a lost life and a change of w in env 1, so windows are cut."""
    replay = FrameReplay(40, 2, (SMALL.frame_size,) * 2, 4, SMALL.feature_dim, store_rewards=False)
    rng = np.random.default_rng(0)
    w = np.eye(SMALL.feature_dim, dtype=np.float32)[:2]
    for i in range(30):
        if i == 15:
            w = w[::-1].copy()
        replay.add(rng.integers(0, 256, (2, 4, SMALL.frame_size, SMALL.frame_size), dtype=np.uint8),
                   np.array([0, 1]), w, np.array([False, i == 10]), np.array([False, False]),
                   np.array([True, True]))
    return replay


@pytest.mark.parametrize("backend", [
    "aot_eager",
    pytest.param("inductor", marks=[needs_compiler, pytest.mark.skipif(
        os.environ.get("APS_TEACH_SLOW") != "1", reason="minutes of compiling: APS_TEACH_SLOW=1")])])
def test_compiled_update_step_gives_the_eager_weights(backend):
    replay = _replay()
    learners = [AtariLearner(SMALL, "aps", 4, seed=0) for _ in range(2)]
    eager = UpdateStep(learners[0], SMALL, windows=False)
    compiled = UpdateStep(learners[1], SMALL, windows=False, compile_mode="default", backend=backend)
    for step in (eager, compiled):
        g = torch.Generator().manual_seed(1)
        for _ in range(3):
            stats = step(replay.sample(8, 10, g, window_obs=False), g)
    assert all(v.device.type == "cpu" and v.shape == () for v in stats.values())
    a, b = learners
    assert a.updates == b.updates == 3
    for name, module in a._modules().items():
        for (key, p), q in zip(module.state_dict().items(), b._modules()[name].state_dict().values(),
                               strict=True):
            torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=f"{name}.{key}")
    assert not torch.equal(a.psi.heads.w1, AtariLearner(SMALL, "aps", 4, seed=0).psi.heads.w1)  # it trained
    torch.testing.assert_close(b.normaliser.mean, a.normaliser.mean)
    reloaded = AtariLearner(SMALL, "aps", 4, seed=1)
    reloaded.load_state_dict(b.state_dict())  # compiling left the state dict's names alone
    assert all(torch.equal(p, q) for p, q in zip(reloaded.psi.parameters(), b.psi.parameters(), strict=True))


def test_eager_update_step_is_the_learners_update_bit_for_bit():
    replay = _replay()
    a, b = (AtariLearner(SMALL, "aps", 4, seed=0) for _ in range(2))
    g1, g2 = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    step = UpdateStep(b, SMALL, windows=False)
    for _ in range(2):
        a.update(augment_batch(replay.sample(8, 10, g1, window_obs=False), SMALL, g1, windows=False))
        step(replay.sample(8, 10, g2, window_obs=False), g2)
    assert all(torch.equal(p, q) for p, q in zip(a.phi.parameters(), b.phi.parameters(), strict=True))
    assert all(torch.equal(p, q) for p, q in zip(a.psi.parameters(), b.psi.parameters(), strict=True))


def test_compile_without_a_working_backend_is_a_clear_error(tmp_path, capsys, no_cpp_compiler):
    from aps_teach.cli.main import main

    assert "No working C++ compiler" in phases.compile_backend_error("cpu")
    with pytest.raises(ValueError, match=r"--compile: torch.compile does not work on cpu here .*C\+\+"):
        UpdateStep(AtariLearner(SMALL, "aps", 4, seed=0), SMALL, windows=False, compile_mode="default")
    assert main(["atari", "run", "--out", str(tmp_path / "run"), "--compile"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--compile" in err and "install one, or drop --compile" in err
    assert not (tmp_path / "run").exists()  # nothing written
