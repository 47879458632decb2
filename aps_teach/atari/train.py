"""The Atari pipeline: reward-free `pretrain` -> `identify_task` -> `finetune` -> `evaluate`, and `run`.

The learner, its updates and task inference are the gridworld's (`AtariLearner`, `aps_teach.tasks`);
what pixels add is here. Each step of the `num_envs` games (one ale-py vector env): act epsilon-greedily
on psi(s, a, w)^T w under each game's w, store the step in the frame replay, and once it holds
`min_replay_size` transitions do one update per `update_period` env steps on a sampled batch whose
every observation is augmented (random shift, then intensity; `augment_batch`).

Steps count env steps: one step of the vector env is `num_envs` steps, the one autoreset step after
each game included. Pretraining draws a fresh w on the unit sphere for every game every
`task_resample_period` vector steps; its replay has no reward column. Fine-tuning acts under the
identified w with task rewards clipped to +-`reward_clip`; epsilon decays linearly from
`epsilon_start` to `epsilon_end` over `epsilon_decay_steps` in each phase.

With a run directory a phase writes metrics.csv (one row per `log_every` env steps; TensorBoard
scalars too when tensorboard is installed) and checkpoint.pt (atomically, every `checkpoint_every` env
steps and at the end): weights, optimiser, step and update counters, the random generator, and the
replay if `save_replay`. `resume=True` continues from it, step count and all. The emulators' state is
not saved: a resumed phase starts new games (seeded by the step count), so it does not repeat the
uninterrupted run frame for frame, and without a saved replay it refills `min_replay_size` transitions
before updating again.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from aps_teach.agents import Method, check_method
from aps_teach.atari.agent import AtariLearner, agent_config
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.devices import to_device
from aps_teach.atari.envs import check_game, make_vector_env
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.scores import REFERENCE_SCORES, human_normalised
from aps_teach.atari.update_step import (
    UpdateStep,
    apply_augmentation,
    augmentation_draws,
    check_compile_backend,
)
from aps_teach.checks import check_int, check_seed
from aps_teach.files import load_checkpoint, save_checkpoint, write_csv_atomic, write_text_atomic
from aps_teach.memory import check_fits
from aps_teach.phases import check_checkpoint, linear_schedule, torch_threads
from aps_teach.run_dir import RunDir
from aps_teach.seeds import game_reset_seed, phase_generator
from aps_teach.tasks import infer_task, sample_tasks

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


def parse_device(name: str) -> torch.device:
    """The torch device called `name` (cpu, cuda, cuda:N, mps), whether or not this machine has it."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"unknown device {name!r} ({error}); valid: cpu, cuda, cuda:N, mps") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unsupported device {name!r}; valid: cpu, cuda, cuda:N, mps")
    return device


def resolve_device(name: str) -> torch.device:
    """The torch device called `name`, or ValueError if this machine does not have it."""
    device = parse_device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch is built without CUDA" if torch.version.cuda is None
                   else "no CUDA GPU is visible")
            raise ValueError(f"device {name!r} asked for but CUDA is not available ({why}, torch "
                             f"{torch.__version__}); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {name!r} asked for but MPS is not available; use --device cpu")
    return device


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
    threads: int | None = None
    """torch CPU threads while a phase runs (None: torch's default)."""
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
        parse_device(self.device)  # whether this machine has it is checked where a run starts
        for name in ("num_envs", "log_every", "checkpoint_every"):
            check_int(name, getattr(self, name))
        check_int("threads", self.threads, default="torch's default")
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"unknown compile_mode {self.compile_mode!r}; valid: {', '.join(COMPILE_MODES)}")


@dataclass
class PhaseLog:
    """Metrics rows of a training phase (one per `log_every` env steps) and its final counters."""

    metrics: list[dict] = field(default_factory=list)
    env_steps: int = 0
    updates: int = 0


@dataclass
class EvalResult:
    """Raw game scores of the games finished within the evaluation budget, and their mean."""

    game: str
    score: float
    """Mean raw score of the finished games."""
    human_normalised: float | None
    """(score - random) / (human - random) with the reference scores of `aps_teach.atari.scores`; None for a
    game outside the 57 that have them."""
    episodes: int
    returns: list[float]
    env_steps: int
    gpi: bool = False
    """Whether the actions were GPI's: max over {w} + `gpi_policies` fresh tasks, each scored under w."""


