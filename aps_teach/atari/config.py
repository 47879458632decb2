"""Every number of the Atari protocol and of APS training, with the paper's defaults (`AtariConfig`), and how
a run meets the games: device, envs, logging (`AtariTrainConfig`).

Each field's docstring says where its default comes from: `Paper: "<row>" (l. N)` quotes a row or
sentence of the paper's LaTeX source (line N of `aps_liu_abbeel_2021.tex`; the appendix tables
"Hyper-parameters for RL" and "Hyper-parameters for Learning phi" and Section 4's implementation
details), and `Not in the paper` marks the few values the paper leaves open, with where ours come from.
`sources_table()` renders the docstrings as the markdown table of the docs, so the two cannot drift.

Fixed by the protocol and not configurable: grey frames, max-pooling of the last two frames of each
action repeat, the minimal action set, no FIRE on reset, double-Q bootstrapping ("Update: Double Q").
Steps are agent steps (one action = `action_repeat` frames) unless a name says frames.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from dataclasses import dataclass, field, fields
from typing import Literal

from aps_teach.infra.checks import MAX_MAGNITUDE, check_field, check_int, check_range, check_type
from aps_teach.infra.devices import parse_device
from aps_teach.learner.config import AgentConfig

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


@dataclass(frozen=True)
class AtariConfig:
    """The Atari protocol, networks and training schedule of APS. Defaults are the paper's."""

    # --- environment protocol ---
    frame_size: int = 84
    """Side of the square grey observation frame. Paper: "Observation down-sampling" (l. 653)."""
    frame_stack: int = 4
    """Frames stacked into one observation. Paper: "Frames stacked" (l. 654)."""
    action_repeat: int = 4
    """Frames each action is repeated for; the observation max-pools the last two. Paper: "Action
    repetitions" (l. 655)."""
    noop_max: int = 30
    """At most this many no-op frames at every reset. Not in the paper: the protocol of the random and
    human reference scores it normalises by (up to 30 no-ops, DQN's evaluation)."""
    max_frames_per_episode: int = 108_000
    """Episode cap in frames (30 minutes of play); the episode is truncated there. Paper: "Max frames
    per episode" (l. 656)."""
    terminal_on_life_loss: bool = True
    """While training, a lost life is a terminal transition (the game itself goes on); evaluation plays
    whole games. Paper: "Terminal on loss of life" (l. 649)."""
    repeat_action_probability: float = 0.0
    """Sticky actions: probability that the emulator repeats the previous action. Not in the paper,
    which uses none (as the Atari 100k benchmark); 0.25 is Machado et al.'s (2018) protocol."""
    reward_clip: float | None = 1.0
    """Task rewards are clipped to [-reward_clip, reward_clip] in fine-tuning (task identification and
    fine-tuning steps); None keeps raw rewards. Scores are always raw. Paper: "Reward clipping
    (fine-tuning phase)" (l. 650)."""

    # --- networks and augmentation ---
    feature_dim: int = 5
    """Dimension d of phi(s), w and each psi(s, a, w). Paper: "Output size" (l. 703); "output dimension
    of the encoder from 50 to 5" (l. 468)."""
    conv_channels: tuple[int, ...] = (32, 64, 64)
    """Channels of the conv layers of phi and of psi. Paper: "network: channels" (l. 676, 697). Section 4
    (l. 467) names DrQ's four-layer encoder instead; (32, 32, 32, 32) with kernels (3, 3, 3, 3) and strides
    (2, 1, 1, 1) is that one. We follow the tables."""
    conv_kernels: tuple[int, ...] = (8, 4, 3)
    """Square kernel size of each conv layer. Paper: "network: filter size" (l. 677, 698)."""
    conv_strides: tuple[int, ...] = (4, 2, 1)
    """Stride of each conv layer. Paper: "network: stride" (l. 678, 699)."""
    psi_hidden: int = 512
    """Hidden units of psi's torso and of each of its per-feature MLPs. Paper: "network: hidden units"
    (l. 679)."""
    phi_hidden: int = 1024
    """Hidden units of phi's fully connected layer. Paper: "FC hidden size" (l. 702); the same table also
    lists 512 hidden units (l. 700), a row it shares with the psi table, which we read as psi's."""
    k: int = 10
    """Neighbours in the kNN particle entropy. Paper: "Value of k" (l. 696), searched in {3, 5, 10}
    without reporting the choice; 10 is also the gridworld learner's default."""
    knn_phi_normalised: bool = True
    """kNN distances between phi(s') on the unit sphere (True) or between g(s'), phi's output before its L2
    normalisation (False). Not in the paper as code: its Eq. 6 takes h = phi, on the sphere; the authors'
    code (rll-research/url_benchmark agent/aps.py) measures g. True: no loss trains the norm of g, so
    distances in g can drift against the running mean that divides them (measured in
    benchmarks/atari_knn_space.py; figures in benchmarks/README.md)."""
    shift_pad: int = 4
    """Random shift: frames padded by this many replicated border pixels, then randomly cropped back.
    Paper: "padded each side by 4 pixels" (l. 630)."""
    intensity_scale: float = 0.05
    """Intensity augmentation x * (1 + scale * clip(N(0, 1), -2, 2)). Not in the paper, which only names
    it ("Random shifts and Intensity", l. 651): 0.05 as in public DrQ- and SPR-style Atari code."""

    # --- pretraining ---
    pretrain_steps: int = 5_000_000
    """Reward-free pretraining steps. Paper: "Training steps (pre-training phase)" (l. 670); the text
    says "(250M steps)" (l. 532)."""
    n_step: int = 10
    """Multi-step return length. Paper: "Multi-step return length" (l. 675)."""
    nstep_reward: Literal["last", "sum"] = "last"
    """How an n-step window earns its intrinsic reward while pretraining: 'last', the reward of the
    window's last state s_{t+m} stands for the window, bootstrapped with gamma^m, and the kNN particles
    are those states, one per sampled transition; 'sum', the exact discounted sum over the window's
    states. Not in the paper: 'last' is the authors' code (rll-research/url_benchmark replay_buffer.py
    and agent/aps.py). Task rewards are always summed."""
    gamma: float = 0.99
    """Discount factor. Paper: "Discount factor" (l. 659)."""
    batch_size: int = 32
    """Minibatch size. Paper: "Minibatch size" (l. 660)."""
    lr: float = 1e-4
    """Adam learning rate while pretraining. Paper: "(pre-training phase): learning rate" (l. 662)."""
    finetune_lr: float = 1e-4
    """Adam learning rate while fine-tuning, and so of the learners trained on the reward from scratch (dqn,
    apt's psi). Paper: "(fine-tuning phase): learning rate" (l. 663) is 1e-3, not followed: at 1e-3 a dqn
    learner on Kung Fu Master lost every unit of psi's torso within 30k steps (Q constant over states, one
    action played: 31 per game against random's 258; 1,310 at 1e-4; the diagnosis in
    aps_teach/atari/README.md). 1e-4 is the pretraining rate and that of the from-scratch baselines the
    paper compares with (DrQ); every method fine-tunes at it, APS too, so no arm has a rate of its own."""
    adam_beta1: float = 0.9
    """Adam beta_1. Paper: "optimizer: $\\beta_1$" (l. 664)."""
    adam_beta2: float = 0.999
    """Adam beta_2. Paper: "optimizer: $\\beta_2$" (l. 665)."""
    adam_eps: float = 1.5e-4
    """Adam epsilon. Paper: "optimizer: $\\epsilon$" (l. 666)."""
    max_grad_norm: float = 10.0
    """Gradient-norm clip. Paper: "Max gradient norm" (l. 667)."""
    target_update_period: int = 100
    """Updates between copies of psi into its target network. Paper: "Target network: update period"
    (l. 658)."""
    min_replay_size: int = 1600
    """Transitions in replay before updates start. Paper: "Min replay size for sampling" (l. 672)."""
    replay_capacity: int | None = None
    """Transitions the replay holds; None keeps every step of the phase. Paper: "Memory size" (l. 673),
    unbounded."""
    pretrain_update_period: int = 1
    """Environment steps per update while pretraining reward-free. Paper: "Replay period every" (l. 674).
    A CPU budget may raise it (the first study's 4: docs/preregistration/atari_first.md) without starving
    fine-tuning, which has its own."""
    finetune_update_period: int = 1
    """Environment steps per update while fine-tuning on the task reward. Paper: "Replay period every"
    (l. 674)."""
    task_resample_every: int = 10
    """Steps between fresh draws of w while pretraining. Paper: "resampled every 10 steps" (l. 473)."""
    epsilon_decay_steps: int = 2500
    """Steps of the linear epsilon-greedy decay from epsilon_start to epsilon_end. Paper: "-decay"
    (l. 683)."""
    epsilon_start: float = 1.0
    """Exploration epsilon at step 0. Not in the paper (only the decay length is): DQN's start value."""
    epsilon_end: float = 0.1
    """Exploration epsilon after the decay. Not in the paper: DQN's final training value (Mnih et al.
    2015)."""
    gpi_samples: int = 10
    """Task vectors sampled for generalised policy improvement. Paper: "number of polices 10" (l. 633)."""

    # --- the learner's ablations: `AgentConfig`'s fields, names and defaults ---
    sf_loss: Literal["vector", "scalar"] = "vector"
    """'vector': TD on psi with the cumulant c = phi(s') + (r - phi(s')^T w) w (c^T w = r); 'scalar': TD on
    psi^T w, Algorithm 1's loss. Not in the paper as an option: GPI scores psi(s, a, z)^T w for tasks z
    other than w, along directions the scalar loss never trains (`AgentConfig.sf_loss`)."""
    shared_encoder: bool = True
    """APS: the kNN reward on phi(s') (Eq. 6); False: on APT's contrastive encoder f instead. Not in the
    paper as an option: its APS shares phi; False is the ablation."""
    exploit_weight: float = 1.0
    """Weight of phi(s')^T w in the intrinsic reward (visr, aps). Not in the paper, whose Eq. 6 adds the
    two terms unweighted: 1."""
    explore_weight: float = 1.0
    """Weight of the kNN entropy term in the intrinsic reward (apt, aps). Not in the paper, whose Eq. 6
    adds the two terms unweighted: 1."""
    knn_normalise: bool = True
    """Divide kNN distances by their running mean. Not in the paper: the authors' code's option
    (rll-research/url_benchmark agent/aps.py), keeping the exploration term O(1) whatever the scale of h."""
    knn_exponent: float = 1.0
    """kNN distances enter the reward raised to this power. Not in the paper's table: 1 as in the authors'
    code; its particle estimator has the exponent n_h = d."""
    bootstrap_through_termination: bool = True
    """Pretraining only: bootstrap through a terminal transition as if it were a time-out. Not in the
    paper: without a task the end of an episode is no loss, which a positive intrinsic reward would
    otherwise make it (`AgentConfig.bootstrap_through_termination`)."""
    contrastive_temperature: float = 0.5
    """Temperature of the InfoNCE loss training f (apt; aps without a shared encoder). Not in the paper:
    the gridworld learner's default (`AgentConfig.contrastive_temperature`)."""
    gpi: bool = True
    """Act with generalised policy improvement over {w} + `gpi_samples` fresh tasks when scoring a learner
    that has not been fine-tuned (visr, aps). Not in the paper as an option: its zero-shot scores use GPI;
    False acts under the identified w alone."""

    # --- task identification, fine-tuning, evaluation ---
    task_id_episodes: int = 10
    """Task identification: at most this many episodes, each with a w uniform on the sphere, before w is
    solved by least squares. Paper: "rollout 10 episodes (or 40K steps" (l. 538)."""
    task_id_steps: int = 40_000
    """Task identification: at most this many steps. Paper: "Task identity steps (fine-tuning phase)"
    (l. 669)."""
    finetune_steps: int = 60_000
    """Fine-tuning steps with the inferred w. Paper: "Training steps (fine-tuning phase)" (l. 668)."""
    eval_steps: int = 125_000
    """Evaluation steps after fine-tuning. Paper: "Evaluation steps" (l. 671)."""
    eval_epsilon: float = 0.05
    """Exploration epsilon while evaluating. Not in the paper: DQN's evaluation value (Mnih et al. 2015)."""

    def __post_init__(self) -> None:
        agent = AgentConfig(**learner_fields(self))  # checked where the learner has them
        for name in learner_fields(self):  # kept as the learner keeps them (numpy scalars as Python numbers)
            object.__setattr__(self, name, getattr(agent, name))
        positive = ("frame_size", "frame_stack", "action_repeat", "max_frames_per_episode",
                    "psi_hidden", "phi_hidden", "pretrain_steps", "pretrain_update_period",
                    "finetune_update_period", "task_resample_every",
                    "task_id_episodes", "task_id_steps", "finetune_steps", "eval_steps")
        for name in positive:
            check_field(self, name, check_int)
        for name in ("noop_max", "shift_pad", "min_replay_size", "epsilon_decay_steps"):
            check_field(self, name, check_int, 0)
        for name in ("repeat_action_probability", "epsilon_start", "epsilon_end", "eval_epsilon"):
            check_field(self, name, check_range, 0, 1)
        for name in ("adam_beta1", "adam_beta2"):
            check_field(self, name, check_range, 0, 1, high_open=True)
        if self.epsilon_end > self.epsilon_start:
            raise ValueError(f"epsilon_end ({self.epsilon_end}) must not exceed epsilon_start "
                             f"({self.epsilon_start})")
        if self.reward_clip is not None:
            try:
                check_field(self, "reward_clip", check_range, 0, MAX_MAGNITUDE, low_open=True)
            except ValueError as error:
                raise ValueError(f"{error} (or None: raw rewards)") from None
        check_field(self, "intensity_scale", check_range, 0)
        if self.max_frames_per_episode < self.action_repeat:
            raise ValueError(f"max_frames_per_episode ({self.max_frames_per_episode}) must be at least "
                             f"action_repeat ({self.action_repeat})")
        if self.replay_capacity is not None and (isinstance(self.replay_capacity, bool)
                                                 or self.replay_capacity < self.batch_size):
            raise ValueError(f"replay_capacity must be None (unbounded) or >= batch_size "
                             f"({self.batch_size}), got {self.replay_capacity!r}")
        layers = {"conv_channels": self.conv_channels, "conv_kernels": self.conv_kernels,
                  "conv_strides": self.conv_strides}
        if len({len(v) for v in layers.values()}) != 1 or not self.conv_channels:
            raise ValueError("conv_channels, conv_kernels and conv_strides must have one entry per conv "
                             f"layer (at least one); got lengths { {k: len(v) for k, v in layers.items()} }")
        for name, values in layers.items():
            if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
                raise ValueError(f"{name} must hold integers >= 1, got {values!r}")
        if self.conv_output_size() < 1:
            raise ValueError(f"the conv layers (kernels {self.conv_kernels}, strides {self.conv_strides}) "
                             f"shrink a {self.frame_size}x{self.frame_size} frame to nothing")

    def update_period(self, phase: str) -> int:
        """Env steps per update in `phase`: `pretrain_update_period` while pretraining, else (task
        identification has no updates; fine-tuning) `finetune_update_period`."""
        return self.pretrain_update_period if phase == "pretrain" else self.finetune_update_period

    def conv_output_size(self) -> int:
        """Side of the last conv layer's feature map: s -> floor((s - kernel) / stride) + 1 per layer."""
        side = self.frame_size
        for kernel, stride in zip(self.conv_kernels, self.conv_strides, strict=True):
            side = math.floor((side - kernel) / stride) + 1
        return side


