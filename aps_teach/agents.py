"""One successor-feature learner; VISR, APT, APS and a DQN baseline are settings of `AgentConfig.method`.

What differs between methods, and nothing else:

| method | behaviour conditioned on w | intrinsic reward (pretraining)               | trains            |
|--------|----------------------------|----------------------------------------------|-------------------|
| visr   | yes, GPI when acting       | phi(s')^T w                                  | psi, phi (vMF)    |
| apt    | no (w fixed to e_1)        | kNN entropy of f(s') (or of s' itself)       | psi, f (InfoNCE)  |
| aps    | yes, GPI when acting       | phi(s')^T w + kNN entropy of phi(s') (Eq. 10) | psi, phi (vMF)   |
| dqn    | no (w fixed to e_1)        | none: no pretraining, task reward only       | psi               |

Q(s, a | w) = psi(s, a, w)^T w throughout (`tasks.q_values`), so the DQN baseline is the same network,
replay, optimiser and TD update as the others, started from scratch. This module holds the configuration
and the learner (networks, optimiser, acting, the fine-tuning switch, checkpoints); the update itself,
Algorithm 1, is `aps_teach.update`.

Decisions where the paper leaves room: both reward terms and the vMF loss use phi(s') of the state
reached (Algorithm 1 writes phi(s_t) in the loss, Eq. 10 mixes phi(s) and h = phi(s')); GPI is used when
acting on a task (evaluation), not while pretraining, where behaviour follows the sampled w. The n-step
intrinsic reward follows the authors' code by default (`AgentConfig.nstep_reward`): the reward of the
window's last state s'_m stands for the window, and the kNN particles are those states, one per sampled
transition, each excluding itself.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import torch
from torch.nn import functional as F

from aps_teach.batch import Batch
from aps_teach.checks import check_finite, check_int, check_range
from aps_teach.features import FeatureNet, SuccessorFeatureNet
from aps_teach.inputs import InputColumns, ObservationNormaliser, StateTable, narrow_input
from aps_teach.rewards import MaskedRunningMean, RunningMean
from aps_teach.tasks import gpi_action_values, gpi_candidates, q_values
from aps_teach.update import count_update, gradient_step

METHODS = ("visr", "apt", "aps", "dqn")
SF_LOSSES = ("vector", "scalar")
NSTEP_REWARDS = ("last", "sum")
Method = Literal["visr", "apt", "aps", "dqn"]


def check_method(method: str, valid: Sequence[str] = METHODS, purpose: str = "") -> None:
    """ValueError naming the `valid` methods (default: all of `METHODS`) unless `method` is one of them;
    `purpose` says what they are valid for (e.g. 'for transfer')."""
    if method not in valid:
        what = f"method {method!r} is not one of the" if method in METHODS else f"unknown method {method!r};"
        raise ValueError(f"{what} valid methods{' ' + purpose if purpose else ''}: {', '.join(valid)}")


@dataclass
class AgentConfig:
    """The learner: networks, losses and update rule. Defaults are the gridworld settings."""

    method: Method = "aps"
    """visr | apt | aps | dqn (see the table in `aps_teach.agents`)."""
    feature_dim: int = 16
    """Dimension d of phi, psi and w (paper: 5 on Atari, to match VISR; the budget study chose 16 here)."""
    hidden: int = 128
    """Hidden units of every MLP."""
    k: int = 10
    """Neighbours in the kNN particle-entropy reward (paper searches {3, 5, 10})."""
    knn_exponent: float = 1.0
    """Distances enter the kNN reward raised to this power: 1 as in the public code; the paper's n_h = d."""
    knn_normalise: bool = True
    """Divide kNN distances by their running mean (the reference code's option): keeps the exploration
    term O(1) whatever the scale of the kNN space (README, Configuration, has the measured means)."""
    shared_encoder: bool = True
    """APS: compute the kNN reward on phi(s') (Eq. 10); False uses the `representation` of APT instead."""
    knn_phi_normalised: bool = True
    """APS with a shared encoder: kNN distances between phi(s') on the unit sphere (Eq. 10's h = phi), or,
    False, between g(s'), phi's output before its L2 normalisation, as the authors' code measures them
    (rll-research/url_benchmark agent/aps.py, `self.aps(next_obs, norm=False)`)."""
    representation: Literal["contrastive", "observation"] = "contrastive"
    """The kNN space when it is not phi (apt; aps without shared encoder): 'contrastive' = an encoder f
    trained by InfoNCE between f(s) and f(s') (APT, with time steps for augmentations); 'observation' =
    the flattened observation itself, a simpler choice for one-hot gridworld states, where the distance
    between two states only counts the cells that differ, making the reward a count-based bonus."""
    nstep_reward: Literal["last", "sum"] = "last"
    """How an n-step window earns its intrinsic reward while pretraining. 'last', as the authors' code
    (rll-research/url_benchmark, replay_buffer.py and agent/aps.py): the reward of the window's last valid
    state s'_m stands for the whole window, y = c(s'_m) + gamma^m psi_target(s'_m), and the kNN particles
    are those states, one per sampled transition. 'sum': the exact sum_{i<m} gamma^i c(s'_i), the particles
    every valid window state. Task rewards (fine-tuning) are always summed exactly."""
    normalise_observations: bool = True
    """Subtract the running mean of the observations trained on from the networks' input (`aps_teach.inputs`;
    gridworld MLPs only). Raw one-hot boards are mostly always-on inputs, and phi's units die."""
    exploit_weight: float = 1.0
    """Weight of phi(s')^T w in the intrinsic reward (visr, aps)."""
    explore_weight: float = 1.0
    """Weight of the kNN entropy term in the intrinsic reward (apt, aps)."""
    sf_loss: Literal["vector", "scalar"] = "vector"
    """'vector': TD on psi with cumulant c = base + (r - base^T w) w (base = phi(s'), 0 for apt/dqn), so
    c^T w = r; 'scalar': TD on psi^T w as in Algorithm 1. Vector is the default because the scalar loss
    never trains psi(s, a, z) along directions other than z, yet GPI scores psi(s, a, z_i)^T w (notebook
    05 compares the two on zero-shot transfer)."""
    knn_feature: bool = False
    """aps: the kNN reward is a successor feature of its own. psi has d + 1 outputs per action, the SFs of
    (phi(s'), r_kNN(s')), and Q = psi^T (exploit_weight w, explore_weight) while pretraining (the same
    Eq. 10 reward), psi^T (w, 0) on a task. False: the kNN return is carried along w (cumulant
    phi(s') + r_kNN(s') w), so psi must output it multiplied by its own input w."""
    gpi: bool = True
    """Act with generalised policy improvement over {w} + `gpi_samples` fresh tasks (visr, aps)."""
    gpi_samples: int = 10
    """Fresh task samples among the GPI candidates (paper: 10)."""
    gamma: float = 0.99
    """Discount factor (paper: 0.99)."""
    bootstrap_through_termination: bool = True
    """Pretraining only: bootstrap through env termination as if it were a time-out. Without a task the
    end of an episode is no loss; else positive intrinsic rewards teach the agent to avoid the target."""
    n_step: int = 10
    """Multi-step return length (paper: 10)."""
    batch_size: int = 256
    """Minibatch size per update (paper: 32 on Atari; the authors' URL Benchmark code: 1024)."""
    lr: float = 1e-3
    """Adam learning rate while pretraining (paper: 1e-4 for 5M Atari steps; here a few thousand updates)."""
    finetune_lr: float = 1e-3
    """Adam learning rate while fine-tuning (paper: 1e-3)."""
    adam_eps: float = 1.5e-4
    """Adam epsilon (paper: 1.5e-4)."""
    max_grad_norm: float = 10.0
    """Gradient-norm clip (paper: 10)."""
    target_update_period: int = 100
    """Updates between copies of psi into its target network (paper: 100)."""
    contrastive_temperature: float = 0.5
    """Temperature of the InfoNCE loss training f (apt, aps without shared encoder)."""

    def __post_init__(self) -> None:
        check_method(self.method)
        if self.representation not in ("contrastive", "observation"):
            raise ValueError(f"unknown representation {self.representation!r}; "
                             "valid: contrastive, observation")
        if self.nstep_reward not in NSTEP_REWARDS:
            raise ValueError(f"unknown nstep_reward {self.nstep_reward!r}; valid: {', '.join(NSTEP_REWARDS)}")
        if self.sf_loss not in SF_LOSSES:
            raise ValueError(f"unknown sf_loss {self.sf_loss!r}; valid: {', '.join(SF_LOSSES)}")
        check_int("feature_dim", self.feature_dim, 2)
        for name in ("hidden", "k", "n_step", "batch_size", "target_update_period"):
            check_int(name, getattr(self, name))
        check_int("gpi_samples", self.gpi_samples, 0)
        check_range("gamma", self.gamma, 0, 1, low_open=True)
        for name in ("lr", "finetune_lr", "adam_eps", "max_grad_norm", "contrastive_temperature",
                     "knn_exponent"):
            check_range(name, getattr(self, name), 0, low_open=True)
        for name in ("exploit_weight", "explore_weight"):
            check_finite(name, getattr(self, name))

    @property
    def particles(self) -> int:
        """States in the kNN particle set of a minibatch: the last state of each window ('last'), or every
        state of each window ('sum'; windows cut short at an episode end or a change of w give fewer)."""
        return self.batch_size * (self.n_step if self.nstep_reward == "sum" else 1)

    @property
    def sf_dim(self) -> int:
        """Successor features per action: d, or d + 1 with the kNN reward as a feature of its own (aps)."""
        return self.feature_dim + (self.knn_feature and self.method == "aps")

    @property
    def task_conditioned(self) -> bool:
        """Whether behaviour follows a sampled w (and task inference applies)."""
        return self.method in ("visr", "aps")

    @property
    def uses_knn(self) -> bool:
        return self.method in ("apt", "aps")

    def check_particles(self) -> None:
        """ValueError if the method uses the kNN reward and k is not less than a minibatch's particle set.
        Checked once the method is final (by `Learner` and the pipelines' input checks), not at construction:
        a config's method is aps until a command line's --method replaces it, and visr and dqn never use k."""
        if self.uses_knn and self.k >= self.particles:
            size = f"batch_size {self.batch_size}" + (f" x n_step {self.n_step}" if self.nstep_reward == "sum"
                                                      else "")
            raise ValueError(f"k must be less than the kNN particle set of a minibatch, {self.particles} "
                             f"states ({size}), each excluding itself; got k={self.k} for {self.method}: "
                             "lower k or raise batch_size")


