"""The pipeline: reward-free `pretrain` -> `identify_task` -> `evaluate` (zero-shot) -> `finetune`.

Environments run as a batch of `num_envs` copies (`aps_teach.grid.envs`, on the compiled engine by default)
in lockstep *rounds* of one episode limit T (gridworld: 100 steps): every copy is reset at the start of a
round from a seed derived from (seed, phase, round), an episode that ends early restarts at once, and the
round's last step ends every episode (it coincides with the env's own time limit). All randomness of a
round comes from that seed, so a run resumed from a checkpoint taken between rounds repeats the
uninterrupted run bit for bit on CPU. Step budgets are rounded up to whole rounds (num_envs * T env steps).

Pretraining is reward-free by construction: its env batch is built with `reward_free=True` and drops the
reward inside `step`, and its replay has no reward column. Its target is absorbing (`absorbing_target`):
reaching it ends nothing and the agent stays on it until the round ends, so that a skill can be "go to the
target and stay"; task identification, evaluation and fine-tuning keep the paper's protocol (+10 ends the
episode; `finetune_absorbing_target` makes fine-tuning's target absorbing too, an arm of the fine-tuning
study).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm.auto import tqdm

import gridworld
from aps_teach.grid.envs import EnvBatch, EnvSource, as_spec, check_engine, make_env, make_env_batch
from aps_teach.grid.replay import NStepReplay
from aps_teach.infra.checks import (
    MAX_MAGNITUDE,
    MAX_NUM_ENVS,
    check_field,
    check_finite,
    check_int,
    check_range,
    check_seed,
    check_steps,
    check_task_vector,
    check_type,
)
from aps_teach.infra.devices import parse_device, resolve_device
from aps_teach.infra.files import load_checkpoint, save_checkpoint, write_csv_atomic
from aps_teach.infra.memory import check_fits
from aps_teach.infra.phases import (
    PhaseLog,
    check_checkpoint,
    check_compile_backend,
    linear_schedule,
    restore_metrics,
    single_thread,
)
from aps_teach.infra.run_dir import PHASE_NAMES, say
from aps_teach.infra.seeds import round_seeds
from aps_teach.learner.agent import Learner
from aps_teach.learner.batch import Batch, batch_to
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.group import LearnerGroup
from aps_teach.learner.inputs import InputColumns
from aps_teach.learner.rewards import Objective
from aps_teach.learner.tasks import infer_task, sample_tasks
from aps_teach.learner.update import gradient_step

RoundHook = Callable[["RoundEnd"], None]
"""Called after every round of `pretrain` / `finetune` (e.g. to keep snapshots for the heatmap widgets)."""
LEARNER_INTERFACE = ("config", "act", "set_observation_table")
"""The attributes of an object that stands in for a `Learner` in the phases (`check_learner`)."""
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
    device: str = field(default="cpu", metadata={"omit_at_default": True})
    """Where pretraining's and fine-tuning's updates run: cpu, cuda, cuda:N. The envs, replay and random
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


@dataclass
class SuccessResult:
    """What `evaluate` measures of greedy episodes on the task."""

    success_rate: float
    """Fraction of episodes that reached the target."""
    mean_return: float
    """Mean undiscounted task return per episode."""
    episodes: int


@dataclass
class RoundEnd:
    """What a `RoundHook` sees after a round: live objects, so copy what you keep."""

    phase: str
    round: int
    """Rounds finished so far in this phase (1-based)."""
    rounds: int
    """Rounds the phase has in all."""
    env_steps: int
    learner: Learner
    replay: NStepReplay
    envs: EnvBatch
    metrics: dict
    """The round's metrics row: keys a hook adds are logged with it (metrics.csv, checkpoints)."""


def update_bytes(agent: AgentConfig) -> int:
    """A rough lower bound of one update's working memory: the kNN distances between the minibatch's
    particles (P x P floats, a few copies) and the networks' activations over its B x (n + 1) states."""
    particles = agent.particles if agent.uses_knn else 0
    states = agent.batch_size * (agent.n_step + 1)
    return 4 * (3 * particles ** 2 + 8 * states * max(agent.hidden, 8 * agent.feature_dim))


def act_bytes(agent: AgentConfig, num_envs: int, num_actions: int) -> int:
    """A rough lower bound of acting's working memory: psi over every env's candidate tasks (with GPI, the
    task and `gpi_samples` fresh ones), each row a few hidden layers wide plus its A x sf_dim outputs."""
    candidates = num_envs * (1 + (agent.gpi_samples if agent.gpi and agent.task_conditioned else 0))
    return 4 * candidates * (2 * agent.feature_dim + 3 * agent.hidden + 2 * num_actions * agent.sf_dim)


