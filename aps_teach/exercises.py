"""Checkers for the notebooks' exercises: your function against the library's, on random inputs.

Each `check_*` prints one line when your answer matches (`np.allclose`) and raises AssertionError
with the first mismatch when it does not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aps_teach.tabular import gpi


def check_against_reference(name: str, yours: Callable, reference: Callable, cases: list[tuple]) -> None:
    """Call both functions on every argument tuple in `cases`; compare with np.allclose."""
    for number, arguments in enumerate(cases):
        got, want = np.asarray(yours(*arguments)), np.asarray(reference(*arguments))
        if got.shape != want.shape:
            raise AssertionError(f"{name}: case {number} returned shape {got.shape}, expected {want.shape}")
        if not np.allclose(got, want):
            worst = np.unravel_index(np.abs(got - want).argmax(), got.shape)
            raise AssertionError(
                f"{name}: case {number} differs from the library at index {tuple(map(int, worst))}: "
                f"yours {got[worst]:.6g}, expected {want[worst]:.6g}"
            )
    print(f"correct: {name} matches the library on {len(cases)} random cases")


def check_gpi(your_gpi: Callable[[np.ndarray, np.ndarray], np.ndarray], seed: int = 0) -> None:
    """Exercise (notebook 01): Q_GPI(s, a) = max_i psi_i(s, a)^T w, from psis (n, S, A, d) and w (d,)."""
    rng = np.random.default_rng(seed)
    cases = [(rng.normal(size=(n, 7, 4, d)), rng.normal(size=d)) for n, d in [(1, 2), (3, 3), (5, 4)]]
    check_against_reference("GPI action values", your_gpi, lambda psis, w: gpi(psis, w)[0], cases)
