"""tasks.py against numpy: sphere sampling, the least-squares direction, GPI scored under the current w."""

import math

import numpy as np
import pytest
import torch

from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import (
    fit_task,
    gpi_action_values,
    gpi_candidates,
    infer_task,
    ridge_solution,
    sample_tasks,
)


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


# Ridge identification (AgentConfig.identify_ridge, issue 60's control for the identification link)

def _main_infer_task(features, rewards):
    """infer_task as main had it before the ridge option: least squares by gelsd, unit norm."""
    w = torch.linalg.lstsq(features.double(), rewards.double()[:, None], driver="gelsd").solution[:, 0]
    return (w / w.norm()).to(features.dtype)


def test_ridge_on_a_hand_worked_case():
    # X^T X + I = [[3, 1], [1, 3]], X^T r = [4, 5]: c = [[3, -1], [-1, 3]] [4, 5] / 8 = [7/8, 11/8]
    features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    rewards = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    c = ridge_solution(features, rewards, 1.0)
    torch.testing.assert_close(c, torch.tensor([0.875, 1.375], dtype=torch.float64), rtol=0, atol=1e-15)
    direction = torch.tensor([7.0, 11.0], dtype=torch.float64) / math.sqrt(170.0)
    torch.testing.assert_close(infer_task(features, rewards, ridge=1.0), direction, rtol=0, atol=1e-15)
    fit = fit_task(features, rewards, seed=0, ridge=1.0)
    torch.testing.assert_close(fit.coefficients, c, rtol=0, atol=1e-15)
    residual = rewards - features @ c  # [1/8, 5/8, 6/8]
    assert fit.r2 == pytest.approx(1 - float(residual @ residual) / 2.0, abs=1e-14)
    assert fit.identified


@pytest.mark.parametrize("ridge", [1e-3, 0.5, 40.0, 1e4])
def test_ridge_is_the_closed_form_on_correlated_features(ridge):
    features, rewards, _ = _correlated_problem(seed=3, n=200, d=5)
    closed = np.linalg.solve(features.T @ features + ridge * np.eye(5), features.T @ rewards)
    fit = fit_task(torch.tensor(features), torch.tensor(rewards), seed=0, ridge=ridge)
    np.testing.assert_allclose(fit.coefficients.numpy(), closed, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.w.numpy(), closed / np.linalg.norm(closed), rtol=1e-9, atol=1e-12)
    least_squares = fit_task(torch.tensor(features), torch.tensor(rewards), seed=0)
    assert fit.r2 <= least_squares.r2 + 1e-12  # the shrunk fit explains no more than the least-squares one


def test_a_strong_ridge_points_w_at_the_features_times_the_rewards():
    # (X^T X + lambda I)^{-1} X^T r -> X^T r / lambda as lambda grows: w -> X^T r / ||X^T r||
    features, rewards, _ = _correlated_problem(seed=4, n=100, d=4)
    w = infer_task(torch.tensor(features), torch.tensor(rewards), ridge=1e12).numpy()
    moment = features.T @ rewards
    np.testing.assert_allclose(w, moment / np.linalg.norm(moment), atol=1e-6)


def test_ridge_zero_is_least_squares_bit_for_bit():
    for seed in range(3):
        features, rewards, _ = _correlated_problem(seed=seed)
        x, r = torch.tensor(features, dtype=torch.float32), torch.tensor(rewards, dtype=torch.float32)
        assert torch.equal(infer_task(x, r, ridge=0.0), _main_infer_task(x, r))
        assert torch.equal(infer_task(x, r), _main_infer_task(x, r))
        default, zero = fit_task(x, r, seed=0), fit_task(x, r, seed=0, ridge=0.0)
        assert torch.equal(default.w, zero.w) and torch.equal(default.coefficients, zero.coefficients)
        assert default.r2 == zero.r2


@pytest.mark.parametrize("ridge", [-1.0, math.nan, math.inf])
def test_a_ridge_that_is_not_a_finite_number_at_least_zero_is_refused(ridge):
    features, rewards, _ = _correlated_problem()
    with pytest.raises(ValueError, match=r"^ridge must be >= 0 and finite, got"):
        infer_task(torch.tensor(features), torch.tensor(rewards), ridge=ridge)
    with pytest.raises(ValueError, match=r"^ridge must be >= 0 and finite, got"):
        fit_task(torch.tensor(features), torch.tensor(rewards), seed=0, ridge=ridge)
    with pytest.raises(ValueError, match=r"^identify_ridge must be >= 0 and finite, got"):
        AgentConfig(identify_ridge=ridge)