def atari_from_dict(values: dict) -> AtariConfig:
    """An `AtariConfig` from its `asdict` (JSON turns its tuples into lists). A dict saved before the n-step
    reward mode was a field is the exact sum, the only mode Atari runs had then."""
    return AtariConfig(**{"nstep_reward": "sum",
                          **{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}})


def _jsonable(value):
    return json.loads(json.dumps(value))


def augment_batch(batch: dict[str, torch.Tensor], atari: AtariConfig, generator: torch.Generator,
                  windows: bool = True) -> dict[str, torch.Tensor]:
    """The batch with every observation (obs, each step's s' of the window, the bootstrap s') randomly
    shifted by up to `shift_pad` pixels and scaled in intensity, each stack its own draw (float pixels in
    [0, 1] times the intensity factor: `augment`).

    `windows=False` leaves the window's s' as they are, for a learner that never reads them (see
    `window_use`): 320 of the 384 stacks of a batch at B = 32, n = 10. The draws and the arithmetic are
    `UpdateStep`'s (`aps_teach.atari.update_step`)."""
    return apply_augmentation(batch, atari, augmentation_draws(batch, atari, generator, windows))


def window_use(learner: AtariLearner, phase: str) -> tuple[bool, bool]:
    """What an update of `learner` in `phase` reads of a window's next states: (all n of them, i.e. gather
    and augment every stack; at least the first, i.e. augment what is gathered). All: the exact n-step sum
    while pretraining ('sum'), phi(s'_i) of every step while fine-tuning visr/aps. The first alone: the
    InfoNCE pair (s, s'_1) of apt (and aps without a shared encoder) while pretraining with 'last'."""
    if phase == "pretrain":
        every = learner.config.nstep_reward == "sum"
        return every, every or learner.rep is not None
    every = learner.phi is not None
    return every, every


def new_learner(game: str, method: Method, seed: int, config: AtariTrainConfig) -> AtariLearner:
    """An untrained learner for `method` sized for `game`'s minimal action set, on `config.device`."""
    check_method(method)
    probe = make_vector_env(game, 1, config.atari, seed, training=False, backend=config.backend)
    num_actions = probe.num_actions
    probe.close()
    return AtariLearner(config.atari, method, num_actions, seed, resolve_device(config.device))


