"""The pipeline: reward-free `pretrain` -> `identify_task` -> `evaluate` (zero-shot) -> `finetune`.

Environments run as a batch of `num_envs` copies in lockstep *rounds* of one episode limit T
(gridworld: 100 steps): every copy is reset at the start of a round from a seed derived from
(seed, phase, round), an episode that ends early restarts at once, and the round's last step ends
every episode (it coincides with the env's own time limit). All randomness of a round comes from
that seed, so a run resumed from a checkpoint taken between rounds repeats the uninterrupted run
bit for bit on CPU. Step budgets are rounded up to whole rounds (num_envs * T env steps).

Pretraining is reward-free by construction: its `EnvBatch` is built with `reward_free=True` and
drops the reward inside `step`, and its replay has no reward column.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from tqdm.auto import tqdm

import gridworld
from aps_teach.agents import AgentConfig, Learner
from aps_teach.files import load_checkpoint, save_checkpoint, write_csv_atomic
from aps_teach.replay import NStepReplay
from aps_teach.tasks import infer_task, sample_tasks

EnvSource = str | Callable[[], gym.Env]
"""A gridworld level name ("easy", "hard") or a zero-argument factory returning a gymnasium env."""
RoundHook = Callable[["RoundEnd"], None]
"""Called after every round of `pretrain` / `finetune` (e.g. to keep snapshots for the heatmap widgets)."""
PHASES = {"pretrain": 0, "finetune": 1, "identify": 2, "evaluate": 3}


@dataclass
class TrainConfig:
    """How the learner meets the environment: batching, exploration, task schedule, checkpoints."""

    agent: AgentConfig = field(default_factory=AgentConfig)
    """The learner (method, networks, losses)."""
    num_envs: int = 8
    """Environment copies stepped together."""
    updates_per_step: int = 1
    """Pretraining: gradient updates per step of the env batch (replay ratio = this * batch / num_envs)."""
    finetune_updates_per_step: int = 4
    """Fine-tuning: gradient updates per step of the env batch."""
    learning_starts: int = 1600
    """Env steps collected before the first update, per phase (paper: min replay size 1600)."""
    epsilon_start: float = 1.0
    """epsilon-greedy: epsilon at the first step of a phase."""
    epsilon_end: float = 0.05
    """epsilon-greedy: epsilon after the decay (also used by `identify_task`)."""
    epsilon_decay_steps: int = 2500
    """Env steps of linear epsilon decay in pretraining (paper: 2500)."""
    finetune_epsilon_start: float = 1.0
    """epsilon at the start of fine-tuning, the same for every method, the dqn baseline included (starting
    at 0.2, aps on easy, seed 0, never reached the target once while fine-tuning: success 0.0)."""
    finetune_epsilon_decay_steps: int = 12_000
    """Env steps of linear epsilon decay in fine-tuning, down to `epsilon_end`."""
    task_resample_every: int = 10
    """Pretraining: each env's w is redrawn from the unit sphere every this many steps (paper: 10)."""
    checkpoint_every: int = 10
    """Rounds between checkpoints when a run directory is given (and always after the last round)."""
    progress: bool = True
    """Show tqdm progress bars."""

    def __post_init__(self) -> None:
        for name in ("num_envs", "updates_per_step", "finetune_updates_per_step", "task_resample_every",
                     "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass
class PhaseLog:
    """Per-round metrics of a training phase and the coverage it reached."""

    metrics: list[dict] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)


@dataclass
class EvalResult:
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
    env_steps: int
    learner: Learner
    replay: NStepReplay
    envs: EnvBatch


def check_steps(name: str, steps: int) -> None:
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"{name} must be a positive integer, got {steps!r}")