def check_phase_memory(phase: str, steps: int, config: TrainConfig, horizon: int,
                       obs: tuple[tuple[int, ...], torch.dtype]) -> None:
    """ValueError, before anything is allocated, if a phase's replay (every step of the phase, whole rounds)
    and one update would not fit in free memory; the advice names what helps: fewer steps when the replay
    is the larger part, else a smaller update. `obs` is the replay's (observation shape, dtype)."""
    cells = math.ceil(steps / (config.num_envs * horizon)) * horizon * config.num_envs
    task_dim = config.agent.stored_task_dim(phase)
    per_cell = NStepReplay.bytes_per_cell(obs[0], task_dim, store_rewards=phase != "pretrain",
                                          store_features=phase != "pretrain", obs_dtype=obs[1])
    replay, update = cells * per_cell, update_bytes(config.agent)
    advice = f"lower --{phase}-steps (the replay keeps every step of the phase)" if replay >= update else \
        ("lower --train.agent.batch-size, --train.agent.n-step, --train.agent.hidden or "
         "--train.agent.feature-dim (what an update's working memory grows with)")
    check_fits(replay + update, f"{phase}: the replay of {cells:,} transitions ({replay / 1e9:.1f} GB) and "
               f"an update of a batch of {config.agent.batch_size} ({update / 1e9:.1f} GB)", advice)


def check_memory(source: EnvSource, config: TrainConfig, *, pretrain_steps: int = 0, finetune_steps: int = 0,
                 identify_steps: int = 0) -> None:
    """`check_phase_memory` of the pretraining and fine-tuning budgets on `source` (0: the phase does not
    run), the task identification's data (`identify_steps` rows of phi(s') and r) and acting's working
    memory (`act_bytes`), without building an env batch."""
    env = None if config.engine == "compiled" and not callable(source) else make_env(source)
    obs = ((), torch.int64) if env is None else (env.observation_space.shape, torch.uint8)
    horizon = env.spec.max_episode_steps if env is not None else as_spec(source).max_episode_steps
    num_actions = len(gridworld.ACTIONS) if env is None else int(env.action_space.n)
    for phase, steps in (("pretrain", pretrain_steps), ("finetune", finetune_steps)):
        if steps:
            check_phase_memory(phase, steps, config, horizon, obs)
    check_identify_memory(identify_steps, config.agent)
    check_acting_memory(config, num_actions)


def check_identify_memory(steps: int, agent: AgentConfig) -> None:
    """ValueError if task identification's data, `steps` rows of phi(s') and r (float32, gathered, then
    joined: twice), would not fit in free memory."""
    check_fits(2 * 4 * steps * (agent.feature_dim + 1),
               f"task identification's {steps:,} rows of phi(s') and r", "lower --identify-steps")


def check_acting_memory(config: TrainConfig, num_actions: int) -> None:
    """ValueError if acting (`act_bytes`: GPI over every env's candidate tasks) would not fit in free
    memory."""
    agent = config.agent
    gpi = agent.gpi and agent.task_conditioned
    check_fits(act_bytes(agent, config.num_envs, num_actions),
               f"acting in {config.num_envs:,} envs" + (f" with GPI over {1 + agent.gpi_samples:,} candidate "
                                                        "tasks each" if gpi else ""),
               "lower --train.agent.gpi-samples (paper: 10) or --train.num-envs" if gpi else
               "lower --train.num-envs or --train.agent.hidden")


def _metrics_columns(rows: list[dict]) -> list[str]:
    """metrics.csv's columns: round and env_steps, then the others in alphabetical order."""
    return sorted({key for row in rows for key in row}, key=lambda c: (c not in ("round", "env_steps"), c))


def _write_metrics(path: Path, rows: list[dict]) -> None:
    write_csv_atomic(path, rows, _metrics_columns(rows))


def env_batch(source: EnvSource, config: TrainConfig, *, reward_free: bool, absorbing_target: bool = False,
              learner: Learner | None = None) -> EnvBatch:
    """The env batch of a phase on the configured engine; given a learner, it is set up to read the batch's
    observations (`Learner.set_observation_table`)."""
    envs = make_env_batch(source, config.num_envs, engine=config.engine, reward_free=reward_free,
                          absorbing_target=absorbing_target)
    if learner is not None:
        learner.set_observation_table(envs.observation_table)
    return envs


def _identity(phase: str, learner: Learner, envs: EnvBatch, seed: int, steps: int, config: TrainConfig,
              fixed_w: torch.Tensor | None) -> dict:
    """What a phase checkpoint must share with the phase that resumes it (`check_identity`): the phase, the
    method, engine, level, seed, budget and config, the observation shape, the action count and the task w."""
    return {"phase": phase, "method": learner.config.method, "engine": envs.engine, "art": list(envs.art),
            "seed": seed, "steps": steps, "config": asdict(config), "obs_shape": list(envs.obs_shape),
            "num_actions": envs.num_actions, "task_w": None if fixed_w is None else fixed_w[0].tolist()}


