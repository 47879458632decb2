"""`AtariLearner`'s update without host syncs: its kNN rewards against the shared `Learner`'s, and
the sample -> augment -> update path run on the meta device, where reading any value back raises."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.train import augment_batch
from aps_teach.learner.rewards import MaskedRunningMean, RunningMean, intrinsic_reward, valid_mean

SMALL = AtariConfig(conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32, frame_size=44)


@torch.no_grad()
@pytest.mark.parametrize("method", ["aps", "apt"])
@pytest.mark.parametrize("batch, n", [(16, 10), (2, 3)])  # (2, 3): fewer valid particles than k = 10
def test_masked_knn_rewards_equal_the_selected_ones(method, batch, n):
    """The reward over the windows' states ('sum') and its reported means as `AtariLearner` computes them
    (`fixed_shapes`: invalid states masked) against the gridworld learner's (valid states selected)."""
    learner = AtariLearner(SMALL, method, 4, seed=0)
    cfg, selecting = learner.config, RunningMean()
    assert learner.fixed_shapes and isinstance(learner.normaliser, MaskedRunningMean)
    g = torch.Generator().manual_seed(batch)
    for _ in range(3):  # the running mean carries over between batches
        steps = (torch.rand(batch, n, generator=g) < 0.7).long()
        steps[:, 0] = 1
        mask = steps.cumprod(1).bool()  # windows cut short, as the replay's masks
        phi = F.normalize(torch.randn(batch, n, 5, generator=g), dim=-1) if method == "aps" else None
        w = F.normalize(torch.randn(batch, 5, generator=g), dim=-1)
        seq = torch.randint(0, 256, (batch, n, 4, 44, 44), dtype=torch.uint8, generator=g)
        h = phi if method == "aps" else learner.knn_features(seq.flatten(0, 1)).unflatten(0, (batch, n))
        got, want = (intrinsic_reward(phi, w[:, None], h, cfg.k, valid=mask, fixed_shapes=fixed,
                                      normaliser=learner.normaliser if fixed else selecting)
                     for fixed in (True, False))
        torch.testing.assert_close(got.total, want.total, rtol=1e-6, atol=1e-7)
        for term in ("exploit", "explore"):
            assert (getattr(got, term) is None) == (getattr(want, term) is None) == (
                term == "exploit" and method == "apt")
            if getattr(got, term) is not None:
                masked = valid_mean(getattr(got, term), mask, fixed_shapes=True)
                assert float(masked) == pytest.approx(float(valid_mean(getattr(want, term), mask, False)),
                                                      rel=1e-6)
        assert learner.normaliser.state_dict()["count"] == selecting.count
        assert float(learner.normaliser.mean) == pytest.approx(float(selecting.mean), rel=1e-12)


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


@torch.no_grad()
@pytest.mark.parametrize("method", ["aps", "visr"])
def test_fine_tuning_targets_from_the_stored_phi_equal_those_from_the_frames(method):
    """The frozen phi computed once per transition (`FrameReplay(store_phi=True)`) gives the fine-tuning TD
    targets that encoding every window state s'_i in the update gives, where no augmentation applies: real
    Pong steps across game ends, 10-step windows."""
    from aps_teach.atari.envs import make_vector_env
    from aps_teach.learner.update import td_targets

    config = replace(SMALL, frame_size=84, max_frames_per_episode=400)
    learner = AtariLearner(config, method, 6, seed=1)
    learner.start_finetune()
    envs = make_vector_env("pong", 2, config, seed=3, training=True)
    envs.reset(seed=3)
    replay = FrameReplay(300, 2, (84, 84), 4, 5, store_rewards=True, store_phi=True)
    rng, w = np.random.default_rng(3), F.normalize(torch.randn(1, 5), dim=-1).expand(2, -1)
    for _ in range(250):
        obs = torch.from_numpy(envs.obs)
        tr = envs.step(rng.integers(envs.num_actions, size=2))
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid,
                   reward=rng.choice([-1.0, 0.0, 1.0], size=2).astype(np.float32), phi=learner.features(obs))
    envs.close()
    batch = replay.sample(64, 10, torch.Generator().manual_seed(0), window_obs=True)
    assert not batch.mask.all() and batch.mask.sum() > 300  # windows cut by game ends, most whole
    stored, _, _ = td_targets(learner, batch)
    encoded, _, _ = td_targets(learner, batch._replace(next_phi=None))
    torch.testing.assert_close(stored, encoded, rtol=1e-5, atol=1e-5)
