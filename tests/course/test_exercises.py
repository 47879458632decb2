"""The exercise checkers coach: a correct answer passes and is returned; the starter falls back to the
library's answer; a wrong answer written the way a learner would write it is named in one line, falls
back, and leaves its inputs in `failing_case`."""

import numpy as np
import pytest
import torch

from aps_teach.course import exercises
from aps_teach.course.exercises import (
    check_aps_reward,
    check_gpi,
    check_infer_task,
    check_knn_feature_q,
    check_knn_reward,
    check_sf_td_target,
    check_shift,
    check_vmf_loss,
    failing_case,
)

FALLBACK = "using the library's answer until yours passes; exercises.failing_case('{}') gives the inputs"


def _one_line(capsys) -> str:
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return out.strip()


def assert_correct(capsys, check, name, answer):
    assert check(answer) is answer
    assert _one_line(capsys).startswith(f"{name}: correct (matches the library on ")
    assert failing_case(name) is None


def assert_named(capsys, check, name, answer, words):
    """The checker rejects `answer` in one line naming the mistake, returns the library's answer and
    keeps the failing inputs, on which `answer` and the library's answer really differ."""
    returned = check(answer)
    line = _one_line(capsys)
    assert line.startswith(f"{name}: wrong, it looks like ") and words in line, line
    assert line.endswith(FALLBACK.format(name)), line
    assert returned is exercises.EXERCISES[name].reference
    case = failing_case(name)
    ours = exercises._as_array(answer(*case))
    library = exercises._as_array(returned(*case))
    assert ours.shape != library.shape or not np.allclose(ours, library)


def test_starter_falls_back_to_the_library(capsys):
    def starter(*args):
        raise NotImplementedError  # your code

    for name, exercise in exercises.EXERCISES.items():
        returned = getattr(exercises, f"check_{name}")(starter)
        assert _one_line(capsys) == f"{name}: not attempted yet: using the library's answer"
        assert returned is exercise.reference
        assert failing_case(name) is None


def test_an_exception_is_one_line_and_falls_back(capsys):
    def broken(features, rewards):
        return features @ rewards  # shapes (N, d) @ (N,): a RuntimeError

    assert check_infer_task(broken) is exercises.infer_task
    line = _one_line(capsys)
    assert line.startswith("infer_task: case 0 raised RuntimeError: ") and "Traceback" not in line
    features, rewards = failing_case("infer_task")
    assert features.shape == (50, 2) and rewards.shape == (50,)


def test_an_unrecognised_wrong_answer_says_where_it_differs(capsys):
    check_infer_task(lambda features, rewards: -exercises.infer_task(features, rewards))  # sign flipped
    line = _one_line(capsys)
    assert line.startswith("infer_task: wrong on case 0: at index (") and "the library's" in line
    assert line.endswith(FALLBACK.format("infer_task"))


def test_a_wrong_shape_is_reported(capsys):
    check_gpi(lambda psis, w, zs: np.einsum("nsad,d->nsa", psis, w))  # forgot the max
    assert "returned shape (2, 7, 4), expected (7, 4)" in _one_line(capsys)


def test_returning_nothing_is_reported(capsys):
    check_knn_reward(lambda particles, k: None)  # forgot the return
    assert "returned shape (), expected (8,)" in _one_line(capsys)
    check_gpi(lambda psis, w, zs: np.full((7, 4), "x"))
    assert "returned <U1 values, expected numbers" in _one_line(capsys)


def test_failing_case_names_the_valid_exercises():
    with pytest.raises(ValueError, match="unknown exercise 'knn'.*knn_reward.*sf_td_target"):
        failing_case("knn")


def test_failing_case_returns_copies():
    check_gpi(lambda psis, w, zs: psis[0] @ w)
    first = failing_case("gpi")
    first[0][:] = 0
    assert np.abs(failing_case("gpi")[0]).sum() > 0


# GPI (notebook 01) ---------------------------------------------------------------------------------

def test_gpi(capsys):
    assert_correct(capsys, check_gpi, "gpi",
                   lambda psis, w, zs: np.einsum("nsad,d->nsa", psis, w).max(axis=0))
    assert_named(capsys, check_gpi, "gpi", lambda psis, w, zs: np.stack(
        [psis[i] @ zs[i] for i in range(len(psis))]).max(axis=0), "under its own z_i")
    assert_named(capsys, check_gpi, "gpi", lambda psis, w, zs: np.einsum("nsad,d->nsa", psis, w).mean(axis=0),
                 "averaged")