def _new_replay(phase: str, steps: int, config: TrainConfig, envs: EnvBatch, feature_dim: int,
                store_features: bool) -> NStepReplay:
    """A replay of every step of a phase (whole rounds), checked against free memory first."""
    check_phase_memory(phase, steps, config, envs.horizon, envs.replay_obs)
    rounds = math.ceil(steps / (config.num_envs * envs.horizon))
    obs_shape, obs_dtype = envs.replay_obs
    return NStepReplay(rounds * envs.horizon, config.num_envs, obs_shape, feature_dim,
                       store_rewards=not envs.reward_free, store_features=store_features, obs_dtype=obs_dtype)


def _restore(ckpt: Path | None, identity: dict, learner: Learner, replay: NStepReplay, envs: EnvBatch,
             start_eps: float) -> dict:
    """Load a phase checkpoint into `learner`, `replay` and `envs`' coverage after checking it belongs to this
    run; returns its round, metrics rows, starting epsilon (`start_eps` if it has none) and wall seconds."""
    if ckpt is None or not ckpt.exists():
        raise FileNotFoundError(f"--resume: no checkpoint at {ckpt}")
    state = load_checkpoint(ckpt, map_location="cpu")
    check_identity(ckpt, state, identity)
    learner.load_state_dict(state["learner"])
    replay.load_state_dict(state["replay"])
    envs.load_coverage_state(state["coverage"])
    return {"round": int(state["round"]), "rows": state["metrics"],
            "epsilon_start": state.get("epsilon_start", start_eps),
            "seconds": float(state.get("seconds", 0.0))}


def _task_reward(reward: torch.Tensor, scale: float, clip: float | None) -> torch.Tensor:
    """What fine-tuning trains on: the task reward times `scale`, clipped to [-clip, clip] unless clip is
    None."""
    reward = reward * scale
    return reward if clip is None else reward.clamp(-clip, clip)


UpdateStep = Callable[..., dict[str, torch.Tensor]]
"""What makes an update's gradient step: `update.gradient_step(learner, batch)` or its compiled form."""
COMPILE_BACKEND = "inductor"
"""torch.compile's backend with `TrainConfig.compile`."""
UpdateRequest = tuple[int, list[Batch]]
"""What a phase hands its driver when updates are due: its env steps so far and one minibatch per update."""


def _drive(learners: list[Learner], phases: list[Generator[UpdateRequest, list[dict], PhaseLog]],
           group: LearnerGroup | None = None, step: UpdateStep = gradient_step) -> list[PhaseLog]:
    """Run phases (`_phase_rounds`) to their end, making the updates each asks for with `step`: with a
    `group` of their learners, phases that ask at the same env step are updated together
    (`LearnerGroup.update`); a phase that is behind the others (resumed from an earlier checkpoint) updates
    alone until it has caught up."""
    logs: list[PhaseLog | None] = [None] * len(phases)
    asks: dict[int, UpdateRequest] = {}

    def advance(i: int, stats: list[dict] | None) -> None:
        try:
            asks[i] = phases[i].send(stats)
        except StopIteration as end:
            logs[i] = end.value

    for i in range(len(phases)):
        advance(i, None)
    while asks:
        first = min(at for at, _ in asks.values())
        due = [i for i, (at, _) in asks.items() if at == first]
        requests = [asks.pop(i)[1] for i in due]
        if group is not None and len(due) == len(learners):
            stats = [group.update(list(batches), step) for batches in zip(*requests, strict=True)]
            answers = [[each[j] for each in stats] for j in range(len(due))]
        else:
            answers = [[learners[i].update(batch, step) for batch in batches]
                       for i, batches in zip(due, requests, strict=True)]
        for i, answer in zip(due, answers, strict=True):
            advance(i, answer)
    return logs


