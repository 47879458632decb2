"""The pipeline: reward-free `pretrain` -> `identify_task` -> (`adapt_to_task`, an option) -> `evaluate`
(zero-shot) -> `finetune`.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from aps_teach.grid.config import TrainConfig, check_config, with_method
from aps_teach.grid.envs import EnvBatch, EnvSource, make_env_batch
from aps_teach.grid.memory import check_acting_memory, check_identify_memory
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.rounds import RoundHook, UpdateStep, drive, phase_rounds
from aps_teach.infra.checks import (
    MAX_MAGNITUDE,
    check_finite,
    check_int,
    check_range,
    check_seed,
    check_steps,
    check_task_vector,
    check_type,
)
from aps_teach.infra.devices import resolve_device
from aps_teach.infra.files import load_checkpoint
from aps_teach.infra.phases import (
    PhaseLog,
    single_thread,
)
from aps_teach.infra.seeds import adapt_generator, fb_generator, round_seeds
from aps_teach.learner.adapt import adapt_psi
from aps_teach.learner.agent import Learner
from aps_teach.learner.batch import Batch, batch_to
from aps_teach.learner.config import AgentConfig, pretrains
from aps_teach.learner.fb import FBLearner, train_fb
from aps_teach.learner.group import LearnerGroup
from aps_teach.learner.inputs import InputColumns
from aps_teach.learner.rewards import Objective
from aps_teach.learner.tasks import infer_task, sample_tasks
from aps_teach.learner.update import gradient_step

LEARNER_INTERFACE = ("config", "act", "set_observation_table")
"""The attributes of an object that stands in for a `Learner` in the phases (`check_learner`)."""
@dataclass
class SuccessResult:
    """What `evaluate` measures of greedy episodes on the task."""

    success_rate: float
    """Fraction of episodes that reached the target."""
    mean_return: float
    """Mean undiscounted task return per episode."""
    episodes: int


def env_batch(source: EnvSource, config: TrainConfig, *, reward_free: bool, absorbing_target: bool = False,
              learner: Learner | None = None) -> EnvBatch:
    """The env batch of a phase on the configured engine; given a learner, it is set up to read the batch's
    observations (`Learner.set_observation_table`)."""
    envs = make_env_batch(source, config.num_envs, engine=config.engine, reward_free=reward_free,
                          absorbing_target=absorbing_target)
    if learner is not None:
        learner.set_observation_table(envs.observation_table)
    return envs


COMPILE_BACKEND = "inductor"
"""torch.compile's backend with `TrainConfig.compile`."""
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
    if not pretrains(method):
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
        phases.append(phase_rounds(learner, envs, steps, seed, _group_bar(config, i), "pretrain", None,
                                    dirs[i], resumes[i], hooks[i], time_share=len(seeds)))
    with single_thread(), on_device(learners, config.device):
        logs = drive(learners, phases, _group(learners), _update_step(config))
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
    target = resolve_device(device, "--device")
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


