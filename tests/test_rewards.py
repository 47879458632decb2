"""rewards.py against brute-force numpy: kNN particle entropy (self-distance, k > points, exponent,
running normaliser) and the von Mises-Fisher reward and loss."""

import numpy as np
import pytest
import torch

from aps_teach.rewards import RunningMean, particle_entropy_reward, vmf_loss, vmf_reward


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
