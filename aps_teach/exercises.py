"""Checkers for the notebooks' exercises: your function against the library's, on random inputs.

Each `check_<name>` prints one line when your answer matches (`np.allclose`) and raises AssertionError
naming the first input on which it differs. The inputs are torch tensors (numpy arrays for `gpi`),
drawn with a fixed seed, in several shapes, edge cases included.

The solutions switch: a starter cell raises NotImplementedError until you fill it in. With the
environment variable APS_TEACH_SOLUTIONS=1 (`SOLUTIONS` is then True) the notebooks replace the
starter with the library's answer, `solution(name)`, so they run top to bottom; the test suite and
the notebook regeneration run that way (`aps_teach.notebooks.execute`). The pattern:

    def my_infer_task(features, rewards):
        raise NotImplementedError("your answer here")

    if exercises.SOLUTIONS:  # APS_TEACH_SOLUTIONS=1 fills in the library's answer
        my_infer_task = exercises.solution("infer_task")
    exercises.check_infer_task(my_infer_task)
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import torch

from aps_teach.agents import sf_td_target
from aps_teach.atari.augment import shift
from aps_teach.rewards import particle_entropy_reward
from aps_teach.tabular import gpi
from aps_teach.tasks import gpi_action_values, infer_task

SOLUTIONS: bool = os.environ.get("APS_TEACH_SOLUTIONS") == "1"
"""True when APS_TEACH_SOLUTIONS=1: notebooks then use `solution(name)` instead of their starter cells."""


def _as_array(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _copy(argument):
    if isinstance(argument, torch.Tensor):
        return argument.clone()
    if isinstance(argument, np.ndarray):
        return argument.copy()
    return argument


def _describe(arguments: tuple) -> str:
    parts = []
    for argument in arguments:
        if isinstance(argument, torch.Tensor | np.ndarray):
            parts.append(f"{type(argument).__name__} {tuple(argument.shape)} {str(argument.dtype)}")
        else:
            parts.append(repr(argument))
    return ", ".join(parts)


def check_against_reference(name: str, yours: Callable, reference: Callable, cases: list[tuple],
                            rtol: float = 1e-5, atol: float = 1e-8) -> None:
    """Call both functions on (copies of) every argument tuple in `cases`; compare with np.allclose.

    Arguments may be numpy arrays or torch tensors (results are compared as numpy arrays).
    """
    for number, arguments in enumerate(cases):
        want = _as_array(reference(*map(_copy, arguments)))
        got = _as_array(yours(*map(_copy, arguments)))
        where = f"{name}: case {number} (arguments: {_describe(arguments)})"
        if got.shape != want.shape:
            raise AssertionError(f"{where} returned shape {got.shape}, expected {want.shape}")
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            worst = np.unravel_index(np.abs(got.astype(float) - want).argmax(), got.shape)
            raise AssertionError(
                f"{where} differs from the library at index {tuple(map(int, worst))}: "
                f"yours {got[worst]:.6g}, expected {want[worst]:.6g}"
            )
    print(f"correct: {name} matches the library on {len(cases)} random cases")


def _gpi_values(psis: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Q_GPI(s, a) = max_i psi_i(s, a)^T w, from psis (n, S, A, d) and w (d,): shape (S, A)."""
    return gpi(psis, w)[0]


def _knn_reward(particles: torch.Tensor, k: int) -> torch.Tensor:
    """r_i = log(1 + (1/k) sum of the distances from particle i to its k nearest *other* particles)."""
    return particle_entropy_reward(particles, particles, k, exclude_self=True)


