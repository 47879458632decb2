"""`AtariLearner`'s update without host syncs: its kNN rewards against the shared `Learner`'s, and
the sample -> augment -> update path run on the meta device, where reading any value back raises."""

import copy

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from aps_teach.agents import Learner
from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.train import augment_batch
from aps_teach.rewards import RunningMean

SMALL = AtariConfig(conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32, frame_size=44)


@torch.no_grad()
@pytest.mark.parametrize("method", ["aps", "apt"])
@pytest.mark.parametrize("batch, n", [(16, 10), (2, 3)])  # (2, 3): fewer valid particles than k = 10
def test_masked_knn_rewards_equal_the_shared_learners(method, batch, n):
    learner = AtariLearner(SMALL, method, 4, seed=0)
    shared = copy.deepcopy(learner)  # with the shared Learner's kNN reward, statistics and normaliser
    shared.normaliser = RunningMean()
    for name in ("_knn_reward", "_masked_mean", "_statistic"):
        setattr(shared, name, getattr(Learner, name).__get__(shared))
    g = torch.Generator().manual_seed(batch)
    for _ in range(3):  # the running mean carries over between batches
        steps = (torch.rand(batch, n, generator=g) < 0.7).long()
        steps[:, 0] = 1
        mask = steps.cumprod(1).bool()  # windows cut short, as the replay's masks
        phi = F.normalize(torch.randn(batch, n, 5, generator=g), dim=-1) if method == "aps" else None
        w = F.normalize(torch.randn(batch, 5, generator=g), dim=-1)
        seq = torch.randint(0, 256, (batch, n, 4, 44, 44), dtype=torch.uint8, generator=g)
        got, got_stats = learner._intrinsic(seq, mask, w, phi)
        want, want_stats = shared._intrinsic(seq, mask, w, phi)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)
        assert set(got_stats) == set(want_stats)
        for key, value in got_stats.items():
            assert isinstance(value, torch.Tensor)
            assert float(value) == pytest.approx(want_stats[key], rel=1e-6)
        assert learner.normaliser.state_dict()["count"] == shared.normaliser.count
        assert float(learner.normaliser.mean) == pytest.approx(float(shared.normaliser.mean), rel=1e-12)


@pytest.mark.parametrize("method", ["aps", "apt"])
def test_sample_augment_update_read_nothing_back_from_the_device(method):
    """On the meta device tensors have no data: .item(), bool(), boolean-mask indexing or a copy to the
    host raise, so this path running there means it never makes the host wait on a GPU either (torch's
    fused Adam has no meta kernel: a plain Adam stands in for it)."""
    meta = torch.device("meta")
    replay = FrameReplay(50, 2, (44, 44), 4, 5, store_rewards=False, device=meta)
    rng = np.random.default_rng(0)
    for i in range(30):
        replay.add(rng.integers(0, 256, (2, 4, 44, 44), dtype=np.uint8), np.array([0, 1]),
                   np.zeros((2, 5), np.float32), np.array([False, i == 10]), np.array([False, False]),
                   np.array([True, i != 11]))
    learner = AtariLearner(SMALL, method, 4, seed=0, device=meta)
    learner.optimizer = torch.optim.Adam([p for group in learner.optimizer.param_groups
                                          for p in group["params"]])
    g = torch.Generator().manual_seed(0)
    for _ in range(2):
        stats = learner.update(augment_batch(replay.sample(8, 10, g), SMALL, g))
        assert stats and all(v.device == meta and v.shape == () for v in stats.values())
    with pytest.raises(RuntimeError):  # the meta device does catch a read
        stats["loss_sf"].item()
