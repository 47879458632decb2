"""The exercise checkers accept correct answers (the library's and independent ones) and reject planted
wrong answers with a message naming the input."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from aps_teach import exercises
from aps_teach.exercises import (
    check_gpi,
    check_gpi_action,
    check_infer_task,
    check_knn_reward,
    check_sf_td_target,
    check_shift,
    solution,
)


def test_check_gpi_accepts_a_correct_answer(capsys):
    check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w).max(axis=0))
    assert "correct: GPI action values" in capsys.readouterr().out
    check_gpi(solution("gpi"))
    assert "correct: GPI action values" in capsys.readouterr().out


def test_check_gpi_rejects_wrong_answers():
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w).mean(axis=0))  # averages policies
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w)[0])  # first policy only
    with pytest.raises(AssertionError, match="shape"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w))  # forgot the max


def test_solution_names_the_valid_exercises():
    with pytest.raises(ValueError, match="unknown exercise 'knn'.*knn_reward.*sf_td_target"):
        solution("knn")


def test_solutions_switch_follows_the_environment_variable():
    code = "from aps_teach import exercises; print(exercises.SOLUTIONS)"
    for value, expected in [("1", "True"), ("0", "False")]:
        env = {**os.environ, "APS_TEACH_SOLUTIONS": value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == expected


# kNN particle reward -------------------------------------------------------------------------------

def _knn_numpy(particles, k):
    p = particles.numpy()
    rewards = []
    for i in range(len(p)):
        others = np.delete(p, i, axis=0)
        nearest = np.sort(np.sqrt(((others - p[i]) ** 2).sum(1)))[:k]
        rewards.append(np.log(1 + nearest.mean()))
    return np.array(rewards)


def test_check_knn_reward_accepts_correct_answers(capsys):
    check_knn_reward(solution("knn_reward"))
    check_knn_reward(_knn_numpy)
    assert capsys.readouterr().out.count("correct: kNN particle reward") == 2


def test_check_knn_reward_rejects_wrong_answers():
    def self_counted(particles, k):  # the point itself, at distance 0, is one of its k neighbours
        return torch.log1p(torch.cdist(particles, particles).topk(k, largest=False).values.mean(1))

    def zeros_dropped(particles, k):  # excludes self by dropping every zero distance: duplicates too
        dist = torch.cdist(particles, particles)
        dist[dist == 0] = float("inf")
        return torch.log1p(dist.topk(k, largest=False).values.mean(1))

    def summed(particles, k):  # sum instead of mean
        dist = torch.cdist(particles, particles).fill_diagonal_(float("inf"))
        return torch.log1p(dist.topk(k, largest=False).values.sum(1))

    with pytest.raises(AssertionError, match=r"kNN particle reward: case 0 \(arguments: Tensor \(8, 2\)"):
        check_knn_reward(self_counted)
    with pytest.raises(AssertionError, match="case 4 .* differs from the library"):
        check_knn_reward(zeros_dropped)  # only the duplicates case catches it
    with pytest.raises(AssertionError, match="differs from the library"):
        check_knn_reward(summed)


# task inference ------------------------------------------------------------------------------------

def _infer_numpy(features, rewards):
    v = np.linalg.solve(features.numpy().T @ features.numpy(), features.numpy().T @ rewards.numpy())
    return v / np.linalg.norm(v)


def test_check_infer_task_accepts_correct_answers(capsys):
    check_infer_task(solution("infer_task"))
    check_infer_task(_infer_numpy)
    assert capsys.readouterr().out.count("correct: task inference") == 2


def test_check_infer_task_rejects_wrong_answers():
    def wrong_way_round(features, rewards):  # design matrix = rewards
        v = torch.linalg.lstsq(rewards[:, None], features).solution[0]
        return v / v.norm()

    def unnormalised(features, rewards):
        return torch.linalg.lstsq(features, rewards[:, None]).solution[:, 0]

    with pytest.raises(AssertionError, match="task inference: case 0 .* differs from the library"):
        check_infer_task(wrong_way_round)
    with pytest.raises(AssertionError, match="differs from the library"):
        check_infer_task(unnormalised)


# GPI action selection ------------------------------------------------------------------------------

def _gpi_action_loops(psi, w, z):
    batch, candidates, actions, _ = psi.shape
    greedy = []
    for b in range(batch):
        q = [max(float(psi[b, i, a] @ w[b]) for i in range(candidates)) for a in range(actions)]
        greedy.append(int(np.argmax(q)))
    return np.array(greedy)


def test_check_gpi_action_accepts_correct_answers(capsys):
    check_gpi_action(solution("gpi_action"))
    check_gpi_action(_gpi_action_loops)
    assert capsys.readouterr().out.count("correct: GPI greedy actions") == 2


def test_check_gpi_action_rejects_wrong_answers():
    def own_z(psi, w, z):  # each candidate scored under its own task z_i
        return torch.einsum("bcad,bcd->bca", psi, z).amax(1).argmax(1)

    def first_candidate_only(psi, w, z):  # no GPI: only the policy for w itself
        return torch.einsum("bad,bd->ba", psi[:, 0], w).argmax(1)

    def best_policy_then_action(psi, w, z):  # argmax over (candidate, action) returned as a flat index
        return torch.einsum("bcad,bd->bca", psi, w).flatten(1).argmax(1)

    with pytest.raises(AssertionError, match="GPI greedy actions: case 0 .* differs from the library"):
        check_gpi_action(own_z)
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi_action(first_candidate_only)
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi_action(best_policy_then_action)


def test_gpi_action_cases_have_no_ties():
    generator = torch.Generator().manual_seed(0)
    psi, w, z = exercises._untied_gpi_case(64, 3, 4, 2, generator)
    q = np.einsum("bcad,bd->bca", psi.numpy(), w.numpy()).max(1)
    top = np.sort(q, axis=1)
    assert (top[:, -1] - top[:, -2]).min() > 1e-3
    np.testing.assert_allclose(z[:, 0].numpy(), w.numpy())
    np.testing.assert_allclose(np.linalg.norm(z.numpy(), axis=2), 1.0)


# successor-feature TD target -----------------------------------------------------------------------

def _td_target_loops(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
    batch, n, d = base.shape
    y = np.zeros((batch, d))
    for b in range(batch):
        wb = w[b].numpy()
        for i in range(n):
            if mask[b, i]:
                c = base[b, i].numpy() + (float(reward[b, i]) - base[b, i].numpy() @ wb) * wb
                y[b] += gamma**i * c
        y[b] += gamma ** int(boot_steps[b]) * float(alive[b]) * boot_psi[b].numpy()
    return y


def test_check_sf_td_target_accepts_correct_answers(capsys):
    check_sf_td_target(solution("sf_td_target"))
    check_sf_td_target(_td_target_loops)
    assert capsys.readouterr().out.count("correct: SF TD target") == 2


def _td(base, reward, w, mask, gamma, boot_psi, boot_exponent, alive):
    cumulant = base + (reward - (base * w[:, None]).sum(-1))[..., None] * w[:, None]
    discount = gamma ** torch.arange(base.shape[1], dtype=torch.float64)
    ret = (discount[None, :, None] * mask[..., None] * cumulant).sum(1)
    return ret + (gamma**boot_exponent * alive)[:, None] * boot_psi


def test_check_sf_td_target_rejects_wrong_answers():
    def mask_ignored(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, torch.ones_like(mask), gamma, boot_psi, boot_steps, alive)

    def gamma_to_the_n(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, mask, gamma, boot_psi, base.shape[1], alive)

    def alive_ignored(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        return _td(base, reward, w, mask, gamma, boot_psi, boot_steps, torch.ones_like(alive))

    def reward_as_cumulant_on_w(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
        # c_i = r_i w drops the phi component orthogonal to w: right only when base = 0
        return _td(torch.zeros_like(base), reward, w, mask, gamma, boot_psi, boot_steps, alive)

    assert np.allclose(_td_target_loops(*_one_td_case()), _td(*_one_td_case()))  # the helper is right
    for wrong in (mask_ignored, gamma_to_the_n, alive_ignored, reward_as_cumulant_on_w):
        with pytest.raises(AssertionError, match="SF TD target: case 0 .* differs from the library"):
            check_sf_td_target(wrong)


def _one_td_case():
    generator = torch.Generator().manual_seed(5)
    base = torch.randn(3, 4, 2, generator=generator, dtype=torch.float64)
    w = torch.nn.functional.normalize(torch.randn(3, 2, generator=generator, dtype=torch.float64), dim=1)
    steps = torch.tensor([4, 2, 1])
    mask = torch.arange(4)[None] < steps[:, None]
    reward = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    boot_psi = torch.randn(3, 2, generator=generator, dtype=torch.float64)
    return base, reward, w, mask, 0.9, boot_psi, steps, torch.tensor([True, False, True])


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


def test_check_shift_accepts_correct_answers(capsys):
    for answer in (solution("shift"), _shift_by_padding, _shift_by_loops):
        check_shift(answer)
        assert "correct: random shift matches the library on 4 random cases" in capsys.readouterr().out


def test_check_shift_rejects_wrong_answers():
    wrong = {
        "zero padding": lambda x, dy, dx, pad: _shift_by_padding(x, dy, dx, pad, mode="constant"),
        "rows and columns swapped": lambda x, dy, dx, pad: _shift_by_padding(x, dx, dy, pad),
        "shifted the other way": lambda x, dy, dx, pad: _shift_by_padding(x, 2 * pad - dy, 2 * pad - dx, pad),
        "one shift for the batch": lambda x, dy, dx, pad: _shift_by_padding(x, dy[:1].expand_as(dy),
                                                                            dx[:1].expand_as(dx), pad),
    }
    for name, answer in wrong.items():
        with pytest.raises(AssertionError, match="random shift: case .* differs from the library"):
            check_shift(answer)
            pytest.fail(f"accepted {name}")