def _gpi_action(psi: torch.Tensor, w: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """a = argmax_a max_i psi_i(s, a)^T w: every candidate scored under w (its own z_i is not used)."""
    return gpi_action_values(psi, w).argmax(dim=1)


_REFERENCES: dict[str, Callable] = {
    "gpi": _gpi_values,
    "knn_reward": _knn_reward,
    "infer_task": infer_task,
    "gpi_action": _gpi_action,
    "sf_td_target": sf_td_target,
    "shift": shift,
}


def solution(name: str) -> Callable:
    """The library's answer to exercise `name`, with the signature its checker expects."""
    if name not in _REFERENCES:
        raise ValueError(f"unknown exercise {name!r}; valid names: {', '.join(_REFERENCES)}")
    return _REFERENCES[name]


def check_gpi(your_gpi: Callable[[np.ndarray, np.ndarray], np.ndarray], seed: int = 0) -> None:
    """Exercise (notebook 01): Q_GPI(s, a) = max_i psi_i(s, a)^T w, from psis (n, S, A, d) and w (d,)."""
    rng = np.random.default_rng(seed)
    cases = [(rng.normal(size=(n, 7, 4, d)), rng.normal(size=d)) for n, d in [(1, 2), (3, 3), (5, 4)]]
    check_against_reference("GPI action values", your_gpi, _gpi_values, cases)


def check_knn_reward(your_reward: Callable[[torch.Tensor, int], torch.Tensor], seed: int = 0) -> None:
    """Exercise (notebook 03): fn(particles (N, d), k) -> (N,) rewards
    r_i = log(1 + (1/k) sum_{j in N_k(i)} ||p_i - p_j||), N_k(i) the k nearest particles other than i.

    Cases include k = N - 1 and duplicated particles: a copy of p_i elsewhere in the set is another
    particle at distance 0 and counts; only p_i itself does not.
    """
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for n, d, k in [(8, 2, 3), (20, 5, 1), (6, 3, 5), (15, 2, 10)]:
        cases.append((torch.randn(n, d, generator=generator, dtype=torch.float64), k))
    base = torch.randn(6, 2, generator=generator, dtype=torch.float64)
    cases.append((torch.cat([base, base[:3], base[:1]]), 3))  # duplicates
    check_against_reference("kNN particle reward", your_reward, _knn_reward, cases)


def check_infer_task(your_infer_task: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                     seed: int = 0) -> None:
    """Exercise (notebook 02): fn(features (N, d), rewards (N,)) -> the unit task vector
    w = v / ||v||, v = argmin_v ||features @ v - rewards||^2 (rewards regressed on the features).

    The features are correlated, as learned phi(s) are; then regressing the other way round (features
    on rewards) gives a different direction.
    """
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for n, d, noise in [(50, 2, 0.1), (200, 5, 0.1), (5, 5, 0.0), (100, 3, 0.0)]:
        mixing = torch.eye(d, dtype=torch.float64) + 0.8 * torch.ones(d, d, dtype=torch.float64)
        features = torch.randn(n, d, generator=generator, dtype=torch.float64) @ mixing
        v = torch.randn(d, generator=generator, dtype=torch.float64) * 3
        rewards = features @ v + noise * torch.randn(n, generator=generator, dtype=torch.float64)
        cases.append((features, rewards))
    check_against_reference("task inference", your_infer_task, infer_task, cases)


def _untied_gpi_case(batch: int, candidates: int, actions: int, d: int,
                     generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """psi (B, C, A, d), w (B, d), z (B, C, d) with z[:, 0] = w, redrawn until every greedy action wins
    by a margin (no ties, so rounding cannot change the answer)."""
    while True:
        psi = torch.randn(batch, candidates, actions, d, generator=generator, dtype=torch.float64)
        w = torch.randn(batch, d, generator=generator, dtype=torch.float64)
        w = w / w.norm(dim=1, keepdim=True)
        z = torch.randn(batch, candidates, d, generator=generator, dtype=torch.float64)
        z = torch.cat([w[:, None], z[:, 1:] / z[:, 1:].norm(dim=2, keepdim=True)], dim=1)
        top2 = gpi_action_values(psi, w).topk(2, dim=1).values
        if (top2[:, 0] - top2[:, 1]).min() > 1e-3:
            return psi, w, z


def check_gpi_action(your_gpi_action: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
                     seed: int = 0) -> None:
    """Exercise: fn(psi (B, C, A, d), w (B, d), z (B, C, d)) -> greedy actions (B,)
    a = argmax_a max_i psi_i(s, a)^T w.

    psi_i = psi(s, ., z_i) is the successor features of the policy for candidate task z_i (z_0 = w, the
    others sampled). GPI asks which policy does best on the task at hand, w; z is given so that you
    can notice it is not needed.
    """
    generator = torch.Generator().manual_seed(seed)
    shapes = [(4, 3, 4, 5), (1, 1, 2, 2), (16, 11, 4, 5), (8, 5, 6, 3)]
    cases = [_untied_gpi_case(*shape, generator) for shape in shapes]
    check_against_reference("GPI greedy actions", your_gpi_action, _gpi_action, cases)


def check_sf_td_target(your_target: Callable[..., torch.Tensor], seed: int = 0) -> None:
    """Exercise: fn(base, reward, w, mask, gamma, boot_psi, boot_steps, alive) ->
    the n-step successor-feature TD target y (B, d):

    c_i = base_i + (r_i - base_i^T w) w,    y = sum_{i<n} gamma^i mask_i c_i + gamma^m alive boot_psi

    base (B, n, d) float, reward (B, n) float, w (B, d) unit rows, mask (B, n) bool (true on the first
    m steps), gamma float, boot_psi (B, d) float, boot_steps (B,) int = m, alive (B,) bool.
    """
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for batch, n, d, gamma, zero_base in [(6, 5, 5, 0.95, False), (1, 1, 2, 0.9, False),
                                          (8, 3, 4, 0.5, True), (32, 10, 5, 0.99, False)]:
        base = torch.zeros(batch, n, d, dtype=torch.float64) if zero_base else \
            torch.randn(batch, n, d, generator=generator, dtype=torch.float64)
        reward = torch.randn(batch, n, generator=generator, dtype=torch.float64)
        w = torch.randn(batch, d, generator=generator, dtype=torch.float64)
        w = w / w.norm(dim=1, keepdim=True)
        steps = torch.randint(1, n + 1, (batch,), generator=generator)
        steps[0] = max(1, n - 1)  # at least one short window when n > 1
        mask = torch.arange(n)[None] < steps[:, None]
        boot_psi = torch.randn(batch, d, generator=generator, dtype=torch.float64)
        alive = torch.rand(batch, generator=generator) < 0.7
        alive[0], alive[-1] = True, batch == 1  # when B > 1, the last window ends in a terminal state
        cases.append((base, reward, w, mask, gamma, boot_psi, steps, alive))
    check_against_reference("SF TD target", your_target, sf_td_target, cases, atol=1e-6)


def check_shift(your_shift: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
                seed: int = 0) -> None:
    """Exercise (notebook 06): fn(x (B, S, H, W), dy (B,), dx (B,), pad) -> the random shift of each image
    stack x[b] by its offsets: pad every side by `pad` copies of the border pixels, then crop the H x W
    window whose top-left corner is (dy[b], dx[b]) in the padded image (0 <= dy, dx <= 2 pad), so that
    out[b, :, i, j] = x[b, :, clip(i + dy[b] - pad, 0, H-1), clip(j + dx[b] - pad, 0, W-1)].

    Cases: uint8 frames and floats, non-square images, pad 0, and the extreme offsets 0 and 2 pad (a
    shift by the whole pad, where the replicated border fills a 4-pixel band).
    """
    generator = torch.Generator().manual_seed(seed)
    cases = []
    shapes = [(3, 4, 12, 12, 4, torch.uint8), (1, 1, 7, 9, 2, torch.float64), (5, 2, 10, 6, 0, torch.float64),
              (8, 4, 84, 84, 4, torch.uint8)]
    for batch, stack, height, width, pad, dtype in shapes:
        if dtype == torch.uint8:
            x = torch.randint(256, (batch, stack, height, width), generator=generator, dtype=torch.uint8)
        else:
            x = torch.randn(batch, stack, height, width, generator=generator, dtype=dtype)
        dy, dx = torch.randint(2 * pad + 1, (2, batch), generator=generator)
        dy[0], dx[-1] = 0, 2 * pad  # the extreme offsets
        cases.append((x, dy, dx, pad))
    check_against_reference("random shift", your_shift, shift, cases)
