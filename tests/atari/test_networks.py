"""Atari networks (layer sizes of the paper's tables, unit-norm phi, per-dimension psi heads checked
against separate MLPs, GPI candidates) and augmentation (random shift against crops of an edge-padded
copy, intensity against its formula)."""

import numpy as np
import pytest
import torch
from torch import nn

from aps_teach.atari.augment import augment, intensity, random_shift, shift
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.networks import AtariFeatureNet, AtariSuccessorFeatureNet, PerDimensionMLP

CONFIG = AtariConfig()


def _obs(batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, 4, 84, 84), generator=g, dtype=torch.uint8)


def test_phi_has_the_tables_layers_and_unit_norm_outputs():
    torch.manual_seed(0)
    phi = AtariFeatureNet(CONFIG)
    convs = [m for m in phi.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (4, 32, (8, 8), (4, 4)), (32, 64, (4, 4), (2, 2)), (64, 64, (3, 3), (1, 1))]
    linears = [m for m in phi.modules() if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linears] == [(64 * 7 * 7, 1024), (1024, 5)]
    assert sum(isinstance(m, nn.ELU) for m in phi.modules()) == 4
    out = phi(_obs(6))
    assert out.shape == (6, 5) and out.dtype == torch.float32
    torch.testing.assert_close(out.norm(dim=-1), torch.ones(6))
    # uint8 frames are scaled to [0, 1]; float input is taken as scaled already
    torch.testing.assert_close(phi(_obs(6).float() / 255), out)


def test_per_dimension_mlp_equals_separate_mlps():
    torch.manual_seed(1)
    heads = PerDimensionMLP(groups=3, in_features=7, hidden=5, out_features=4)
    x = torch.randn(2, 6, 7)
    got = heads(x)
    assert got.shape == (2, 6, 3, 4)
    for j in range(3):
        mlp = nn.Sequential(nn.Linear(7, 5), nn.ReLU(), nn.Linear(5, 4))
        with torch.no_grad():
            mlp[0].weight.copy_(heads.w1[j].T)
            mlp[0].bias.copy_(heads.b1[j])
            mlp[2].weight.copy_(heads.w2[j].T)
            mlp[2].bias.copy_(heads.b2[j])
        torch.testing.assert_close(got[..., j, :], mlp(x))
    assert heads.w1.abs().max() <= 1 / np.sqrt(7) and heads.w2.abs().max() <= 1 / np.sqrt(5)


def test_psi_shapes_gpi_candidates_and_one_head_per_feature():
    torch.manual_seed(2)
    psi = AtariSuccessorFeatureNet(CONFIG, num_actions=6)
    assert sum(isinstance(m, nn.ReLU) for m in psi.modules()) == 4
    torso_linear = [m for m in psi.torso.modules() if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in torso_linear] == [(3136, 512)]
    assert tuple(psi.heads.w1.shape) == (5, 512 + 5, 512) and tuple(psi.heads.w2.shape) == (5, 512, 6)
    obs, w = _obs(3), torch.nn.functional.normalize(torch.randn(3, 4, 5), dim=-1)
    out = psi(obs, w[:, 0])
    assert out.shape == (3, 6, 5)
    candidates = psi(obs, w)
    assert candidates.shape == (3, 4, 6, 5)
    for c in range(4):
        torch.testing.assert_close(candidates[:, c], psi(obs, w[:, c]))
    with torch.no_grad():  # feature j's outputs come from head j alone
        psi.heads.w2[2] += 1.0
    changed = (psi(obs, w[:, 0]) - out).abs().amax(dim=(0, 1))
    assert changed[2] > 0 and (changed[[0, 1, 3, 4]] == 0).all()
    assert (psi(obs, w[:, 0]) * w[:, 0, None]).sum(-1).argmax(1).shape == (3,)  # Q = psi^T w per action


def test_the_texts_drq_encoder_is_a_config_away():
    drq = AtariConfig(conv_channels=(32,) * 4, conv_kernels=(3,) * 4, conv_strides=(2, 1, 1, 1),
                      phi_hidden=16)
    phi = AtariFeatureNet(drq)
    assert sum(isinstance(m, nn.Conv2d) for m in phi.modules()) == 4
    assert phi(_obs(2)).shape == (2, 5)


def test_bad_num_actions():
    with pytest.raises(ValueError, match="num_actions must be an integer >= 1"):
        AtariSuccessorFeatureNet(CONFIG, num_actions=0)


def _naive_shift(x, dy, dx, pad):
    padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(pad, pad), (pad, pad)], mode="edge")
    h, w = x.shape[-2:]
    return padded[..., dy:dy + h, dx:dx + w]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_shift_equals_a_crop_of_the_edge_padded_image(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 256, (6, 4, 12, 10), generator=g).to(dtype)
    dy, dx = torch.tensor([0, 8, 4, 1, 7, 3]), torch.tensor([8, 0, 4, 6, 2, 5])
    got = shift(x, dy, dx, pad=4)
    assert got.dtype == dtype and got.shape == x.shape
    for b in range(6):
        np.testing.assert_array_equal(got[b].numpy(), _naive_shift(x[b].numpy(), int(dy[b]), int(dx[b]), 4))
    torch.testing.assert_close(shift(x, torch.full((6,), 4), torch.full((6,), 4), 4), x)  # centre crop


def test_random_shift_draws_its_offsets_from_the_generator_one_per_leading_index():
    x = torch.rand(40, 3, 4, 9, 9)  # e.g. (B, n, S, H, W): a whole window moves together
    got = random_shift(x, 2, torch.Generator().manual_seed(5))
    offsets = torch.randint(5, (2, 40), generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(got, shift(x, offsets[0], offsets[1], 2))
    assert {0, 4} <= set(offsets.flatten().tolist())  # both extremes of [0, 2 pad] occur
    with pytest.raises(ValueError, match="pad must be >= 0"):
        random_shift(x, -1, torch.Generator())


def test_intensity_is_one_clipped_gaussian_factor_per_image():
    x = torch.rand(500, 4, 5, 5) * 255
    got = intensity(x, 0.05, torch.Generator().manual_seed(7))
    eps = torch.randn(500, generator=torch.Generator().manual_seed(7))
    expected = x * (1 + 0.05 * eps.clamp(-2, 2))[:, None, None, None]
    torch.testing.assert_close(got, expected)
    factor = got / x
    assert torch.allclose(factor, factor[:, :1, :1, :1].expand_as(factor))
    assert factor.min() >= 0.9 - 1e-6 and factor.max() <= 1.1 + 1e-6
    assert (eps.abs() > 2).any()  # the clip was exercised
    assert intensity(x.to(torch.uint8), 0.05, torch.Generator()).dtype == torch.float32


def test_augment_is_shift_then_intensity_then_scaling_on_one_generator():
    x = torch.randint(0, 256, (8, 4, 84, 84), dtype=torch.uint8)
    got = augment(x, 4, 0.05, torch.Generator().manual_seed(9))
    g = torch.Generator().manual_seed(9)
    expected = intensity(random_shift(x, 4, g), 0.05, g) / 255
    assert torch.equal(got, expected)  # bit for bit: the networks used to divide the same floats by 255
    assert got.dtype == torch.float32 and got.shape == x.shape
