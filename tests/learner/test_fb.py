"""Forward-backward representations (`learner.fb`, issue 60's item 3): the measure loss's fixed point is a
policy's successor measure over the data's state distribution on a tabular MDP, the losses and z against
hand-worked numbers, greedy actions, the sampled z, and offline training (the loss falls, seeds reproduce)."""

import math

import numpy as np
import pytest
import torch

from aps_teach.grid.replay import NStepReplay
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.fb import (
    FBLearner,
    greedy_actions,
    infer_z,
    measure_loss,
    on_sphere,
    orthonormality_loss,
    sample_z,
    train_fb,
)
from aps_teach.learner.tasks import sample_tasks

S, A, GAMMA = 3, 2, 0.9


def _mdp() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 3-state, 2-action MDP with stochastic moves P (S, A, S), the data's (s, a) distribution mu (S, A)
    (not uniform) and a fixed policy pi (S,)."""
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(S), size=(S, A))
    mu = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    return p, mu, np.array([1, 0, 1])


def _successor_measure(p: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """M(s, a, x) = sum_{t >= 0} gamma^t P(s_{t+1} = x | s, a, pi) = [P (I - gamma P_pi)^{-1}](sa, x)."""
    p_pi = p[np.arange(S), pi]  # (S, S): the state-to-state moves under pi
    return (p.reshape(S * A, S) @ np.linalg.inv(np.eye(S) - GAMMA * p_pi)).reshape(S, A, S)


def _expected_loss(table: torch.Tensor, p: np.ndarray, mu: np.ndarray, pi: np.ndarray) -> torch.Tensor:
    """E over minibatches of two independent transitions (s, a, s') ~ mu P of `measure_loss`, for the
    tabular F(s, a) = table[s, a] (S outputs) and B(x) = e_x, the target F the same table (no gradient) at
    pi(s'). In a minibatch of two, the off-diagonal pair (i, j) has s'' = s'_j independent of transition i:
    the expectation over minibatches is the population loss of the module docstring."""
    triples = [(s, a, x, mu[s, a] * p[s, a, x]) for s in range(S) for a in range(A) for x in range(S)]
    eye = torch.eye(S, dtype=torch.float64)
    total = torch.zeros((), dtype=torch.float64)
    for s1, a1, x1, p1 in triples:
        for s2, a2, x2, p2 in triples:
            f_sa = torch.stack([table[s1, a1], table[s2, a2]])
            b_next = eye[[x1, x2]]
            target_f = table.detach()[[x1, x2], pi[[x1, x2]]]
            total = total + p1 * p2 * measure_loss(f_sa, b_next, target_f, b_next, GAMMA)[0]
    return total


def test_the_successor_measure_over_the_data_distribution_is_the_fixed_point_of_the_measure_loss():
    p, mu, pi = _mdp()
    rho = np.einsum("sa,sax->x", mu, p)  # the distribution of the states reached, s' (and so of s'')
    fixed = torch.tensor(_successor_measure(p, pi) / rho, requires_grad=True)  # F^T B = M / rho
    _expected_loss(fixed, p, mu, pi).backward()
    assert fixed.grad.abs().max() < 1e-12
    off = (fixed.detach() + 0.1 * torch.randn(S, A, S, generator=torch.Generator().manual_seed(0),
                                              dtype=torch.float64)).requires_grad_(True)
    _expected_loss(off, p, mu, pi).backward()
    assert off.grad.abs().max() > 1e-3
    # and F^T z with z = E_rho[r B] is then Q^pi of r paid on reaching a state: Q = M r
    r = np.array([0.0, 1.0, -0.5])
    z = torch.tensor(rho * r)  # E_rho[r(x) e_x]
    assert np.allclose((fixed.detach() @ z).numpy(), _successor_measure(p, pi) @ r)


def test_the_measure_loss_is_the_hand_worked_one():
    # d = 1: M = f b^T = [[3, 1], [6, 2]], gamma Mbar = 0.5 [[2, 2], [0, 0]] = [[1, 1], [0, 0]]
    f, b = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0], [1.0]])
    loss, stats = measure_loss(f, b, torch.tensor([[1.0], [0.0]]), torch.tensor([[2.0], [2.0]]), 0.5)
    # off-diagonal: (1 - 1)^2 and (6 - 0)^2, mean 18; diagonal mean (3 + 2) / 2 = 2.5
    assert stats["measure_td"].item() == pytest.approx(18.0)
    assert stats["measure_diag"].item() == pytest.approx(2.5)
    assert loss.item() == pytest.approx(18.0 - 5.0)


def test_the_orthonormality_loss_is_the_hand_worked_one_and_least_for_orthonormal_rows():
    # B B^T = [[1, 1], [1, 2]]: off-diagonal squares 1, 1 (mean 1), diagonal mean 1.5
    assert orthonormality_loss(torch.tensor([[1.0, 0.0], [1.0, 1.0]])).item() == pytest.approx(1 - 3)
    # rows sqrt(d) e_i over a minibatch of d states: E[B B^T] = I, the loss's least value -2d
    assert orthonormality_loss(math.sqrt(3) * torch.eye(3)).item() == pytest.approx(-6.0)


def test_the_losses_refuse_what_they_cannot_estimate():
    with pytest.raises(ValueError, match="B >= 2"):
        measure_loss(torch.ones(1, 2), torch.ones(1, 2), torch.ones(1, 2), torch.ones(1, 2), 0.9)
    with pytest.raises(ValueError, match="target_b_next must have F's shape"):
        measure_loss(torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 1), 0.9)
    with pytest.raises(ValueError, match="B >= 2"):
        orthonormality_loss(torch.ones(1, 2))


def test_z_is_the_reward_weighted_mean_of_b_on_the_sphere():
    b = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    z = infer_z(b, torch.tensor([1.0, 0.0, 2.0]))
    mean = torch.tensor([3.0, 2.0]) / 3  # (1 B_0 + 0 B_1 + 2 B_2) / 3
    assert torch.allclose(z, math.sqrt(2) * mean / mean.norm())
    assert z.norm().item() == pytest.approx(math.sqrt(2))
    with pytest.raises(ValueError, match="all rewards zero"):
        infer_z(b, torch.zeros(3))
    with pytest.raises(ValueError, match=r"\(N, d\) and rewards \(N,\)"):
        infer_z(b, torch.zeros(2))


def test_greedy_actions_maximise_f_transposed_z():
    f = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]],
                      [[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]]])  # (B=2, A=3, d=2)
    z = torch.tensor([[1.0, 0.0], [1.0, 1.0]])  # Q = (1, 0, 0.6) and (1, 1, 1.2)
    assert greedy_actions(f, z).tolist() == [0, 2]


def test_sampled_z_lie_on_the_sphere_and_mix_in_the_minibatch_states():
    states = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    plain = sample_z(8, 4, torch.Generator().manual_seed(0))
    assert torch.allclose(plain.norm(dim=1), torch.full((8,), 2.0))
    mixed = sample_z(8, 4, torch.Generator().manual_seed(0), 1.0, states)
    gen = torch.Generator().manual_seed(0)  # the draws in their order: g, which rows mix, the order
    torch.randn(8, 4, generator=gen), torch.rand(8, generator=gen)
    assert torch.allclose(mixed, on_sphere(states[torch.randperm(8, generator=gen)]))
    half = sample_z(8, 4, torch.Generator().manual_seed(0), 0.5, states)
    from_states = (half[:, None] - on_sphere(states)[None]).norm(dim=-1).min(1).values < 1e-6
    assert 0 < int(from_states.sum()) < 8 and torch.equal(half[~from_states], plain[~from_states])
    with pytest.raises(ValueError, match="states must be"):
        sample_z(8, 4, torch.Generator(), 0.5)


def _config(**changes) -> AgentConfig:
    return AgentConfig(method="aps", fb=True, feature_dim=4, hidden=32, gamma=GAMMA, batch_size=64,
                       normalise_observations=False, **changes)


CHAIN = 5
"""A chain of 5 states, actions left (0) and right (1), the ends walls; observations one-hot (5,)."""


def _chain_replay(rows: int = 400, envs: int = 4, seed: int = 0) -> NStepReplay:
    """Uniformly random moves along the chain from uniform states: reward-free transitions as pretraining
    stores them (w a constant; no episode ends)."""
    rng = np.random.default_rng(seed)
    replay = NStepReplay(rows, envs, (CHAIN,), 4, store_rewards=False)
    eye = np.eye(CHAIN, dtype=np.uint8)
    for _ in range(rows):
        s = rng.integers(0, CHAIN, envs)
        a = rng.integers(0, 2, envs)
        s2 = np.clip(s + 2 * a - 1, 0, CHAIN - 1)
        replay.add(obs=eye[s], next_obs=eye[s2], action=a, w=torch.zeros(envs, 4),
                   terminated=np.zeros(envs, bool), ended=np.zeros(envs, bool))
    return replay


def _trained(seed: int, updates: int, **changes) -> tuple[FBLearner, list[float]]:
    fb = FBLearner(_config(**changes), (CHAIN,), 2, seed)
    replay, draws = _chain_replay(), torch.Generator().manual_seed(seed)
    losses = train_fb(fb, lambda: replay.sample(fb.config.batch_size, 1, draws), updates,
                      torch.Generator().manual_seed(seed + 1))
    return fb, losses


def test_q_values_and_acting_are_greedy_on_f_transposed_z_with_z_on_the_sphere():
    fb = FBLearner(_config(), (CHAIN,), 2, seed=0)
    obs = torch.eye(CHAIN, dtype=torch.uint8)
    w = sample_tasks(CHAIN, 4, torch.Generator().manual_seed(2))  # unit w: F reads z = 2 w
    with torch.no_grad():
        q = torch.einsum("bad,bd->ba", fb.forward_net(obs.float(), 2 * w), 2 * w)
    assert torch.allclose(fb.q_values(obs, w), q)
    assert torch.allclose(fb.q_values(obs, 3 * w), q)  # any scale of w: the same z
    assert torch.equal(fb.act(obs, w, 0.0, torch.Generator()), q.argmax(1))
    with pytest.raises(ValueError, match="no GPI"):
        fb.act(obs, w, 0.0, torch.Generator(), gpi=True)


def test_the_update_is_the_hand_assembled_loss_with_the_target_greedy_action():
    fb = FBLearner(_config(fb_mix_ratio=0.0), (CHAIN,), 2, seed=0)
    with torch.no_grad():  # make the target F differ from F, so reading the wrong one shows
        for p in fb.forward_target.parameters():
            p.add_(0.3)
    batch = _chain_replay(rows=20).sample(16, 1, torch.Generator().manual_seed(4))
    loss, stats = fb.loss(batch, torch.Generator().manual_seed(5))
    z = sample_z(16, 4, torch.Generator().manual_seed(5))
    x, x_next = batch.obs.float(), batch.next_obs[:, 0].float()
    with torch.no_grad():
        b = 2 * fb.backward_net(x_next)
        f_sa = fb.forward_net(x, z)[torch.arange(16), batch.action]
        f_next = fb.forward_target(x_next, z)
        a_star = (f_next * z[:, None]).sum(-1).argmax(1)
        target = GAMMA * f_next[torch.arange(16), a_star] @ (2 * fb.backward_target(x_next)).T
        m = f_sa @ b.T
        off = ~torch.eye(16, dtype=torch.bool)
        measure = ((m - target)[off] ** 2).mean() - 2 * m.diagonal().mean()
        cov = b @ b.T
        ortho = (cov[off] ** 2).mean() - 2 * cov.diagonal().mean()
    assert loss.item() == pytest.approx((measure + ortho).item(), rel=1e-5)
    assert stats["loss_orth"].item() == pytest.approx(ortho.item(), rel=1e-5)


def test_offline_training_lowers_the_loss_and_repeats_by_seed():
    fb, losses = _trained(seed=0, updates=150)
    again, repeat = _trained(seed=0, updates=150)
    assert losses == repeat
    assert all(torch.equal(p, q) for p, q in zip(fb.forward_net.parameters(), again.forward_net.parameters(),
                                                strict=True))
    assert np.mean(losses[-20:]) < np.mean(losses[:20]) - 1.0
    other, _ = _trained(seed=1, updates=5)
    assert not torch.equal(next(other.forward_net.parameters()), next(again.forward_net.parameters()))
    assert fb.updates == 150


def test_offline_training_moves_the_targets_by_polyak_averaging():
    fb = FBLearner(_config(fb_target_tau=0.25), (CHAIN,), 2, seed=0)
    before = [p.clone() for p in fb.backward_target.parameters()]
    replay = _chain_replay(rows=20)
    fb.update(replay.sample(16, 1, torch.Generator().manual_seed(0)), torch.Generator().manual_seed(1))
    for old, new, online in zip(before, fb.backward_target.parameters(), fb.backward_net.parameters(),
                                strict=True):
        assert torch.allclose(new, 0.75 * old + 0.25 * online)


def test_trained_fb_walks_to_a_rewarded_end_of_the_chain_zero_shot():
    fb, _ = _trained(seed=0, updates=600)
    obs = torch.eye(CHAIN, dtype=torch.uint8)
    for goal, best in ((CHAIN - 1, 1), (0, 0)):  # right end: always right; left end: always left
        rewards = torch.zeros(CHAIN)
        rewards[goal] = 1.0
        z = infer_z(fb.features(obs), rewards)  # identification on one sample of every state
        actions = fb.act(obs, z.expand(CHAIN, -1), 0.0, torch.Generator())
        assert actions[[s for s in range(CHAIN) if s != goal]].tolist() == [best] * (CHAIN - 1)


@pytest.mark.parametrize(("changes", "message"), [
    ({"adapt_psi": True}, r"^adapt_psi=True acts on psi, and the fb arm acts on F\(s, a, z\)\^T z instead"),
    ({"identify_ridge": 10.0}, "^identify_ridge=10.0 acts on psi"),
    ({"knn_feature": True}, "^knn_feature=True acts on psi"),
    ({"knn_feature": True, "explore_conditioned": True}, "^knn_feature=True, explore_conditioned=True acts"),
    ({"adapt_updates": 50}, "^adapt_updates=50 acts on psi"),
    ({"method": "dqn"}, "^fb trains F and B on the replay of a reward-free exploration, which method 'dqn'"),
])
def test_the_fb_arm_refuses_the_options_of_psi_in_one_line(changes, message):
    config = AgentConfig(**{"method": "aps", "fb": True, **changes})
    with pytest.raises(ValueError, match=message) as error:
        config.check_task_options()
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("changes", "message"), [
    ({"fb_updates": 100}, "^fb_updates=100 sets the fb arm's F and B, and this learner is no fb arm"),
    ({"fb_ortho_coef": 0.1, "fb_target_tau": 0.5}, "^fb_ortho_coef=0.1, fb_target_tau=0.5 sets the fb arm"),
    ({"method": "dqn", "fb_mix_ratio": 0.0}, "^fb_mix_ratio=0.0 sets the fb arm"),
])
def test_the_options_of_f_and_b_are_refused_without_the_fb_arm_in_one_line(changes, message):
    config = AgentConfig(**{"method": "aps", **changes})
    with pytest.raises(ValueError, match=message) as error:
        config.check_task_options()
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("fb_updates", 0, "fb_updates must be an integer >= 1 .or not given: as many as pretraining made."),
    ("fb_mix_ratio", 1.5, "fb_mix_ratio"), ("fb_target_tau", 0.0, "fb_target_tau"),
    ("fb_ortho_coef", -1.0, "fb_ortho_coef")])
def test_bad_values_of_the_fb_options_are_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        AgentConfig(fb=True, **{field: value})


def test_the_fb_and_psi_option_tables_hold_the_defaults():
    from dataclasses import fields

    from aps_teach.learner.config import FB_OPTIONS, PSI_OPTIONS
    defaults = {f.name: f.default for f in fields(AgentConfig)}
    assert all(defaults[name] == off for name, off in {**FB_OPTIONS, **PSI_OPTIONS}.items())
    AgentConfig(method="apt", fb=True).check_task_options()  # the fb arm on APT's exploration: valid
    AgentConfig(method="aps", fb=True, fb_updates=10, fb_mix_ratio=0.0).check_task_options()
