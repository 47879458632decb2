"""One successor-feature learner; VISR, APT, APS and a DQN baseline are settings of `AgentConfig.method`.

What differs between methods, and nothing else:

| method | behaviour conditioned on w | intrinsic reward (pretraining)               | trains            |
|--------|----------------------------|----------------------------------------------|-------------------|
| visr   | yes, GPI when acting       | phi(s')^T w                                  | psi, phi (vMF)    |
| apt    | no (w fixed to e_1)        | kNN entropy of f(s') (or of s' itself)       | psi, f (InfoNCE)  |
| aps    | yes, GPI when acting       | phi(s')^T w + kNN entropy of phi(s') (Eq. 10) | psi, phi (vMF)   |
| dqn    | no (w fixed to e_1)        | none: no pretraining, task reward only       | psi               |

Q(s, a | w) = psi(s, a, w)^T w throughout, so the DQN baseline is the same network, replay, optimiser
and TD update as the others, started from scratch.

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

from aps_teach.checks import check_int, check_range
from aps_teach.features import FeatureNet, SuccessorFeatureNet
from aps_teach.inputs import InputColumns, ObservationNormaliser, StateTable, narrow_input
from aps_teach.rewards import RunningMean, particle_entropy_reward, vmf_loss, vmf_reward
from aps_teach.tasks import gpi_action_values, gpi_candidates

METHODS = ("visr", "apt", "aps", "dqn")
SF_LOSSES = ("vector", "scalar")
NSTEP_REWARDS = ("last", "sum")
Method = Literal["visr", "apt", "aps", "dqn"]


def check_method(method: str, valid: Sequence[str] = METHODS, purpose: str = "") -> None:
    """ValueError naming the `valid` methods (default: all of `METHODS`) unless `method` is one of them;
    `purpose` says what they are valid for (e.g. 'for transfer')."""
    if method not in valid:
        raise ValueError(f"unknown method {method!r}; valid methods{' ' + purpose if purpose else ''}: "
                         f"{', '.join(valid)}")


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
    term O(1) (mean 0.5 vs 0.03 unnormalised on the easy level, where most neighbours are duplicates)."""
    shared_encoder: bool = True
    """APS: compute the kNN reward on phi(s') (Eq. 10); False uses the `representation` of APT instead."""
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

    @property
    def particles(self) -> int:
        """States in the kNN particle set of a minibatch: the last state of each window ('last'), or every
        state of each window ('sum'; windows cut short at an episode end or a change of w give fewer)."""
        return self.batch_size * (self.n_step if self.nstep_reward == "sum" else 1)

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