# task inference (notebook 02) ----------------------------------------------------------------------

def test_infer_task(capsys):
    def normal_equations(features, rewards):
        f, r = features.numpy(), rewards.numpy()
        v = np.linalg.solve(f.T @ f, f.T @ r)
        return v / np.linalg.norm(v)

    def wrong_way_round(features, rewards):  # design matrix = rewards
        v = torch.linalg.lstsq(rewards[:, None], features).solution[0]
        return v / v.norm()

    def wrong_way_round_unnormalised(features, rewards):
        return torch.linalg.lstsq(rewards[:, None], features).solution[0]

    def unnormalised(features, rewards):
        return torch.linalg.lstsq(features, rewards[:, None]).solution[:, 0]

    assert_correct(capsys, check_infer_task, "infer_task", normal_equations)
    assert_named(capsys, check_infer_task, "infer_task", wrong_way_round, "lstsq(r, Phi)")
    assert_named(capsys, check_infer_task, "infer_task", wrong_way_round_unnormalised, "lstsq(r, Phi)")
    assert_named(capsys, check_infer_task, "infer_task", unnormalised, "not normalised")


def test_infer_task_in_float32_is_named_as_a_precision_miss(capsys):
    """The normal equations in float32 are off by about 1e-6, past the checker's tolerance; the line says
    why (the generic one showed the same six digits twice) and how large the miss is."""
    def normal_equations_float32(features, rewards):
        f, r = features.float(), rewards.float()
        v = torch.linalg.solve(f.T @ f, f.T @ r)
        return v / v.norm()

    def numpy_float32(features, rewards):
        f, r = features.numpy().astype(np.float32), rewards.numpy().astype(np.float32)
        v = np.linalg.inv(f.T @ f) @ f.T @ r
        return v / np.linalg.norm(v)

    for answer in (normal_equations_float32, numpy_float32):
        assert_named(capsys, check_infer_task, "infer_task", answer, "the right computation at float32 "
                     "precision (largest difference ")
    check_infer_task(normal_equations_float32)
    difference = float(_one_line(capsys).split("largest difference ")[1].split(")")[0])
    assert 1e-7 < difference < exercises.FLOAT32_TOLERANCE


def test_a_wrong_answer_close_to_the_library_is_not_called_a_precision_miss(capsys):
    """A real mistake moves the answer by far more than float32 rounding: w normalised by its sum of
    absolute values differs by 0.006, and the line says where, not 'float32'."""
    def l1_normalised(features, rewards):
        v = torch.linalg.lstsq(features, rewards[:, None]).solution[:, 0]
        return v / v.abs().sum()

    check_infer_task(l1_normalised)
    line = _one_line(capsys)
    assert line.startswith("infer_task: wrong on case 0: at index (") and "float32" not in line
    assert "(a difference of 0.0062)" in line


# kNN particle reward (notebook 03) -----------------------------------------------------------------

def _knn_loops(particles, k):
    p = particles.numpy()
    rewards = []
    for i in range(len(p)):
        others = np.delete(p, i, axis=0)
        nearest = np.sort(np.sqrt(((others - p[i]) ** 2).sum(1)))[:k]
        rewards.append(np.log(1 + nearest.mean()))
    return np.array(rewards)


