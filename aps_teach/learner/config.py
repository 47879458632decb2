"""The learner's settings, `AgentConfig`: which method (VISR, APT, APS or the DQN baseline; the table in
`aps_teach.learner.agent`), the networks' sizes, the reward terms and the update rule. Defaults are the
gridworld settings; `aps_teach.atari.config` maps the Atari ones onto it field by field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from aps_teach.infra.checks import MAX_MAGNITUDE, check_field, check_finite, check_int, check_range

METHODS = ("visr", "apt", "aps", "dqn")
SF_LOSSES = ("vector", "scalar")
NSTEP_REWARDS = ("last", "sum")
Method = Literal["visr", "apt", "aps", "dqn"]


PRETRAINING_METHODS = ("visr", "apt", "aps")
"""The methods with a reward-free pretraining phase: all but the DQN baseline, which learns from the task
reward alone."""


TASK_CONDITIONED = ("visr", "aps")
"""The methods whose behaviour follows a task vector w, with task features phi (and task inference)."""


TASK_OPTIONS = {"identify_ridge": 0.0, "adapt_psi": False}
"""The `AgentConfig` options that act on an identified w (name: its value when off): visr and aps only."""


PSI_OPTIONS = {"identify_ridge": 0.0, "adapt_psi": False, "adapt_updates": 400, "adapt_n_step": 1,
               "knn_feature": False, "explore_conditioned": False}
"""The `AgentConfig` options that act on psi, on its zero-shot or on its successor features (name: its value
when off), which the forward-backward arm (`AgentConfig.fb`) does not act with: refused with it."""


FB_OPTIONS = {"fb_updates": None, "fb_ortho_coef": 1.0, "fb_mix_ratio": 0.5, "fb_target_tau": 0.01}
"""The `AgentConfig` options of the forward-backward arm's F and B (name: its default): refused without
`AgentConfig.fb`."""


def check_no_adaptation(agent, where: str) -> None:
    """ValueError if `agent` (an `AgentConfig`, or a stand-in's config) asks for psi's offline adaptation
    (`AgentConfig.adapt_psi`) and `where` (e.g. 'transfer') does not make it: its zero-shot scores would be
    the pretrained psi's, reported as if adapted."""
    if getattr(agent, "adapt_psi", False):
        raise ValueError(f"adapt_psi=True: {where} does not adapt psi to the identified w (its zero-shot "
                         "scores would be the pretrained psi's); set adapt_psi=False, or adapt in `gridworld "
                         "run` or `gridworld zero-shot`")


def check_no_fb(agent) -> None:
    """ValueError, one line, if `agent` (an `AgentConfig`, or a stand-in's config) asks for the fb arm
    (`AgentConfig.fb`): no pipeline or study makes its zero-shot yet (its F and B are `learner.fb`, trained by
    `grid.train.fb_from_replay`), so their scores would be psi's, reported as the fb arm's."""
    if getattr(agent, "fb", False):
        raise ValueError("fb=True: no pipeline or study makes the fb arm's zero-shot yet (its scores would "
                         "be psi's); set fb=False, or train F and B with grid.train.fb_from_replay")


def pretrains(method: str) -> bool:
    """Whether `method` pretrains reward-free (`PRETRAINING_METHODS`): the question every phase asks of it."""
    return method in PRETRAINING_METHODS


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
    """visr | apt | aps | dqn (see the table in `aps_teach.learner.agent`)."""
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
    term O(1) whatever the scale of the kNN space (docs/learner.md, Configuration, has the measured means)."""
    shared_encoder: bool = True
    """APS: compute the kNN reward on phi(s') (Eq. 6); False uses the `representation` of APT instead."""
    knn_phi_normalised: bool = True
    """APS with a shared encoder: kNN distances between phi(s') on the unit sphere (Eq. 6's h = phi), or,
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
    """Subtract the running mean of the observations trained on from the networks' input
    (`aps_teach.learner.inputs`; gridworld MLPs only). Raw one-hot boards are mostly always-on inputs, and
    phi's units die."""
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
    Eq. 6 reward), psi^T (w, 0) on a task. False: the kNN return is carried along w (cumulant
    phi(s') + r_kNN(s') w), so psi must output it multiplied by its own input w."""
    explore_conditioned: bool = field(default=False, metadata={"omit_at_default": True})
    """aps with `knn_feature`, this repository's variant beyond the paper (added after the committed results,
    so left out of configuration records and hashes while False: `infra.sweeps.config_dict`): psi is
    conditioned on the exploration weight beta as well as on w, psi(s, a, w, beta). While pretraining each
    w comes with a beta drawn uniformly from [0, 1] and Q = psi^T (exploit_weight w, beta explore_weight);
    on a task (zero-shot, fine-tuning) beta = 0, Q = psi^T (w, 0). One psi can then hold the explorer's
    values (beta near 1) and the task-pursuer's (beta 0), as NGU and Agent57 condition one network on a
    family of exploration coefficients."""
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
    identify_ridge: float = field(default=0.0, metadata={"omit_at_default": True})
    """Task identification (visr, aps) by ridge regression, lambda this: w = c / ||c||, c = (Phi^T Phi +
    lambda I)^{-1} Phi^T r over the identification data's rows phi(s') and rewards r (`tasks.infer_task`,
    `tasks.fit_task`). 0, the default, is the paper's least squares, bit for bit. Issue 60's control for the
    identification link (this repository's option, not the paper's; added after the committed results, so
    left out of configuration records and hashes at its default: `infra.sweeps.config_dict`). lambda is in
    the units of Phi^T Phi, a sum over the N rows: phi's rows are unit vectors, so trace(Phi^T Phi) = N and
    lambda = N / d equals its mean eigenvalue (1,000 for the default 16k identification steps and d = 16);
    the same lambda shrinks less as N grows, as a fixed Gaussian prior on c would."""
    adapt_psi: bool = field(default=False, metadata={"omit_at_default": True})
    """Zero-shot in samples, not in compute (visr, aps; issue 60, this repository's option, left out of
    records and hashes while False): after identification, psi is adapted offline to the identified w by
    `adapt_updates` TD updates on the pretraining replay, no env step taken (`learner.adapt`). Each window
    is relabelled for w: its reward r_i = phi(s'_i)^T w, the reward identification believes in (phi frozen,
    so the cumulant is phi(s'_i) itself), and the update is fine-tuning's (`start_finetune`: phi frozen,
    Adam on psi at `finetune_lr`, the target copied every `target_update_period` updates, a terminal
    s'_m not bootstrapped), so the learner is in its fine-tuning phase afterwards: evaluation acts without
    GPI by default (`grid.train.evaluate`), and fine-tuning continues from the adapted psi and its Adam
    state. A w drawn at random (identification saw no reward) is adapted to likewise. The paper and the
    authors' code have no such step."""
    adapt_updates: int = field(default=400, metadata={"omit_at_default": True})
    """With `adapt_psi`: the TD updates of psi on the relabelled pretraining replay, each a minibatch of
    `batch_size` windows. 400 is what 8k fine-tuning steps make at the default settings ((8,000 - 1,600
    learning_starts) / 32 envs x 2 updates per step), so adaptation stays within the cost of 8k fine-tuning
    steps per task, as issue 60 asks (it takes no env step and computes phi of one state per window)."""
    adapt_n_step: int = field(default=1, metadata={"omit_at_default": True})
    """With `adapt_psi`: the windows' length n of the adaptation's TD target (`n_step` is pretraining's and
    fine-tuning's). 1 by default: the replay's actions are those of the random-w skills that collected it, so
    an n-step return evaluates those skills' behaviour along w for n - 1 steps, not the greedy policy for w;
    with n = 1 the fixed point on the replay's moves is Q* of the identified reward phi(s')^T w, what the
    zero-shot diagnosis's exact planner on the identified reward measures (`studies.zero_shot`). Longer
    windows still end where the replay's stored w changed (`task_resample_every`) and at episode ends."""

    fb: bool = field(default=False, metadata={"omit_at_default": True})
    """The forward-backward arm (issue 60, item 3; Touati & Ollivier 2021; this repository's option, left out
    of records and hashes while False): the method (visr, apt or aps) explores reward-free as it always does,
    and zero-shot is made by F(s, a, z) and B(s) trained offline on that exploration's replay, no env step of
    their own (`learner.fb`, `grid.train.fb_from_replay`): z identified as sqrt(d) normalise(E[r B(s')]) over
    the identification rollouts, actions greedy on F(s, a, z)^T z. F has psi's network and d, B phi's. The
    options that act on psi (`PSI_OPTIONS`) are refused with it, and the `fb_` options without it
    (`check_fb_options`). No pipeline or study makes the arm's zero-shot yet: they refuse it
    (`check_no_fb`)."""
    fb_updates: int | None = field(default=None, metadata={"omit_at_default": True})
    """With `fb`: the updates of F and B on the replay, each a minibatch of `batch_size` transitions; None,
    the default, makes as many as the exploring learner's pretraining made (its `updates`): the same
    environment budget and the same number of minibatches as psi saw."""
    fb_ortho_coef: float = field(default=1.0, metadata={"omit_at_default": True})
    """With `fb`: the weight of B's orthonormality loss E[(B(s)^T B(s''))^2] - 2 E[B(s)^T B(s)] (the authors'
    code, facebookresearch/controllable_agent `fb_ddpg.py` `ortho_coef`: 1)."""
    fb_mix_ratio: float = field(default=0.5, metadata={"omit_at_default": True})
    """With `fb`: the share of the z an update trains on that are B(s'') of another state of its minibatch
    (on the sphere of radius sqrt(d)) rather than uniform on that sphere (the authors' `mix_ratio`: 0.5):
    z near the ones a reward's E[r B] gives are trained on."""
    fb_target_tau: float = field(default=0.01, metadata={"omit_at_default": True})
    """With `fb`: the Polyak rate of F's and B's target copies, updated after every update (the authors'
    `fb_target_tau`: 0.01), where psi's target is copied every `target_update_period` updates."""

    def __post_init__(self) -> None:
        check_method(self.method)
        if self.representation not in ("contrastive", "observation"):
            raise ValueError(f"unknown representation {self.representation!r}; "
                             "valid: contrastive, observation")
        if self.nstep_reward not in NSTEP_REWARDS:
            raise ValueError(f"unknown nstep_reward {self.nstep_reward!r}; valid: {', '.join(NSTEP_REWARDS)}")
        if self.sf_loss not in SF_LOSSES:
            raise ValueError(f"unknown sf_loss {self.sf_loss!r}; valid: {', '.join(SF_LOSSES)}")
        check_field(self, "feature_dim", check_int, 2)
        for name in ("hidden", "k", "n_step", "batch_size", "target_update_period"):
            check_field(self, name, check_int)
        check_field(self, "gpi_samples", check_int, 0)
        check_field(self, "gamma", check_range, 0, 1, low_open=True)
        for name in ("lr", "finetune_lr"):
            check_field(self, name, check_range, 0, MAX_MAGNITUDE, low_open=True)
        for name in ("adam_eps", "max_grad_norm", "contrastive_temperature", "knn_exponent"):
            check_field(self, name, check_range, 0, low_open=True)
        for name in ("exploit_weight", "explore_weight"):
            check_field(self, name, check_finite)
        check_field(self, "identify_ridge", check_range, 0)
        for name in ("adapt_updates", "adapt_n_step"):
            check_field(self, name, check_int)
        check_field(self, "fb_updates", check_int, default="as many as pretraining made")
        check_field(self, "fb_ortho_coef", check_range, 0, MAX_MAGNITUDE)
        check_field(self, "fb_mix_ratio", check_range, 0, 1)
        check_field(self, "fb_target_tau", check_range, 0, 1, low_open=True)
        if self.explore_conditioned and not self.knn_feature:
            raise ValueError("explore_conditioned conditions psi on the weight of the kNN reward's own "
                             "successor feature: it needs knn_feature=True")

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
    def task_input_dim(self) -> int:
        """Columns of psi's task input: w (d), or (w, beta) (d + 1) with `explore_conditioned` (aps)."""
        return self.feature_dim + (self.explore_conditioned and self.sf_dim > self.feature_dim)

    def stored_task_dim(self, phase: str) -> int:
        """Columns of the w a phase's replay stores: (w, beta) while pretraining `explore_conditioned`, else
        w alone (`task_input_dim`, `feature_dim`)."""
        return self.task_input_dim if phase == "pretrain" else self.feature_dim

    @property
    def pretrains(self) -> bool:
        """Whether the method pretrains reward-free (`pretrains`)."""
        return pretrains(self.method)

    @property
    def task_conditioned(self) -> bool:
        """Whether behaviour follows a sampled w (and task inference applies): `TASK_CONDITIONED`."""
        return self.method in TASK_CONDITIONED

    @property
    def uses_knn(self) -> bool:
        return self.method in ("apt", "aps")

    def check_task_options(self) -> None:
        """ValueError if an option of `TASK_OPTIONS` is on for a method without a task vector to identify
        (apt, dqn), or the forward-backward arm's options are wrong (`check_fb_options`). Checked once the
        method is final, as `check_particles` is."""
        on = self._set_options(TASK_OPTIONS)
        if on and not self.task_conditioned:
            raise ValueError(f"{', '.join(on)} acts on an identified task vector w, which method "
                             f"{self.method!r} has none of; valid for: {', '.join(TASK_CONDITIONED)}")
        self.check_fb_options()

    def check_fb_options(self) -> None:
        """ValueError, one line, if the forward-backward arm (`fb`) is asked of a method without a reward-free
        replay to train on (dqn), or with options that act on psi (`PSI_OPTIONS`, which it does not act
        with), or if an option of F and B (`FB_OPTIONS`) is set without it. Called by `check_task_options`."""
        if self.fb and not self.pretrains:
            raise ValueError(f"fb trains F and B on the replay of a reward-free exploration, which method "
                             f"{self.method!r} has none of; valid for: {', '.join(PRETRAINING_METHODS)}")
        if self.fb:
            on = self._set_options(PSI_OPTIONS)
            if on:
                raise ValueError(f"{', '.join(on)} acts on psi, and the fb arm acts on F(s, a, z)^T z "
                                 "instead: drop it from the fb arm, or set fb=False")
            return
        on = self._set_options(FB_OPTIONS)
        if on:
            raise ValueError(f"{', '.join(on)} sets the fb arm's F and B, and this learner is no fb arm: set "
                             "fb=True, or drop it")

    def _set_options(self, options: dict) -> list[str]:
        """'name=value' of each option of `options` (name: its value when off) set to another value here."""
        return [f"{name}={getattr(self, name)!r}" for name, off in options.items()
                if getattr(self, name) != off]

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