def _phase_rounds(learner: Learner, envs: EnvBatch, steps: int, seed: int, config: TrainConfig,
                  phase: str, fixed_w: torch.Tensor | None, run_dir: Path | None, resume: bool,
                  on_round: RoundHook | None = None, reward_scale: float = 1.0, explore_weight: float = 0.0,
                  time_share: int = 1) -> Generator[UpdateRequest, list[dict], PhaseLog]:
    """The round loop shared by pretraining (intrinsic reward, w resampled) and fine-tuning (task
    reward times `reward_scale`, clipped to `config.reward_clip`, plus `explore_weight` times the
    exploration reward decaying to 0 over the phase; w fixed): act, store, update `updates_per_step` times
    per step of the batch, log, checkpoint. A generator: where updates are due it yields its env steps and
    one replay minibatch per update and is sent back each update's statistics (`_drive` makes them).
    Its time is the wall time over `time_share` (the size of the group it runs in)."""
    cfg, agent_cfg = config, learner.config
    n, horizon = cfg.num_envs, envs.horizon
    rounds = math.ceil(steps / (n * horizon))
    total = rounds * n * horizon
    # phi is frozen while fine-tuning: store phi(s') once per transition instead of in every minibatch
    store_phi = phase == "finetune" and learner.phi is not None
    replay = _new_replay(phase, steps, cfg, envs, agent_cfg.stored_task_dim(phase), store_phi)
    # one fine-tuning protocol for every method, the dqn baseline's from-scratch learner included
    start_eps = cfg.epsilon_start if phase == "pretrain" else cfg.finetune_epsilon_start
    ckpt = run_dir / "checkpoint.pt" if run_dir is not None else None
    identity = _identity(phase, learner, envs, seed, steps, cfg, fixed_w)
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    at = {"round": 0, "rows": [], "epsilon_start": start_eps, "seconds": 0.0}
    if resume:
        at = _restore(ckpt, identity, learner, replay, envs, start_eps)
        where = "finished, loaded" if at["round"] >= rounds else \
            f"resuming at env step {at['round'] * n * horizon:,} of {total:,}"
        say(f"{PHASE_NAMES[phase]}: {where} ({ckpt})")
        restore_metrics(run_dir / "metrics.csv", at["rows"], _metrics_columns(at["rows"]), phase)
    log = PhaseLog(at["rows"], earlier_seconds=at["seconds"], seconds=at["seconds"])
    first_round, start_eps = at["round"], at["epsilon_start"]
    updates_per_step = cfg.updates_per_step if phase == "pretrain" else cfg.finetune_updates_per_step
    bar = tqdm(total=total, initial=first_round * n * horizon, disable=not cfg.progress,
               desc=f"{phase} {agent_cfg.method}", unit="step", unit_scale=True)
    start = time.perf_counter()
    for index in range(first_round, rounds):
        seeds, gen = round_seeds(seed, phase, index, n)
        obs = envs.reset(seeds)
        w = fixed_w.expand(n, -1) if fixed_w is not None else None
        sums: dict[str, list[torch.Tensor]] = {}  # each update's statistics, read when the round is logged
        updates, envs.successes = 0, 0
        for t in range(horizon):
            env_steps = (index * horizon + t) * n
            if fixed_w is None and t % cfg.task_resample_every == 0:
                w = sample_tasks(n, agent_cfg.feature_dim, gen) if agent_cfg.task_conditioned \
                    else learner.default_task(n).cpu()
                if agent_cfg.task_input_dim > agent_cfg.feature_dim:  # beta ~ U[0, 1] with each w
                    w = torch.cat([w, torch.rand(n, 1, generator=gen)], -1)
            eps = linear_schedule(start_eps, cfg.epsilon_end, cfg.epsilon_decay_fraction * total, env_steps)
            action = learner.act(obs, w, eps, gen, gpi=False, explore=phase == "pretrain").cpu()
            out = envs.step(action, last=t == horizon - 1)
            row = {"obs": obs, "action": action, "w": w, "next_obs": out["next_obs"],
                   "terminated": out["terminated"], "ended": out["ended"]}
            if "reward" in out:
                row["reward"] = _task_reward(out["reward"], reward_scale, cfg.reward_clip)
            if store_phi:
                row["next_phi"] = learner.features(out["next_obs"]).cpu()
            replay.add(**row)
            learner.observe(out["next_obs"])
            obs = out["obs"]
            if explore_weight:
                learner.explore_bonus = linear_schedule(explore_weight, 0.0, total, env_steps)
            if env_steps + n > cfg.learning_starts:  # the updates draw nothing from `gen`: sample them first
                batches = [batch_to(replay.sample(agent_cfg.batch_size, agent_cfg.n_step, gen),
                                    learner.device) for _ in range(updates_per_step)]
                for stats in (yield env_steps, batches):
                    for key, value in stats.items():
                        sums.setdefault(key, []).append(value)
                    updates += 1
            bar.update(n)
        done = (index + 1) * n * horizon
        if updates and not learner.weights_finite():
            _diverged(phase, index + 1, done, learner.config, reward_scale)
        log.metrics.append({"round": index + 1, "env_steps": done, "epsilon": eps, "updates": learner.updates,
                            "episodes_succeeded": envs.successes,
                            **{k: sum(torch.stack(v).tolist()) / max(updates, 1) for k, v in sums.items()},
                            **envs.coverage()})
        rate = (done - first_round * n * horizon) / (time.perf_counter() - start)
        bar.set_postfix(states=envs.coverage()["states_visited"], steps_per_s=f"{rate:.0f}")
        if on_round is not None:
            on_round(RoundEnd(phase, index + 1, rounds, done, learner, replay, envs, log.metrics[-1]))
        if run_dir is not None:
            _write_metrics(run_dir / "metrics.csv", log.metrics)
        log.seconds = log.earlier_seconds + (time.perf_counter() - start) / time_share
        if run_dir is not None and (index == rounds - 1 or (index + 1) % cfg.checkpoint_every == 0):
            save_checkpoint(ckpt, {**identity, "round": index + 1, "learner": learner.state_dict(),
                                    "replay": replay.state_dict(), "coverage": envs.coverage_state(),
                                    "metrics": log.metrics, "epsilon_start": start_eps,
                                    "env_steps": done, "total_env_steps": total, "seconds": log.seconds})
    bar.close()
    learner.explore_bonus = 0.0
    log.coverage = envs.coverage()
    return log