def learner_fields(atari: AtariConfig) -> dict:
    """The fields of `atari` that `AgentConfig` has too (same name, same meaning), with their values."""
    shared = {f.name for f in fields(AgentConfig)} & {f.name for f in fields(AtariConfig)}
    return {name: getattr(atari, name) for name in sorted(shared)}


def atari_from_dict(values: dict) -> AtariConfig:
    """An `AtariConfig` from its `asdict` (JSON turns its tuples into lists). A dict saved before the n-step
    reward mode was a field is the exact sum, the only mode Atari runs had then; one saved when a single
    `update_period` served both phases gives it to both."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    if "update_period" in values:
        period = values.pop("update_period")
        values = {"pretrain_update_period": period, "finetune_update_period": period, **values}
    return AtariConfig(**{"nstep_reward": "sum", **values})


RUN_FIELDS = ("atari", "num_envs", "backend")
"""The `AtariTrainConfig` fields a run's numbers depend on; the others (device, threads, logging, compile,
checkpoints) may differ between the sessions of a resumed run."""


@dataclass
class AtariTrainConfig:
    """How the learner meets the games: the protocol and schedule (`atari`), device, envs, logging."""

    atari: AtariConfig = field(default_factory=AtariConfig)
    """The protocol, networks and training schedule, step budgets included (the paper's defaults)."""
    device: str = "cpu"
    """Torch device of the networks, replay and updates: cpu, cuda, cuda:N, mps."""
    num_envs: int = 8
    """Games stepped together in one vector env."""
    backend: Literal["ale", "gymnasium"] = "ale"
    """ale (ale-py's C++ vector env) | gymnasium (AtariPreprocessing wrappers; needs OpenCV)."""
    compile: bool = False
    """torch.compile the update step (augment, targets, losses, optimiser step: `atari.update_step`); the
    first updates are slow while it compiles. Needs a working backend (on a CPU, a C++ compiler)."""
    compile_mode: Literal["default", "reduce-overhead", "max-autotune"] = "default"
    """torch.compile mode; reduce-overhead replays the compiled update step as CUDA graphs on CUDA."""
    threads: int = 1
    """CPU threads of the run: torch's while a phase runs and the emulators' (ale-py's vector env). One per
    run: the update is compute-bound and two single-threaded runs on two cores do more than one run on
    both (benchmarks/README.md); a lone run on a many-core machine may take more."""
    log_every: int = 10_000
    """Env steps between rows of metrics.csv (and TensorBoard points)."""
    checkpoint_every: int = 100_000
    """Env steps between checkpoints when a run directory is given (and always at the end of a phase)."""
    save_replay: bool = False
    """Put the replay in checkpoints (GBs at Atari scale); a resumed phase then updates at once instead of
    first refilling `min_replay_size` transitions."""
    tensorboard: bool = True
    """Also write the metrics as TensorBoard scalars (run_dir/tensorboard) when tensorboard is installed."""
    progress: bool = True
    """Show a tqdm progress bar (env steps, with env-steps/s and updates/s)."""

    def __post_init__(self) -> None:
        check_type("atari", self.atari, AtariConfig, "an AtariConfig (e.g. atari=AtariConfig(lr=1e-4))")
        parse_device(self.device)  # whether this machine has it is checked where a run starts
        for name in ("num_envs", "threads", "log_every", "checkpoint_every"):
            check_field(self, name, check_int)
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"unknown compile_mode {self.compile_mode!r}; valid: {', '.join(COMPILE_MODES)}")


def field_docs() -> dict[str, str]:
    """The docstring under each field of `AtariConfig`, read from its source (one line each)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(AtariConfig)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())  # type: ignore[union-attr]
    return docs


def sources_table() -> str:
    """Markdown table: each field, its default, and what it is with the paper line it comes from."""
    docs = field_docs()
    rows = ["| field | default | meaning and source |", "|---|---|---|"]
    for f in fields(AtariConfig):
        rows.append(f"| `{f.name}` | `{f.default!r}` | {docs[f.name].replace('|', '/')} |")
    return "\n".join(rows)
