"""The Atari phases: reward-free `pretrain` -> `identify_task` -> `evaluate_zero_shot` -> `finetune` ->
`evaluate` (the whole run and its directory: `aps_teach.atari.experiments`).

The learner, its updates and task inference are the gridworld's (`AtariLearner`, `aps_teach.learner.tasks`);
what pixels add is here. Each step of the `num_envs` games (one ale-py vector env): act epsilon-greedily
on psi(s, a, w)^T w under each game's w, store the step in the frame replay, and once it holds
`min_replay_size` transitions do one update per `update_period` env steps on a sampled batch whose
every observation is augmented (random shift, then intensity; `augment_batch`).

Steps count env steps: one step of the vector env is `num_envs` steps, the one autoreset step after
each game included. Pretraining draws a fresh w on the unit sphere for every game every
`task_resample_every` vector steps; its replay has no reward column. Fine-tuning acts under the
identified w with task rewards clipped to +-`reward_clip`; epsilon decays linearly from
`epsilon_start` to `epsilon_end` over `epsilon_decay_steps` in each phase. Each phase has its own update
period (`AtariConfig.update_period`). A learner with no task to identify (apt, dqn) fine-tunes for all the
reward steps a task-conditioned one gets, task identification's and fine-tuning's (`reward_steps`).

The frozen phi is computed once per transition: while fine-tuning visr or aps, phi(s) of every stored
observation goes into the replay with it (`FrameReplay(store_phi=True)`), and an update reads phi(s'_i) of
its windows from there (`Batch.next_phi`) instead of encoding B x n augmented stacks. So the cumulants'
phi(s'_i) see the frames as they are, unaugmented, as task identification's phi(s') do (the regression that
gave w); psi's inputs, s_t and s'_m, are still augmented.

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
import math
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import RUN_FIELDS, AtariConfig, AtariTrainConfig, atari_from_dict
from aps_teach.atari.envs import check_game, make_vector_env
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.metrics import PhaseMetrics
from aps_teach.atari.networks import dead_units
from aps_teach.atari.scores import REFERENCE_SCORES, human_normalised
from aps_teach.atari.update_step import UpdateStep, apply_augmentation, augmentation_draws
from aps_teach.infra.checks import check_seed
from aps_teach.infra.devices import resolve_device, to_device
from aps_teach.infra.files import jsonable, load_checkpoint, save_checkpoint
from aps_teach.infra.memory import check_fits
from aps_teach.infra.phases import PhaseLog, check_checkpoint, linear_schedule, restore_metrics, torch_threads
from aps_teach.infra.seeds import game_reset_seed, phase_generator
from aps_teach.learner.batch import Batch
from aps_teach.learner.config import TASK_CONDITIONED, Method, check_method, pretrains
from aps_teach.learner.tasks import infer_task, sample_tasks


@dataclass
class ScoreResult:
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
    """Whether the actions were GPI's: max over {w} + `gpi_samples` fresh tasks, each scored under w."""