def load_learner(checkpoint: str | os.PathLike,
                 config: AtariTrainConfig | None = None) -> tuple[AtariLearner, dict]:
    """The learner of a `checkpoint.pt` of `pretrain` or `finetune` on `config.device`, and the checkpoint's
    metadata (phase, game, method, seed, atari, num_envs, backend, num_actions, task_w, env_steps, ...)."""
    path = Path(checkpoint)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    config = config or AtariTrainConfig()
    device = resolve_device(config.device)
    state = load_checkpoint(path, map_location=device)
    try:
        atari = atari_from_dict(state["atari"])
        learner = AtariLearner(atari, state["method"], int(state["num_actions"]), int(state["seed"]), device)
        learner.load_state_dict(state["learner"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"corrupt checkpoint file {path}: {error!r}") from error
    meta = {k: v for k, v in state.items() if k not in ("learner", "replay", "metrics", "generator", "w")}
    return learner, meta


class _Metrics:
    """Per-interval means of the update statistics, finished games, rates; metrics.csv and TensorBoard.

    The statistics arrive as tensors (`AtariLearner` keeps them on the device) and are read, in one copy
    per column, only when a row is written: the updates between rows never wait for the device."""

    def __init__(self, run_dir: Path | None, config: AtariTrainConfig, rows: list[dict]):
        self.run_dir, self.rows = run_dir, rows
        self.stats: dict[str, list[torch.Tensor]] = {}
        self.updates = 0
        self.clock, self.steps_at, self.updates_at = time.perf_counter(), None, None
        self.writer = None
        if run_dir is not None and config.tensorboard and importlib.util.find_spec("tensorboard"):
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def add(self, stats: dict[str, torch.Tensor]) -> None:
        for key, value in stats.items():
            self.stats.setdefault(key, []).append(value)
        self.updates += 1

    def rates(self, env_steps: int, updates: int) -> tuple[float, float]:
        """env-steps/s and updates/s since the last call."""
        now = time.perf_counter()
        elapsed = max(now - self.clock, 1e-9)
        steps_at = env_steps if self.steps_at is None else self.steps_at
        updates_at = updates if self.updates_at is None else self.updates_at
        rates = ((env_steps - steps_at) / elapsed, (updates - updates_at) / elapsed)
        self.clock, self.steps_at, self.updates_at = now, env_steps, updates
        return rates

    def row(self, env_steps: int, updates: int, epsilon: float, returns: list[float],
            rates: tuple[float, float]) -> dict:
        row = {"env_steps": env_steps, "updates": updates, "epsilon": epsilon, "games": len(returns),
               "score": float(np.mean(returns)) if returns else None,
               **{k: sum(torch.stack(v).tolist()) / max(self.updates, 1)
                  for k, v in sorted(self.stats.items())},
               "env_steps_per_s": rates[0], "updates_per_s": rates[1]}
        self.rows.append(row)
        self.stats, self.updates = {}, 0
        if self.run_dir is not None:
            columns = list(dict.fromkeys(k for r in self.rows for k in r))
            write_csv_atomic(self.run_dir / "metrics.csv", self.rows, columns)
        if self.writer is not None:
            for key, value in row.items():
                if key != "env_steps" and value is not None and math.isfinite(value):
                    self.writer.add_scalar(key, value, env_steps)
            self.writer.flush()
        return row

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _new_replay(atari: AtariConfig, n: int, steps: int, store_rewards: bool,
                device: torch.device) -> FrameReplay:
    """A frame replay for a phase of `steps` env steps: `replay_capacity` transitions, or all of them."""
    transitions = atari.replay_capacity or steps
    rows = math.ceil(transitions / n) + atari.frame_stack + 1
    per_cell = FrameReplay.bytes_per_transition((atari.frame_size,) * 2, atari.feature_dim, store_rewards)
    check_fits(rows * n * per_cell, f"the replay of {rows * n:,} transitions",
               "set a smaller --atari.replay-capacity", device)
    return FrameReplay(rows, n, (atari.frame_size, atari.frame_size), atari.frame_stack, atari.feature_dim,
                       store_rewards, device)


def _identity(phase: str, game: str, method: str, seed: int, config: AtariTrainConfig, num_actions: int,
              task_w: torch.Tensor | None) -> dict:
    """What a checkpoint must share with the run that resumes it."""
    return _jsonable({"phase": phase, "game": game, "method": method, "seed": seed,
                      "atari": asdict(config.atari), "num_envs": config.num_envs, "backend": config.backend,
                      "num_actions": num_actions,
                      "task_w": None if task_w is None else [float(x) for x in task_w.tolist()]})


def _restore(ckpt: Path | None, identity: dict, learner: AtariLearner, gen: torch.Generator) -> dict:
    """Load a phase checkpoint into `learner` and `gen` after checking it belongs to this run; returns its
    counters, metrics rows, current w and replay state."""
    if ckpt is None or not ckpt.exists():
        raise FileNotFoundError(f"resume: no checkpoint at {ckpt}")
    state = load_checkpoint(ckpt, map_location=learner.device)
    saved = dict(state)
    if isinstance(saved.get("atari"), dict):  # read as this version does: fields added since take defaults
        saved["atari"] = _jsonable(asdict(atari_from_dict(saved["atari"])))
    check_checkpoint(ckpt, saved, identity)
    try:
        learner.load_state_dict(state["learner"])
        gen.set_state(state["generator"])
        return {"env_steps": int(state["env_steps"]), "updates": int(state["updates"]),
                "credit": int(state["credit"]), "rows": list(state["metrics"]),
                "w": state["w"].to(learner.device), "replay": state["replay"]}
    except (KeyError, TypeError, RuntimeError, AttributeError) as error:
        raise ValueError(f"corrupt checkpoint file {ckpt}: {error!r}") from error


def _train_phase(learner: AtariLearner, game: str, phase: str, seed: int, config: AtariTrainConfig,
                 task_w: torch.Tensor | None, run_dir: Path | None, resume: bool) -> PhaseLog:
    """The step loop shared by pretraining (no reward, w resampled) and fine-tuning (clipped task reward,
    w fixed): act, store, update, log, checkpoint."""
    atari, n, device = config.atari, config.num_envs, learner.device
    steps = atari.pretrain_steps if phase == "pretrain" else atari.finetune_steps
    reward_free = phase == "pretrain"
    gen = phase_generator(seed, phase)
    identity = _identity(phase, game, learner.config.method, seed, config, learner.num_actions, task_w)
    ckpt = run_dir / "checkpoint.pt" if run_dir is not None else None
    at = {"env_steps": 0, "updates": 0, "credit": 0, "rows": [], "replay": None,
          "w": None if task_w is None else task_w.to(device).expand(n, -1)}
    if resume:
        at = _restore(ckpt, identity, learner, gen)
    env_steps, updates, credit, w = at["env_steps"], at["updates"], at["credit"], at["w"]
    if env_steps >= steps:  # a finished phase: nothing to do
        return PhaseLog(at["rows"], env_steps, updates)
    replay = _new_replay(atari, n, steps, not reward_free, device)
    if at["replay"] is not None:
        replay.load_state_dict(at["replay"])
    envs = make_vector_env(game, n, atari, seed, training=True, backend=config.backend)
    if envs.num_actions != learner.num_actions:
        envs.close()
        raise ValueError(f"{game} has {envs.num_actions} actions, the learner {learner.num_actions}")
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    metrics = _Metrics(run_dir, config, at["rows"])
    bar = tqdm(total=steps, initial=env_steps, disable=not config.progress, unit="step", unit_scale=True,
               desc=f"{phase} {learner.config.method} {game}")
    envs.reset(seed=game_reset_seed(seed, phase, env_steps))
    returns_seen = 0
    every_state, windows = window_use(learner, phase)
    update = UpdateStep(learner, atari, windows, config.compile_mode if config.compile else None)
    metrics.rates(env_steps, updates)
    with (torch_threads(config.threads), contextlib.closing(envs), contextlib.closing(bar),
          contextlib.closing(metrics)):
        while env_steps < steps:
            if task_w is None and (w is None or (env_steps // n) % atari.task_resample_period == 0):
                w = (sample_tasks(n, atari.feature_dim, gen) if learner.config.task_conditioned
                     else learner.default_task(n)).to(device)
            eps = linear_schedule(atari.epsilon_start, atari.epsilon_end, atari.epsilon_decay_steps,
                                  env_steps)
            action = learner.act(to_device(torch.from_numpy(envs.obs), device), w, eps, gen, gpi=False)
            tr = envs.step(action.cpu().numpy())  # the loop's one sync: the games need the actions
            reward = None if reward_free else _clip(tr.reward, atari.reward_clip)
            replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid, reward=reward)
            env_steps += n
            if (replay.count - atari.frame_stack + 1) * n >= max(atari.min_replay_size, 2 * n):
                credit += n
                while credit >= atari.update_period:
                    metrics.add(update(replay.sample(atari.batch_size, atari.n_step, gen, every_state), gen))
                    credit -= atari.update_period
                    updates += 1
            bar.update(n)
            done = env_steps >= steps
            if done or env_steps // config.log_every != (env_steps - n) // config.log_every:
                rates = metrics.rates(env_steps, updates)
                metrics.row(env_steps, updates, eps, envs.episode_returns[returns_seen:], rates)
                returns_seen = len(envs.episode_returns)
                bar.set_postfix(env_steps_per_s=f"{rates[0]:.0f}", updates_per_s=f"{rates[1]:.1f}")
            if ckpt is not None and (done or env_steps // config.checkpoint_every
                                     != (env_steps - n) // config.checkpoint_every):
                save_checkpoint(ckpt, {**identity, "env_steps": env_steps, "total_env_steps": steps,
                                       "updates": updates, "credit": credit, "generator": gen.get_state(),
                                       "w": w.cpu(),
                                       "metrics": metrics.rows, "learner": learner.state_dict(),
                                       "replay": replay.state_dict() if config.save_replay else None})
    return PhaseLog(metrics.rows, env_steps, updates)


def _clip(reward: np.ndarray, bound: float | None) -> np.ndarray:
    """Task rewards clipped to [-bound, bound] (fine-tuning, task identification); raw if bound is None."""
    return reward if bound is None else np.clip(reward, -bound, bound)


def pretrain(game: str, method: Method, seed: int, config: AtariTrainConfig | None = None, *,
             run_dir: str | os.PathLike | None = None, resume: bool = False) -> tuple[AtariLearner, PhaseLog]:
    """Reward-free pretraining of `method` (visr, apt, aps) on `game` for `atari.pretrain_steps` env steps.

    With `run_dir`, writes metrics.csv and checkpoint.pt there; `resume=True` continues from it."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    check_method(method)
    check_seed(seed)
    if method == "dqn":
        raise ValueError("dqn learns from the task reward only: it has no pretraining phase")
    learner = new_learner(game, method, seed, config)
    log = _train_phase(learner, game, "pretrain", seed, config, None,
                       Path(run_dir) if run_dir is not None else None, resume)
    return learner, log


def task_data(learner: AtariLearner, game: str, seed: int,
              config: AtariTrainConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Play whole games with the pretrained policy, each game under its own w uniform on the sphere
    (epsilon_end-greedy), until `task_id_episodes` games ended or `task_id_steps` env steps passed; returns
    what task identification regresses: phi(s') (N, d) and the (clipped) task rewards r (N,) of the steps."""
    config = config or AtariTrainConfig()
    atari, n, device = config.atari, config.num_envs, learner.device
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no task vector to identify")
    envs = make_vector_env(game, n, atari, seed, training=False, backend=config.backend)
    envs.reset(seed=game_reset_seed(seed, "identify", 0))
    gen = phase_generator(seed, "identify")
    w = sample_tasks(n, atari.feature_dim, gen).to(device)
    features, rewards = [], []
    env_steps = 0
    with torch_threads(config.threads):
        while env_steps < atari.task_id_steps and len(envs.episode_returns) < atari.task_id_episodes:
            action = learner.act(torch.from_numpy(envs.obs).to(device), w, atari.epsilon_end, gen, gpi=False)
            tr = envs.step(action.cpu().numpy())
            env_steps += n
            valid = torch.from_numpy(tr.valid)
            features.append(learner.features(torch.from_numpy(tr.next_obs).to(device)).cpu()[valid])
            rewards.append(torch.from_numpy(_clip(tr.reward, atari.reward_clip))[valid])
            ended = torch.from_numpy(tr.valid & (tr.terminated | tr.truncated))
            if ended.any():  # a new game, a new w
                w[ended.to(device)] = sample_tasks(int(ended.sum()), atari.feature_dim, gen).to(device)
    envs.close()
    return torch.cat(features), torch.cat(rewards)


def identify_task(learner: AtariLearner, game: str, seed: int,
                  config: AtariTrainConfig | None = None) -> torch.Tensor:
    """The task vector of `game`'s reward: w = argmin ||Phi w - r|| (unit norm) over `task_data` (CPU)."""
    features, rewards = task_data(learner, game, seed, config)
    try:
        return infer_task(features, rewards)
    except ValueError as error:
        raise ValueError(f"{game}: no task to identify from {len(rewards)} steps ({error}); raise "
                         "--atari.task-id-steps / --atari.task-id-episodes") from error


def finetune(learner: AtariLearner, game: str, w: torch.Tensor | None, seed: int,
             config: AtariTrainConfig | None = None, *, run_dir: str | os.PathLike | None = None,
             resume: bool = False) -> PhaseLog:
    """Train psi on `game`'s clipped reward with w fixed for `atari.finetune_steps` env steps (phi and f
    frozen, pretrained weights carried over, a fresh Adam at `lr_finetune`). `w=None`: the learner's fixed
    task (apt, dqn). Same metrics, checkpoints and resume as `pretrain`."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    check_seed(seed)
    w = learner.default_task(1)[0] if w is None else w
    if tuple(w.shape) != (learner.config.feature_dim,):
        raise ValueError(f"w must have shape ({learner.config.feature_dim},), got {tuple(w.shape)}")
    if learner.phase != "finetune":
        learner.start_finetune()
    return _train_phase(learner, game, "finetune", seed, config, w.float().cpu(),
                        Path(run_dir) if run_dir is not None else None, resume)


def evaluate(learner: AtariLearner, game: str, w: torch.Tensor | None, seed: int,
             config: AtariTrainConfig | None = None, *, gpi: bool | None = None) -> EvalResult:
    """Play `atari.eval_steps` env steps of whole games (no life-loss terminals, raw scores) with
    `eval_epsilon`-greedy actions under w; score the games that finished within the budget.

    `w=None`: the learner's fixed task (apt, dqn). GPI over {w} + `gpi_policies` fresh tasks applies by
    default to task-conditioned learners that have not been fine-tuned (as in `aps_teach.train.evaluate`).
    """
    config = config or AtariTrainConfig()
    atari, n, device = config.atari, config.num_envs, learner.device
    game = check_game(game)
    check_seed(seed)
    if gpi is None:
        gpi = learner.config.gpi and learner.config.task_conditioned and learner.phase == "pretrain"
    w = (learner.default_task(1)[0] if w is None else w).to(device).float().expand(n, -1)
    envs = make_vector_env(game, n, atari, seed, training=False, backend=config.backend)
    envs.reset(seed=game_reset_seed(seed, "evaluate", 0))
    gen = phase_generator(seed, "evaluate")
    with torch_threads(config.threads):
        for _ in range(math.ceil(atari.eval_steps / n)):
            action = learner.act(torch.from_numpy(envs.obs).to(device), w, atari.eval_epsilon, gen, gpi=gpi)
            envs.step(action.cpu().numpy())
    envs.close()
    returns = list(envs.episode_returns)
    if not returns:
        raise ValueError(f"no game of {game} finished within eval_steps={atari.eval_steps} ({n} envs); raise "
                         "--atari.eval-steps or lower --atari.max-frames-per-episode")
    score = float(np.mean(returns))
    normalised = human_normalised(score, game) if game in REFERENCE_SCORES else None
    return EvalResult(game, score, normalised, len(returns), returns,
                      math.ceil(atari.eval_steps / n) * n, gpi)


def evaluate_zero_shot(learner: AtariLearner, game: str, w: torch.Tensor, seed: int,
                       config: AtariTrainConfig | None = None) -> EvalResult:
    """The paper's zero-shot score: the pretrained learner, not fine-tuned, acting on `game` under the
    identified w with GPI over {w} + `gpi_policies` fresh tasks (`evaluate(gpi=True)`); visr and aps."""
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no task vector: no zero-shot score")
    if learner.phase != "pretrain":
        raise ValueError("a zero-shot score is of a pretrained learner, this one has been fine-tuned")
    return evaluate(learner, game, w, seed, config, gpi=True)


def append_score_row(path: str | os.PathLike, *rows: dict) -> None:
    """Add `rows` to the scores CSV at `path` (rewritten atomically with the rows already there)."""
    path = Path(path)
    before = list(csv.DictReader(path.open())) if path.exists() else []
    write_csv_atomic(path, [*before, *rows])


def score_row(result: EvalResult, method: str, seed: int, phase: str, config: AtariTrainConfig,
              task_w: torch.Tensor | None) -> dict:
    """One line of scores.csv: game, method, seed, which checkpoint (pretrain: the zero-shot score), budgets,
    the n-step reward mode it was pretrained with, whether it acted by GPI, raw and normalised score."""
    atari = config.atari
    return {"game": result.game, "method": method, "seed": seed, "checkpoint": phase,
            "pretrain_steps": 0 if method == "dqn" else atari.pretrain_steps,
            "finetune_steps": atari.finetune_steps if phase == "finetune" else 0,
            "nstep_reward": atari.nstep_reward, "gpi": result.gpi,
            "games": result.episodes, "score": result.score, "human_normalised": result.human_normalised,
            "task_w": "" if task_w is None else " ".join(f"{x:.6f}" for x in task_w.tolist())}


RUN_FIELDS = ("atari", "num_envs", "backend")
"""The `AtariTrainConfig` fields a run's numbers depend on; the others (device, threads, logging, compile,
checkpoints) may differ between the sessions of a resumed run."""


def run_record(game: str, method: str, seed: int, config: AtariTrainConfig) -> dict:
    """An Atari run's config.json: game, method, seed and the whole training config."""
    return _jsonable({"game": game, "method": method, "seed": seed, "train": asdict(config)})


def start_run_dir(out: str | os.PathLike, game: str, method: str, seed: int, config: AtariTrainConfig,
                  resume: bool, force: bool = False) -> RunDir:
    """Claim a run directory for this run (`RunDir.claim`): another run there is refused (naming the
    differing fields) unless `force`; `resume` continues the same run (game, method, seed, protocol, envs;
    device, threads, logging and the like may differ); otherwise the run starts over (an earlier run's
    checkpoints, task.json and scores.csv removed). Refuses a device this machine does not have, or
    --compile without a working backend, before writing anything."""
    resolve_device(config.device)
    check_seed(seed)
    agent_config(config.atari, method).check_particles()  # k against the minibatch, once the method is known
    if config.compile:
        check_compile_backend(config.device)
    run = RunDir(out)
    run.claim(run_record(game, method, seed, config), resume=resume, force=force,
              ignore=[f"train.{f.name}" for f in fields(AtariTrainConfig) if f.name not in RUN_FIELDS])
    return run


def read_run_config(out: str | os.PathLike) -> tuple[str, str, int, AtariTrainConfig]:
    """(game, method, seed, config) of a run directory's config.json (FileNotFoundError if there is none,
    ValueError naming the file if it is corrupt)."""
    run = RunDir(out)
    saved = run.read_config(("game", "method", "seed", "train"),
                            hint=f"run `aps-teach atari pretrain --out {out}` first")
    try:
        train = dict(saved["train"])
        config = AtariTrainConfig(**{**train, "atari": atari_from_dict(train["atari"])})
        return saved["game"], saved["method"], int(saved["seed"]), config
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"corrupt run config {run.config_path}: not an Atari run config of this version "
                         f"({error})") from None


def check_run_checkpoint(path: Path, meta: dict, game: str, method: str, seed: int,
                         config: AtariTrainConfig) -> None:
    """Refuse a checkpoint (its `load_learner` metadata) that is not of the run its config.json describes,
    naming the fields that differ."""
    expected = _jsonable({"game": game, "method": method, "seed": seed, "atari": asdict(config.atari),
                          "num_envs": config.num_envs, "backend": config.backend})
    check_checkpoint(path, meta, expected)


def identify_or_load(learner: AtariLearner, game: str, seed: int, config: AtariTrainConfig,
                     out: Path | None) -> torch.Tensor | None:
    """The task w for fine-tuning: None for apt/dqn; else OUT/task.json if there, else `identify_task`
    (saved to OUT/task.json)."""
    if not learner.config.task_conditioned:
        return None
    path = out / "task.json" if out is not None else None
    if path is not None and path.exists():
        return torch.tensor(json.loads(path.read_text())["w"])
    w = identify_task(learner, game, seed, config)
    if path is not None:
        write_text_atomic(path, json.dumps({"w": w.tolist()}))
    return w


def run(game: str, method: Method, seed: int, config: AtariTrainConfig | None = None, *,
        out: str | os.PathLike | None = None, resume: bool = False,
        force: bool = False) -> tuple[AtariLearner, EvalResult]:
    """The whole pipeline: pretrain (not dqn), identify the task and score it zero-shot (visr, aps:
    `evaluate_zero_shot`), fine-tune, evaluate; returns the fine-tuned score.

    With `out` (claimed by `start_run_dir`; `force` replaces another run there): config.json, pretrain/
    and finetune/ (metrics.csv, checkpoint.pt), task.json and in scores.csv the zero-shot row (checkpoint
    pretrain; visr, aps) and the fine-tuned row, both written at the end; `resume=True` continues each
    phase from its checkpoint (a finished phase is loaded) and scores the pretrained learner again (the
    same numbers: same checkpoint, same seed)."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    check_method(method)
    check_seed(seed)
    out = Path(out) if out is not None else None
    claimed = start_run_dir(out, game, method, seed, config, resume, force) if out is not None else None

    def phase_dir(name: str) -> tuple[Path | None, bool]:
        if claimed is None:
            return None, False
        return claimed.path / name, claimed.resumes(name)

    if method == "dqn":
        learner = new_learner(game, method, seed, config)
    else:
        run_dir, again = phase_dir("pretrain")
        learner, _ = pretrain(game, method, seed, config, run_dir=run_dir, resume=again)
    w = identify_or_load(learner, game, seed, config, out)
    zero_shot = None
    if learner.config.task_conditioned:
        zero_shot = evaluate_zero_shot(learner, game, w, seed, config)
    run_dir, again = phase_dir("finetune")
    finetune(learner, game, w, seed, config, run_dir=run_dir, resume=again)
    result = evaluate(learner, game, w, seed, config)
    if out is not None:  # both rows in one write: a run's scores.csv holds both or neither
        rows = [] if zero_shot is None else [score_row(zero_shot, method, seed, "pretrain", config, w)]
        append_score_row(out / "scores.csv", *rows, score_row(result, method, seed, "finetune", config, w))
    return learner, result
