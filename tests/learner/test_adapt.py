"""psi adapted offline to an identified w (`learner.adapt`, issue 60's item 2a): the relabelled windows and
their TD targets against a hand-worked case, phi untouched, psi trained for w alone."""

import numpy as np
import pytest
import torch

from aps_teach.grid.replay import NStepReplay
from aps_teach.infra.phases import single_thread
from aps_teach.learner.adapt import adapt_psi, relabel
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.update import td_targets

OBS = (2, 3, 3)
GAMMA = 0.9
PHI = torch.tensor([0.6, 0.8])
"""phi of every state: phi's output layer set to 0 weights and bias (3, 4), normalised."""
PSI = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
"""psi(s, a, w) of every s and w, action by action: Q under w = (1, 0) is 1 and 3 (a* = 1), under the
replay's stored w = (0, 1) it is 2 and -1 (a* = 0)."""
PSI_TARGET = torch.tensor([[10.0, 10.0], [-2.0, 5.0]])
"""The target network's psi, another constant per action (the double-Q bootstrap reads it at a*)."""
W = torch.tensor([1.0, 0.0])


def _constant(learner: Learner) -> Learner:
    """Make phi and psi the constants above: zero weights in their output layers, the values as biases."""
    with torch.no_grad():
        learner.phi.output.weight.zero_()
        learner.phi.output.bias.copy_(5 * PHI)  # (3, 4): normalised to (0.6, 0.8)
        for net, values in ((learner.psi, PSI), (learner.psi_target, PSI_TARGET)):
            net.head[-1].weight.zero_()
            net.head[-1].bias.copy_(values.flatten())
    return learner


def _learner(**changes) -> Learner:
    config = AgentConfig(method="visr", feature_dim=2, hidden=8, gamma=GAMMA, batch_size=4, **changes)
    return _constant(Learner(config, OBS, 2, seed=0))


def _replay(rows: int = 6) -> NStepReplay:
    """One env, every step under the stored w = (0, 1); row 2 ends its episode in a terminal state, row 4
    ends one without (a time-out)."""
    rng = np.random.default_rng(0)
    replay = NStepReplay(rows, 1, OBS, 2, store_rewards=False)
    for t in range(rows):
        replay.add(obs=rng.integers(0, 2, (1, *OBS)), next_obs=rng.integers(0, 2, (1, *OBS)),
                   action=np.array([t % 2]), w=torch.tensor([[0.0, 1.0]]),
                   terminated=np.array([t == 2]), ended=np.array([t in (2, 4)]))
    return replay


@torch.no_grad()
@pytest.mark.parametrize("n", [1, 3])
def test_the_td_targets_of_the_relabelled_windows_are_the_hand_worked_ones(n):
    learner = _learner()
    learner.start_finetune()
    batch = relabel(learner, _replay().sample(16, n, torch.Generator().manual_seed(1)), W)
    assert torch.equal(batch.w, W.expand(16, -1))  # the stored w = (0, 1) replaced
    torch.testing.assert_close(batch.next_phi, PHI.expand(16, n, -1))
    torch.testing.assert_close(batch.reward, torch.full((16, n), 0.6))  # phi(s')^T w
    y = td_targets(learner, batch)[0]
    # y = sum_{i<m} gamma^i phi + gamma^m alive psi_target(s'_m, a*), a* = 1 under w = (1, 0)
    for b in range(16):
        m, alive = int(batch.boot_steps[b]), float(batch.boot_alive[b])
        expected = sum(GAMMA ** i for i in range(m)) * PHI + GAMMA ** m * alive * PSI_TARGET[1]
        torch.testing.assert_close(y[b], expected)
    if n == 1:  # the hand-worked numbers: (0.6, 0.8) + 0.9 (-2, 5), or phi alone at the terminal state
        assert {tuple(round(v, 5) for v in row.tolist()) for row in y} == {(-1.2, 5.3), (0.6, 0.8)}


def test_adaptation_trains_psi_for_w_from_the_replay_alone_and_leaves_phi_as_it_was():
    learner = Learner(AgentConfig(method="aps", feature_dim=2, hidden=8, batch_size=4, k=2,
                                  target_update_period=3), OBS, 2, seed=0)
    phi = {k: v.clone() for k, v in learner.phi.state_dict().items()}
    psi = {k: v.clone() for k, v in learner.psi.state_dict().items()}
    replay, drawn = _replay(), []

    def sample():
        drawn.append(replay.sample(4, 1, torch.Generator().manual_seed(len(drawn))))
        return drawn[-1]

    losses = adapt_psi(learner, sample, W, updates=7)
    assert len(losses) == len(drawn) == 7 and learner.updates == 7 and learner.phase == "finetune"
    assert all(torch.equal(v, learner.phi.state_dict()[k]) for k, v in phi.items())  # phi frozen
    assert not all(torch.equal(v, learner.psi.state_dict()[k]) for k, v in psi.items())


def test_adaptation_fits_psi_to_its_fixed_point_on_a_small_replay():
    """Many updates on one terminal transition: psi(s, a, w) for its (s, a) goes to y = phi(s'), the
    cumulant of a window that ends the episode (no bootstrap)."""
    learner = Learner(AgentConfig(method="visr", feature_dim=2, hidden=16, batch_size=8, finetune_lr=3e-2),
                      OBS, 2, seed=0)
    replay = NStepReplay(1, 1, OBS, 2, store_rewards=False)
    state = torch.zeros(1, *OBS, dtype=torch.uint8)
    state[0, 0, 1, 1] = 1
    replay.add(obs=state, next_obs=1 - state, action=torch.tensor([1]), w=torch.tensor([[0.0, 1.0]]),
               terminated=torch.tensor([True]), ended=torch.tensor([True]))
    with single_thread():
        losses = adapt_psi(learner, lambda: replay.sample(8, 1, torch.Generator().manual_seed(0)), W, 100)
    assert losses[-1] < 1e-3 * losses[0]
    with torch.no_grad():
        psi = learner.psi(learner.inputs(state), W[None])[0, 1]
    torch.testing.assert_close(psi, learner.features(1 - state)[0], atol=5e-3, rtol=0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: adapt_psi(Learner(AgentConfig(method="apt", hidden=8, batch_size=4, k=2), OBS, 2, seed=0),
                       lambda: None, torch.ones(16), 1),
     r"^adapt_psi adapts psi to an identified w: method 'apt' has no task features phi .*"
     r"valid for: visr, aps$"),
    (lambda: adapt_psi(_learner(), lambda: None, torch.ones(3), 1),
     r"^adapt_psi needs the task w as a vector of 2 numbers, got shape \(3,\)$"),
])
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_adaptation_options_are_checked():
    for name in ("adapt_updates", "adapt_n_step"):
        with pytest.raises(ValueError, match=rf"^{name} must be an integer >= 1, got 0$"):
            AgentConfig(**{name: 0})
