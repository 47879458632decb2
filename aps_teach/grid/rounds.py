"""The round loop of a gridworld phase, shared by pretraining and fine-tuning: `phase_rounds` is a generator
that acts, stores and logs round by round and, where updates are due, yields one minibatch per update and is
sent back their statistics; `drive` runs the phases of a seed group together, making their updates (one
batched update per step for a group of several seeds, `learner.group.LearnerGroup`). `aps_teach.grid.train`
builds the phases (`pretrain_seeds`, `finetune_seeds`) and drives them.

A round: every env of the batch is reset from a seed derived from (seed, phase, round), episodes that end
early restart at once, and the round's last step ends every episode; all of its randomness comes from that
seed, so a run resumed from a checkpoint taken between rounds repeats the uninterrupted run bit for bit on the
CPU.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

import gridworld
from aps_teach.grid.config import RUN_SETTINGS, TrainConfig
from aps_teach.grid.envs import EnvBatch
from aps_teach.grid.memory import check_phase_memory
from aps_teach.grid.replay import NStepReplay
from aps_teach.infra.files import load_checkpoint, save_checkpoint, write_csv_atomic
from aps_teach.infra.phases import PhaseLog, check_checkpoint, linear_schedule, restore_metrics
from aps_teach.infra.run_dir import PHASE_NAMES, say
from aps_teach.infra.seeds import round_seeds
from aps_teach.learner.agent import Learner
from aps_teach.learner.batch import Batch, batch_to
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.group import LearnerGroup
from aps_teach.learner.tasks import sample_tasks
from aps_teach.learner.update import gradient_step

RoundHook = Callable[["RoundEnd"], None]
"""Called after every round of `pretrain` / `finetune` (e.g. to keep snapshots for the heatmap widgets)."""
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


def _metrics_columns(rows: list[dict]) -> list[str]:
    """metrics.csv's columns: round and env_steps, then the others in alphabetical order."""
    return sorted({key for row in rows for key in row}, key=lambda c: (c not in ("round", "env_steps"), c))


def _write_metrics(path: Path, rows: list[dict]) -> None:
    write_csv_atomic(path, rows, _metrics_columns(rows))


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
UpdateRequest = tuple[int, list[Batch]]
"""What a phase hands its driver when updates are due: its env steps so far and one minibatch per update."""


def drive(learners: list[Learner], phases: list[Generator[UpdateRequest, list[dict], PhaseLog]],
           group: LearnerGroup | None = None, step: UpdateStep = gradient_step) -> list[PhaseLog]:
    """Run phases (`phase_rounds`) to their end, making the updates each asks for with `step`: with a
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


def phase_rounds(learner: Learner, envs: EnvBatch, steps: int, seed: int, config: TrainConfig,
                  phase: str, fixed_w: torch.Tensor | None, run_dir: Path | None, resume: bool,
                  on_round: RoundHook | None = None, reward_scale: float = 1.0, explore_weight: float = 0.0,
                  time_share: int = 1) -> Generator[UpdateRequest, list[dict], PhaseLog]:
    """The round loop shared by pretraining (intrinsic reward, w resampled) and fine-tuning (task
    reward times `reward_scale`, clipped to `config.reward_clip`, plus `explore_weight` times the
    exploration reward decaying to 0 over the phase; w fixed): act, store, update `updates_per_step` times
    per step of the batch, log, checkpoint. A generator: where updates are due it yields its env steps and
    one replay minibatch per update and is sent back each update's statistics (`drive` makes them).
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
    if phase == "pretrain" and (agent_cfg.adapt_psi or agent_cfg.fb):  # what psi's adaptation, F, B train on
        log.replay = replay
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