def test_knn_reward(capsys):
    def self_counted(particles, k):  # the point itself, at distance 0, is one of its k neighbours
        return torch.log1p(torch.cdist(particles, particles).topk(k, largest=False).values.mean(1))

    def plain_log(particles, k):
        dist = torch.cdist(particles, particles).fill_diagonal_(float("inf"))
        return torch.log(dist.topk(k, largest=False).values.mean(1))

    def zeros_dropped(particles, k):  # excludes self by dropping every zero distance: duplicates too
        dist = torch.cdist(particles, particles)
        dist[dist == 0] = float("inf")
        return torch.log1p(dist.topk(k, largest=False).values.mean(1))

    def summed(particles, k):
        dist = torch.cdist(particles, particles).fill_diagonal_(float("inf"))
        return torch.log1p(dist.topk(k, largest=False).values.sum(1))

    assert_correct(capsys, check_knn_reward, "knn_reward", _knn_loops)
    assert_named(capsys, check_knn_reward, "knn_reward", self_counted, "counted as its own neighbour")
    assert_named(capsys, check_knn_reward, "knn_reward", plain_log, "`log` instead of `log1p`")
    assert_named(capsys, check_knn_reward, "knn_reward", zeros_dropped, "duplicates")
    assert failing_case("knn_reward")[0].shape == (10, 2)  # only the duplicates case catches it
    assert_named(capsys, check_knn_reward, "knn_reward", summed, "sum of the k distances")

    def squared(particles, k):
        dist = ((particles[:, None] - particles[None]) ** 2).sum(-1).fill_diagonal_(float("inf"))
        return torch.log1p(dist.topk(k, largest=False).values.mean(1))

    def farthest(particles, k):  # torch.topk's default: the largest
        return torch.log1p(torch.cdist(particles, particles).topk(k).values.mean(1))

    def k_plus_one(particles, k):  # i itself among its k + 1 nearest, averaged over all of them
        return torch.log1p(torch.cdist(particles, particles).topk(k + 1, largest=False).values.mean(1))

    def kth_only(particles, k):
        dist = torch.cdist(particles, particles).fill_diagonal_(float("inf"))
        return torch.log1p(dist.topk(k, largest=False).values[:, -1])

    assert_named(capsys, check_knn_reward, "knn_reward", squared, "squared distances")
    assert_named(capsys, check_knn_reward, "knn_reward", farthest, "torch.topk picks the largest")
    assert_named(capsys, check_knn_reward, "knn_reward", k_plus_one, "the k + 1 nearest with i itself")
    assert_named(capsys, check_knn_reward, "knn_reward", kth_only, "the k-th nearest alone")

    def log_inside(particles, k):  # the mean of log(1 + d) over the k nearest, not log(1 + mean d)
        dist = torch.cdist(particles, particles).fill_diagonal_(float("inf"))
        return torch.log1p(dist.topk(k, largest=False).values).mean(1)

    assert_named(capsys, check_knn_reward, "knn_reward", log_inside, "the log inside the mean")


# successor-feature TD target (notebook 04) ---------------------------------------------------------

def _td(base, reward, w, mask, gamma, boot_psi, boot_exponent, alive):
    """Vectorised, in torch, as a learner would write it; the pieces passed in decide what is wrong."""
    cumulant = base + (reward - (base * w[:, None]).sum(-1))[..., None] * w[:, None]
    discount = gamma ** torch.arange(base.shape[1], dtype=torch.float64)
    ret = (discount[None, :, None] * mask[..., None] * cumulant).sum(1)
    return ret + (gamma**boot_exponent * alive)[:, None] * boot_psi