class EnvBatch:
    """`num_envs` copies of an env, with coverage bookkeeping: distinct (position, keys held) states,
    keys ever picked up, whether the target was ever reached."""

    def __init__(self, source: EnvSource, num_envs: int, reward_free: bool):
        make = (lambda: gridworld.make(source)) if isinstance(source, str) else source
        self.envs = [make() for _ in range(num_envs)]
        self.reward_free = reward_free
        base = self.envs[0].unwrapped
        self.art = tuple(base.layout.art)
        self.num_reachable = len(base.reachable_states())
        spec = self.envs[0].spec
        if spec is None or spec.max_episode_steps is None:
            raise ValueError("the env needs a time limit (gymnasium.make with max_episode_steps)")
        self.horizon = spec.max_episode_steps
        self.obs_shape = base.observation_space.shape
        self.num_actions = int(base.action_space.n)
        self.visited: set = set()
        self.keys: set = set()
        self.target_reached = False
        self.successes = 0

    def _note(self, info: dict) -> None:
        if info["success"]:
            self.target_reached = True
            self.successes += 1
        else:
            self.visited.add((tuple(info["position"]), tuple(info["keys_held"])))
        self.keys.update(info["keys_held"])

    def reset(self, seeds: list[int]) -> torch.Tensor:
        observations = []
        for env, s in zip(self.envs, seeds, strict=True):
            obs, info = env.reset(seed=int(s))
            self._note(info)
            observations.append(obs)
        return torch.as_tensor(np.stack(observations))

    def step(self, actions: torch.Tensor, last: bool) -> dict[str, torch.Tensor]:
        """Step every env; an ended episode restarts (unless `last`). Keys: next_obs (s'), obs (the
        observation to act on next), terminated, ended, and reward unless the batch is reward-free."""
        next_obs, obs, terminated, ended, rewards = [], [], [], [], []
        for env, action in zip(self.envs, actions.tolist(), strict=True):
            o, r, term, trunc, info = env.step(action)
            self._note(info)
            next_obs.append(o)
            terminated.append(term)
            ended.append(term or trunc or last)
            rewards.append(r)
            if (term or trunc) and not last:
                o, info = env.reset()
                self._note(info)
            obs.append(o)
        out = {"next_obs": torch.as_tensor(np.stack(next_obs)), "obs": torch.as_tensor(np.stack(obs)),
               "terminated": torch.tensor(terminated), "ended": torch.tensor(ended)}
        if not self.reward_free:
            out["reward"] = torch.tensor(rewards, dtype=torch.float32)
        return out

    def coverage(self) -> dict:
        return {"states_visited": len(self.visited), "states_reachable": self.num_reachable,
                "state_coverage": len(self.visited) / self.num_reachable,
                "keys_picked": len(self.keys), "target_reached": self.target_reached}

    def coverage_state(self) -> dict:
        return {"visited": sorted(self.visited), "keys": sorted(self.keys), "target": self.target_reached}

    def load_coverage_state(self, state: dict) -> None:
        self.visited = {(tuple(p), tuple(k)) for p, k in state["visited"]}
        self.keys, self.target_reached = set(state["keys"]), bool(state["target"])