def _diverged(phase: str, round_: int, env_steps: int, agent: AgentConfig, reward_scale: float) -> None:
    """ValueError for a phase whose update left a network weight NaN or inf (before the round is logged or
    saved): what was wrong and what to lower."""
    lr = ("lr", agent.lr) if phase == "pretrain" else ("finetune_lr", agent.finetune_lr)
    weights = ("exploit_weight", "explore_weight") if phase == "pretrain" else ("reward_scale",)
    values = {"exploit_weight": agent.exploit_weight, "explore_weight": agent.explore_weight,
              "reward_scale": reward_scale}
    shown = ", ".join(f"{name} {values[name]:g}" for name in weights)
    raise ValueError(f"{PHASE_NAMES[phase]} diverged in round {round_} (env step {env_steps:,}): a network "
                     f"weight is no longer a finite number, so nothing it learned can be used; lower {lr[0]} "
                     f"(now {lr[1]:g}) or the reward's size ({shown}); the rounds before it are kept")


def check_identity(ckpt: Path, state: dict, identity: dict) -> None:
    """Refuse a checkpoint of another run (`phases.check_checkpoint`), naming the fields that differ (a
    built-in level by its name; the `RUN_SETTINGS` may differ)."""
    check_checkpoint(ckpt, {**state, "art": _level_name(state.get("art"))},
                     {**identity, "art": _level_name(identity.get("art"))},
                     ignore=[f"config.{name}" for name in RUN_SETTINGS],
                     hints={"engine": "resume with --train.engine {saved} (a replay of one engine cannot "
                                      "continue on the other)"})


def _level_name(art) -> str | list:
    """The name of a built-in level (or maze) drawn as `art`, else the art itself."""
    built_in = {**gridworld.LEVELS, **gridworld.HELD_OUT, **gridworld.MAZES}
    names = [name for name, layout in built_in.items() if list(layout) == list(art or ())]
    return names[0] if names else art


