"""tasks.py against numpy: sphere sampling, the least-squares direction, GPI scored under the current w."""

import numpy as np
import pytest
import torch

from aps_teach.learner.tasks import gpi_action_values, gpi_candidates, infer_task, sample_tasks


def test_sample_tasks_unit_norm_and_isotropic():
    w = sample_tasks(20000, 5, torch.Generator().manual_seed(0))
    assert w.shape == (20000, 5)
    np.testing.assert_allclose(w.norm(dim=1).numpy(), 1.0, atol=1e-6)
    # uniform on the sphere: E[w] = 0 and E[w w^T] = I / d
    np.testing.assert_allclose(w.mean(0).numpy(), 0.0, atol=0.02)
    np.testing.assert_allclose((w.T @ w / len(w)).numpy(), np.eye(5) / 5, atol=0.01)


def test_sample_tasks_seeded_and_rejects_bad_sizes():
    a = sample_tasks(3, 4, torch.Generator().manual_seed(7))
    b = sample_tasks(3, 4, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="dim >= 1"):
        sample_tasks(3, 0)


def _correlated_problem(seed=0, n=500, d=5):
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) + 3.0 * np.ones((d, d))  # strongly correlated columns
    features = rng.normal(size=(n, d)) @ mix
    w_true = rng.normal(size=d)
    w_true /= np.linalg.norm(w_true)
    rewards = features @ w_true + 0.01 * rng.normal(size=n)
    return features, rewards, w_true


def test_infer_task_recovers_planted_w_and_matches_numpy_lstsq():
    features, rewards, w_true = _correlated_problem()
    w = infer_task(torch.tensor(features), torch.tensor(rewards)).numpy()
    ref = np.linalg.lstsq(features, rewards, rcond=None)[0]
    np.testing.assert_allclose(w, ref / np.linalg.norm(ref), atol=1e-8)
    assert w @ w_true > 0.999


def test_wrong_lstsq_direction_fails_on_correlated_features():
    features, rewards, w_true = _correlated_problem()
    # the public-code bug: regress features on rewards, lstsq(rewards, features)
    wrong = np.linalg.lstsq(rewards[:, None], features, rcond=None)[0][0]
    wrong /= np.linalg.norm(wrong)
    assert wrong @ w_true < 0.9
    right = infer_task(torch.tensor(features), torch.tensor(rewards)).numpy()
    assert right @ w_true > 0.999


def test_infer_task_errors():
    with pytest.raises(ValueError, match="features .N, d. and rewards .N,."):
        infer_task(torch.zeros(4, 3), torch.zeros(5))
    with pytest.raises(ValueError, match="all rewards zero"):
        infer_task(torch.randn(6, 3), torch.zeros(6))


def test_gpi_candidates_keep_w_first_and_add_unit_samples():
    w = sample_tasks(4, 5, torch.Generator().manual_seed(1))
    c = gpi_candidates(w, 10, torch.Generator().manual_seed(2))
    assert c.shape == (4, 11, 5)
    assert torch.equal(c[:, 0], w)
    np.testing.assert_allclose(c.norm(dim=2).numpy(), 1.0, atol=1e-6)


def test_gpi_scores_every_candidate_under_current_w():
    rng = np.random.default_rng(3)
    psi = rng.normal(size=(6, 11, 4, 5))
    w = rng.normal(size=(6, 5))
    brute = np.empty((6, 4))
    for b in range(6):
        for a in range(4):
            brute[b, a] = max(psi[b, i, a] @ w[b] for i in range(11))
    got = gpi_action_values(torch.tensor(psi), torch.tensor(w)).numpy()
    np.testing.assert_allclose(got, brute, atol=1e-12)


def test_gpi_own_z_scoring_picks_a_different_action():
    # candidate 0 is w = e1, candidate 1 is z = e2. Under w, action 0 is worth 1 (via candidate 0)
    # and action 1 only 0.5; candidate 1 is great at its own task e2 with action 1.
    w = torch.tensor([[1.0, 0.0]])
    z = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    psi = torch.tensor([[[[1.0, 0.0], [0.2, 0.0]], [[0.0, 0.0], [0.5, 5.0]]]])
    right = gpi_action_values(psi, w)
    assert right.argmax().item() == 0
    own_z = torch.einsum("bcad,bcd->bca", psi, z).amax(dim=1)
    assert own_z.argmax().item() == 1