def augment_batch(batch: Batch, atari: AtariConfig, generator: torch.Generator,
                  windows: bool = True) -> Batch:
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
    while pretraining ('sum'). The first alone: the InfoNCE pair (s, s'_1) of apt (and aps without a shared
    encoder) while pretraining with 'last'. Neither while fine-tuning: phi(s'_i) is read from the replay
    (`stores_phi`)."""
    if phase == "pretrain":
        every = learner.config.nstep_reward == "sum"
        return every, every or learner.rep is not None
    return False, False


def stores_phi(method: str, phase: str) -> bool:
    """Whether `phase`'s replay stores phi(s) per transition: fine-tuning a learner with task features
    (visr, aps), whose phi is frozen then."""
    return phase != "pretrain" and method in TASK_CONDITIONED


def reward_steps(atari: AtariConfig) -> int:
    """The reward steps a run gets: task identification's budget plus fine-tuning's."""
    return atari.task_id_steps + atari.finetune_steps


def phase_steps(atari: AtariConfig, phase: str, method: str) -> int:
    """Env steps of `phase` for `method`: `pretrain_steps`; fine-tuning `finetune_steps` after task
    identification (visr, aps), and for a learner with no task to identify (apt, dqn) all the
    `reward_steps`, so that every method gets the same reward steps."""
    if phase == "pretrain":
        return atari.pretrain_steps
    return atari.finetune_steps if method in TASK_CONDITIONED else reward_steps(atari)


def new_learner(method: Method, game: str, seed: int, config: AtariTrainConfig) -> AtariLearner:
    """An untrained learner for `method` sized for `game`'s minimal action set, on `config.device`."""
    check_method(method)
    return AtariLearner(config.atari, method, action_count(game, config), seed, resolve_device(config.device))


def action_count(game: str, config: AtariTrainConfig) -> int:
    """The size of `game`'s minimal action set (read off a one-game vector env)."""
    probe = make_vector_env(game, 1, config.atari, 0, training=False, backend=config.backend,
                            threads=config.threads)
    probe.close()
    return probe.num_actions


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


def _replay_rows(atari: AtariConfig, n: int, phase: str, method: str) -> int:
    """Rows (of `n` transitions) of a phase's frame replay: `replay_capacity` transitions, or every step of
    the phase, plus the frames a stack reaches back."""
    return math.ceil((atari.replay_capacity or phase_steps(atari, phase, method)) / n) + atari.frame_stack + 1


def replay_bytes(atari: AtariConfig, n: int, phase: str, method: str) -> int:
    """Bytes of `phase`'s frame replay for `method` (`FrameReplay.bytes_per_transition` per cell)."""
    per_cell = FrameReplay.bytes_per_transition((atari.frame_size,) * 2, atari.feature_dim,
                                                store_rewards=phase != "pretrain",
                                                store_phi=stores_phi(method, phase))
    return _replay_rows(atari, n, phase, method) * n * per_cell


def check_replay_memory(atari: AtariConfig, n: int, phase: str, method: str, device: torch.device | str,
                        runs: int = 1) -> None:
    """ValueError, before anything is allocated or written, if `phase`'s frame replay (of each of `runs`
    runs at once) would not fit in the free memory of `device`."""
    transitions = (_replay_rows(atari, n, phase, method) * n) * runs
    what = f"{phase}: the replay of {transitions // runs:,} transitions"
    if runs > 1:
        what = f"{runs} runs at once, {phase}: {runs} replays of {transitions // runs:,} transitions"
    check_fits(replay_bytes(atari, n, phase, method) * runs, what,
               "set a smaller --atari.replay-capacity" + (" or fewer runs at once" if runs > 1 else ""),
               device)


def _new_replay(atari: AtariConfig, n: int, phase: str, method: str, device: torch.device) -> FrameReplay:
    """A frame replay for a phase (`_replay_rows`), checked against free memory first."""
    check_replay_memory(atari, n, phase, method, device)
    return FrameReplay(_replay_rows(atari, n, phase, method), n, (atari.frame_size, atari.frame_size),
                       atari.frame_stack, atari.feature_dim, phase != "pretrain", device,
                       store_phi=stores_phi(method, phase))


def run_identity(method: str, game: str, seed: int, config: AtariTrainConfig) -> dict:
    """What every checkpoint of a run shares with it: game, method, seed and the `RUN_FIELDS` of its
    config."""
    train = asdict(config)
    shared = {name: train[name] for name in RUN_FIELDS}
    return jsonable({"game": game, "method": method, "seed": seed, **shared})


def _identity(phase: str, method: str, game: str, seed: int, config: AtariTrainConfig, num_actions: int,
              task_w: torch.Tensor | None) -> dict:
    """What a phase checkpoint must share with the phase that resumes it: `run_identity`, the phase, the
    action count and the task w."""
    return {"phase": phase, **run_identity(method, game, seed, config), "num_actions": num_actions,
            "task_w": None if task_w is None else [float(x) for x in task_w.tolist()]}


def _restore(ckpt: Path | None, identity: dict, learner: AtariLearner, gen: torch.Generator) -> dict:
    """Load a phase checkpoint into `learner` and `gen` after checking it belongs to this run; returns its
    counters, metrics rows, current w and replay state."""
    if ckpt is None or not ckpt.exists():
        raise FileNotFoundError(f"resume: no checkpoint at {ckpt}")
    state = load_checkpoint(ckpt, map_location=learner.device)
    saved = dict(state)
    if isinstance(saved.get("atari"), dict):  # read as this version does: fields added since take defaults
        saved["atari"] = jsonable(asdict(atari_from_dict(saved["atari"])))
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
    method = learner.config.method
    steps, period = phase_steps(atari, phase, method), atari.update_period(phase)
    reward_free = phase == "pretrain"
    gen = phase_generator(seed, phase)
    identity = _identity(phase, method, game, seed, config, learner.num_actions, task_w)
    ckpt = run_dir / "checkpoint.pt" if run_dir is not None else None
    at = {"env_steps": 0, "updates": 0, "credit": 0, "rows": [], "replay": None,
          "w": None if task_w is None else task_w.to(device).expand(n, -1)}
    if resume:
        at = _restore(ckpt, identity, learner, gen)
        restore_metrics(run_dir / "metrics.csv", at["rows"], PhaseMetrics.columns(at["rows"]), phase)
    env_steps, updates, credit, w = at["env_steps"], at["updates"], at["credit"], at["w"]
    if env_steps >= steps:  # a finished phase: nothing to do
        return PhaseLog(at["rows"])
    replay = _new_replay(atari, n, phase, method, device)
    if at["replay"] is not None:
        replay.load_state_dict(at["replay"])
    envs = make_vector_env(game, n, atari, seed, training=True, backend=config.backend,
                           threads=config.threads)
    if envs.num_actions != learner.num_actions:
        envs.close()
        raise ValueError(f"{game} has {envs.num_actions} actions, the learner {learner.num_actions}")
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    metrics = PhaseMetrics(run_dir, config, at["rows"])
    bar = tqdm(total=steps, initial=env_steps, disable=not config.progress, unit="step", unit_scale=True,
               desc=f"{phase} {method} {game}")
    envs.reset(seed=game_reset_seed(seed, phase, env_steps))
    returns_seen, batch, warned = 0, None, False
    every_state, windows = window_use(learner, phase)
    phi = learner.features if stores_phi(method, phase) else None
    update = UpdateStep(learner, atari, windows, config.compile_mode if config.compile else None)
    metrics.rates(env_steps, updates)
    with (torch_threads(config.threads), contextlib.closing(envs), contextlib.closing(bar),
          contextlib.closing(metrics)):
        while env_steps < steps:
            if task_w is None and (w is None or (env_steps // n) % atari.task_resample_every == 0):
                w = (sample_tasks(n, atari.feature_dim, gen) if learner.config.task_conditioned
                     else learner.default_task(n)).to(device)
            eps = linear_schedule(atari.epsilon_start, atari.epsilon_end, atari.epsilon_decay_steps,
                                  env_steps)
            obs = to_device(torch.from_numpy(envs.obs), device)
            action = learner.act(obs, w, eps, gen, gpi=False)
            tr = envs.step(action.cpu().numpy())  # the loop's one sync: the games need the actions
            reward = None if reward_free else _clip(tr.reward, atari.reward_clip)
            replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid, reward=reward,
                       phi=None if phi is None else phi(obs))
            env_steps += n
            if (replay.count - atari.frame_stack + 1) * n >= max(atari.min_replay_size, 2 * n):
                credit += n
                while credit >= period:
                    batch = replay.sample(atari.batch_size, atari.n_step, gen, every_state)
                    metrics.add(update(batch, gen))
                    credit -= period
                    updates += 1
            bar.update(n)
            done = env_steps >= steps
            if done or env_steps // config.log_every != (env_steps - n) // config.log_every:
                rates = metrics.rates(env_steps, updates)
                health = None if batch is None else {"dead_units": dead_units(learner.psi, batch.obs)}
                metrics.row(env_steps, updates, eps, envs.episode_returns[returns_seen:], rates, health)
                if health is not None and health["dead_units"] == 1.0 and not warned:
                    warned = True
                    warnings.warn(f"{phase} {method} {game}, env step {env_steps:,}: every unit of psi's "
                                  "torso is 0 on the last minibatch, so Q no longer depends on the state (a "
                                  "collapsed network: lower the learning rate)", RuntimeWarning, stacklevel=2)
                returns_seen = len(envs.episode_returns)
                bar.set_postfix(env_steps_per_s=f"{rates[0]:.0f}", updates_per_s=f"{rates[1]:.1f}")
            if ckpt is not None and (done or env_steps // config.checkpoint_every
                                     != (env_steps - n) // config.checkpoint_every):
                save_checkpoint(ckpt, {**identity, "env_steps": env_steps, "total_env_steps": steps,
                                       "updates": updates, "credit": credit, "generator": gen.get_state(),
                                       "w": w.cpu(),
                                       "metrics": metrics.rows, "learner": learner.state_dict(),
                                       "replay": replay.state_dict() if config.save_replay else None})
    return PhaseLog(metrics.rows)


def _clip(reward: np.ndarray, bound: float | None) -> np.ndarray:
    """Task rewards clipped to [-bound, bound] (fine-tuning, task identification); raw if bound is None."""
    return reward if bound is None else np.clip(reward, -bound, bound)


def pretrain(method: Method, game: str, seed: int, config: AtariTrainConfig | None = None, *,
             run_dir: str | os.PathLike | None = None, resume: bool = False) -> tuple[AtariLearner, PhaseLog]:
    """Reward-free pretraining of `method` (visr, apt, aps) on `game` for `atari.pretrain_steps` env steps.

    With `run_dir`, writes metrics.csv and checkpoint.pt there; `resume=True` continues from it."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    check_method(method)
    seed = check_seed(seed)
    if not pretrains(method):
        raise ValueError("dqn learns from the task reward only: it has no pretraining phase")
    learner = new_learner(method, game, seed, config)
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
    envs = make_vector_env(game, n, atari, seed, training=False, backend=config.backend,
                           threads=config.threads)
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


class Identified(NamedTuple):
    """What task identification found: the task vector w, the reward steps it took (the transitions
    regressed) and how many of them had a nonzero reward (0: nothing to regress, w drawn at random)."""

    w: torch.Tensor
    steps: int | None
    rewarded: int | None
    """None where a run's task.json predates the record."""


def identify_task(learner: AtariLearner, game: str, seed: int,
                  config: AtariTrainConfig | None = None) -> Identified:
    """The task vector of `game`'s reward, w = argmin ||Phi w - r|| (unit norm) over `task_data` (CPU). If no
    step of the rollouts was rewarded (e.g. Freeway, where a policy that never crosses scores nothing), no w
    is fitted: w is drawn uniformly on the sphere from the run's identification stream, with a warning, and
    `rewarded` is 0 (the agent knows nothing of the task; its scores say so)."""
    config = config or AtariTrainConfig()
    features, rewards = task_data(learner, game, seed, config)
    rewarded = int((rewards != 0).sum())
    if rewarded == 0:
        warnings.warn(f"{game}: no reward in the {len(rewards):,} steps of task identification; w drawn at "
                      "random on the sphere", RuntimeWarning, stacklevel=2)
        w = sample_tasks(1, config.atari.feature_dim, phase_generator(seed, "identify"))[0]
        return Identified(w, len(rewards), 0)
    try:
        return Identified(infer_task(features, rewards), len(rewards), rewarded)
    except ValueError as error:
        raise ValueError(f"{game}: no task to identify from {len(rewards)} steps ({error})") from error


def finetune(learner: AtariLearner, game: str, w: torch.Tensor | None, seed: int,
             config: AtariTrainConfig | None = None, *, run_dir: str | os.PathLike | None = None,
             resume: bool = False) -> PhaseLog:
    """Train psi on `game`'s clipped reward with w fixed for `phase_steps` env steps (`finetune_steps`; a
    learner with no task to identify all the `reward_steps`), phi and f frozen, pretrained weights carried
    over, a fresh Adam at `finetune_lr`. `w=None`: the learner's fixed task (apt, dqn). Same metrics,
    checkpoints and resume as `pretrain`."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    seed = check_seed(seed)
    w = learner.default_task(1)[0] if w is None else w
    if tuple(w.shape) != (learner.config.feature_dim,):
        raise ValueError(f"w must have shape ({learner.config.feature_dim},), got {tuple(w.shape)}")
    if learner.phase != "finetune":
        learner.start_finetune()
    return _train_phase(learner, game, "finetune", seed, config, w.float().cpu(),
                        Path(run_dir) if run_dir is not None else None, resume)


def evaluate(learner: AtariLearner, game: str, w: torch.Tensor | None, seed: int,
             config: AtariTrainConfig | None = None, *, gpi: bool | None = None) -> ScoreResult:
    """Play `atari.eval_steps` env steps of whole games (no life-loss terminals, raw scores) with
    `eval_epsilon`-greedy actions under w; score the games that finished within the budget.

    `w=None`: the learner's fixed task (apt, dqn). GPI over {w} + `gpi_samples` fresh tasks applies by
    default to task-conditioned learners that have not been fine-tuned (as in
    `aps_teach.grid.train.evaluate`).
    """
    config = config or AtariTrainConfig()
    atari, n, device = config.atari, config.num_envs, learner.device
    game = check_game(game)
    seed = check_seed(seed)
    if gpi is None:
        gpi = learner.config.gpi and learner.config.task_conditioned and learner.phase == "pretrain"
    w = (learner.default_task(1)[0] if w is None else w).to(device).float().expand(n, -1)

    def act(obs: np.ndarray, gen: torch.Generator) -> np.ndarray:
        action = learner.act(torch.from_numpy(obs).to(device), w, atari.eval_epsilon, gen, gpi=gpi)
        return action.cpu().numpy()

    return _play(act, game, seed, config, gpi)


def evaluate_random(game: str, seed: int, config: AtariTrainConfig | None = None) -> ScoreResult:
    """The random arm: `evaluate`'s games (same seeds, budget and scoring) played with uniformly random
    actions, so that "above random" is measured under this protocol rather than quoted."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    seed = check_seed(seed)

    num_actions = action_count(game, config)

    def act(obs: np.ndarray, gen: torch.Generator) -> np.ndarray:
        return torch.randint(num_actions, (len(obs),), generator=gen).numpy()

    return _play(act, game, seed, config, gpi=False)


def _play(act, game: str, seed: int, config: AtariTrainConfig, gpi: bool) -> ScoreResult:
    """`evaluate`'s games: `atari.eval_steps` env steps (rounded up to whole vector steps) of `num_envs`
    whole games (no life-loss terminals, raw scores), actions `act(obs, generator)`; the games that finished
    within the budget scored."""
    atari, n = config.atari, config.num_envs
    envs = make_vector_env(game, n, atari, seed, training=False, backend=config.backend,
                           threads=config.threads)
    envs.reset(seed=game_reset_seed(seed, "evaluate", 0))
    gen = phase_generator(seed, "evaluate")
    with torch_threads(config.threads), contextlib.closing(envs):
        for _ in range(math.ceil(atari.eval_steps / n)):
            envs.step(act(envs.obs, gen))
    returns = list(envs.episode_returns)
    if not returns:
        raise ValueError(f"no game of {game} finished within eval_steps={atari.eval_steps} ({n} envs); raise "
                         "--atari.eval-steps or lower --atari.max-frames-per-episode")
    score = float(np.mean(returns))
    normalised = human_normalised(score, game) if game in REFERENCE_SCORES else None
    return ScoreResult(game, score, normalised, len(returns), returns,
                      math.ceil(atari.eval_steps / n) * n, gpi)


def evaluate_zero_shot(learner: AtariLearner, game: str, w: torch.Tensor, seed: int,
                       config: AtariTrainConfig | None = None) -> ScoreResult:
    """The paper's zero-shot score: the pretrained learner, not fine-tuned, acting on `game` under the
    identified w with GPI over {w} + `gpi_samples` fresh tasks (`evaluate(gpi=True)`); visr and aps."""
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no task vector: no zero-shot score")
    if learner.phase != "pretrain":
        raise ValueError("a zero-shot score is of a pretrained learner, this one has been fine-tuned")
    return evaluate(learner, game, w, seed, config, gpi=True)
