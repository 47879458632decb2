"""How the learner meets a gridworld: `TrainConfig` (engine, env batch, exploration schedules, task schedule,
checkpoints, device) and its checks, the settings every phase of `aps_teach.grid.train` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

import torch
import tyro

import gridworld
from aps_teach.grid.envs import check_engine
from aps_teach.infra.checks import MAX_MAGNITUDE, check_field, check_int, check_range, check_type
from aps_teach.infra.devices import parse_device
from aps_teach.infra.phases import check_compile_backend
from aps_teach.learner.config import AgentConfig

Level = Literal["easy", "hard", "deep"]
"""The paper's three key levels (`gridworld.LEVELS`), as a command's option takes them."""
MAX_NUM_ENVS = gridworld.vector.MAX_NUM_ENVS
"""The most gridworld env copies one batch steps (`TrainConfig.num_envs`; the vector env's own limit,
65,536): each phase runs whole rounds of num_envs x 100 env steps, so 65,536 copies make one round 6.6
million env steps, 100 times the default pretraining budget (a budget of 3,200 steps became 100 million with
a million copies), and the CPU engine gains no speed past a few hundred copies."""
RUN_SETTINGS = ("progress", "checkpoint_every", "device")
"""`TrainConfig` fields that change how a run is shown, saved or where it runs, not its numbers (the device
only their float rounding): a resume may change them."""


@dataclass
class TrainConfig:
    """How the learner meets the environment: engine, batching, exploration, task schedule, checkpoints."""

    agent: AgentConfig = field(default_factory=AgentConfig)
    """The learner (method, networks, losses)."""
    engine: Literal["compiled", "pycolab"] = "compiled"
    """compiled (tables compiled once per level, stepped by indexing) | pycolab (the reference engine)."""
    num_envs: int = 32
    """Environment copies stepped together."""
    updates_per_step: int = 2
    """Pretraining: gradient updates per step of the env batch (replay ratio = this * batch / num_envs)."""
    finetune_updates_per_step: int = 2
    """Fine-tuning: gradient updates per step of the env batch."""
    learning_starts: int = 1600
    """Env steps collected before the first update, per phase (paper: min replay size 1600)."""
    epsilon_start: float = 1.0
    """epsilon-greedy: epsilon at the first step of pretraining."""
    epsilon_end: float = 0.05
    """epsilon-greedy: epsilon after the decay (`identify_task` acts with it)."""
    finetune_epsilon_start: float = 0.3
    """epsilon at the start of fine-tuning, the same for every method (the dqn baseline, which learns from
    scratch here, included: one protocol), decaying to epsilon_end like pretraining's: low, so a pretrained
    (zero-shot) policy is kept, but not so low that a policy without the task in it (apt's) never finds the
    reward (the budget study's epsilon arm)."""
    epsilon_decay_fraction: float = 0.5
    """Fraction of a phase's env steps over which epsilon decays linearly from epsilon_start to epsilon_end
    (tied to the phase: a fixed 2,500 steps ended exploration before learning had started)."""
    absorbing_target: bool = True
    """Pretraining: the target is absorbing (reaching it ends nothing; the agent stays until the round ends),
    so "go to the target" is a behaviour a skill can have. Off, reaching it ends the episode, as in the
    task, and no policy of the fitted reward phi^T w would go there."""
    finetune_absorbing_target: bool = False
    """Fine-tuning: the target is absorbing too (the task's +10 is paid once, on arrival; every policy's
    return is the task's), as in pretraining. Off (the default, the paper's protocol, as identification and
    evaluation keep it), reaching the target ends the episode. The fine-tuning study (docs/studies.md)
    measured both: absorbing removes most of APS's early dip but inflates the values next to the target, and
    more VISR seeds end below their zero-shot success (4 of 10 against 0 of 10)."""
    reward_clip: float | None = None
    """Fine-tuning: task rewards clipped to [-reward_clip, reward_clip] before the learner sees them (the
    paper's Atari protocol, `AtariConfig.reward_clip`); None keeps them. Scores are always raw."""
    task_resample_every: int = 10
    """Pretraining: each env's w is redrawn from the unit sphere every this many steps (paper: 10)."""
    checkpoint_every: int = 10
    """Rounds between checkpoints when a run directory is given (and always after the last round)."""
    progress: bool = True
    """Show tqdm progress bars."""
    compile: bool = field(default=False, metadata={"omit_at_default": True})
    """Pretraining: make the updates with `update.gradient_step` compiled by torch.compile, for long runs
    only: about 1.3 times as many updates per second after about a minute of compiling per pretraining,
    numbers equal to the uncompiled run's up to float rounding (benchmarks/README.md). Needs a C++
    compiler."""
    device: Annotated[str, tyro.conf.arg(prefix_name=False)] = field(default="cpu",
                                                                     metadata={"omit_at_default": True})
    """Where pretraining's and fine-tuning's updates run: cpu, cuda, cuda:N (on the command line --device,
    whatever group the config sits in, as in the Atari commands). The envs, replay and random
    draws stay on the CPU; the learners move to the device for the phase and back to the CPU after it
    (identification, evaluation and everything downstream run on the CPU). A seed group on a GPU runs its
    S seeds' updates as one batched launch each (benchmarks/README.md, "Gridworld seed groups on a GPU");
    the numbers equal a CPU run's up to float rounding, not bit for bit."""

    def __post_init__(self) -> None:
        check_type("agent", self.agent, AgentConfig, "an AgentConfig (e.g. agent=AgentConfig(gamma=0.5))")
        check_engine(self.engine)
        check_field(self, "num_envs", check_int)
        if self.num_envs > MAX_NUM_ENVS:
            raise ValueError(f"num_envs must be <= {MAX_NUM_ENVS:,} (every phase runs whole rounds of "
                             f"num_envs x {gridworld.MAX_EPISODE_STEPS} env steps: one round would be "
                             f"{self.num_envs * gridworld.MAX_EPISODE_STEPS:,}), got {self.num_envs:,}")
        for name in ("updates_per_step", "finetune_updates_per_step", "task_resample_every",
                     "checkpoint_every"):
            check_field(self, name, check_int)
        check_field(self, "learning_starts", check_int, 0)
        check_field(self, "epsilon_decay_fraction", check_range, 0, 1, low_open=True)
        for name in ("epsilon_start", "epsilon_end", "finetune_epsilon_start"):
            check_field(self, name, check_range, 0, 1)
        if self.reward_clip is not None:
            check_field(self, "reward_clip", check_range, 0, MAX_MAGNITUDE, low_open=True)
        if self.compile:
            check_compile_backend("cpu", "compile (--train.compile)")
        if isinstance(self.device, torch.device):  # recorded as its name: configs are JSON
            self.device = str(self.device)
        check_type("device", self.device, str, "a device name: cpu, cuda or cuda:N (or a torch.device)")
        parse_device(self.device)  # whether this machine has it is checked where a phase starts


def with_method(config: TrainConfig | None, method: str) -> TrainConfig:
    """`config` (default: `TrainConfig()`) with its agent's method set to `method`."""
    config = check_config(config, TrainConfig)
    return replace(config, agent=replace(config.agent, method=method))


def check_config(config: TrainConfig | None, default: Callable[[], TrainConfig]) -> TrainConfig:
    """`config`, or `default()` when it is None; an `InputTypeError` naming config if it is no TrainConfig
    (an AgentConfig goes in its agent field)."""
    if config is None:
        return default()
    return check_type("config", config, TrainConfig, "a TrainConfig or None (the learner's settings go in "
                                                     "its agent field: TrainConfig(agent=AgentConfig(...)))")


