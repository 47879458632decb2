"""One successor-feature learner; VISR, APT, APS and a DQN baseline are settings of `AgentConfig.method`.

What differs between methods, and nothing else:

| method | behaviour conditioned on w | intrinsic reward (pretraining)               | trains            |
|--------|----------------------------|----------------------------------------------|-------------------|
| visr   | yes, GPI when acting       | phi(s')^T w                                  | psi, phi (vMF)    |
| apt    | no (w fixed to e_1)        | kNN entropy of f(s') (or of s' itself)       | psi, f (InfoNCE)  |
| aps    | yes, GPI when acting       | phi(s')^T w + kNN entropy of phi(s') (Eq. 6) | psi, phi (vMF)   |
| dqn    | no (w fixed to e_1)        | none: no pretraining, task reward only       | psi               |

Q(s, a | w) = psi(s, a, w)^T w throughout (`tasks.q_values`), so the DQN baseline is the same network,
replay, optimiser and TD update as the others, started from scratch. This module holds the learner
(networks, optimiser, acting, the fine-tuning switch, checkpoints); its settings are
`aps_teach.learner.config`, what its networks read `aps_teach.learner.inputs`, and the update itself,
Algorithm 1, `aps_teach.learner.update`.

Decisions where the paper leaves room: both reward terms and the vMF loss use phi(s') of the state
reached (Algorithm 1 writes phi(s_t) in the loss, Eq. 6 mixes phi(s) and h = phi(s')); GPI is used when
acting on a task (evaluation), not while pretraining, where behaviour follows the sampled w. The n-step
intrinsic reward follows the authors' code by default (`AgentConfig.nstep_reward`): the reward of the
window's last state s'_m stands for the window, and the kNN particles are those states, one per sampled
transition, each excluding itself.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import asdict

import torch
from torch.nn import functional as F

from aps_teach.learner.batch import Batch
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.inputs import BoardInputs, InputColumns
from aps_teach.learner.networks import FeatureNet, SuccessorFeatureNet
from aps_teach.learner.rewards import MaskedRunningMean, Objective, RunningMean
from aps_teach.learner.tasks import gpi_action_values, gpi_candidates, q_values
from aps_teach.learner.update import count_update, gradient_step


def epsilon_greedy(greedy: torch.Tensor, epsilon: float, num_actions: int, generator: torch.Generator
                   ) -> torch.Tensor:
    """The greedy actions `greedy` (B,), each replaced with probability `epsilon` by one of `num_actions`
    uniformly at random; draws from `generator` (CPU) which rows act at random, then their actions."""
    at_random = torch.rand(len(greedy), generator=generator) < epsilon
    random = torch.randint(num_actions, (len(greedy),), generator=generator)
    return torch.where(at_random.to(greedy.device), random.to(greedy.device), greedy)


class Learner:
    """Successor features psi, features phi (and f), their optimiser and the TD / vMF / InfoNCE updates.

    The networks live on `device` (initialised on the CPU from `seed` first, so every device starts from
    the same weights); batches must be on it too. Random draws use the caller's CPU generator.

    Observations are boards (B, *obs_shape) or, once `set_observation_table` has given it a compiled level's
    boards, state indices into them (any shape); every method takes either. The networks read
    `inputs(obs)`, prepared by `board_inputs` (`inputs.BoardInputs`): the boards centred by the running
    observation mean, on `input_columns` (the entries that vary between the level's states) when given,
    else on all entries.

    `update` is `aps_teach.learner.update`, Algorithm 1 (which reads the learner through
    `update.Trainable`). `fixed_shapes=True` makes it an update of fixed
    tensor shapes that never waits on the device, as a GPU and torch.compile need (`AtariLearner`): the kNN
    reward over the windows' states (`nstep_reward='sum'`) and the reported reward means mask the invalid
    steps instead of selecting the valid ones, whose number the host would have to read, and the distance
    normaliser keeps its state on the device (`rewards.MaskedRunningMean`). The two agree up to float
    rounding, not bit for bit; the gridworld learner selects.
    """

    def __init__(self, config: AgentConfig, obs_shape: tuple[int, ...], num_actions: int, seed: int,
                 device: str | torch.device = "cpu", input_columns: InputColumns | None = None,
                 fixed_shapes: bool = False):
        config.check_particles()
        config.check_task_options()
        self.config, self.obs_shape, self.num_actions = config, tuple(obs_shape), num_actions
        self.fixed_shapes = fixed_shapes
        self.device = torch.device(device)
        self.board_inputs = BoardInputs(obs_shape, input_columns, config.normalise_observations, self.device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.psi, self.phi, self.rep = self.build_networks()
            for module in self._modules().values():  # only the entries that vary (aps_teach.learner.inputs)
                self.board_inputs.narrow(module)
        for module in self._modules().values():
            module.to(self.device)
        self.psi_target = copy.deepcopy(self.psi).requires_grad_(False)
        self.normaliser = None
        if config.uses_knn and config.knn_normalise:
            self.normaliser = MaskedRunningMean(self.device) if fixed_shapes else RunningMean()
        self.phase = "pretrain"
        self.updates = 0
        self.optimizer = self._adam(self.config.lr)
        self.objective: Objective | None = None
        self.explore_bonus = 0.0
        """Fine-tuning that keeps exploring: the weight of the exploration reward added to the task reward
        (`grid.train.finetune`'s `explore_weight`, decaying to 0); 0, the paper's protocol, adds nothing."""

    def to(self, device: str | torch.device) -> Learner:
        """Move the networks, their target, Adam's state, the observation mean and the state table to
        `device` (a gridworld run's updates on a GPU: `grid.config.TrainConfig.device`); returns self."""
        device = torch.device(device)
        if device == self.device:
            return self
        adam = self.optimizer.state_dict()
        for module in (*self._modules().values(), self.psi_target):
            module.to(device)
        self.device = device
        self.optimizer = self._adam(adam["param_groups"][0]["lr"])
        self.optimizer.load_state_dict(adam)  # Adam's moments and steps follow their parameters
        self.board_inputs.to(device)
        if self.normaliser is not None:
            self.normaliser.to(device)
        return self

    def use_objective(self, objective: Objective | None) -> None:
        """Pretrain on `objective`'s reward and vMF loss instead of Eqs. 6 and 5 (None: the library's).
        It must be the whole reward, so it needs what it is paid on: APS (phi and a kNN space), the last
        state's reward for an n-step window, the kNN reward as no feature of its own, no distance
        normaliser and both of Eq. 6's weights 1. Not saved in checkpoints: pass it again to resume."""
        cfg = self.config
        wrong = {"method": (cfg.method, "aps"), "nstep_reward": (cfg.nstep_reward, "last"),
                 "knn_feature": (cfg.knn_feature, False), "knn_normalise": (cfg.knn_normalise, False),
                 "exploit_weight": (cfg.exploit_weight, 1.0), "explore_weight": (cfg.explore_weight, 1.0)}
        wrong = {name: pair for name, pair in wrong.items() if pair[0] != pair[1]}
        if objective is not None and (wrong or self.fixed_shapes):
            settings = ", ".join(f"{name}={want!r} (not {got!r})" for name, (got, want) in wrong.items())
            raise ValueError("an objective of your own replaces the whole of Eq. 6 on the B states s'_m, "
                             f"so it needs {settings or 'a learner that selects (fixed_shapes=False)'}")
        self.objective = objective

    def build_networks(self) -> tuple[torch.nn.Module, torch.nn.Module | None, torch.nn.Module | None]:
        """psi, phi (task-conditioned methods) and f (a separate contrastive kNN space), here MLPs; a
        subclass swaps in other networks with the same call signatures (`aps_teach.atari.agent`)."""
        cfg = self.config
        obs_dim, d, hidden = math.prod(self.obs_shape), cfg.feature_dim, cfg.hidden
        psi = SuccessorFeatureNet(obs_dim, hidden, self.num_actions, cfg.task_input_dim, cfg.sf_dim)
        phi = FeatureNet(obs_dim, hidden, d) if cfg.task_conditioned else None
        rep = FeatureNet(obs_dim, hidden, d) if self._separate_knn_space == "contrastive" else None
        return psi, phi, rep

    @property
    def _separate_knn_space(self) -> str | None:
        cfg = self.config
        separate = cfg.method == "apt" or (cfg.method == "aps" and not cfg.shared_encoder)
        return cfg.representation if separate else None

    @property
    def knn_space(self) -> str | None:
        """Where the kNN reward measures distances (`embed`'s h): 'phi' (aps with a shared encoder, Eq. 6),
        'g' (phi before its normalisation, `knn_phi_normalised=False`), 'contrastive' (APT's encoder f),
        'observation' (the board), or None (visr, dqn: no kNN reward)."""
        if not self.config.uses_knn:
            return None
        separate = self._separate_knn_space
        return separate if separate is not None else "phi" if self.config.knn_phi_normalised else "g"

    def _modules(self) -> dict[str, torch.nn.Module]:
        named = {"psi": self.psi, "phi": self.phi, "rep": self.rep}
        return {name: m for name, m in named.items() if m is not None}

    def weights_finite(self) -> bool:
        """Whether every network weight is a finite number (an update that diverged leaves NaN or inf)."""
        return all(bool(torch.isfinite(p).all()) for m in self._modules().values() for p in m.parameters())

    def _adam(self, lr: float) -> torch.optim.Adam:
        trained = [self.psi] if self.phase == "finetune" else list(self._modules().values())
        params = [p for m in trained for p in m.parameters()]
        return torch.optim.Adam(params, lr=lr, eps=self.config.adam_eps, fused=True)

    def set_observation_table(self, observations: torch.Tensor | None) -> None:
        """Read observations given as state indices into `observations` (S, *obs_shape), the boards of a
        compiled level (`BoardInputs.set_table`); None: boards only. Not a learned quantity: the same
        learner reads either engine's observations."""
        self.board_inputs.set_table(observations)

    def inputs(self, obs: torch.Tensor):
        """What the networks read for `obs` (`BoardInputs`): x = board - m on the input columns."""
        return self.board_inputs(obs)

    def observe(self, obs: torch.Tensor) -> None:
        """Fold observations the learner will train on into the running mean of its inputs."""
        self.board_inputs.observe(obs)

    def default_task(self, n: int) -> torch.Tensor:
        """The fixed w = e_1 of methods without task conditioning (apt, dqn), repeated n times."""
        w = torch.zeros(n, self.config.feature_dim, device=self.device)
        w[:, 0] = 1.0
        return w

    def start_finetune(self) -> None:
        """Switch to fine-tuning: phi and f frozen, a fresh Adam on psi at `finetune_lr`. The observation mean
        freezes too if the learner has been trained (phi's input must not move); an untrained learner (dqn)
        keeps folding in what it sees."""
        self.phase = "finetune"
        for module in (self.phi, self.rep):
            if module is not None:
                module.requires_grad_(False)
        if self.updates > 0:
            self.board_inputs.freeze()
        self.optimizer = self._adam(self.config.finetune_lr)

    def task_weights(self, w: torch.Tensor, explore: bool = False) -> torch.Tensor:
        """The weights Q = psi^T w~ scores successor features with: w itself, or with the kNN reward as a
        feature of its own (`AgentConfig.knn_feature`) w~ = (exploit_weight w, explore_weight) when
        `explore` (pretraining's Eq. 6 reward), else (w, 0), the task alone. With `explore_conditioned`,
        w may carry beta as a last column (`psi_task`) and w~ = (exploit_weight w, beta explore_weight)
        when `explore`."""
        cfg = self.config
        if cfg.sf_dim == cfg.feature_dim:
            return w
        task, beta = w[..., :cfg.feature_dim], torch.ones_like(w[..., :1])
        if cfg.explore_conditioned:  # beta from w's last column, 0 for a task of d columns
            beta = self.psi_task(w)[..., cfg.feature_dim:]
        if explore:
            return torch.cat([cfg.exploit_weight * task, cfg.explore_weight * beta], -1)
        return torch.cat([task, torch.zeros_like(beta)], -1)

    def psi_task(self, w: torch.Tensor) -> torch.Tensor:
        """psi's task input for tasks w (..., d): w itself, or with `AgentConfig.explore_conditioned` (w,
        beta), beta = 0 (a task) unless w already carries it as a (d + 1)-th column (pretraining)."""
        cfg = self.config
        if cfg.task_input_dim == cfg.feature_dim or w.shape[-1] == cfg.task_input_dim:
            return w
        return torch.cat([w, torch.zeros_like(w[..., :1])], -1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, w: torch.Tensor, epsilon: float, generator: torch.Generator,
            gpi: bool, explore: bool = False) -> torch.Tensor:
        """epsilon-greedy on Q(s, a) = psi(s, a, w)^T w~ (`task_weights`; `explore`: pretraining's reward),
        or its GPI max over candidates if `gpi`."""
        w = w.to(self.device)
        candidates = gpi_candidates(w, self.config.gpi_samples, generator) if gpi else w[:, None]
        greedy = gpi_action_values(self.psi(self.inputs(obs), self.psi_task(candidates)),
                                   self.task_weights(w, explore)).argmax(dim=1)
        return epsilon_greedy(greedy, epsilon, self.num_actions, generator)

    @torch.no_grad()
    def q_values(self, obs: torch.Tensor, w: torch.Tensor, explore: bool = False) -> torch.Tensor:
        """Q(s, a | w) = psi(s, a, w)^T w~ (`task_weights`), (B, A), for observations (B, ...) and tasks w
        (B, d)."""
        return q_values(self.psi(self.inputs(obs), self.psi_task(w)), self.task_weights(w, explore)[:, None])

    @torch.no_grad()
    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """phi(s) for a batch of observations (task-conditioned methods only)."""
        if self.phi is None:
            raise ValueError(f"method {self.config.method!r} has no task features phi")
        return self.phi(self.inputs(obs))

    @torch.no_grad()
    def knn_features(self, obs: torch.Tensor) -> torch.Tensor:
        """h(s), the space where the kNN reward measures distances, for a batch of observations: phi(s)
        (aps with a shared encoder), APT's contrastive encoder f(s), or the flattened board (`embed`)."""
        if not self.config.uses_knn:
            raise ValueError(f"method {self.config.method!r} has no kNN exploration reward")
        return self.embed(obs)[1]

    def _phi_and_knn(self, x) -> tuple[torch.Tensor, torch.Tensor]:
        """phi(s) of network inputs x, and the space h(s) where APS with a shared encoder measures kNN
        distances: phi itself, on the unit sphere (Eq. 6), or with `knn_phi_normalised=False` (the
        authors' code) g(s), phi's output before its normalisation (phi = g / ||g||, one forward pass)."""
        if self.config.knn_phi_normalised:
            phi = self.phi(x)
            return phi, phi
        g = self.phi.unnormalised(x)
        return F.normalize(g, dim=-1), g

    def embed(self, obs: torch.Tensor, knn: bool = True) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(phi(s), h(s)) for a batch of observations (N, ...): the task features (None for apt, dqn) and,
        if `knn`, the space h where the kNN reward measures distances (None for visr, dqn or without
        `knn`): phi itself for aps with a shared encoder (`_phi_and_knn`), else APT's contrastive encoder
        f(s) (no gradient: InfoNCE trains it) or the flattened board (`AgentConfig.representation`)."""
        x = self.inputs(obs)
        phi, h = self._phi_and_knn(x) if self.phi is not None else (None, None)
        space = self._separate_knn_space
        if not (knn and self.config.uses_knn):
            h = None
        elif space == "contrastive":
            with torch.no_grad():
                h = self.rep(x)
        elif space == "observation":
            h = self.boards(obs)
        return phi, h

    def boards(self, obs: torch.Tensor) -> torch.Tensor:
        """The flattened boards (B, D) float of observations given as boards or state indices."""
        return self.board_inputs.boards(obs)

    def update(self, batch: Batch, step: Callable[..., dict] = gradient_step) -> dict[str, torch.Tensor]:
        """One update of Algorithm 1 on a replay minibatch (`aps_teach.learner.update`: `gradient_step`, or
        `step` in its place, e.g. compiled, then `count_update`); returns the losses and reward terms as
        detached tensors."""
        stats = step(self, batch)
        count_update(self)
        return stats

    def state_dict(self) -> dict:
        """Everything needed to continue training bit-identically: weights, target, optimiser, normalisers."""
        return {
            "config": asdict(self.config),
            "phase": self.phase,
            "updates": self.updates,
            "modules": {name: _own(m.state_dict()) for name, m in self._modules().items()},
            "psi_target": _own(self.psi_target.state_dict()),
            "optimizer": self.optimizer.state_dict(),
            "normaliser": self.normaliser.state_dict() if self.normaliser is not None else None,
            **self.board_inputs.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        saved = state["config"]
        for name in ("method", "normalise_observations", "nstep_reward"):
            if saved.get(name) != getattr(self.config, name):
                raise ValueError(f"checkpoint was trained with {name}={saved.get(name)!r}, this learner has "
                                 f"{name}={getattr(self.config, name)!r}")
        self.board_inputs.load_state_dict(state)
        if state["phase"] == "finetune" and self.phase != "finetune":
            self.start_finetune()
        for name, module in self._modules().items():
            module.load_state_dict(state["modules"][name])
        self.psi_target.load_state_dict(state["psi_target"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.normaliser is not None:
            self.normaliser.load_state_dict(state["normaliser"])
        self.updates = int(state["updates"])


def _own(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A module's state with tensors of their own: a seed group's weights are views into its stacks, and
    saving a view would save the whole stack (`group.LearnerGroup`)."""
    return {name: value.clone() for name, value in state.items()}
