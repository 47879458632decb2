"""`--compile`: torch.compile'd networks give the eager networks' outputs, and their checkpoints load into
an eager learner (compiling in place leaves the state dict's names alone). CPU inductor needs a C++
compiler."""

import shutil

import pytest
import torch
from test_atari_train import TINY

from aps_teach.atari.agent import AtariLearner


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="torch.compile on CPU needs a C++ compiler")
def test_compiled_networks_match_the_eager_ones_and_share_checkpoints():
    eager, compiled = AtariLearner(TINY, "aps", 6, seed=0), AtariLearner(TINY, "aps", 6, seed=0)
    compiled.compile("default")
    generator = torch.Generator().manual_seed(0)
    obs = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8, generator=generator)
    w = torch.nn.functional.normalize(torch.randn(5, TINY.feature_dim, generator=generator), dim=-1)
    with torch.no_grad():
        torch.testing.assert_close(compiled.psi(obs, w), eager.psi(obs, w), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(compiled.phi(obs), eager.phi(obs), rtol=1e-5, atol=1e-5)
    reloaded = AtariLearner(TINY, "aps", 6, seed=1)
    reloaded.load_state_dict(compiled.state_dict())
    with torch.no_grad():
        assert torch.equal(reloaded.psi(obs, w), eager.psi(obs, w))