def load_learner(checkpoint: str | Path) -> tuple[Learner, dict]:
    """The learner saved in a `checkpoint.pt` of `pretrain` or `finetune`, and the checkpoint's metadata
    (phase, method, art, seed, steps, config, engine, task_w, round). It reads boards and, once given a
    batch of the compiled engine, its state indices."""
    path = Path(checkpoint)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = load_checkpoint(path, map_location="cpu")  # a GPU run's checkpoint reads anywhere
    try:
        agent = AgentConfig(**state["config"]["agent"])
        columns = state["learner"].get("input_columns")
        learner = Learner(agent, tuple(state["obs_shape"]), int(state["num_actions"]), int(state["seed"]),
                          input_columns=None if columns is None else InputColumns(**columns))
        learner.load_state_dict(state["learner"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"corrupt checkpoint file {path}: {error!r}") from error
    return learner, {k: v for k, v in state.items() if k not in ("learner", "replay", "coverage", "metrics")}


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


def check_learner(learner: Learner) -> Learner:
    """`learner`, or an `InputTypeError` naming it if it is neither a `Learner` nor an object that acts like
    one (a config, `act` and `set_observation_table`: a stand-in of a test or an exercise)."""
    if isinstance(learner, Learner) or all(hasattr(learner, name) for name in LEARNER_INTERFACE):
        return learner
    return check_type("learner", learner, Learner, "a Learner (from pretrain, new_learner or load_learner)")


def learner_for(envs: EnvBatch, agent: AgentConfig, seed: int) -> Learner:
    """An untrained learner sized for `envs`' level, reading the board entries that vary between its states,
    and its engine's observations."""
    learner = Learner(agent, envs.obs_shape, envs.num_actions, seed,
                      input_columns=InputColumns.of(envs.state_boards))
    learner.set_observation_table(envs.observation_table)
    return learner


def new_learner(method: str, env: EnvSource, seed: int, config: TrainConfig | None = None) -> Learner:
    """An untrained learner for `method` on `env` (see `learner_for`)."""
    config = with_method(config, method)
    return learner_for(make_env_batch(env, 1, engine=config.engine, reward_free=True), config.agent, seed)


def pretrain(method: str, env: EnvSource, steps: int, seed: int, config: TrainConfig | None = None, *,
             run_dir: str | Path | None = None, resume: bool = False, on_round: RoundHook | None = None,
             objective: Objective | None = None) -> tuple[Learner, PhaseLog]:
    """Reward-free pretraining of `method` (visr, apt, aps) for `steps` env steps (whole rounds).

    Logs per round: losses, the mean of each intrinsic-reward term, epsilon and coverage; with
    `run_dir`, writes metrics.csv and checkpoint.pt there, and `resume=True` continues from it.
    `on_round` is called with a `RoundEnd` after every round. `objective` replaces APS's reward and vMF
    loss with functions of your own (`Learner.use_objective`). `pretrain_seeds` of this one seed: alone,
    its learner makes its own updates (`Learner.update`).
    """
    (learner, log), = pretrain_seeds(method, env, steps, [seed], config, run_dirs=None if run_dir is None else
                                     [run_dir], resume=resume, objective=objective, on_round=[on_round])
    return learner, log


def pretrain_seeds(method: str, env: EnvSource, steps: int, seeds: Sequence[int],
                   config: TrainConfig | None = None, *, run_dirs: Sequence[str | Path] | None = None,
                   resume: bool | Sequence[bool] = False, objective: Objective | None = None,
                   on_round: Sequence[RoundHook | None] | None = None) -> list[tuple[Learner, PhaseLog]]:
    """`pretrain` of one method on one level for each of `seeds`, as a seed group in one process: each seed
    keeps its own learner, envs, replay, random streams and run directory (`run_dirs`, one per seed), and
    their updates run together (`group.LearnerGroup`). Each seed's learner, log and checkpoint equal those
    of its own `pretrain` bit for bit where `benchmarks/seed_groups.py` says the machine does; only the
    time is shared (each log's `seconds` is the group's over the number of seeds). `resume=True` (or one
    flag per seed) resumes each seed from its own checkpoint; `on_round`, one hook per seed (or None)."""
    config = with_method(config, method)
    if method == "dqn":
        raise ValueError("dqn learns from the task reward only: it has no pretraining phase")
    steps = check_int("pretrain steps", steps)
    check_steps("pretrain steps", steps)
    seeds, dirs, resumes, hooks = check_group(seeds, run_dirs, resume, on_round)
    learners, phases = [], []
    for i, seed in enumerate(seeds):
        envs = env_batch(env, config, reward_free=True, absorbing_target=config.absorbing_target)
        learner = learner_for(envs, config.agent, seed)
        learner.use_objective(objective)
        learners.append(learner)
        phases.append(_phase_rounds(learner, envs, steps, seed, _group_bar(config, i), "pretrain", None,
                                    dirs[i], resumes[i], hooks[i], time_share=len(seeds)))
    with single_thread(), on_device(learners, config.device):
        logs = _drive(learners, phases, _group(learners), _update_step(config))
    return list(zip(learners, logs, strict=True))


def _update_step(config: TrainConfig) -> UpdateStep:
    """What pretraining updates with: `update.gradient_step`, or with `TrainConfig.compile` the same compiled
    by torch.compile, from an empty compile cache (torch compiles anew for each learner, and a process that
    ran several pretrainings would pass its recompile limit and fall back to eager)."""
    if not config.compile:
        return gradient_step
    torch.compiler.reset()
    return torch.compile(gradient_step, backend=COMPILE_BACKEND)


@contextlib.contextmanager
def on_device(learners: Sequence[Learner], device: str) -> Iterator[None]:
    """The learners on `device` (`TrainConfig.device`) for the phase inside, back on the CPU after it, so
    that what reads them afterwards (identification, evaluation, the studies) runs on the CPU as before."""
    target = resolve_device(device, "--train.device")
    if target.type == "cpu":
        yield
        return
    for learner in learners:
        learner.to(target)
    try:
        yield
    finally:
        for learner in learners:
            learner.to("cpu")


def _group(learners: list[Learner]) -> LearnerGroup | None:
    """The seed group of two or more learners; a single learner updates alone (`Learner.update`, the
    reference path)."""
    return LearnerGroup(learners) if len(learners) > 1 else None


def _group_bar(config: TrainConfig, member: int) -> TrainConfig:
    """A group member's config: one progress bar for the group (the first member's), as they run in
    lockstep."""
    return config if member == 0 else replace(config, progress=False)


def check_group(seeds: Sequence[int], run_dirs: Sequence[str | Path] | None, resume: bool | Sequence[bool],
                hooks: Sequence[RoundHook | None] | None
                ) -> tuple[list[int], list[Path | None], list[bool], list[RoundHook | None]]:
    """A seed group's seeds (each a valid seed, none repeated, at least one), run directories (None, or
    one per seed, none repeated), resume flags (one for all or one per seed) and round hooks (None or one
    per seed), each as a list of one per seed; a ValueError naming what is wrong otherwise."""
    if isinstance(seeds, int | str) or not len(seeds):
        raise ValueError(f"a seed group needs a list of one or more seeds, got {seeds!r}")
    seeds = [check_seed(seed) for seed in seeds]
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise ValueError(f"seed {repeated[0]} appears twice in the group {seeds}: each seed trains once")
    n = len(seeds)
    dirs = [None] * n if run_dirs is None else [Path(d) for d in run_dirs]
    if len(dirs) != n or (run_dirs is not None and len({d.resolve() for d in dirs}) != n):
        raise ValueError(f"a seed group of {n} seeds needs as many distinct run directories, got "
                         f"{[str(d) for d in dirs]}")
    resumes = [resume] * n if isinstance(resume, bool) else list(resume)
    hooks = [None] * n if hooks is None else list(hooks)
    if len(resumes) != n or len(hooks) != n:
        raise ValueError(f"a seed group of {n} seeds takes one resume flag and one round hook per seed, got "
                         f"{len(resumes)} and {len(hooks)}")
    if any(resumes) and run_dirs is None:
        raise ValueError("resume continues from the checkpoint in a run directory: give run_dir (a seed "
                         "group: run_dirs)")
    return seeds, dirs, resumes, hooks


def random_walk(env: EnvSource, steps: int, seed: int, config: TrainConfig | None = None) -> dict:
    """The coverage a uniformly random walk reaches under pretraining's protocol: the same env batch
    (absorbing target), rounds, reset seeds and step budget as `pretrain`, every action uniform, no learner.
    The reference a pretraining method's exploration is judged against (`EnvBatch.coverage`)."""
    config = check_config(config, TrainConfig)
    steps, seed = check_int("random walk steps", steps), check_seed(seed)
    check_steps("random walk steps", steps)
    envs = env_batch(env, config, reward_free=True, absorbing_target=config.absorbing_target)
    for index in range(math.ceil(steps / (config.num_envs * envs.horizon))):
        seeds, gen = round_seeds(seed, "pretrain", index, config.num_envs)
        envs.reset(seeds)
        for t in range(envs.horizon):
            actions = torch.randint(envs.num_actions, (config.num_envs,), generator=gen)
            envs.step(actions, last=t == envs.horizon - 1)
    return envs.coverage()


def task_data(learner: Learner, env: EnvSource, steps: int, seed: int,
              config: TrainConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Roll out the pretrained skills with random w (epsilon_end-greedy on psi^T w; with the kNN reward as a
    feature of its own, without its exploration term, as zero-shot acts) for `steps` env steps and return
    what task identification regresses: rows phi(s') (N, d) and task rewards r (N,)."""
    learner = check_learner(learner)
    config = check_config(config, lambda: TrainConfig(agent=learner.config))
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no task vector to identify")
    steps, seed = check_int("identify steps", steps), check_seed(seed)
    check_steps("identify steps", steps)
    envs = env_batch(env, config, reward_free=False, learner=learner)
    rounds = math.ceil(steps / (config.num_envs * envs.horizon))
    check_identify_memory(rounds * config.num_envs * envs.horizon, learner.config)
    features, rewards = [], []
    with single_thread():
        for index in range(rounds):
            seeds, gen = round_seeds(seed, "identify", index, config.num_envs)
            obs = envs.reset(seeds)
            for t in range(envs.horizon):
                if t % config.task_resample_every == 0:
                    w = sample_tasks(config.num_envs, learner.config.feature_dim, gen)
                action = learner.act(obs, w, config.epsilon_end, gen, gpi=False).cpu()
                out = envs.step(action, last=t == envs.horizon - 1)
                features.append(learner.features(out["next_obs"]).cpu())
                rewards.append(out["reward"])
                obs = out["obs"]
    return torch.cat(features), torch.cat(rewards)


def identify_task(learner: Learner, env: EnvSource, steps: int, seed: int,
                  config: TrainConfig | None = None) -> torch.Tensor:
    """The task vector behind the env's reward: `infer_task` (w = argmin ||Phi w - r||, unit norm) of
    `task_data`."""
    return infer_task(*task_data(learner, env, steps, seed, config))


def evaluate(learner: Learner, env: EnvSource, w: torch.Tensor | None, episodes: int, seed: int,
             config: TrainConfig | None = None, *, gpi: bool | None = None) -> SuccessResult:
    """Greedy episodes on the task: success rate and mean return.

    `w=None` means the learner's fixed task (apt, dqn). GPI (over {w} + fresh tasks) applies by default
    to task-conditioned learners that have not been fine-tuned: fine-tuning trains psi(., ., w) alone
    on the task reward, so other candidates' values are no longer on the same scale. An episode ends at
    the target (success) or the step limit; what an env does after its episode ended is not counted.
    """
    learner = check_learner(learner)
    config = check_config(config, lambda: TrainConfig(agent=learner.config))
    episodes, seed = check_int("episodes", episodes), check_seed(seed)
    if w is None and learner.config.task_conditioned:
        raise ValueError(f"evaluate: method {learner.config.method!r} acts on a task vector w: give the w to "
                         "score (e.g. identify_task's); w=None is the fixed task of apt and dqn")
    w = learner.default_task(1)[0] if w is None else check_task_vector("w", w, learner.config.feature_dim)
    if gpi is None:
        gpi = learner.config.gpi and learner.config.task_conditioned and learner.phase == "pretrain"
    n = config.num_envs
    envs = env_batch(env, config, reward_free=False, learner=learner)
    check_steps("episodes", math.ceil(episodes / n) * n * envs.horizon)
    check_acting_memory(config, envs.num_actions)
    successes, returns = [], []
    with single_thread():
        for index in range(math.ceil(episodes / n)):
            seeds, gen = round_seeds(seed, "evaluate", index, n)
            obs = envs.reset(seeds)
            alive = torch.ones(n, dtype=torch.bool)
            ret, success = torch.zeros(n, dtype=torch.float64), torch.zeros(n, dtype=torch.bool)
            for t in range(envs.horizon):
                actions = learner.act(obs, w.expand(n, -1), 0.0, gen, gpi=gpi).cpu()
                out = envs.step(actions, last=t == envs.horizon - 1)
                ret += torch.where(alive, out["reward"].double(), 0.0)
                success |= alive & out["terminated"]
                alive &= ~out["ended"]
                obs = out["obs"]
                if not alive.any():
                    break
            successes += success.tolist()
            returns += ret.tolist()
    successes, returns = successes[:episodes], returns[:episodes]
    return SuccessResult(float(np.mean(successes)), float(np.mean(returns)), episodes)


def finetune(learner: Learner, env: EnvSource, w: torch.Tensor | None, steps: int, seed: int,
             config: TrainConfig | None = None, *, run_dir: str | Path | None = None,
             resume: bool = False, on_round: RoundHook | None = None,
             reward_scale: float = 1.0, explore_weight: float = 0.0) -> PhaseLog:
    """Continue training psi on the task reward with w fixed (phi, f frozen; pretrained weights carried
    over), the target ending the episode (absorbing with `TrainConfig.finetune_absorbing_target`). `w=None`
    uses the learner's fixed task (apt, dqn). Every learner starts from the low `finetune_epsilon_start`
    (one protocol: dqn's untrained learner too). Same logging, checkpoints and `on_round` hook as
    `pretrain`. The learner trains on the task reward times `reward_scale` (e.g. 1 / ||c|| for the
    least-squares fit c: Q = psi^T w then starts at the fitted reward's scale), clipped to
    `config.reward_clip` if set.

    Fine-tuning that keeps exploring (apt, aps; the default 0 is the paper's protocol): with
    `explore_weight` lambda_0 > 0 the pretraining's exploration reward stays in the reward, r_task +
    lambda(t) r_kNN(s'), its weight lambda(t) decaying linearly from lambda_0 to 0 over the phase's env
    steps (`Learner.explore_bonus`). As pretraining pays it (`nstep_reward='last'`, the authors' code), the
    kNN reward is paid once per sampled window, at its last state s'_m among the minibatch's B states s'_m
    as particles, on the step that reaches s'_m (B kNN queries per update, not B x n). `finetune_seeds` of
    this one learner, which makes its own updates."""
    return finetune_seeds([learner], env, [w], steps, [seed], config,
                          run_dirs=None if run_dir is None else [run_dir], resume=resume, on_round=[on_round],
                          reward_scale=reward_scale, explore_weight=explore_weight)[0]


def finetune_seeds(learners: Sequence[Learner], env: EnvSource, ws: Sequence[torch.Tensor | None], steps: int,
                   seeds: Sequence[int], config: TrainConfig | None = None, *,
                   run_dirs: Sequence[str | Path] | None = None, resume: bool | Sequence[bool] = False,
                   on_round: Sequence[RoundHook | None] | None = None, reward_scale: float = 1.0,
                   explore_weight: float = 0.0) -> list[PhaseLog]:
    """`finetune` of each learner (one method, pretrained alike or all untrained) on its own task w
    (`ws`, one per learner; None: the learner's fixed task) with its own seed, as a seed group in one
    process (`pretrain_seeds` says what is shared: the arithmetic and the time, nothing else)."""
    learners = [check_learner(learner) for learner in learners]
    config = check_config(config, lambda: TrainConfig(agent=learners[0].config))
    steps = check_int("finetune steps", steps)
    check_steps("finetune steps", steps)
    reward_scale = check_finite("reward_scale", reward_scale)
    explore_weight = check_range("explore_weight", explore_weight, 0, MAX_MAGNITUDE)
    seeds, dirs, resumes, hooks = check_group(seeds, run_dirs, resume, on_round)
    if len(learners) != len(seeds) or len(ws) != len(seeds):
        raise ValueError(f"a seed group of {len(seeds)} seeds fine-tunes as many learners on as many tasks, "
                         f"got {len(learners)} learners and {len(ws)} tasks")
    if explore_weight and not learners[0].config.uses_knn:
        raise ValueError(f"explore_weight {explore_weight:g}: method {learners[0].config.method!r} has no "
                         "exploration reward to keep while fine-tuning; methods with one: apt, aps")
    phases = []
    for i, (learner, w, seed) in enumerate(zip(learners, ws, seeds, strict=True)):
        w = learner.default_task(1)[0] if w is None else check_task_vector("w", w, learner.config.feature_dim)
        envs = env_batch(env, config, reward_free=False, absorbing_target=config.finetune_absorbing_target,
                         learner=learner)
        if learner.phase != "finetune":
            learner.start_finetune()
        phases.append(_phase_rounds(learner, envs, steps, seed, _group_bar(config, i), "finetune",
                                    w[None].float(), dirs[i], resumes[i], hooks[i], reward_scale,
                                    explore_weight, time_share=len(seeds)))
    with single_thread(), on_device(learners, config.device):
        return _drive(learners, phases, _group(learners))
