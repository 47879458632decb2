"""rewards.py against brute-force numpy: kNN particle entropy (self-distance, k > points, exponent,
running normaliser), the von Mises-Fisher reward and loss, and Eq. 6 on a case worked by hand."""

import numpy as np
import pytest
import torch

from aps_teach.learner.rewards import (
    MaskedRunningMean,
    RunningMean,
    intrinsic_reward,
    particle_entropy_reward,
    vmf_loss,
    vmf_reward,
)


def _brute(source, target, k, exclude_self=False, exponent=1.0, scale=1.0):
    out = []
    for i, x in enumerate(source):
        d = [np.linalg.norm(x - y) for j, y in enumerate(target) if not (exclude_self and i == j)]
        d = sorted(d)[:k]
        out.append(np.log(1 + np.mean([v**exponent for v in d]) / scale))
    return np.array(out)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_particle_entropy_matches_brute_force(k):
    rng = np.random.default_rng(k)
    s, t = rng.normal(size=(7, 4)), rng.normal(size=(13, 4))
    got = particle_entropy_reward(torch.tensor(s), torch.tensor(t), k).numpy()
    np.testing.assert_allclose(got, _brute(s, t, k), rtol=1e-10)


def test_self_excluded_when_batch_is_its_own_target():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(9, 3))
    got = particle_entropy_reward(torch.tensor(h), torch.tensor(h), 3, exclude_self=True).numpy()
    np.testing.assert_allclose(got, _brute(h, h, 3, exclude_self=True), rtol=1e-10)
    with_self = particle_entropy_reward(torch.tensor(h), torch.tensor(h), 3).numpy()
    np.testing.assert_allclose(with_self, _brute(h, h, 3), rtol=1e-10)
    assert np.all(got > with_self)  # including self averages in a zero


def test_duplicates_are_other_particles_at_distance_zero():
    h = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]], dtype=torch.float64)
    got = particle_entropy_reward(h, h, 1, exclude_self=True)
    np.testing.assert_allclose(got.numpy(), [0.0, 0.0, np.log(6.0)])


def test_fewer_candidates_than_k_averages_over_all_available():
    h = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    got = particle_entropy_reward(h, h, 10, exclude_self=True).numpy()
    np.testing.assert_allclose(got, np.log1p([2.0, 1.5, 2.5]))
    assert np.all(np.isfinite(got))
    with pytest.raises(ValueError, match="at least one neighbour"):
        particle_entropy_reward(h[:1], h[:1], 3, exclude_self=True)
    with pytest.raises(ValueError, match="k must be >= 1"):
        particle_entropy_reward(h, h, 0)


def test_paper_exponent_n_h():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(8, 5))
    got = particle_entropy_reward(torch.tensor(h), torch.tensor(h), 3, exclude_self=True, exponent=5).numpy()
    np.testing.assert_allclose(got, _brute(h, h, 3, exclude_self=True, exponent=5), rtol=1e-10)


def test_running_normaliser_divides_by_mean_of_all_terms_so_far():
    rng = np.random.default_rng(2)
    batches = [rng.normal(size=(n, 3)) for n in (6, 9, 4)]
    norm = RunningMean()
    seen = []
    for h in batches:
        got = particle_entropy_reward(torch.tensor(h), torch.tensor(h), 2, exclude_self=True, normaliser=norm)
        for i, x in enumerate(h):
            seen.extend(sorted(np.linalg.norm(x - y) for j, y in enumerate(h) if j != i)[:2])
        expect = _brute(h, h, 2, exclude_self=True, scale=np.mean(seen))
        np.testing.assert_allclose(got.numpy(), expect, rtol=1e-10)
    assert norm.count == len(seen)


def test_vmf_reward_and_loss():
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(10, 5))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    w = rng.normal(size=(10, 5))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    r = vmf_reward(torch.tensor(phi), torch.tensor(w)).numpy()
    np.testing.assert_allclose(r, [phi[i] @ w[i] for i in range(10)], rtol=1e-12)
    assert np.all(np.abs(r) <= 1 + 1e-12)
    np.testing.assert_allclose(vmf_loss(torch.tensor(phi), torch.tensor(w)).item(), -r.mean(), rtol=1e-12)


def test_eq10_reward_on_a_hand_worked_case():
    """phi = (1, 0), (0, 1), (0.6, 0.8) and w = (0.6, 0.8): phi^T w = 0.6, 0.8, 1. h = 0, 1, 3 on a line,
    k = 1, each its own particle set without itself: nearest distances 1, 1, 2, so explore = log 2, log 2,
    log 3. With weights 2 and 0.5: r = 1.2 + 0.5 log 2, 1.6 + 0.5 log 2, 2 + 0.5 log 3."""
    phi = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    w, h = torch.tensor([0.6, 0.8]), torch.tensor([[0.0], [1.0], [3.0]])
    got = intrinsic_reward(phi, w, h, 1, exploit_weight=2.0, explore_weight=0.5)
    np.testing.assert_allclose(got.exploit.numpy(), [0.6, 0.8, 1.0], rtol=1e-6)
    np.testing.assert_allclose(got.explore.numpy(), np.log([2.0, 2.0, 3.0]), rtol=1e-6)
    np.testing.assert_allclose(got.total.numpy(), [1.2 + 0.5 * np.log(2), 1.6 + 0.5 * np.log(2),
                                                   2.0 + 0.5 * np.log(3)], rtol=1e-6)
    # a heatmap's cell at h = 0.5 among the three as particles (not one itself), k = 2: distances 0.5, 0.5
    cell = intrinsic_reward(None, None, torch.tensor([[0.5]]), 2, particles=h)
    np.testing.assert_allclose(cell.total.numpy(), [np.log(1.5)], rtol=1e-6)
    assert cell.exploit is None
    # one window whose third step is invalid: particles 0 and 1 only, explore log 2, log 2, 0, selected or
    # masked alike (the running mean of the neighbour terms 1, 1 is 1)
    for fixed, normaliser in ((False, RunningMean()), (True, MaskedRunningMean())):
        window = intrinsic_reward(None, None, h[None], 1, valid=torch.tensor([[True, True, False]]),
                                  fixed_shapes=fixed, normaliser=normaliser)
        np.testing.assert_allclose(window.explore.numpy(), [[np.log(2), np.log(2), 0.0]], rtol=1e-6)
        assert int(normaliser.count) == 2 and float(normaliser.mean) == pytest.approx(1.0)


def test_eq10_reward_rejects_calls_without_a_term_or_with_two_particle_sets():
    h = torch.zeros(3, 1)
    with pytest.raises(ValueError, match="needs phi and w"):
        intrinsic_reward(None, None, None, 1)
    with pytest.raises(ValueError, match="needs phi and w"):
        intrinsic_reward(torch.zeros(3, 2), None, None, 1)
    with pytest.raises(ValueError, match="with `particles` given, pass no `valid`"):
        intrinsic_reward(None, None, h, 1, particles=h, valid=torch.ones(3, dtype=torch.bool))
