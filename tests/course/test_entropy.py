"""The kNN entropy estimator against closed forms, and a one-dimensional case worked by hand."""

import numpy as np
import pytest
from scipy.special import digamma

from aps_teach.course.entropy import gaussian_entropy, knn_entropy, uniform_box_entropy


def test_closed_forms():
    assert gaussian_entropy(np.eye(1)) == pytest.approx(0.5 * np.log(2 * np.pi * np.e))
    assert gaussian_entropy(np.diag([4.0, 9.0])) == pytest.approx(np.log(2 * np.pi * np.e * 6.0))
    assert uniform_box_entropy([2.0, 3.0]) == pytest.approx(np.log(6.0))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_estimator_converges_to_the_gaussian_entropy(d):
    rng = np.random.default_rng(d)
    cov = np.diag(np.linspace(0.5, 2.0, d))
    points = rng.multivariate_normal(np.zeros(d), cov, size=4000)
    assert knn_entropy(points, k=5) == pytest.approx(gaussian_entropy(cov), abs=0.06)


def test_estimator_converges_to_the_uniform_entropy():
    points = np.random.default_rng(0).uniform([0, 0], [2, 3], size=(4000, 2))
    assert knn_entropy(points, k=3) == pytest.approx(uniform_box_entropy([2, 3]), abs=0.06)


def test_three_points_on_a_line_by_hand():
    """Points 0, 1, 3 with k = 1: eps = (1, 1, 2); V_1 = 2; H = psi(3) - psi(1) + log 2 + mean log eps."""
    expected = digamma(3) - digamma(1) + np.log(2) + np.log(2) / 3
    assert knn_entropy(np.array([[0.0], [1.0], [3.0]]), k=1) == pytest.approx(expected)


def test_bad_input():
    with pytest.raises(ValueError, match="k must be between 1 and n - 1 = 2"):
        knn_entropy(np.zeros((3, 2)), k=3)
    with pytest.raises(ValueError, match="distinct points"):
        knn_entropy(np.zeros((5, 2)), k=2)
    with pytest.raises(ValueError, match=r"\(n, d\) array"):
        knn_entropy(np.zeros(5), k=2)