def round_seeds(seed: int, phase: str, index: int, n: int) -> tuple[list[int], torch.Generator]:
    """Reset seeds for n envs and a torch generator, all derived from (seed, phase, round index)."""
    words = np.random.SeedSequence([seed, PHASES[phase], index]).generate_state(n + 2, dtype=np.uint32)
    generator = torch.Generator().manual_seed(int(words[0]) << 32 | int(words[1]))
    return [int(x) for x in words[2:]], generator


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """torch on one thread inside a run: small networks are faster without intra-op threading."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _linear(start: float, end: float, duration: int, step: int) -> float:
    return end + (start - end) * max(0.0, 1.0 - step / duration)


def _write_metrics(path: Path, rows: list[dict]) -> None:
    columns = sorted({key for row in rows for key in row}, key=lambda c: (c not in ("round", "env_steps"), c))
    write_csv_atomic(path, rows, columns)


def _train_phase(learner: Learner, envs: EnvBatch, steps: int, seed: int, config: TrainConfig,
                 phase: str, fixed_w: torch.Tensor | None, run_dir: Path | None, resume: bool,
                 on_round: RoundHook | None = None) -> PhaseLog:
    """The round loop shared by pretraining (intrinsic reward, w resampled) and fine-tuning (task
    reward, w fixed): act, store, update once per step of the batch, log, checkpoint."""
    cfg, agent_cfg = config, learner.config
    n, horizon = cfg.num_envs, envs.horizon
    rounds = math.ceil(steps / (n * horizon))
    # phi is frozen while fine-tuning: store phi(s') once per transition instead of in every minibatch
    store_phi = phase == "finetune" and learner.phi is not None
    replay = NStepReplay(rounds * horizon, n, envs.obs_shape, agent_cfg.feature_dim,
                         store_rewards=not envs.reward_free, store_features=store_phi)
    log, first_round = PhaseLog(), 0
    ckpt = run_dir / "checkpoint.pt" if run_dir is not None else None
    identity = {"phase": phase, "method": agent_cfg.method, "art": list(envs.art), "seed": seed,
                "steps": steps, "config": asdict(cfg), "obs_shape": list(envs.obs_shape),
                "num_actions": envs.num_actions,
                "task_w": None if fixed_w is None else fixed_w[0].tolist()}
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        if ckpt is None or not ckpt.exists():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt}")
        state = load_checkpoint(ckpt)
        for key, value in identity.items():
            if state.get(key) != value:
                raise ValueError(f"checkpoint {ckpt} has {key}={state.get(key)!r}, this run has {value!r}")
        learner.load_state_dict(state["learner"])
        replay.load_state_dict(state["replay"])
        envs.load_coverage_state(state["coverage"])
        log.metrics, first_round = state["metrics"], int(state["round"])
    updates_per_step = cfg.updates_per_step if phase == "pretrain" else cfg.finetune_updates_per_step
    bar = tqdm(total=rounds * n * horizon, initial=first_round * n * horizon, disable=not cfg.progress,
               desc=f"{phase} {agent_cfg.method}", unit="step", unit_scale=True)
    start = time.perf_counter()
    for index in range(first_round, rounds):
        seeds, gen = round_seeds(seed, phase, index, n)
        obs = envs.reset(seeds)
        w = fixed_w.expand(n, -1) if fixed_w is not None else None
        sums: dict[str, float] = {}
        updates, envs.successes = 0, 0
        for t in range(horizon):
            env_steps = (index * horizon + t) * n
            if fixed_w is None and t % cfg.task_resample_every == 0:
                w = sample_tasks(n, agent_cfg.feature_dim, gen) if agent_cfg.task_conditioned \
                    else learner.default_task(n)
            if phase == "pretrain":
                eps = _linear(cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps, env_steps)
            else:
                eps = _linear(cfg.finetune_epsilon_start, cfg.epsilon_end, cfg.finetune_epsilon_decay_steps,
                              env_steps)
            action = learner.act(obs, w, eps, gen, gpi=False)
            out = envs.step(action, last=t == horizon - 1)
            row = {"obs": obs, "action": action, "w": w, "next_obs": out["next_obs"],
                   "terminated": out["terminated"], "ended": out["ended"]}
            if "reward" in out:
                row["reward"] = out["reward"]
            if store_phi:
                row["next_phi"] = learner.features(out["next_obs"])
            replay.add(**row)
            obs = out["obs"]
            if env_steps + n > cfg.learning_starts:
                for _ in range(updates_per_step):
                    stats = learner.update(replay.sample(agent_cfg.batch_size, agent_cfg.n_step, gen))
                    for key, value in stats.items():
                        sums[key] = sums.get(key, 0.0) + value
                    updates += 1
            bar.update(n)
        done = (index + 1) * n * horizon
        log.metrics.append({"round": index + 1, "env_steps": done, "epsilon": eps, "updates": learner.updates,
                            "episodes_succeeded": envs.successes,
                            **{k: v / max(updates, 1) for k, v in sums.items()}, **envs.coverage()})
        rate = (done - first_round * n * horizon) / (time.perf_counter() - start)
        bar.set_postfix(states=envs.coverage()["states_visited"], steps_per_s=f"{rate:.0f}")
        last = index == rounds - 1
        if run_dir is not None:
            _write_metrics(run_dir / "metrics.csv", log.metrics)
            if last or (index + 1) % cfg.checkpoint_every == 0:
                save_checkpoint(ckpt, {**identity, "round": index + 1, "learner": learner.state_dict(),
                                        "replay": replay.state_dict(), "coverage": envs.coverage_state(),
                                        "metrics": log.metrics})
        if on_round is not None:
            on_round(RoundEnd(phase, index + 1, done, learner, replay, envs))
    bar.close()
    log.coverage = envs.coverage()
    return log


def load_learner(checkpoint: str | Path) -> tuple[Learner, dict]:
    """The learner saved in a `checkpoint.pt` of `pretrain` or `finetune`, and the checkpoint's metadata
    (phase, method, art, seed, steps, config, task_w, round)."""
    path = Path(checkpoint)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = load_checkpoint(path)
    try:
        agent = AgentConfig(**state["config"]["agent"])
        learner = Learner(agent, tuple(state["obs_shape"]), int(state["num_actions"]), int(state["seed"]))
        learner.load_state_dict(state["learner"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"corrupt checkpoint file {path}: {error!r}") from error
    return learner, {k: v for k, v in state.items() if k not in ("learner", "replay", "coverage", "metrics")}


def _with_method(config: TrainConfig | None, method: str) -> TrainConfig:
    config = config or TrainConfig()
    return replace(config, agent=replace(config.agent, method=method))


def new_learner(method: str, env: EnvSource, seed: int, config: TrainConfig | None = None) -> Learner:
    """An untrained learner for `method`, sized for `env`."""
    config = _with_method(config, method)
    probe = EnvBatch(env, 1, reward_free=True)
    return Learner(config.agent, probe.obs_shape, probe.num_actions, seed)


def pretrain(method: str, env: EnvSource, steps: int, seed: int, config: TrainConfig | None = None, *,
             run_dir: str | Path | None = None, resume: bool = False,
             on_round: RoundHook | None = None) -> tuple[Learner, PhaseLog]:
    """Reward-free pretraining of `method` (visr, apt, aps) for `steps` env steps (whole rounds).

    Logs per round: losses, the mean of each intrinsic-reward term, epsilon and coverage; with
    `run_dir`, writes metrics.csv and checkpoint.pt there, and `resume=True` continues from it.
    `on_round` is called with a `RoundEnd` after every round.
    """
    config = _with_method(config, method)
    if method == "dqn":
        raise ValueError("dqn learns from the task reward only: it has no pretraining phase")
    check_steps("pretrain steps", steps)
    envs = EnvBatch(env, config.num_envs, reward_free=True)
    learner = Learner(config.agent, envs.obs_shape, envs.num_actions, seed)
    with single_thread():
        log = _train_phase(learner, envs, steps, seed, config, "pretrain", None,
                           Path(run_dir) if run_dir is not None else None, resume, on_round)
    return learner, log


def task_data(learner: Learner, env: EnvSource, steps: int, seed: int,
              config: TrainConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Roll out the pretrained policy with random w (epsilon_end-greedy) for `steps` env steps and return
    what task identification regresses: rows phi(s') (N, d) and task rewards r (N,)."""
    config = config or TrainConfig(agent=learner.config)
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no task vector to identify")
    check_steps("identify steps", steps)
    envs = EnvBatch(env, config.num_envs, reward_free=False)
    features, rewards = [], []
    with single_thread():
        for index in range(math.ceil(steps / (config.num_envs * envs.horizon))):
            seeds, gen = round_seeds(seed, "identify", index, config.num_envs)
            obs = envs.reset(seeds)
            for t in range(envs.horizon):
                if t % config.task_resample_every == 0:
                    w = sample_tasks(config.num_envs, learner.config.feature_dim, gen)
                action = learner.act(obs, w, config.epsilon_end, gen, gpi=False)
                out = envs.step(action, last=t == envs.horizon - 1)
                features.append(learner.features(out["next_obs"]))
                rewards.append(out["reward"])
                obs = out["obs"]
    return torch.cat(features), torch.cat(rewards)