class Learner:
    """Successor features psi, features phi (and f), their optimiser and the TD / vMF / InfoNCE updates.

    The networks live on `device` (initialised on the CPU from `seed` first, so every device starts from
    the same weights); batches must be on it too. Random draws use the caller's CPU generator.

    Observations are boards (B, *obs_shape) or, once `set_observation_table` has given it a compiled level's
    boards, state indices into them (any shape); every method takes either. The networks read
    `inputs(obs)`: the boards centred by the running observation mean, on `input_columns` (the entries
    that vary between the level's states, `aps_teach.inputs`) when given, else on all entries.

    `update` is `aps_teach.update`, Algorithm 1. `fixed_shapes=True` makes it an update of fixed tensor
    shapes that never waits on the device, as a GPU and torch.compile need (`AtariLearner`): the kNN
    reward over the windows' states (`nstep_reward='sum'`) and the reported reward means mask the invalid
    steps instead of selecting the valid ones, whose number the host would have to read, and the distance
    normaliser keeps its state on the device (`rewards.MaskedRunningMean`). The two agree up to float
    rounding, not bit for bit; the gridworld learner selects.
    """

    def __init__(self, config: AgentConfig, obs_shape: tuple[int, ...], num_actions: int, seed: int,
                 device: str | torch.device = "cpu", input_columns: InputColumns | None = None,
                 fixed_shapes: bool = False):
        config.check_particles()
        self.config, self.obs_shape, self.num_actions = config, tuple(obs_shape), num_actions
        self.fixed_shapes = fixed_shapes
        self.device = torch.device(device)
        self.input_columns = input_columns if config.normalise_observations else None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.psi, self.phi, self.rep = self.build_networks()
            if self.input_columns is not None:  # read only the entries that vary (see aps_teach.inputs)
                for module in self._modules().values():
                    module.input = narrow_input(module.input, self.input_columns.columns)
        for module in self._modules().values():
            module.to(self.device)
        self.psi_target = copy.deepcopy(self.psi).requires_grad_(False)
        self.normaliser = None
        if config.uses_knn and config.knn_normalise:
            self.normaliser = MaskedRunningMean(self.device) if fixed_shapes else RunningMean()
        width = math.prod(self.obs_shape) if self.input_columns is None else len(self._columns)
        self.observation_mean = ObservationNormaliser(width, self.device) if config.normalise_observations \
            else None
        self._zeros = torch.zeros(width, device=self.device)
        self.table: StateTable | None = None
        self.phase = "pretrain"
        self.updates = 0
        self.optimizer = self._adam(self.config.lr)

    def build_networks(self) -> tuple[torch.nn.Module, torch.nn.Module | None, torch.nn.Module | None]:
        """psi, phi (task-conditioned methods) and f (a separate contrastive kNN space), here MLPs; a
        subclass swaps in other networks with the same call signatures (`aps_teach.atari.agent`)."""
        cfg = self.config
        obs_dim, d, hidden = math.prod(self.obs_shape), cfg.feature_dim, cfg.hidden
        psi = SuccessorFeatureNet(obs_dim, hidden, self.num_actions, d, cfg.sf_dim)
        phi = FeatureNet(obs_dim, hidden, d) if cfg.task_conditioned else None
        rep = FeatureNet(obs_dim, hidden, d) if self._separate_knn_space == "contrastive" else None
        return psi, phi, rep

    @property
    def _separate_knn_space(self) -> str | None:
        cfg = self.config
        separate = cfg.method == "apt" or (cfg.method == "aps" and not cfg.shared_encoder)
        return cfg.representation if separate else None

    def _modules(self) -> dict[str, torch.nn.Module]:
        named = {"psi": self.psi, "phi": self.phi, "rep": self.rep}
        return {name: m for name, m in named.items() if m is not None}

    def _adam(self, lr: float) -> torch.optim.Adam:
        trained = [self.psi] if self.phase == "finetune" else list(self._modules().values())
        params = [p for m in trained for p in m.parameters()]
        return torch.optim.Adam(params, lr=lr, eps=self.config.adam_eps, fused=True)

    def set_observation_table(self, observations: torch.Tensor | None) -> None:
        """Read observations given as state indices into `observations` (S, *obs_shape), the boards of a
        compiled level (`env_batch.EnvBatch.observation_table`); None: boards only. Not a learned quantity:
        the same learner reads either engine's observations."""
        if observations is None or (self.table is not None and self.table.source is observations):
            return
        if tuple(observations.shape[1:]) != self.obs_shape:
            raise ValueError(f"observation table of boards {tuple(observations.shape[1:])}, but the learner "
                             f"reads boards {self.obs_shape}")
        if self.input_columns is not None:
            self.input_columns.check(observations)
        self.table = StateTable(observations, self._columns, self.device)

    @property
    def _columns(self) -> torch.Tensor | None:
        return None if self.input_columns is None else self.input_columns.columns

    def _is_index(self, obs: torch.Tensor) -> bool:
        """Whether `obs` holds state indices into the table rather than boards."""
        if tuple(obs.shape[obs.ndim - len(self.obs_shape):]) == self.obs_shape:
            return False
        if self.table is None:
            raise ValueError(f"observations of shape {tuple(obs.shape)} are not boards {self.obs_shape}, and "
                             "state indices need an observation table (set_observation_table)")
        return True

    def boards(self, obs: torch.Tensor) -> torch.Tensor:
        """Flattened boards (B, D) float of observations given as boards (B, *obs_shape) or indices (B,)."""
        boards = self.table.source[obs] if self._is_index(obs) else obs
        return boards.flatten(1).float()

    def _read(self, obs: torch.Tensor) -> torch.Tensor:
        """The input columns of boards (B, *obs_shape), as floats (B, D)."""
        x = obs.flatten(1).float()
        return x if self.input_columns is None else x[:, self._columns]

    def inputs(self, obs: torch.Tensor):
        """What the networks read for `obs`: x = board - m (B, D) on the input columns, m the running
        observation mean (0 without normalisation), or the same as `TableInputs` for state indices."""
        mean = self.observation_mean.mean if self.observation_mean is not None else self._zeros
        if self._is_index(obs):
            return self.table.inputs(obs, mean)
        return self._read(obs) - mean

    def observe(self, obs: torch.Tensor) -> None:
        """Fold observations the learner will train on into the running mean of its inputs."""
        if self.observation_mean is not None:
            x = self.table.boards[obs] if self._is_index(obs) else self._read(obs)
            self.observation_mean.update(x)

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
        if self.observation_mean is not None and self.updates > 0:
            self.observation_mean.frozen = True
        self.optimizer = self._adam(self.config.finetune_lr)

    def task_weights(self, w: torch.Tensor, explore: bool = False) -> torch.Tensor:
        """The weights Q = psi^T w~ scores successor features with: w itself, or with the kNN reward as a
        feature of its own (`AgentConfig.knn_feature`) w~ = (exploit_weight w, explore_weight) when
        `explore` (pretraining's Eq. 10 reward), else (w, 0), the task alone."""
        cfg = self.config
        if cfg.sf_dim == cfg.feature_dim:
            return w
        if explore:
            return torch.cat([cfg.exploit_weight * w, torch.full_like(w[..., :1], cfg.explore_weight)], -1)
        return torch.cat([w, torch.zeros_like(w[..., :1])], -1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, w: torch.Tensor, epsilon: float, generator: torch.Generator,
            gpi: bool, explore: bool = False) -> torch.Tensor:
        """epsilon-greedy on Q(s, a) = psi(s, a, w)^T w~ (`task_weights`; `explore`: pretraining's reward),
        or its GPI max over candidates if `gpi`."""
        candidates = gpi_candidates(w, self.config.gpi_samples, generator) if gpi else w[:, None]
        greedy = gpi_action_values(self.psi(self.inputs(obs), candidates),
                                   self.task_weights(w, explore)).argmax(dim=1)
        at_random = torch.rand(len(w), generator=generator) < epsilon
        random = torch.randint(self.num_actions, (len(w),), generator=generator)
        return torch.where(at_random.to(greedy.device), random.to(greedy.device), greedy)

    @torch.no_grad()
    def q_values(self, obs: torch.Tensor, w: torch.Tensor, explore: bool = False) -> torch.Tensor:
        """Q(s, a | w) = psi(s, a, w)^T w~ (`task_weights`), (B, A), for observations (B, ...) and tasks w
        (B, d)."""
        return q_values(self.psi(self.inputs(obs), w), self.task_weights(w, explore)[:, None])

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
        distances: phi itself, on the unit sphere (Eq. 10), or with `knn_phi_normalised=False` (the
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

    def update(self, batch: Batch) -> dict[str, torch.Tensor]:
        """One update of Algorithm 1 on a replay minibatch (`aps_teach.update`: `gradient_step`, then
        `count_update`); returns the losses and reward terms as detached tensors."""
        stats = gradient_step(self, batch)
        count_update(self)
        return stats

    def state_dict(self) -> dict:
        """Everything needed to continue training bit-identically: weights, target, optimiser, normalisers."""
        return {
            "config": asdict(self.config),
            "phase": self.phase,
            "updates": self.updates,
            "modules": {name: m.state_dict() for name, m in self._modules().items()},
            "psi_target": self.psi_target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "normaliser": self.normaliser.state_dict() if self.normaliser is not None else None,
            "observation_mean": self.observation_mean.state_dict() if self.observation_mean is not None
            else None,
            "input_columns": None if self.input_columns is None else self.input_columns._asdict(),
        }

    def load_state_dict(self, state: dict) -> None:
        saved = state["config"]
        for name in ("method", "normalise_observations", "nstep_reward"):
            if saved.get(name) != getattr(self.config, name):
                raise ValueError(f"checkpoint was trained with {name}={saved.get(name)!r}, this learner has "
                                 f"{name}={getattr(self.config, name)!r}")
        columns = state.get("input_columns")
        if (columns is None) != (self.input_columns is None) or (
                columns is not None and not torch.equal(columns["columns"], self._columns)):
            raise ValueError("checkpoint reads other board entries than this learner: it was trained on "
                             "another level (or without observation normalisation)")
        if state["phase"] == "finetune" and self.phase != "finetune":
            self.start_finetune()
        for name, module in self._modules().items():
            module.load_state_dict(state["modules"][name])
        self.psi_target.load_state_dict(state["psi_target"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.normaliser is not None:
            self.normaliser.load_state_dict(state["normaliser"])
        if self.observation_mean is not None:
            self.observation_mean.load_state_dict(state["observation_mean"])
        self.updates = int(state["updates"])