def info_nce(anchor: torch.Tensor, positive: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE: cross-entropy of row i of anchor @ positive^T / temperature against the label i."""
    logits = anchor @ positive.T / temperature
    return F.cross_entropy(logits, torch.arange(len(anchor), device=logits.device))


def sf_td_target(base: torch.Tensor, reward: torch.Tensor, w: torch.Tensor, mask: torch.Tensor, gamma: float,
                 boot_psi: torch.Tensor, boot_steps: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """The n-step successor-feature TD target y (B, d) of a batch of windows.

    c_i = base_i + (r_i - base_i^T w) w  (so c_i^T w = r_i: the cumulant pays exactly the reward r_i)
    y = sum_{i<n} gamma^i mask_i c_i + gamma^m alive boot_psi

    `base` (B, n, d) is phi(s'_i) (zeros without task features), `reward` (B, n) the reward r_i, `w`
    (B, d), `mask` (B, n) 1 on the m valid steps of each window, `boot_psi` (B, d) = psi_target(s'_m,
    a*, w) with a* = argmax_a psi(s'_m, a, w)^T w, `boot_steps` (B,) = m, `alive` (B,) 0 if s'_m ended
    the episode.
    """
    batch, n, d = base.shape
    expected = {"reward": (batch, n), "w": (batch, d), "mask": (batch, n), "boot_psi": (batch, d),
                "boot_steps": (batch,), "alive": (batch,)}
    given = {"reward": reward, "w": w, "mask": mask, "boot_psi": boot_psi, "boot_steps": boot_steps,
             "alive": alive}
    for name, shape in expected.items():
        if tuple(given[name].shape) != shape:
            raise ValueError(f"sf_td_target: {name} has shape {tuple(given[name].shape)}, expected {shape} "
                             f"for base (B, n, d) = {tuple(base.shape)}")
    cumulant = base + (reward - vmf_reward(base, w[:, None]))[..., None] * w[:, None]
    discount = gamma ** torch.arange(n, dtype=torch.float32, device=base.device)
    ret = (discount[None, :, None] * mask[..., None] * cumulant).sum(1)
    return ret + (gamma ** boot_steps * alive)[:, None] * boot_psi


class Learner:
    """Successor features psi, features phi (and f), their optimiser and the TD / vMF / InfoNCE updates.

    The networks live on `device` (initialised on the CPU from `seed` first, so every device starts from
    the same weights); batches must be on it too. Random draws use the caller's CPU generator.

    Observations are boards (B, *obs_shape) or, once `set_observation_table` has given it a compiled level's
    boards, state indices into them (any shape); every method takes either. The networks read
    `inputs(obs)`: the boards centred by the running observation mean, on `input_columns` (the entries
    that vary between the level's states, `aps_teach.inputs`) when given, else on all entries.
    """

    def __init__(self, config: AgentConfig, obs_shape: tuple[int, ...], num_actions: int, seed: int,
                 device: str | torch.device = "cpu", input_columns: InputColumns | None = None):
        config.check_particles()
        self.config, self.obs_shape, self.num_actions = config, tuple(obs_shape), num_actions
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
        self.normaliser = RunningMean() if config.uses_knn and config.knn_normalise else None
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
        psi = SuccessorFeatureNet(obs_dim, hidden, self.num_actions, d)
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

    @torch.no_grad()
    def act(self, obs: torch.Tensor, w: torch.Tensor, epsilon: float, generator: torch.Generator,
            gpi: bool) -> torch.Tensor:
        """epsilon-greedy on Q(s, a) = psi(s, a, w)^T w, or its GPI max over candidates if `gpi`."""
        candidates = gpi_candidates(w, self.config.gpi_samples, generator) if gpi else w[:, None]
        greedy = gpi_action_values(self.psi(self.inputs(obs), candidates), w).argmax(dim=1)
        explore = torch.rand(len(w), generator=generator) < epsilon
        random = torch.randint(self.num_actions, (len(w),), generator=generator)
        return torch.where(explore.to(greedy.device), random.to(greedy.device), greedy)

    @torch.no_grad()
    def q_values(self, obs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Q(s, a | w) = psi(s, a, w)^T w, (B, A), for observations (B, ...) and tasks w (B, d)."""
        return vmf_reward(self.psi(self.inputs(obs), w), w[:, None])

    @torch.no_grad()
    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """phi(s) for a batch of observations (task-conditioned methods only)."""
        if self.phi is None:
            raise ValueError(f"method {self.config.method!r} has no task features phi")
        return self.phi(self.inputs(obs))

    @torch.no_grad()
    def knn_features(self, obs: torch.Tensor) -> torch.Tensor:
        """h(s), the space where the kNN reward measures distances, for a batch of observations: phi(s)
        (aps with a shared encoder), APT's contrastive encoder f(s), or the flattened board."""
        space = self._separate_knn_space
        if not self.config.uses_knn:
            raise ValueError(f"method {self.config.method!r} has no kNN exploration reward")
        if space is None:
            return self._phi_and_knn(self.inputs(obs))[1]
        if space == "contrastive":
            return self.rep(self.inputs(obs))
        return self.boards(obs)

    def _phi_and_knn(self, x) -> tuple[torch.Tensor, torch.Tensor]:
        """phi(s) of network inputs x, and the space h(s) where APS with a shared encoder measures kNN
        distances: phi itself, on the unit sphere (Eq. 10). `AtariLearner` can measure them before phi's
        normalisation instead (`AtariConfig.knn_phi_normalised`)."""
        phi = self.phi(x)
        return phi, phi

    def _intrinsic(self, seq_next: torch.Tensor, mask: torch.Tensor, w: torch.Tensor, phi_seq,
                   h_seq: torch.Tensor | None = None):
        """Intrinsic reward of every step of the windows, (B, n), and the mean of each term ('sum' mode);
        `h_seq` is the kNN space of phi when it is not phi itself (`_phi_and_knn`)."""
        cfg, stats = self.config, {}
        reward = torch.zeros(mask.shape, device=mask.device)
        if cfg.task_conditioned:
            exploit = vmf_reward(phi_seq, w[:, None])
            reward += cfg.exploit_weight * exploit
            stats["reward_exploit"] = self._masked_mean(exploit, mask)
        if cfg.uses_knn:
            if self._separate_knn_space is None:
                h = phi_seq if h_seq is None else h_seq
            else:
                h = self.knn_features(seq_next.flatten(0, 1)).unflatten(0, mask.shape)
            explore = self._knn_reward(h, mask)
            reward += cfg.explore_weight * explore
            stats["reward_explore"] = self._masked_mean(explore, mask)
        return reward, stats

    def _knn_reward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The kNN particle reward (B, n) of the valid steps' features h (B, n, d) among themselves; 0 on
        the invalid steps."""
        particles = h[mask]
        explore = torch.zeros(mask.shape, device=mask.device)
        explore[mask] = particle_entropy_reward(particles, particles, self.config.k, exclude_self=True,
                                                exponent=self.config.knn_exponent, normaliser=self.normaliser)
        return explore

    def _masked_mean(self, values: torch.Tensor, mask: torch.Tensor) -> float:
        """The mean of `values` over the valid steps, as `update` reports it (see `_statistic`)."""
        return self._statistic(values[mask].mean())

    def _intrinsic_last(self, last_obs: torch.Tensor, w: torch.Tensor, phi_last: torch.Tensor | None,
                        h_last: torch.Tensor | None = None):
        """Intrinsic reward (B,) of each window's last state s'_m and the mean of each term ('last' mode):
        the kNN particles are the B states s'_m, each excluding itself (in phi's kNN space `h_last` if
        given, see `_phi_and_knn`)."""
        cfg, stats = self.config, {}
        reward = torch.zeros(len(w), device=w.device)
        if cfg.task_conditioned:
            exploit = vmf_reward(phi_last, w)
            reward += cfg.exploit_weight * exploit
            stats["reward_exploit"] = self._statistic(exploit.mean())
        if cfg.uses_knn:
            if self._separate_knn_space is None:
                h = phi_last if h_last is None else h_last
            else:
                h = self.knn_features(last_obs)
            explore = particle_entropy_reward(h, h, cfg.k, exclude_self=True, exponent=cfg.knn_exponent,
                                              normaliser=self.normaliser)
            reward += cfg.explore_weight * explore
            stats["reward_explore"] = self._statistic(explore.mean())
        return reward, stats

    @property
    def _last_state_reward(self) -> bool:
        return self.phase == "pretrain" and self.config.nstep_reward == "last"

    @torch.no_grad()
    def targets(self, batch: dict[str, torch.Tensor], phi_last: torch.Tensor | None = None,
                knn_last: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """TD targets y (B, d) for psi(s, a, w), and the mean of each reward term.

        Per step i of the window the reward r_i is the method's intrinsic reward while pretraining (the
        batch has no task reward) or `seq_reward` while fine-tuning, and the cumulant is
        c_i = base_i + (r_i - base_i^T w) w (base = phi(s'_i); 0 for apt, dqn), so c_i^T w = r_i.
        y = sum_{i<m} gamma^i c_i + gamma^m alive psi_target(s'_m, a*, w), a* = argmax_a psi(s'_m, a, w)^T w
        (double Q), m the valid steps of the window; the arithmetic is `sf_td_target`. With
        `nstep_reward='last'` a pretraining window has one cumulant, that of s'_m:
        y = c_m + gamma^m alive psi_target(s'_m, a*, w); `phi_last` is phi(s'_m) if the caller has it
        (and `knn_last` its kNN space, `_phi_and_knn`).
        phi(s'_i) comes from the batch (`seq_next_phi`) when fine-tuning's replay stored it: phi is frozen
        then.
        """
        cfg = self.config
        w, mask, boot_obs = batch["w"], batch["seq_mask"], batch["boot_obs"]
        bsz, n = mask.shape
        if "seq_next_phi" in batch and self.phase != "finetune":
            raise ValueError("stored phi(s') (seq_next_phi) is only valid while phi is frozen (fine-tuning)")
        if self._last_state_reward:
            if phi_last is None and self.phi is not None:
                phi_last, knn_last = self._phi_and_knn(self.inputs(boot_obs))
            reward, stats = self._intrinsic_last(boot_obs, w, phi_last, knn_last)
            base = phi_last if phi_last is not None else torch.zeros(bsz, cfg.feature_dim, device=w.device)
            base, reward, mask = base[:, None], reward[:, None], torch.ones(bsz, 1, device=w.device)
        else:
            seq_next, h_seq = batch["seq_next_obs"], None
            if "seq_next_phi" in batch:
                phi_seq = batch["seq_next_phi"]
            elif self.phi is not None:
                phi_seq, h_seq = (v.unflatten(0, (bsz, n))
                                  for v in self._phi_and_knn(self.inputs(seq_next.flatten(0, 1))))
            else:
                phi_seq = None
            if self.phase == "pretrain":
                reward, stats = self._intrinsic(seq_next, mask, w, phi_seq, h_seq)
            else:
                reward, stats = batch["seq_reward"], {}
            base = phi_seq if phi_seq is not None else torch.zeros(bsz, n, cfg.feature_dim, device=w.device)
        boot_x = self.inputs(boot_obs)
        a_star = vmf_reward(self.psi(boot_x, w), w[:, None]).argmax(1)
        boot = self.psi_target(boot_x, w)[torch.arange(bsz, device=w.device), a_star]
        alive = batch["boot_alive"]
        if self.phase == "pretrain" and cfg.bootstrap_through_termination:
            alive = torch.ones_like(alive)
        return sf_td_target(base, reward, w, mask, cfg.gamma, boot, batch["boot_steps"], alive), stats

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient step on a replay batch (`gradient_step`), then `count_update`; returns the losses
        and reward terms."""
        stats = self.gradient_step(batch)
        self.count_update()
        return stats

    def gradient_step(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """Targets, losses and one optimiser step on a replay batch (see `targets`); returns the losses and
        reward terms. Counts nothing and never copies the target network (`count_update` does), so a
        compiled copy of it needs no recompilation as the counter moves.

        vector: ||psi(s, a, w) - y||^2; scalar: (psi(s, a, w)^T w - y^T w)^2; plus, while pretraining, the
        vMF loss -phi(s')^T w (visr, aps; s' = s'_m with `nstep_reward='last'`, whose phi the reward reuses,
        else s'_1) and InfoNCE on (f(s), f(s'_1)) (apt, aps without shared encoder).
        """
        cfg = self.config
        w, rows = batch["w"], torch.arange(len(batch["w"]), device=batch["w"].device)
        first_next = batch["seq_next_obs"][:, 0]
        phi_last = knn_last = None
        if self._last_state_reward and self.phi is not None:
            phi_last, knn_last = self._phi_and_knn(self.inputs(batch["boot_obs"]))
        y, stats = self.targets(batch, *(None if v is None else v.detach() for v in (phi_last, knn_last)))
        psi_sa = self.psi(self.inputs(batch["obs"]), w)[rows, batch["action"]]
        if cfg.sf_loss == "vector":
            sf = ((psi_sa - y) ** 2).sum(-1).mean()
        else:
            sf = ((vmf_reward(psi_sa, w) - vmf_reward(y, w)) ** 2).mean()
        loss, stats["loss_sf"] = sf, self._statistic(sf)
        if self.phase == "pretrain" and self.phi is not None:
            vmf = vmf_loss(phi_last if phi_last is not None else self.phi(self.inputs(first_next)), w)
            loss, stats["loss_vmf"] = loss + vmf, self._statistic(vmf)
        if self.phase == "pretrain" and self.rep is not None:
            nce = info_nce(self.rep(self.inputs(batch["obs"])), self.rep(self.inputs(first_next)),
                           cfg.contrastive_temperature)
            loss, stats["loss_nce"] = loss + nce, self._statistic(nce)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        self.optimizer.step()
        return stats

    def count_update(self) -> None:
        """Count a gradient step; every `target_update_period` of them copy psi into its target."""
        self.updates += 1
        if self.updates % self.config.target_update_period == 0:
            self.psi_target.load_state_dict(self.psi.state_dict())

    def _statistic(self, value: torch.Tensor) -> float:
        """A loss as `update` reports it: a float (a host sync on a GPU; `AtariLearner` keeps the tensor)."""
        return value.item()

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
