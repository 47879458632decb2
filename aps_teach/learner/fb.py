"""Forward-backward representations (Touati & Ollivier 2021; Touati, Rapin & Ollivier 2023): the fb arm of
issue 60, F and B learnt reward-free on a replay, zero-shot on F(s, a, z)^T z.

The successor measure of policy pi_z, M(s, a, X) = sum_{t >= 0} gamma^t P(s_{t+1} in X | s, a, pi_z), is
written as M(s, a, ds+) = F(s, a, z)^T B(s+) rho(ds+), rho the replay's distribution of states. For a reward r
of states reached, Q(s, a) = sum_t gamma^t E[r(s_{t+1})] = F(s, a, z)^T z with z = E_{s ~ rho}[r(s) B(s)], and
pi_z(s) = argmax_a F(s, a, z)^T z is optimal for it when F and B are exact. Learnt on transitions (s, a, s')
of the replay, s'' another state drawn from it independently, by the measure loss (`measure_loss`)

    L(F, B) = E[(F(s, a, z)^T B(s'') - gamma Fbar(s', pi_z(s'), z)^T Bbar(s''))^2] - 2 E[F(s, a, z)^T B(s')]

(bars: the target copies), its minimiser over F^T B being M / rho (tests/learner/test_fb.py checks that the
successor measure of a fixed policy is its fixed point on a tabular MDP), plus B's orthonormality loss
(`orthonormality_loss`), E[(B(s)^T B(s''))^2] - 2 E[B(s)^T B(s)], weighted by `AgentConfig.fb_ortho_coef`.

Choices the papers leave open, taken here (most as the authors' code, facebookresearch/controllable_agent
`url_benchmark/agent/fb_ddpg.py`, makes them; the rest written down where they are made):

- s' is the state *reached* (the papers' M counts s_{t+1} from t = 0, as this repository's phi(s') rewards
  do); the authors' code puts B on the current state s instead (a measure counting s itself at t = 0);
- s'' are the other transitions' s' in the minibatch: the off-diagonal pairs (i != j) estimate the first
  expectation, the diagonal (i = i) the second, as the authors' code does;
- B(s) lies on the sphere of radius sqrt(d) (`FBLearner.backward`, the authors' `norm_z`), as every z does:
  trained z are drawn uniformly on that sphere or, a share `fb_mix_ratio` of them, B(s'') of another state of
  the minibatch (`sample_z`); a z to act on is projected onto it (`FBLearner.act`);
- pi_z(s') in the target is greedy on the *target* F, argmax_a Fbar(s', a, z)^T z (the authors' code: one
  target forward gives the action and its value), not double Q as psi's (`update.double_q_bootstrap`);
- one F, not the authors' twin F1, F2 with min(M1, M2) in the target (a device against a DDPG actor's
  overestimation; here F is psi's network, with psi's single head);
- no terminal state ends the measure: the replay is reward-free pretraining's, whose target absorbs and whose
  psi bootstraps through termination (`AgentConfig.bootstrap_through_termination`);
- Polyak targets, tau `fb_target_tau` after every update (the authors'); Adam at `lr` with `adam_eps` and
  the gradient clipped at `max_grad_norm`, as psi's pretraining (the authors: lr 1e-4, no clip, over
  millions of updates; here a few thousand);
- networks at this repository's scale: F is psi's network (`networks.SuccessorFeatureNet`, d outputs per
  action, conditioned on z), B phi's (`networks.FeatureNet`) times sqrt(d), d = `feature_dim`, `hidden` units;
- z of a task: sqrt(d) normalise(mean_i r_i B(s'_i)) over the identification samples (`infer_z`; the
  authors' `infer_meta_from_obs_and_rewards`), the same rollouts the other arms identify w from. Those
  samples are not drawn from rho, the replay's distribution, as the theory asks: E over them weights the
  reward's states by how often the rollouts visit them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch.nn import functional as F

from aps_teach.learner.agent import epsilon_greedy
from aps_teach.learner.batch import Batch
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.inputs import BoardInputs, InputColumns
from aps_teach.learner.networks import FeatureNet, SuccessorFeatureNet
from aps_teach.learner.tasks import q_values, sample_tasks
from aps_teach.learner.update import action_row


def on_sphere(v: torch.Tensor) -> torch.Tensor:
    """v (..., d) projected onto the sphere of radius sqrt(d), where FB's z and B live: sqrt(d) v / ||v||."""
    return math.sqrt(v.shape[-1]) * F.normalize(v, dim=-1)