def test_sf_td_target(capsys):
    def right(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, mask, gamma, boot_psi, boot_steps, alive)

    def mask_ignored(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, torch.ones_like(mask), gamma, boot_psi, boot_steps, alive)

    def alive_ignored(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, mask, gamma, boot_psi, boot_steps, torch.ones_like(alive))

    def gamma_to_the_n(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, mask, gamma, boot_psi, base.shape[1], alive)

    def reward_times_w(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(torch.zeros_like(base), reward, w, mask, gamma, boot_psi, boot_steps, alive)

    assert_correct(capsys, check_sf_td_target, "sf_td_target", right)
    assert_named(capsys, check_sf_td_target, "sf_td_target", mask_ignored, "missing mask: the steps after")
    assert_named(capsys, check_sf_td_target, "sf_td_target", alive_ignored,
                 "missing mask: bootstrapped after a terminal")
    assert_named(capsys, check_sf_td_target, "sf_td_target", gamma_to_the_n, "gamma^n")
    assert_named(capsys, check_sf_td_target, "sf_td_target", reward_times_w, "cumulant r_i w")


def _td_discounts(base, reward, w, mask, gamma, boot_psi, boot_steps, alive, first=0, bootstrap=0):
    """The target with the window's steps discounted from gamma^first and the bootstrap by
    gamma^(m + bootstrap), in loops over the window as a learner numbering steps 1..m would write it."""
    cumulant = base + (reward - (base * w[:, None]).sum(-1))[..., None] * w[:, None]
    target = torch.zeros_like(boot_psi)
    for i in range(base.shape[1]):
        target += gamma ** (i + first) * mask[:, i, None] * cumulant[:, i]
    return target + (gamma ** (boot_steps + bootstrap) * alive)[:, None] * boot_psi


def test_sf_td_target_names_an_off_by_one_discount(capsys):
    words = {(1, 0): "the discount off by one: the window's first step (i = 0) is discounted by gamma^0 = 1",
             (1, 1): "the discount off by one: the window's first step (i = 0) is discounted by gamma^0 = 1",
             (0, -1): "the bootstrap's discount off by one: after m steps boot_psi is discounted by gamma^m, "
                      "not gamma^(m - 1)",
             (0, 1): "the bootstrap's discount off by one: after m steps boot_psi is discounted by gamma^m, "
                     "not gamma^(m + 1)"}
    assert_correct(capsys, check_sf_td_target, "sf_td_target",
                   lambda *args: _td_discounts(*args, first=0, bootstrap=0))
    for (first, bootstrap), said in words.items():
        assert_named(capsys, check_sf_td_target, "sf_td_target",
                     lambda *args, f=first, b=bootstrap: _td_discounts(*args, first=f, bootstrap=b), said)


def test_sf_td_target_names_the_cumulant_and_terminal_slips(capsys):
    def plus_reward(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        cumulant = base + reward[..., None] * w[:, None]  # base^T w not taken out along w
        discount = gamma ** torch.arange(base.shape[1], dtype=torch.float64)
        ret = (discount[None, :, None] * mask[..., None] * cumulant).sum(1)
        return ret + (gamma**boot_steps * alive)[:, None] * boot_psi

    def alive_everywhere(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        everything = _td(base, reward, w, mask, gamma, boot_psi, boot_steps, torch.ones_like(alive))
        return everything * alive[:, None]

    assert_named(capsys, check_sf_td_target, "sf_td_target", plus_reward, "the cumulant base_i + r_i w")
    assert_named(capsys, check_sf_td_target, "sf_td_target", alive_everywhere,
                 "the whole target multiplied by alive")


# random shift (notebook 06) ------------------------------------------------------------------------

def _shift_by_padding(x, dy, dx, pad, mode="replicate"):
    """The obvious answer, independent of the library's single gather: pad, then slice each image."""
    h, w = x.shape[-2:]
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad), mode=mode) if pad else x
    return torch.stack([padded[b, :, int(dy[b]):int(dy[b]) + h, int(dx[b]):int(dx[b]) + w]
                        for b in range(len(x))])


def _shift_by_loops(x, dy, dx, pad):
    """The formula cell by cell: out[b, :, i, j] = x[b, :, clip(i + dy - pad), clip(j + dx - pad)]."""
    h, w = x.shape[-2:]
    out = torch.empty_like(x)
    for b in range(len(x)):
        for i in range(h):
            for j in range(w):
                out[b, :, i, j] = x[b, :, min(max(i + int(dy[b]) - pad, 0), h - 1),
                                    min(max(j + int(dx[b]) - pad, 0), w - 1)]
    return out


def _shift_by_roll(x, dy, dx, pad):
    return torch.stack([torch.roll(x[b], (pad - int(dy[b]), pad - int(dx[b])), dims=(-2, -1))
                        for b in range(len(x))])


def test_shift(capsys):
    for answer in (_shift_by_padding, _shift_by_loops):
        assert_correct(capsys, check_shift, "shift", answer)
    wrong = {
        "zero padding": lambda x, dy, dx, pad: _shift_by_padding(x.double(), dy, dx, pad, mode="constant"),
        "wrap-around": _shift_by_roll,
        "dy and dx swapped": lambda x, dy, dx, pad: _shift_by_padding(x, dx, dy, pad),
        "shifted the other way": lambda x, dy, dx, pad: _shift_by_padding(x, 2 * pad - dy, 2 * pad - dx, pad),
        "one shift for the whole batch": lambda x, dy, dx, pad: _shift_by_padding(
            x, dy[:1].expand_as(dy), dx[:1].expand_as(dx), pad),
    }
    for words, answer in wrong.items():
        assert_named(capsys, check_shift, "shift", answer, words)


def _roll_by(x, dy, dx, shifts):
    return torch.stack([torch.roll(x[b], shifts(int(dy[b]), int(dx[b])), dims=(-2, -1))
                        for b in range(len(x))])


def test_shift_names_the_torch_roll_slips(capsys):
    """torch.roll by (pad - dy, pad - dx) is the wrap-around slip alone; with the other sign, or by the
    offsets themselves, the line names the roll's shift too."""
    wrong = {
        "torch.roll with the other sign: out[i] = x[i + dy - pad] is a roll by pad - dy, not dy - pad": (
            lambda x, dy, dx, pad: _roll_by(x, dy, dx, lambda y, z: (y - pad, z - pad))),
        "torch.roll by (dy, dx): they are a crop's corner in the padded image": (
            lambda x, dy, dx, pad: _roll_by(x, dy, dx, lambda y, z: (y, z))),
        "torch.roll by (dy, dx): they are a crop's corner": (
            lambda x, dy, dx, pad: _roll_by(x, dy, dx, lambda y, z: (-y, -z))),
        "mirrored padding (mode='reflect')": (
            lambda x, dy, dx, pad: _shift_by_padding(x.double(), dy, dx, pad, mode="reflect")),
    }
    for words, answer in wrong.items():
        assert_named(capsys, check_shift, "shift", answer, words)


# APS's reward and vMF loss (notebook 04d's capstone) ----------------------------------------------

def _aps_reward_loops(phi, w, h, k):
    """Eq. 6 state by state: phi_i . w_i plus log(1 + the mean of the k smallest distances to the others)."""
    phi, w, h = (np.asarray(x) for x in (phi, w, h))
    rewards = []
    for i in range(len(h)):
        others = sorted(float(np.sqrt(((h[i] - h[j]) ** 2).sum())) for j in range(len(h)) if j != i)
        rewards.append(float(phi[i] @ w[i]) + np.log(1 + sum(others[:k]) / k))
    return np.array(rewards)


def test_aps_reward(capsys):
    assert_correct(capsys, check_aps_reward, "aps_reward", _aps_reward_loops)
    wrong = {
        "the exploration term alone": lambda phi, w, h, k: torch.tensor(_aps_reward_loops(phi, w, h, k)) - (
            phi * w).sum(1),
        "the exploitation term alone": lambda phi, w, h, k: (phi * w).sum(1),
        "among its own k nearest": lambda phi, w, h, k: (phi * w).sum(1) + torch.log1p(
            torch.cdist(h, h).topk(k, 1, largest=False).values.mean(1)),
        "without the log(1 + .)": lambda phi, w, h, k: (phi * w).sum(1) + torch.expm1(
            torch.tensor(_aps_reward_loops(phi, w, h, k)) - (phi * w).sum(1)),
        "`log` instead of `log1p`": lambda phi, w, h, k: (phi * w).sum(1) + torch.log(
            torch.cdist(h, h).fill_diagonal_(float("inf")).topk(k, 1, largest=False).values.mean(1)),
    }
    for words, answer in wrong.items():
        assert_named(capsys, check_aps_reward, "aps_reward", answer, words)


# The kNN reward's own successor feature (notebook 04e) ----------------------------------------------------

def _knn_feature_q_loops(psi, w, beta, exploit_weight, explore_weight):
    """Q(s, a) action by action: the first d successor features against exploit_weight w, the last against
    beta explore_weight."""
    psi, w, beta = (np.asarray(x) for x in (psi, w, beta))
    d = w.shape[1]
    return np.array([[float(psi[i, a, :d] @ (exploit_weight * w[i])) + psi[i, a, d] * beta[i]
                      * explore_weight for a in range(psi.shape[1])] for i in range(len(w))])


def test_knn_feature_q(capsys):
    assert_correct(capsys, check_knn_feature_q, "knn_feature_q", _knn_feature_q_loops)
    wrong = {  # as a learner would get it wrong, written without the library
        "psi with d outputs": lambda psi, w, beta, a, b: (psi[..., :-1] * (a * w)[:, None]).sum(-1),
        "beta ignored": lambda psi, w, beta, a, b: (psi[..., :-1] * (a * w)[:, None]).sum(-1)
        + b * psi[..., -1],
        "the weights swapped": lambda psi, w, beta, a, b: torch.tensor(
            _knn_feature_q_loops(psi, w, beta, b, a)),
        "the kNN column weighed 1": lambda psi, w, beta, a, b: (psi[..., :-1] * (a * w)[:, None]).sum(-1)
        + psi[..., -1],
    }
    for words, answer in wrong.items():
        assert_named(capsys, check_knn_feature_q, "knn_feature_q", answer, words)


def test_vmf_loss(capsys):
    def loops(phi, w):
        return -np.mean([float(p @ v) for p, v in zip(phi.numpy(), w.numpy(), strict=True)])

    assert_correct(capsys, check_vmf_loss, "vmf_loss", loops)
    wrong = {"the sign flipped": lambda phi, w: (phi * w).sum(1).mean(),
             "a sum over the batch": lambda phi, w: -(phi * w).sum()}
    for words, answer in wrong.items():
        assert_named(capsys, check_vmf_loss, "vmf_loss", answer, words)


def test_no_known_mistake_is_close_to_the_library():
    """A named mistake that matched the right answer everywhere would be named to a learner who is right, and
    one within float32 rounding of it would be told it is a precision miss: each differs from the library
    on some case of its exercise by over 0.04 of the case's scale, 40 times `FLOAT32_TOLERANCE`."""
    assert exercises.FLOAT32_TOLERANCE == 1e-3
    for exercise in exercises.EXERCISES.values():
        cases = exercise.cases(0)
        wants = [exercises._as_array(exercise.reference(*map(exercises._copy, args))).astype(float)
                 for args in cases]
        for description, wrong in exercise.mistakes:
            gaps = []
            for args, want in zip(cases, wants, strict=True):
                got = exercises._as_array(wrong(*map(exercises._copy, args))).astype(float)
                scale = max(1.0, float(np.abs(want).max(initial=0.0)))
                gaps.append(float(np.nan_to_num(np.abs(got - want), nan=np.inf).max(initial=0.0)) / scale
                            if got.shape == want.shape else np.inf)
            assert max(gaps) > 0.04, (exercise.name, description, max(gaps))


# worked solutions (aps_teach/course/solutions.py) ---------------------------------------------------------

def test_every_exercise_has_a_solution_that_its_checker_passes(capsys):
    from aps_teach.course import solutions

    assert set(exercises.EXERCISES) == set(solutions.__all__)
    for name in solutions.__all__:
        shown = exercises.solution(name)
        printed = capsys.readouterr().out
        assert shown is getattr(solutions, name)
        assert printed.startswith(f"A solution to the exercise {name} (from aps_teach/course/solutions.py):")
        assert f"def {name}(" in printed and "return " in printed  # the source itself, shown in full
        assert getattr(exercises, f"check_{name}")(shown) is shown
        assert _one_line(capsys).startswith(f"{name}: correct (matches the library on ")


def test_solutions_are_written_from_the_formula_not_by_calling_the_library():
    import inspect

    from aps_teach.course import solutions

    names = {name: value for name, value in vars(solutions).items() if not name.startswith("__")}
    assert {value.__name__ for value in names.values() if inspect.ismodule(value)} <= {"numpy", "torch"}
    functions = {name for name, value in names.items() if inspect.isfunction(value)}
    assert functions == set(solutions.__all__)
    assert all(getattr(solutions, name).__module__ == "aps_teach.course.solutions" for name in functions)


def test_a_solution_in_a_notebook_is_a_markdown_code_block(monkeypatch):
    shown = []
    monkeypatch.setattr(exercises, "_in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", shown.append)
    assert exercises.solution("shift") is exercises.solutions.shift
    (markdown,) = shown
    assert markdown.data.startswith("A solution to the exercise shift "
                                    "(from aps_teach/course/solutions.py):\n\n"
                                    "```python\ndef shift(x, dy, dx, pad):\n")
    assert markdown.data.endswith("return torch.stack(crops)\n```")


def test_an_unknown_solution_names_the_valid_exercises():
    valid = "gpi, infer_task, knn_reward, sf_td_target, aps_reward, vmf_loss, knn_feature_q, shift"
    with pytest.raises(ValueError, match=f"no exercise named 'gpi_actions'; the exercises with a solution: "
                                         f"{valid}"):
        exercises.solution("gpi_actions")
