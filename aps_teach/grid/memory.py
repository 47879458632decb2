"""Will a gridworld run fit in memory? Every estimate and check of the gridworld wing in one place, each run
before anything is allocated or written: a phase's replay and one update (`check_phase_memory`), task
identification's data (`check_identify_memory`), acting with GPI (`check_acting_memory`), and all of a run's
at once without an env batch (`check_memory`, what `experiments.check_run` and transfer call). The free memory
and the refusal's wording are `aps_teach.infra.memory`'s, shared with the Atari wing.
"""

from __future__ import annotations

import math

import torch

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.envs import EnvSource, as_spec, make_env
from aps_teach.grid.replay import NStepReplay
from aps_teach.infra.memory import check_fits
from aps_teach.learner.config import AgentConfig


def update_bytes(agent: AgentConfig) -> int:
    """A rough lower bound of one update's working memory: the kNN distances between the minibatch's
    particles (P x P floats, a few copies) and the networks' activations over its B x (n + 1) states."""
    particles = agent.particles if agent.uses_knn else 0
    states = agent.batch_size * (agent.n_step + 1)
    return 4 * (3 * particles ** 2 + 8 * states * max(agent.hidden, 8 * agent.feature_dim))


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
    steps_advice = f"lower --{phase}-steps (the replay keeps every step of the phase)"
    if 2 * 4 * task_dim >= per_cell:  # the stored task vectors are most of it
        steps_advice = (f"lower --{phase}-steps or the feature dimension, {config.agent.feature_dim:,} (the "
                        f"replay keeps every step of the phase, each with a task vector of {task_dim:,})")
    advice = steps_advice if replay >= update else \
        ("lower --train.agent.batch-size, --train.agent.n-step, --train.agent.hidden or "
         "--train.agent.feature-dim (what an update's working memory grows with)")
    check_fits(replay + update, f"{phase}: the replay of {cells:,} transitions ({replay / 1e9:.1f} GB) and "
               f"an update of a batch of {config.agent.batch_size} ({update / 1e9:.1f} GB)", advice)


def act_bytes(agent: AgentConfig, num_envs: int, num_actions: int) -> int:
    """A rough lower bound of acting's working memory: psi over every env's candidate tasks (with GPI, the
    task and `gpi_samples` fresh ones), each row a few hidden layers wide plus its A x sf_dim outputs."""
    candidates = num_envs * (1 + (agent.gpi_samples if agent.gpi and agent.task_conditioned else 0))
    return 4 * candidates * (2 * agent.feature_dim + 3 * agent.hidden + 2 * num_actions * agent.sf_dim)


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