def identify_task(learner: Learner, env: EnvSource, steps: int, seed: int,
                  config: TrainConfig | None = None) -> torch.Tensor:
    """The task vector behind the env's reward: `infer_task` (w = argmin ||Phi w - r||, unit norm) of
    `task_data`."""
    return infer_task(*task_data(learner, env, steps, seed, config))


def evaluate(learner: Learner, env: EnvSource, w: torch.Tensor | None, episodes: int, seed: int,
             config: TrainConfig | None = None, *, gpi: bool | None = None) -> EvalResult:
    """Greedy episodes on the task: success rate and mean return.

    `w=None` means the learner's fixed task (apt, dqn). GPI (over {w} + fresh tasks) applies by default
    to task-conditioned learners that have not been fine-tuned: fine-tuning trains psi(., ., w) alone
    on the task reward, so other candidates' values are no longer on the same scale.
    """
    config = config or TrainConfig(agent=learner.config)
    check_steps("episodes", episodes)
    if gpi is None:
        gpi = learner.config.gpi and learner.config.task_conditioned and learner.phase == "pretrain"
    envs = EnvBatch(env, config.num_envs, reward_free=False)
    n = config.num_envs
    w = learner.default_task(1)[0] if w is None else w
    successes, returns = [], []
    with single_thread():
        for index in range(math.ceil(episodes / n)):
            seeds, gen = round_seeds(seed, "evaluate", index, n)
            obs = envs.reset(seeds)
            alive = [True] * n
            ret, success = [0.0] * n, [False] * n
            for _ in range(envs.horizon):
                actions = learner.act(obs, w.expand(n, -1), 0.0, gen, gpi=gpi).tolist()
                frames = list(obs)
                for i, env in enumerate(envs.envs):
                    if alive[i]:
                        o, r, term, trunc, info = env.step(actions[i])
                        ret[i] += r
                        success[i] = success[i] or info["success"]
                        alive[i] = not (term or trunc)
                        frames[i] = torch.as_tensor(o)
                obs = torch.stack(frames)
                if not any(alive):
                    break
            successes += success
            returns += ret
    successes, returns = successes[:episodes], returns[:episodes]
    return EvalResult(float(np.mean(successes)), float(np.mean(returns)), episodes)


def finetune(learner: Learner, env: EnvSource, w: torch.Tensor | None, steps: int, seed: int,
             config: TrainConfig | None = None, *, run_dir: str | Path | None = None,
             resume: bool = False, on_round: RoundHook | None = None) -> PhaseLog:
    """Continue training psi on the task reward with w fixed (phi, f frozen; pretrained weights carried
    over). `w=None` uses the learner's fixed task (apt, dqn). Same logging, checkpoints and `on_round`
    hook as `pretrain`."""
    config = config or TrainConfig(agent=learner.config)
    check_steps("finetune steps", steps)
    w = learner.default_task(1)[0] if w is None else w
    if w.shape != (learner.config.feature_dim,):
        raise ValueError(f"w must have shape ({learner.config.feature_dim},), got {tuple(w.shape)}")
    if learner.phase != "finetune":
        learner.start_finetune()
    envs = EnvBatch(env, config.num_envs, reward_free=False)
    with single_thread():
        return _train_phase(learner, envs, steps, seed, config, "finetune", w[None].float(),
                            Path(run_dir) if run_dir is not None else None, resume, on_round)