def task_data(learner: Learner | FBLearner, env: EnvSource, steps: int, seed: int,
              config: TrainConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Roll out the pretrained skills with random w (epsilon_end-greedy on psi^T w; with the kNN reward as a
    feature of its own, without its exploration term, as zero-shot acts) for `steps` env steps and return
    what task identification regresses: rows phi(s') (N, d) and task rewards r (N,). The fb arm's learner
    (`FBLearner`) rolls out its own skills, greedy on F(s, a, z)^T z for the same random directions, and gives
    rows B(s') (the same protocol, draws and budget; `learner.fb.infer_z` makes its z)."""
    learner = check_learner(learner)
    config = check_config(config, lambda: TrainConfig(agent=learner.config))
    if not (learner.config.task_conditioned or isinstance(learner, FBLearner)):
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
    """The task vector behind the env's reward: `infer_task` (w = argmin ||Phi w - r||^2 + lambda ||w||^2,
    unit norm; lambda the learner's `identify_ridge`, 0 by default: least squares) of `task_data`."""
    learner = check_learner(learner)
    ridge = getattr(learner.config, "identify_ridge", 0.0)  # a stand-in learner's config may not have it
    return infer_task(*task_data(learner, env, steps, seed, config), ridge=ridge)


def check_pretraining_replay(replay: NStepReplay | None, trainer: str, trained: str, option: str,
                             instead: str = "") -> None:
    """ValueError, one line, unless `replay` is a reward-free pretraining replay holding transitions: what
    `trainer` (e.g. "adapt_psi") trains `trained` (e.g. "psi") on offline; `option` is the setting under
    which `pretrain`'s log keeps it, `instead` what else the user may do."""
    if replay is None or replay.size == 0:
        raise ValueError(f"{trainer} trains {trained} on the pretraining replay, and none was given: pass "
                         f"the replay pretraining filled (its log's `replay` with {option} on){instead}")
    if "reward" in replay.data:
        raise ValueError(f"{trainer} trains on the reward-free pretraining replay; this replay stores task "
                         "rewards (a fine-tuning replay): pass the pretraining's")


def adapt_to_task(learner: Learner, replay: NStepReplay | None, w: torch.Tensor, seed: int) -> list[float]:
    """psi adapted offline to the identified task `w` (`learner.adapt.adapt_psi`, `AgentConfig.adapt_psi`):
    the learner's `adapt_updates` TD updates on minibatches of `batch_size` windows of up to `adapt_n_step`
    steps from `replay`, the pretraining replay (`pretrain`'s log keeps it when adapt_psi is on), drawn by
    `seeds.adapt_generator(seed)`. No env step is taken. The learner is left in its fine-tuning phase.
    Returns each update's SF loss."""
    learner = check_learner(learner)
    agent = learner.config
    if not agent.task_conditioned:
        raise ValueError(f"adapt_psi adapts psi to an identified w: method {agent.method!r} identifies none; "
                         "valid for: visr, aps")
    check_pretraining_replay(replay, "adapt_psi", "psi", "adapt_psi", ", or set adapt_psi=False")
    w = check_task_vector("w", w, agent.feature_dim).float()
    generator = adapt_generator(seed)

    def sample() -> Batch:
        return batch_to(replay.sample(agent.batch_size, agent.adapt_n_step, generator), learner.device)

    with single_thread():
        return adapt_psi(learner, sample, w, agent.adapt_updates)


def fb_from_replay(learner: Learner, replay: NStepReplay | None, seed: int,
                   updates: int | None = None) -> tuple[FBLearner, list[float]]:
    """The fb arm's F and B (`learner.fb.FBLearner`, `AgentConfig.fb`) trained offline on `replay`, the
    reward-free pretraining replay of `learner` (`pretrain`'s log keeps it when fb is on), for `updates`
    updates (default: the config's `fb_updates`, else as many as `learner`'s pretraining made), each on
    `batch_size` transitions (s, a, s'). F and B read the boards as `learner` does (its input columns and
    observation table), centred by the mean of the replay's observations (frozen); their initial weights,
    minibatches and z come from `seeds.fb_generator(seed)`. No env step is taken; `learner` is not changed.
    Returns the trained FBLearner (on the CPU) and each update's loss."""
    learner = check_learner(learner)
    agent = learner.config
    if not agent.fb:
        raise ValueError(f"fb_from_replay trains the fb arm, and this {agent.method} learner is not one: set "
                         "--train.agent.fb (AgentConfig.fb=True) before pretraining")
    check_pretraining_replay(replay, "the fb arm", "F and B", "fb")
    updates = updates if updates is not None else agent.fb_updates if agent.fb_updates is not None else \
        learner.updates
    updates = check_int("fb updates", updates)
    weights, generator = fb_generator(seed)
    board = learner.board_inputs
    fb = FBLearner(agent, learner.obs_shape, learner.num_actions, weights, input_columns=board.columns)
    fb.set_observation_table(None if board.table is None else board.table.source)
    fb.observe(replay.data["obs"][:replay.size].flatten(0, 1))
    fb.freeze_inputs()

    def sample() -> Batch:
        return replay.sample(agent.batch_size, 1, generator)

    with single_thread():
        return fb, train_fb(fb, sample, updates, generator)


def evaluate(learner: Learner, env: EnvSource, w: torch.Tensor | None, episodes: int, seed: int,
             config: TrainConfig | None = None, *, gpi: bool | None = None, explore: bool = False
             ) -> SuccessResult:
    """Greedy episodes on the task: success rate and mean return.

    `w=None` means the learner's fixed task (apt, dqn). GPI (over {w} + fresh tasks) applies by default
    to task-conditioned learners that have not been fine-tuned: fine-tuning trains psi(., ., w) alone
    on the task reward, so other candidates' values are no longer on the same scale. An episode ends at
    the target (success) or the step limit; what an env does after its episode ended is not counted.
    `explore`: act on the values of pretraining's whole reward, Q = psi^T (w, explore_weight) for a learner
    with the kNN reward as a feature of its own (`AgentConfig.knn_feature`; by default psi^T (w, 0), the task
    alone); the paper's APS's psi^T w holds that return either way. The fb arm's learner (`FBLearner`) acts
    greedily on F(s, a, z)^T z, z its identified z (w), without GPI.
    """
    learner = check_learner(learner)
    config = check_config(config, lambda: TrainConfig(agent=learner.config))
    episodes, seed = check_int("episodes", episodes), check_seed(seed)
    fb = isinstance(learner, FBLearner)
    if w is None and (learner.config.task_conditioned or fb):
        who = "the fb arm" if fb else f"method {learner.config.method!r}"
        raise ValueError(f"evaluate: {who} acts on a task vector w: give the w to score (e.g. identify_task's"
                         f"{', or infer_z' if fb else ''}); w=None is the fixed task of apt and dqn")
    w = learner.default_task(1)[0] if w is None else check_task_vector("w", w, learner.config.feature_dim)
    if gpi is None:
        agent = learner.config
        gpi = not fb and agent.gpi and agent.task_conditioned and learner.phase == "pretrain"
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
                actions = learner.act(obs, w.expand(n, -1), 0.0, gen, gpi=gpi, explore=explore).cpu()
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
        phases.append(phase_rounds(learner, envs, steps, seed, _group_bar(config, i), "finetune",
                                    w[None].float(), dirs[i], resumes[i], hooks[i], reward_scale,
                                    explore_weight, time_share=len(seeds)))
    with single_thread(), on_device(learners, config.device):
        return drive(learners, phases, _group(learners))
