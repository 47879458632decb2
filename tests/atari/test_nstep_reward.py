"""The Atari learner's n-step intrinsic reward ('last', the authors' code) against a brute-force computation
on a hand-made replay: windows cut at a lost life, a game over, a truncation and each change of w; the
reward of each window's last state s_{t+m} (vMF term + kNN entropy among the B last states, each
excluding itself, distances over their running mean; the kNN on unit or unnormalised phi) bootstrapped
with gamma^m."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.learner.update import td_targets
from tests.atari.test_agent import SMALL

STACK, SIDE, D, N = 4, SMALL.frame_size, SMALL.feature_dim, 5
LIFE_LOST, GAME_OVER, TRUNCATED, NEW_W = {4}, {11}, {19}, {7, 15, 23}
STEPS = 28


def hand_made_steps():
    """One env: random frames, a lost life at step 4 (terminal, the game goes on), a game over at 11 and a
    truncation at 19 (each followed by an autoreset step), w redrawn at steps 7, 15 and 23."""
    rng = np.random.default_rng(0)

    def frame():
        return rng.integers(1, 256, (SIDE, SIDE), dtype=np.uint8)

    def fresh():
        return np.stack([np.zeros((SIDE, SIDE), np.uint8)] * (STACK - 1) + [frame()])

    w = rng.normal(size=D)
    current, resetting, steps = fresh(), False, []
    for k in range(STEPS):
        if k in NEW_W:
            w = rng.normal(size=D)
        if resetting:
            nxt, valid, resetting = fresh(), False, False
        else:
            nxt, valid = np.concatenate([current[1:], frame()[None]]), True
            resetting = k in GAME_OVER | TRUNCATED
        steps.append({"obs": current, "next_obs": nxt, "w": (w / np.linalg.norm(w)).astype(np.float32),
                      "terminated": k in LIFE_LOST | GAME_OVER, "truncated": k in TRUNCATED, "valid": valid})
        current = nxt
    return steps


def brute_force_last_state(steps, k):
    """(index of the last step of the window starting at step k, m): walk forward until n steps, an episode
    end (included), a step under another w or an autoreset step (excluded), or the newest step."""
    last = k
    for j in range(k, k + N):
        if j + 1 >= len(steps) or not steps[j]["valid"] or (steps[j]["w"] != steps[k]["w"]).any():
            break
        last = j
        if steps[j]["terminated"] or steps[j]["truncated"]:
            break
    return last, last - k + 1


@torch.no_grad()
@pytest.mark.parametrize("knn_phi_normalised", [True, False])
def test_last_state_targets_equal_a_brute_force_computation(knn_phi_normalised):
    steps = hand_made_steps()
    replay = FrameReplay(64, 1, (SIDE, SIDE), STACK, D, store_rewards=False)
    for s in steps:
        replay.add(s["obs"][None], np.array([1]), s["w"][None], np.array([s["terminated"]]),
                   np.array([s["truncated"]]), np.array([s["valid"]]))
    starts = [k for k in range(STEPS - 1) if steps[k]["valid"]]
    batch = replay.gather(torch.tensor(starts) + STACK - 1, torch.zeros(len(starts), dtype=torch.long), N,
                          window_obs=False)
    learner = AtariLearner(replace(SMALL, knn_phi_normalised=knn_phi_normalised), "aps", 4, seed=0)
    assert learner.config.nstep_reward == "last"  # the Atari default
    got, stats, _ = td_targets(learner, batch)

    windows = [brute_force_last_state(steps, k) for k in starts]
    lengths = [m for _, m in windows]
    # the cuts the hand-made replay is for: a life loss (window from 2 stops at 4), a game over (from 9:
    # 9..11), the autoreset step after it never entered, a truncation (from 17: 17..19), w changes (from 5:
    # 5..6; from 13: 13..14; from 21: 21..22), and full windows of n steps (from 24 the newest rows cut it)
    assert {starts[i]: m for i, m in enumerate(lengths)}.items() >= {2: 3, 9: 3, 17: 3, 5: 2, 13: 2, 21: 2,
                                                                      0: 5}.items()
    torch.testing.assert_close(batch.boot_steps, torch.tensor(lengths))

    last = torch.from_numpy(np.stack([steps[j]["next_obs"] for j, _ in windows]))
    w = torch.from_numpy(np.stack([steps[k]["w"] for k in starts]))
    phi = learner.phi(last)
    # kNN among the B last states (phi, or phi's output before its normalisation), each excluding itself;
    # the k nearest distances over their mean
    h = (phi if knn_phi_normalised else learner.phi.net(last.float() / 255)).double().numpy()
    near = [sorted(np.linalg.norm(h[i] - h[j]) for j in range(len(h)) if j != i)[:SMALL.k]
            for i in range(len(h))]
    scale = np.mean(near)  # the running mean after its first batch: the mean of all neighbour terms
    explore = torch.tensor([math.log1p(np.mean(d) / scale) for d in near])
    exploit = (phi * w).sum(1)
    reward = exploit + explore.float()
    cumulant = phi + (reward - exploit)[:, None] * w  # c^T w = reward
    a_star = (learner.psi(last, w) * w[:, None]).sum(-1).argmax(1)
    boot = learner.psi_target(last, w)[torch.arange(len(starts)), a_star]
    gamma = torch.tensor([SMALL.gamma ** m for m in lengths])
    want = cumulant + gamma[:, None] * boot  # pretraining bootstraps through terminals
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert float(stats["reward_explore"]) == pytest.approx(float(explore.mean()), rel=1e-5)