def sample_z(n: int, dim: int, generator: torch.Generator, mix_ratio: float = 0.0,
             states: torch.Tensor | None = None) -> torch.Tensor:
    """`n` z (n, dim) for an update: uniform on the sphere of radius sqrt(dim) (g ~ N(0, I), sqrt(dim) g /
    ||g||), each replaced with probability `mix_ratio` by a row of `states` (n, dim), B(s'') of the
    minibatch's states in a random order, projected onto that sphere (the authors' `mix_ratio`). Draws from
    `generator` (CPU) in this order: g, which rows mix, the order; returned on `states`' device (CPU
    without)."""
    z = on_sphere(torch.randn(n, dim, generator=generator))
    if not mix_ratio:
        return z
    if states is None or tuple(states.shape) != (n, dim):
        raise ValueError(f"sample_z with mix_ratio {mix_ratio:g} mixes in B(s'') of {n} states: states must "
                         f"be ({n}, {dim}), got {None if states is None else tuple(states.shape)}")
    mix = torch.rand(n, generator=generator) < mix_ratio
    order = torch.randperm(n, generator=generator)
    z = z.to(states.device)
    return torch.where(mix.to(states.device)[:, None], on_sphere(states.detach()[order.to(states.device)]), z)


def off_diagonal_mean(values: torch.Tensor) -> torch.Tensor:
    """The mean of a square matrix's (n, n) entries off its diagonal, n >= 2: a product with a 0/1 mask, not
    a selection (whose backward waits on the host for the number of entries selected, 4 times slower here)."""
    n = len(values)
    off = 1.0 - torch.eye(n, dtype=values.dtype, device=values.device)
    return (values * off).sum() / (n * (n - 1))


def measure_loss(f_sa: torch.Tensor, b_next: torch.Tensor, target_f_next: torch.Tensor,
                 target_b_next: torch.Tensor, gamma: float) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """FB's measure loss on a minibatch of B transitions (s_i, a_i, s'_i) and their z_i:

        M_ij = F(s_i, a_i, z_i)^T B(s'_j),   Mbar_ij = Fbar(s'_i, pi_z(s'_i), z_i)^T Bbar(s'_j)
        L = mean_{i != j} (M_ij - gamma Mbar_ij)^2 - 2 mean_i M_ii

    `f_sa` (B, d) F at the transitions' actions, `b_next` (B, d) B(s'), `target_f_next` (B, d) the target F at
    s' and the target's action, `target_b_next` (B, d) the target B(s') (no gradient flows into the last two).
    Needs B >= 2. Returns L and its two terms ('measure_td', 'measure_diag': mean_i M_ii), detached."""
    n = len(f_sa)
    if n < 2 or f_sa.ndim != 2:
        raise ValueError(f"measure_loss needs F (B, d) of B >= 2 transitions (pairs i != j), got "
                         f"{tuple(f_sa.shape)}")
    for name, t in (("b_next", b_next), ("target_f_next", target_f_next), ("target_b_next", target_b_next)):
        if t.shape != f_sa.shape:
            raise ValueError(f"measure_loss: {name} must have F's shape {tuple(f_sa.shape)}, got "
                             f"{tuple(t.shape)}")
    m = f_sa @ b_next.T
    target = gamma * (target_f_next @ target_b_next.T).detach()
    td = off_diagonal_mean((m - target).pow(2))
    diag = m.diagonal().mean()
    return td - 2 * diag, {"measure_td": td.detach(), "measure_diag": diag.detach()}


def orthonormality_loss(b: torch.Tensor) -> torch.Tensor:
    """B's orthonormality regulariser on B(s) of a minibatch (B, d), B >= 2: mean_{i != j} (B_i^T B_j)^2 -
    2 mean_i B_i^T B_i, an estimate of ||E_rho[B B^T] - I||^2 up to a constant (minimal where the
    covariance of B is the identity)."""
    n = len(b)
    if n < 2 or b.ndim != 2:
        raise ValueError(f"orthonormality_loss needs B (B, d) of B >= 2 states, got {tuple(b.shape)}")
    cov = b @ b.T
    return off_diagonal_mean(cov.pow(2)) - 2 * cov.diagonal().mean()


