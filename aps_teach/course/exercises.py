"""Checkers for the notebooks' exercises that coach: your function against the library's, on random inputs.

`check_<name>(your_fn)` prints one line and returns the function the rest of the notebook uses:

* your_fn raises NotImplementedError (the starter): "not attempted yet", returns the library's answer;
* it differs from the library (`np.allclose`) on some case: one line naming the likely mistake when
  your outputs equal those of a known wrong variant on every case, or saying that they agree with the
  library's only to float32 precision (`FLOAT32_TOLERANCE`: the computation lost float64 somewhere),
  returns the library's answer;
* it raises anything else: one line with the exception, no traceback, returns the library's answer;
* it runs past `CASE_SECONDS` on a case (an endless loop): one line, returns the library's answer;
* it matches on every case: "<name>: correct", returns your_fn.

So Run All always works, solved or not. `failing_case(name)` gives the inputs of the first case your
last attempt got wrong, to call your function on: `my_fn(*exercises.failing_case("infer_task"))`.
The inputs are drawn with a fixed seed, in several shapes, edge cases included. After trying,
`solution(name)` shows a worked solution (`aps_teach/course/solutions.py`) and returns it. The pattern:

    def my_infer_task(features, rewards):
        raise NotImplementedError  # your code

    infer_task = exercises.check_infer_task(my_infer_task)
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from aps_teach.atari.augment import shift
from aps_teach.course import solutions
from aps_teach.grid.tabular import gpi as tabular_gpi
from aps_teach.learner.rewards import particle_entropy_reward, vmf_loss, vmf_reward
from aps_teach.learner.tasks import infer_task, q_values
from aps_teach.learner.update import sf_td_target

CASE_SECONDS = 10.0
"""How long your function may take on one case before its check gives up: the library's answer takes
milliseconds on these small inputs, so ten seconds is an endless loop (or code far too slow to train with)."""
FALLBACK = "using the library's answer until yours passes; exercises.failing_case('{name}') gives the inputs"
KEPT = "training with yours all the same; exercises.failing_case('{name}') gives the inputs"
FLOAT32_TOLERANCE = 1e-3
"""A wrong answer whose every output lies within this of the library's (relative to the case's largest
output, or absolute below 1) is the right computation at float32 precision: float32 rounding moves these
answers by 1e-8 to 1e-4, every known mistake by 0.04 or more."""
PRECISION = ("the right computation at float32 precision (largest difference {difference:.1e}): the inputs "
             "are float64, keep them so (no .float() or np.float32 on the way)")
ATTEMPTS = {"one line": 1.5, "function": 2, "derivation": 3}
"""Expected attempts at one exercise, by kind: each a try written and run against the checker, the first
included. A one-line function (its formula stated beside it) is right first time for about half of learners,
a slip (a sign, a transpose) costing the rest one more try; a function of several steps (shapes to get right,
a neighbour to leave out) takes a second; the n-step successor-feature target, whose formula must first be
derived from the text, a third. Judgement, not measurement: only the product `MINUTES` was timed (below)."""
MINUTES_PER_ATTEMPT = {"one line": 4, "function": 8, "derivation": 12}
"""A learner's minutes per attempt, by kind: reading the task and the coaching line, writing or mending the
code, running the check (the checking cell's compute is counted apart, `build.exercise_minutes`)."""
MINUTES = {kind: ATTEMPTS[kind] * MINUTES_PER_ATTEMPT[kind] for kind in ATTEMPTS}
"""A learner's time on one exercise, by kind: expected attempts times minutes per attempt (6, 16 and 36).
Checked against the one timed read of the course, a learner's read of all 22 notebooks recorded in issue 58:
the n-step target (a derivation) took 25-45 minutes, 36 here; the capstone's two functions (a function and a
one-line one) with their retraining 20-35, 22 here before the retraining (`build.exercise_minutes`). The
course's study times count these (`build.Section.minutes`)."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: the library's answer, the cases it is checked on, and the wrong answers it recognises."""

    name: str
    reference: Callable
    """The library's answer, with the signature the exercise asks for."""
    cases: Callable[[int], list[tuple]]
    """seed -> argument tuples to call both functions on."""
    mistakes: tuple[tuple[str, Callable], ...]
    """(what the mistake is, a function making it); a wrong answer equal to one of them on every case is
    named. Several functions may share a description (two ways of making one mistake)."""
    kind: str
    """How much it asks of a learner: a key of `MINUTES` (and of `ATTEMPTS`)."""
    atol: float = 1e-8

    def __post_init__(self) -> None:
        if self.kind not in MINUTES:
            raise ValueError(f"exercise {self.name!r}: kind {self.kind!r} is not one of {', '.join(MINUTES)}")

    @property
    def attempts(self) -> float:
        """The attempts a learner is expected to make at it (`ATTEMPTS`)."""
        return ATTEMPTS[self.kind]

    @property
    def minutes(self) -> float:
        """A learner's time on it, its attempts included (`MINUTES`), its checking cell's compute left out."""
        return MINUTES[self.kind]


class CaseTimeout(BaseException):
    """Your function ran past `CASE_SECONDS` on a case (a BaseException, so that an `except Exception` in
    it does not keep it running)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Inside, Python code still running after `seconds` raises `CaseTimeout` (SIGALRM, in the main thread
    of a Unix process, where a notebook's kernel runs its cells; elsewhere there is no limit)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame) -> None:
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_failing: dict[str, tuple | None] = {}
"""Exercise name -> inputs of the first failing case of its last check (None when it passed)."""


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


def _same(got: np.ndarray, want: np.ndarray, atol: float) -> bool:
    try:
        return got.shape == want.shape and np.allclose(got.astype(float), want.astype(float), atol=atol)
    except (TypeError, ValueError):  # not numbers (e.g. None or strings): not the same
        return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _recognised_mistake(exercise: Exercise, cases: list[tuple], outputs: list[np.ndarray]) -> str | None:
    """The description of the first known mistake whose outputs equal `outputs` on every case."""
    for description, wrong in exercise.mistakes:
        try:
            if all(_same(out, _as_array(wrong(*map(_copy, args))), exercise.atol)
                   for args, out in zip(cases, outputs, strict=True)):
                return description
        except Exception:  # a wrong variant that cannot run on some case just does not match
            continue
    return None


def _float32_only(outputs: list[np.ndarray], wants: list[np.ndarray]) -> float | None:
    """The largest difference when every output is the library's to float32 precision
    (`FLOAT32_TOLERANCE`), else None."""
    largest = 0.0
    for got, want in zip(outputs, wants, strict=True):
        try:
            if got.shape != want.shape:
                return None
            difference = np.abs(got.astype(float) - want.astype(float))
        except (TypeError, ValueError):
            return None
        scale = max(1.0, float(np.abs(want.astype(float)).max(initial=0.0)))
        if not np.all(np.isfinite(difference)) or difference.max(initial=0.0) > FLOAT32_TOLERANCE * scale:
            return None
        largest = max(largest, float(difference.max(initial=0.0)))
    return largest


def _difference(got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape:
        return f"returned shape {got.shape}, expected {want.shape}"
    if not np.issubdtype(got.dtype, np.number) and got.dtype != bool:
        return f"returned {got.dtype} values, expected numbers"
    gaps = np.abs(got.astype(float) - want.astype(float))
    worst = np.unravel_index(np.nan_to_num(gaps, nan=np.inf).argmax(), got.shape)
    return (f"at index {tuple(map(int, worst))} yours is {float(got[worst]):.6g}, "
            f"the library's {float(want[worst]):.6g} (a difference of {float(gaps[worst]):.2g})")


def check(exercise: Exercise, yours: Callable, seed: int = 0, keep_yours: bool = False) -> Callable:
    """Run `yours` and the library's answer on every case of `exercise`; print one line; return the
    function to use from here on (yours when correct, else the library's; with `keep_yours`, yours
    whenever it runs, right or wrong, as the capstone trains on it)."""
    name, cases = exercise.name, exercise.cases(seed)
    fallback = FALLBACK.format(name=name)
    wrong_fallback = KEPT.format(name=name) if keep_yours else fallback
    _failing[name] = None
    outputs, wants, first_wrong = [], [], None
    for number, arguments in enumerate(cases):
        try:
            with _time_limit(CASE_SECONDS):
                got = _as_array(yours(*map(_copy, arguments)))
        except NotImplementedError:
            print(f"{name}: not attempted yet: using the library's answer")
            return exercise.reference
        except CaseTimeout:
            _failing[name] = tuple(map(_copy, arguments))
            print(f"{name}: case {number} did not return within {CASE_SECONDS:g} s (an endless loop?); "
                  f"{fallback}")
            return exercise.reference
        except Exception as error:
            _failing[name] = tuple(map(_copy, arguments))
            print(f"{name}: case {number} raised {_first_line(error)}; {fallback}")
            return exercise.reference
        want = _as_array(exercise.reference(*map(_copy, arguments)))
        outputs.append(got)
        wants.append(want)
        if first_wrong is None and not _same(got, want, exercise.atol):
            first_wrong = (number, got, want)
    if first_wrong is None:
        print(f"{name}: correct (matches the library on {len(cases)} random cases)")
        return yours
    number, got, want = first_wrong
    _failing[name] = tuple(map(_copy, cases[number]))
    mistake = _recognised_mistake(exercise, cases, outputs)
    precision = _float32_only(outputs, wants) if mistake is None else None
    if precision is not None:
        mistake = PRECISION.format(difference=precision)
    if mistake is not None:
        print(f"{name}: wrong, it looks like {mistake}; {wrong_fallback}")
    else:
        print(f"{name}: wrong on case {number}: {_difference(got, want)}; {wrong_fallback}")
    return yours if keep_yours else exercise.reference


def failing_case(name: str) -> tuple | None:
    """The inputs of the first failing case of the last `check_<name>` (None if it passed or was not
    attempted); call your function on them: `my_fn(*failing_case(name))`."""
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; valid names: {', '.join(EXERCISES)}")
    if name not in _failing:
        raise ValueError(f"check_{name} has not run yet in this session: run it first")
    case = _failing[name]
    return None if case is None else tuple(map(_copy, case))


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (JupyterLab, Colab, nbclient), where Markdown renders."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def solution(name: str) -> Callable:
    """Show a worked solution to exercise `name` (its source in `aps_teach/course/solutions.py`: a Markdown
    code block in a notebook, plain text elsewhere) and return it, so `my_gpi = exercises.solution("gpi")`
    solves the exercise. Look only after trying: the checker's coaching is worth more than the answer."""
    if name not in solutions.__all__:
        raise ValueError(f"no exercise named {name!r}; the exercises with a solution: "
                         f"{', '.join(solutions.__all__)}")
    function = getattr(solutions, name)
    source = inspect.getsource(function)
    title = f"A solution to the exercise {name} (from aps_teach/course/solutions.py):"
    if _in_notebook():
        from IPython.display import Markdown, display

        display(Markdown(f"{title}\n\n```python\n{source}```"))
    else:
        print(f"{title}\n\n{source}")
    return function


# GPI over tabular successor features (notebook 01) ---------------------------------------------------

def _gpi(psis: np.ndarray, w: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """Q_GPI(s, a) = max_i psi_i(s, a)^T w, from psis (n, S, A, d), w (d,); zs (n, d) is not needed."""
    return tabular_gpi(psis, w)[0]


def _gpi_cases(seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    cases = []
    for n, d in [(2, 2), (3, 3), (5, 4)]:
        zs = rng.normal(size=(n, d))
        zs = zs / np.linalg.norm(zs, axis=1)[:, None]
        cases.append((rng.normal(size=(n, 7, 4, d)), rng.normal(size=d), zs))
    return cases


GPI = Exercise("gpi", _gpi, _gpi_cases, (
    ("each policy scored under its own z_i (max_i psi_i^T z_i) instead of the task w at hand",
     lambda psis, w, zs: np.einsum("nsad,nd->nsa", psis, zs).max(axis=0)),
    ("the policies averaged instead of maxed over", lambda psis, w, zs: (psis @ w).mean(axis=0)),
    ("only the first policy used (no max over policies)", lambda psis, w, zs: psis[0] @ w),
), kind="one line")


# task inference (notebook 02a) -----------------------------------------------------------------------

def _infer_task_cases(seed: int) -> list[tuple]:
    """Correlated features, as learned phi(s) are: then the reversed regression gives another direction."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for n, d, noise in [(50, 2, 0.1), (200, 5, 0.1), (5, 5, 0.0), (100, 3, 0.0)]:
        mixing = torch.eye(d, dtype=torch.float64) + 0.8 * torch.ones(d, d, dtype=torch.float64)
        features = torch.randn(n, d, generator=generator, dtype=torch.float64) @ mixing
        v = torch.randn(d, generator=generator, dtype=torch.float64) * 3
        rewards = features @ v + noise * torch.randn(n, generator=generator, dtype=torch.float64)
        cases.append((features, rewards))
    return cases


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm()


INFER_TASK = Exercise("infer_task", infer_task, _infer_task_cases, (
    ("w not normalised to unit length (divide the least-squares solution by its norm)",
     lambda f, r: torch.linalg.pinv(f) @ r),
    ("the regression the wrong way round, lstsq(r, Phi) (features regressed on rewards): regress r on Phi",
     lambda f, r: _unit(f.T @ r)),
    ("the regression the wrong way round, lstsq(r, Phi) (features regressed on rewards): regress r on Phi",
     lambda f, r: f.T @ r / (r @ r)),
), kind="function")


# kNN particle reward (notebook 03) -------------------------------------------------------------------

def _knn_reward(particles: torch.Tensor, k: int) -> torch.Tensor:
    """r_i = log(1 + (1/k) sum of the distances from particle i to its k nearest *other* particles)."""
    return particle_entropy_reward(particles, particles, k, exclude_self=True)


def _knn_cases(seed: int) -> list[tuple]:
    """Includes k = N - 1 and duplicated particles: a copy of p_i elsewhere in the set is another particle
    at distance 0 and counts; only p_i itself does not."""
    generator = torch.Generator().manual_seed(seed)
    cases = [(torch.randn(n, d, generator=generator, dtype=torch.float64), k)
             for n, d, k in [(8, 2, 3), (20, 5, 1), (6, 3, 5), (15, 2, 10)]]
    base = torch.randn(6, 2, generator=generator, dtype=torch.float64)
    cases.append((torch.cat([base, base[:3], base[:1]]), 3))  # duplicates
    return cases


def _sorted_distances(particles: np.ndarray, include_self: bool) -> np.ndarray:
    """Row i: distances from particle i to the others (and itself, at 0, when include_self), ascending."""
    distances = np.sqrt(((particles[:, None] - particles[None]) ** 2).sum(-1))
    if not include_self:
        np.fill_diagonal(distances, np.inf)
    return np.sort(distances, axis=1)


def _knn_variant(transform: Callable, include_self: bool = False, reduce: Callable = np.mean,
                 drop_zeros: bool = False, squared: bool = False, farthest: bool = False, extra: int = 0
                 ) -> Callable:
    def wrong(particles, k):
        p = _as_array(particles)
        if drop_zeros:
            distances = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
            distances[distances == 0] = np.inf
            nearest = np.sort(distances, axis=1)[:, :k]
        elif squared:
            nearest = _sorted_distances(p, include_self)[:, :k] ** 2
        elif farthest:  # i itself (distance 0) among them only when k reaches it
            distances = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
            nearest = -np.sort(-distances, axis=1)[:, :k]
        else:
            nearest = _sorted_distances(p, include_self)[:, :k + extra]
        with np.errstate(divide="ignore"):
            return transform(reduce(nearest, axis=1))
    return wrong


KNN_REWARD = Exercise("knn_reward", _knn_reward, _knn_cases, (
    ("the particle counted as its own neighbour (at distance 0): leave particle i out of its k nearest",
     _knn_variant(np.log1p, include_self=True)),
    ("`log` instead of `log1p`: r = log(1 + mean distance), which stays finite at distance 0",
     _knn_variant(np.log)),
    ("`log` instead of `log1p`, and the particle counted as its own neighbour",
     _knn_variant(np.log, include_self=True)),
    ("the sum of the k distances instead of their mean", _knn_variant(np.log1p, reduce=np.sum)),
    ("every zero distance dropped, so duplicates of a particle were skipped too: leave out only i itself",
     _knn_variant(np.log1p, drop_zeros=True)),
    ("squared distances: take the square root of the summed squares (torch.cdist gives the distance)",
     _knn_variant(np.log1p, squared=True)),
    ("the k farthest particles, not the nearest: torch.topk picks the largest unless largest=False",
     _knn_variant(np.log1p, farthest=True)),
    ("the k + 1 nearest with i itself among them, averaged over k + 1: the mean over the k nearest others",
     _knn_variant(np.log1p, include_self=True, extra=1)),
    ("the distance to the k-th nearest alone: average the distances to all k nearest",
     _knn_variant(np.log1p, reduce=lambda nearest, axis: nearest[:, -1])),
    ("the log inside the mean, mean(log(1 + d)): average the k distances first, then log(1 + mean)",
     _knn_variant(np.asarray, reduce=lambda nearest, axis: np.log1p(nearest).mean(axis))),
), kind="function")


# successor-feature TD target (notebook 04a) ----------------------------------------------------------

def _td_cases(seed: int) -> list[tuple]:
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
    return cases


def _td_variant(mask_ignored=False, alive_ignored=False, bootstrap_n=False, zero_base=False, step_offset=0,
                bootstrap_offset=0, plus_reward=False, alive_everywhere=False) -> Callable:
    """The TD target y = sum_i gamma^i mask_i c_i + gamma^m alive boot_psi in loops, with one part wrong:
    step i discounted by gamma^(i + step_offset), the bootstrap by gamma^(m + bootstrap_offset), the cumulant
    base_i + r_i w (`plus_reward`), the whole target multiplied by alive (`alive_everywhere`)."""
    def wrong(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        base, reward, w, mask, boot_psi = map(_as_array, (base, reward, w, mask, boot_psi))
        steps, alive = _as_array(boot_steps), _as_array(alive)
        if zero_base:
            base = np.zeros_like(base)
        batch, n, _ = base.shape
        y = np.zeros_like(boot_psi)
        for b in range(batch):
            for i in range(n):
                if mask[b, i] or mask_ignored:
                    along_w = reward[b, i] if plus_reward else reward[b, i] - base[b, i] @ w[b]
                    y[b] += gamma ** (i + step_offset) * (base[b, i] + along_w * w[b])
            exponent = (n if bootstrap_n else int(steps[b])) + bootstrap_offset
            stops = 1.0 if alive_ignored or alive_everywhere else float(alive[b])
            y[b] += gamma**exponent * stops * boot_psi[b]
            if alive_everywhere:
                y[b] *= float(alive[b])
        return y
    return wrong


SF_TD_TARGET = Exercise("sf_td_target", sf_td_target, _td_cases, (
    ("a missing mask: the steps after the window's end (mask false) were summed too",
     _td_variant(mask_ignored=True)),
    ("a missing mask: bootstrapped after a terminal state (multiply by alive)",
     _td_variant(alive_ignored=True)),
    ("the bootstrap discounted by gamma^n for every window instead of gamma^m, m = boot_steps",
     _td_variant(bootstrap_n=True)),
    ("the cumulant r_i w instead of base_i + (r_i - base_i^T w) w (the phi part orthogonal to w dropped)",
     _td_variant(zero_base=True)),
    ("the discount off by one: the window's first step (i = 0) is discounted by gamma^0 = 1, step i by "
     "gamma^i", _td_variant(step_offset=1)),
    ("the discount off by one: the window's first step (i = 0) is discounted by gamma^0 = 1, step i by "
     "gamma^i", _td_variant(step_offset=1, bootstrap_offset=1)),
    ("the bootstrap's discount off by one: after m steps boot_psi is discounted by gamma^m, not "
     "gamma^(m - 1)", _td_variant(bootstrap_offset=-1)),
    ("the bootstrap's discount off by one: after m steps boot_psi is discounted by gamma^m, not "
     "gamma^(m + 1)", _td_variant(bootstrap_offset=1)),
    ("the cumulant base_i + r_i w: subtract base_i^T w along w, c_i = base_i + (r_i - base_i^T w) w, so that "
     "c_i^T w = r_i", _td_variant(plus_reward=True)),
    ("the whole target multiplied by alive: a terminal state stops the bootstrap only, the window's steps "
     "before it still count", _td_variant(alive_everywhere=True)),
), kind="derivation", atol=1e-6)


# random shift of frame stacks (notebook 06b) ---------------------------------------------------------

def _shift_cases(seed: int) -> list[tuple]:
    """uint8 frames and floats, non-square images, pad 0, and the extreme offsets 0 and 2 pad."""
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
    return cases


def _shift_variant(mode: str = "edge", swap=False, reverse=False, one_offset=False) -> Callable:
    """Pad (numpy mode `edge` = replicate, `constant` = zeros, `wrap` = torch.roll-like, `reflect` = mirror),
    then crop."""
    def wrong(x, dy, dx, pad):
        x, dy, dx = _as_array(x), _as_array(dy).astype(int), _as_array(dx).astype(int)
        if swap:
            dy, dx = dx, dy
        if reverse:
            dy, dx = 2 * pad - dy, 2 * pad - dx
        if one_offset:
            dy, dx = np.full_like(dy, dy[0]), np.full_like(dx, dx[0])
        h, w = x.shape[-2:]
        padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(pad, pad), (pad, pad)], mode=mode)
        return np.stack([padded[b, ..., dy[b]:dy[b] + h, dx[b]:dx[b] + w] for b in range(len(x))])
    return wrong


def _roll_variant(sign: int, offset: bool) -> Callable:
    """torch.roll of each image by sign * (dy - pad, dx - pad) (`offset`) or sign * (dy, dx)."""
    def wrong(x, dy, dx, pad):
        x, dy, dx = _as_array(x), _as_array(dy).astype(int), _as_array(dx).astype(int)
        by = pad if offset else 0
        return np.stack([np.roll(x[b], (sign * (dy[b] - by), sign * (dx[b] - by)), axis=(-2, -1))
                         for b in range(len(x))])
    return wrong


ROLL = "(and a roll wraps around where the shift copies the border pixels)"
SHIFT = Exercise("shift", shift, _shift_cases, (
    ("zero padding instead of copies of the border pixels", _shift_variant(mode="constant")),
    ("wrap-around (torch.roll) instead of copies of the border pixels", _shift_variant(mode="wrap")),
    ("dy and dx swapped (dy moves rows, dx columns)", _shift_variant(swap=True)),
    ("shifted the other way: crop at (dy, dx) in the padded image, not at (2 pad - dy, 2 pad - dx)",
     _shift_variant(reverse=True)),
    ("one shift for the whole batch: each image has its own (dy[b], dx[b])", _shift_variant(one_offset=True)),
    (f"torch.roll with the other sign: out[i] = x[i + dy - pad] is a roll by pad - dy, not dy - pad {ROLL}",
     _roll_variant(1, offset=True)),
    (f"torch.roll by (dy, dx): they are a crop's corner in the padded image, a shift by (pad - dy, pad - dx) "
     f"{ROLL}", _roll_variant(1, offset=False)),
    (f"torch.roll by (dy, dx): they are a crop's corner in the padded image, a shift by (pad - dy, pad - dx) "
     f"{ROLL}", _roll_variant(-1, offset=False)),
    ("mirrored padding (mode='reflect'): pad with copies of the border pixel itself (mode='replicate', "
     "np.pad's 'edge')", _shift_variant(mode="reflect")),
), kind="function")


# APS's reward and vMF loss (notebook 04d's capstone, `aps_teach.course.capstone`) ---------------------------

def _aps_reward(phi: torch.Tensor, w: torch.Tensor, h: torch.Tensor, k: int) -> torch.Tensor:
    """Eq. 6 on a batch of states: r_i = phi_i^T w_i + log(1 + (1/k) sum_{j in N_k(i)} ||h_i - h_j||)."""
    return vmf_reward(phi, w) + particle_entropy_reward(h, h, k, exclude_self=True)


def _unit_rows(n: int, d: int, generator: torch.Generator) -> torch.Tensor:
    return F.normalize(torch.randn(n, d, generator=generator, dtype=torch.float64), dim=1)


def _aps_reward_cases(seed: int) -> list[tuple]:
    """Unit phi and w rows; h in another dimension than phi (APT's encoder) or phi itself (shared)."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for n, d, d_h, k in [(8, 4, 3, 3), (20, 16, 16, 10), (6, 2, 5, 5), (12, 3, 2, 1)]:
        cases.append((_unit_rows(n, d, generator), _unit_rows(n, d, generator),
                      torch.randn(n, d_h, generator=generator, dtype=torch.float64), k))
    phi = _unit_rows(10, 4, generator)
    cases.append((phi, _unit_rows(10, 4, generator), phi.clone(), 4))  # h = phi, the shared encoder
    return cases


def _exploit(phi: torch.Tensor, w: torch.Tensor) -> np.ndarray:
    return _as_array(vmf_reward(phi, w))


APS_REWARD = Exercise("aps_reward", _aps_reward, _aps_reward_cases, (
    ("the exploration term alone (APT's reward): add the exploitation term phi(s')^T w",
     lambda phi, w, h, k: _knn_variant(np.log1p)(h, k)),
    ("the exploitation term alone (VISR's reward): add the kNN exploration term on h",
     lambda phi, w, h, k: _exploit(phi, w)),
    ("each state counted among its own k nearest neighbours: leave state i out of N_k(i)",
     lambda phi, w, h, k: _exploit(phi, w) + _knn_variant(np.log1p, include_self=True)(h, k)),
    ("the mean distance without the log(1 + .): the kNN term is log(1 + mean distance)",
     lambda phi, w, h, k: _exploit(phi, w) + _knn_variant(np.asarray)(h, k)),
    ("the kNN term measured on phi instead of h: measure distances in h",
     lambda phi, w, h, k: _exploit(phi, w) + _knn_variant(np.log1p)(phi, k)),
    ("`log` instead of `log1p` in the kNN term: it is log(1 + mean distance)",
     lambda phi, w, h, k: _exploit(phi, w) + _knn_variant(np.log)(h, k)),
), kind="function")


def _vmf_loss_cases(seed: int) -> list[tuple]:
    generator = torch.Generator().manual_seed(seed)
    return [(_unit_rows(n, d, generator), _unit_rows(n, d, generator)) for n, d in [(8, 4), (32, 16), (5, 2)]]


VMF_LOSS = Exercise("vmf_loss", vmf_loss, _vmf_loss_cases, (
    ("the sign flipped: minimising the loss must raise phi(s')^T w, so the loss is its negative",
     lambda phi, w: vmf_reward(phi, w).mean()),
    ("a sum over the batch: average it, so the loss does not grow with the batch size",
     lambda phi, w: -vmf_reward(phi, w).sum()),
), kind="one line")


# The kNN reward as a successor feature of its own (notebook 04e) ---------------------------------------

def _knn_feature_q(psi: torch.Tensor, w: torch.Tensor, beta: torch.Tensor, exploit_weight: float,
                   explore_weight: float) -> torch.Tensor:
    """Q(s, a) = psi(s, a)^T (exploit_weight w, beta explore_weight), psi (B, A, d + 1), w (B, d), beta (B,):
    `Learner.task_weights` and `learner.tasks.q_values`."""
    weights = torch.cat([exploit_weight * w, (beta * explore_weight)[:, None]], dim=-1)
    return q_values(psi, weights[:, None])


def _knn_feature_cases(seed: int) -> list[tuple]:
    """psi with d + 1 columns, unit w, beta in [0, 1] (0: a task, as zero-shot acts), both weights."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    sizes = [(5, 4, 3, 1.0, 1.0), (8, 4, 16, 1.0, 0.5), (3, 6, 2, 2.0, 3.0), (6, 4, 5, 0.5, 1.0)]
    for batch, actions, d, exploit, explore in sizes:
        beta = torch.rand(batch, generator=generator, dtype=torch.float64)
        beta[0] = 0.0  # a task: the exploration column weighs nothing
        cases.append((torch.randn(batch, actions, d + 1, generator=generator, dtype=torch.float64),
                      _unit_rows(batch, d, generator), beta, exploit, explore))
    return cases


KNN_FEATURE_Q = Exercise("knn_feature_q", _knn_feature_q, _knn_feature_cases, (
    ("psi with d outputs, the kNN column dropped: psi has d + 1 columns, the last the kNN reward's own "
     "successor feature, weighted by beta * explore_weight",
     lambda psi, w, beta, a, b: q_values(psi[..., :-1], (a * w)[:, None])),
    ("beta ignored: the kNN column weighs beta * explore_weight (beta = 0 on a task), not explore_weight "
     "alone", lambda psi, w, beta, a, b: _knn_feature_q(psi, w, torch.ones_like(beta), a, b)),
    ("the weights swapped: exploit_weight goes with w, explore_weight with the kNN column",
     lambda psi, w, beta, a, b: _knn_feature_q(psi, w, beta, b, a)),
    ("the kNN column weighed 1: it weighs beta * explore_weight",
     lambda psi, w, beta, a, b: q_values(psi[..., :-1], (a * w)[:, None]) + psi[..., -1]),
), kind="function")


EXERCISES: dict[str, Exercise] = {e.name: e for e in (GPI, INFER_TASK, KNN_REWARD, SF_TD_TARGET, APS_REWARD,
                                                      VMF_LOSS, KNN_FEATURE_Q, SHIFT)}


def check_gpi(your_gpi: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
              seed: int = 0) -> Callable:
    """Exercise (notebook 01): fn(psis (n, S, A, d), w (d,), zs (n, d)) -> Q_GPI (S, A),
    Q_GPI(s, a) = max_i psi_i(s, a)^T w; zs[i] is the task policy i was trained for."""
    return check(GPI, your_gpi, seed)


def check_infer_task(your_infer_task: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                     seed: int = 0) -> Callable:
    """Exercise (notebook 02a): fn(features (N, d), rewards (N,)) -> the unit task vector
    w = v / ||v||, v = argmin_v ||features @ v - rewards||^2 (rewards regressed on the features)."""
    return check(INFER_TASK, your_infer_task, seed)


def check_knn_reward(your_reward: Callable[[torch.Tensor, int], torch.Tensor], seed: int = 0) -> Callable:
    """Exercise (notebook 03): fn(particles (N, d), k) -> (N,) rewards
    r_i = log(1 + (1/k) sum_{j in N_k(i)} ||p_i - p_j||), N_k(i) the k nearest particles other than i."""
    return check(KNN_REWARD, your_reward, seed)


def check_sf_td_target(your_target: Callable[..., torch.Tensor], seed: int = 0) -> Callable:
    """Exercise (notebook 04a): fn(base, reward, w, mask, gamma, boot_psi, boot_steps, alive) -> the n-step
    successor-feature TD target y (B, d):

    c_i = base_i + (r_i - base_i^T w) w,    y = sum_{i<n} gamma^i mask_i c_i + gamma^m alive boot_psi

    base (B, n, d) float, reward (B, n) float, w (B, d) unit rows, mask (B, n) bool (true on the first
    m steps), gamma float, boot_psi (B, d) float, boot_steps (B,) int = m, alive (B,) bool.
    """
    return check(SF_TD_TARGET, your_target, seed)


def check_aps_reward(your_reward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
                     seed: int = 0) -> Callable:
    """Exercise (notebook 04d's capstone): fn(phi (B, d), w (B, d), h (B, d_h), k) -> (B,) rewards, Eq. 6
    with both weights 1: r_i = phi_i^T w_i + log(1 + (1/k) sum_{j in N_k(i)} ||h_i - h_j||), N_k(i) the
    k rows of h nearest to row i other than i. `capstone.train_your_aps` trains an agent on it."""
    return check(APS_REWARD, your_reward, seed)


def check_vmf_loss(your_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                   seed: int = 0) -> Callable:
    """Exercise (notebook 04d's capstone): fn(phi (B, d), w (B, d)) -> the vMF loss, a scalar:
    -(1/B) sum_i phi_i^T w_i (Eq. 5 up to a constant)."""
    return check(VMF_LOSS, your_loss, seed)


def check_knn_feature_q(your_q: Callable[..., torch.Tensor], seed: int = 0) -> Callable:
    """Exercise (notebook 04e): fn(psi (B, A, d + 1), w (B, d), beta (B,), exploit_weight, explore_weight) ->
    Q (B, A), the values of APS with the kNN reward as a successor feature of its own:
    Q(s, a) = psi(s, a)[:d]^T (exploit_weight w) + psi(s, a)[d] beta explore_weight (beta = 1 while
    pretraining the kNN-feature variant, drawn in [0, 1] for the explore-conditioned one, 0 on a task)."""
    return check(KNN_FEATURE_Q, your_q, seed)


def check_shift(your_shift: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
                seed: int = 0) -> Callable:
    """Exercise (notebook 06b): fn(x (B, S, H, W), dy (B,), dx (B,), pad) -> each stack x[b] padded on every
    side by `pad` copies of its border pixels, then cropped to the H x W window whose top-left corner is
    (dy[b], dx[b]) in the padded image:
    out[b, :, i, j] = x[b, :, clip(i + dy[b] - pad), clip(j + dx[b] - pad)]."""
    return check(SHIFT, your_shift, seed)