def greedy_actions(f: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """pi_z(s) = argmax_a F(s, a, z)^T z for F (B, A, d) and z (B, d): (B,) int64 (the first of ties)."""
    return q_values(f, z[:, None]).argmax(-1)


def infer_z(features: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """z of the reward `rewards` (N,) paid on reaching states whose B is `features` (N, d): sqrt(d)
    normalise(mean_i r_i B(s'_i)) (Touati & Ollivier's z = E[r(s) B(s)], on FB's sphere). ValueError when
    that mean is 0 (no reward seen): there is no z to infer."""
    if features.ndim != 2 or rewards.ndim != 1 or len(features) != len(rewards):
        raise ValueError(f"infer_z needs B(s') (N, d) and rewards (N,); got {tuple(features.shape)} and "
                         f"{tuple(rewards.shape)}")
    if not torch.isfinite(features).all() or not torch.isfinite(rewards).all():
        raise ValueError("infer_z: B(s') or the rewards are not all finite numbers (NaN or inf)")
    mean = (rewards.double()[:, None] * features.double()).mean(0)
    if not mean.norm() > 0:
        raise ValueError("infer_z: E[r B(s')] is zero (all rewards zero?); no task to infer")
    return on_sphere(mean).to(features.dtype)


def fit_z(features: torch.Tensor, rewards: torch.Tensor, seed: int) -> tuple[torch.Tensor, bool]:
    """(`infer_z` of B(s') `features` (N, d) and `rewards` (N,), True); with no reward in them, (a z drawn
    uniformly on the sphere of radius sqrt(d) from `seed`, False), as `tasks.fit_task` draws a w: the arm acts
    on a z it could not identify, as it would have to."""
    if not rewards.any():
        return on_sphere(sample_tasks(1, features.shape[1], torch.Generator().manual_seed(seed))[0]), False
    return infer_z(features, rewards), True


class FBLearner:
    """F(s, a, z) (psi's network: (B, A, d) per observation and z) and B(s) (phi's network times sqrt(d)),
    their Polyak target copies, one Adam over both, and what they read (`inputs.BoardInputs`, as
    `agent.Learner`).

    Built from the exploring learner's `AgentConfig` (d = `feature_dim`, `hidden`, `gamma`, `lr`, `adam_eps`,
    `max_grad_norm`, `batch_size` and the `fb_` options), initialised from `seed` on the CPU. Acts, like
    `agent.Learner`, on (obs, w, epsilon, generator), so the phases that roll out and evaluate a learner take
    it (`grid.train`), w being projected onto the sphere of radius sqrt(d) (any non-zero w: a unit w of
    `tasks.sample_tasks` or an `infer_z`); `features` gives B(s) where a w-conditioned learner gives phi(s).
    """

    def __init__(self, config: AgentConfig, obs_shape: tuple[int, ...], num_actions: int, seed: int,
                 device: str | torch.device = "cpu", input_columns: InputColumns | None = None):
        self.config, self.obs_shape, self.num_actions = config, tuple(obs_shape), num_actions
        self.device = torch.device(device)
        self.board_inputs = BoardInputs(obs_shape, input_columns, config.normalise_observations, self.device)
        d, hidden = config.feature_dim, config.hidden
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.forward_net = SuccessorFeatureNet(math.prod(self.obs_shape), hidden, num_actions, d)
            self.backward_net = FeatureNet(math.prod(self.obs_shape), hidden, d)
        for net in (self.forward_net, self.backward_net):
            self.board_inputs.narrow(net)
            net.to(self.device)
        self.forward_target = copy.deepcopy(self.forward_net).requires_grad_(False)
        self.backward_target = copy.deepcopy(self.backward_net).requires_grad_(False)
        params = [*self.forward_net.parameters(), *self.backward_net.parameters()]
        self.optimizer = torch.optim.Adam(params, lr=config.lr, eps=config.adam_eps, fused=True)
        self.updates = 0

    def set_observation_table(self, observations: torch.Tensor | None) -> None:
        """Read observations given as state indices into `observations` (`agent.Learner`'s method)."""
        self.board_inputs.set_table(observations)

    def inputs(self, obs: torch.Tensor):
        """What the networks read for `obs`: x = board - m on the input columns (`inputs.BoardInputs`)."""
        return self.board_inputs(obs)

    def observe(self, obs: torch.Tensor) -> None:
        """Fold observations into the running mean m of the inputs (`freeze` stops it)."""
        self.board_inputs.observe(obs)

    def freeze_inputs(self) -> None:
        """Stop the observation mean m moving (F and B train on inputs centred by one m)."""
        self.board_inputs.freeze()

    def backward(self, x, target: bool = False) -> torch.Tensor:
        """B(s) = sqrt(d) g(s) / ||g(s)|| of network inputs x (N, d) (the target copy's with `target`)."""
        net = self.backward_target if target else self.backward_net
        return math.sqrt(self.config.feature_dim) * net(x)

    @torch.no_grad()
    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """B(s) of a batch of observations (N, d): what identification regresses rewards on (`infer_z`)."""
        return self.backward(self.inputs(obs))

    def task_z(self, w: torch.Tensor) -> torch.Tensor:
        """The z F is conditioned on for tasks w (..., d): w on the sphere of radius sqrt(d) (`on_sphere`)."""
        if w.shape[-1] != self.config.feature_dim:
            raise ValueError(f"FB acts on z of {self.config.feature_dim} numbers, got w of shape "
                             f"{tuple(w.shape)}")
        return on_sphere(w.to(self.device).float())

    @torch.no_grad()
    def q_values(self, obs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Q(s, a) = F(s, a, z)^T z (B, A) for observations (B, ...) and tasks w (B, d), z = `task_z(w)`."""
        z = self.task_z(w)
        return q_values(self.forward_net(self.inputs(obs), z), z[:, None])

    @torch.no_grad()
    def act(self, obs: torch.Tensor, w: torch.Tensor, epsilon: float, generator: torch.Generator,
            gpi: bool = False, explore: bool = False) -> torch.Tensor:
        """epsilon-greedy on Q(s, a) = F(s, a, z)^T z, z = `task_z(w)`, drawing from `generator` as
        `agent.Learner.act` does. FB has no GPI and no exploration reward: `gpi`, `explore` must be False."""
        if gpi or explore:
            raise ValueError("the fb arm acts greedily on F(s, a, z)^T z: it has no GPI over tasks and no "
                             "exploration reward (gpi=False, explore=False)")
        return epsilon_greedy(self.q_values(obs, w).argmax(dim=1), epsilon, self.num_actions, generator)

    def loss(self, batch: Batch, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The FB loss on a minibatch of transitions (s, a, s'_1) (`Batch`, windows of any length: only the
        first step is read), z drawn by `sample_z` from `generator`: `measure_loss` + `fb_ortho_coef`
        `orthonormality_loss` of B(s'). Returns it and its terms, detached."""
        cfg = self.config
        x, x_next = self.inputs(batch.obs), self.inputs(batch.next_obs[:, 0])
        b_next = self.backward(x_next)
        z = sample_z(len(b_next), cfg.feature_dim, generator, cfg.fb_mix_ratio, b_next).to(b_next.device)
        f_sa = action_row(self.forward_net(x, z), batch.action)
        with torch.no_grad():
            f_next = self.forward_target(x_next, z)
            target_f = action_row(f_next, greedy_actions(f_next, z))
            target_b = self.backward(x_next, target=True)
        measure, stats = measure_loss(f_sa, b_next, target_f, target_b, cfg.gamma)
        ortho = orthonormality_loss(b_next)
        stats["loss_orth"] = ortho.detach()
        loss = measure + cfg.fb_ortho_coef * ortho
        stats["loss_fb"] = loss.detach()
        return loss, stats

    def update(self, batch: Batch, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """One update: `loss`, backward, the gradient clipped at `max_grad_norm`, an Adam step, then the
        targets moved towards the networks, theta_bar <- (1 - tau) theta_bar + tau theta (tau
        `fb_target_tau`)."""
        loss, stats = self.loss(batch, generator)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        self.optimizer.step()
        with torch.no_grad():
            tau = self.config.fb_target_tau
            pairs = ((self.forward_net, self.forward_target), (self.backward_net, self.backward_target))
            for net, target in pairs:
                torch._foreach_lerp_(list(target.parameters()), list(net.parameters()), tau)
        self.updates += 1
        return stats


def train_fb(fb: FBLearner, sample: Callable[[], Batch], updates: int, generator: torch.Generator
             ) -> list[float]:
    """`updates` FB updates (`FBLearner.update`) on minibatches `sample()` draws from a reward-free replay (on
    the learner's device), their z from `generator`. Takes no env step. Returns each update's loss."""
    if updates < 1:
        raise ValueError(f"train_fb needs updates >= 1, got {updates}")
    return [float(fb.update(sample(), generator)["loss_fb"]) for _ in range(updates)]
