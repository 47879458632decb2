"""A pretrained learner outside training: the greedy path a task vector w produces, the observation of
every state (for heatmaps of phi(s)^T w), and the task vector a perfect task identification would find.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import gridworld
from aps_teach.grid.envs import EnvSource, make_env
from aps_teach.infra.phases import single_thread
from aps_teach.learner.agent import Learner
from aps_teach.learner.tasks import infer_task
from gridworld.layout import State


@dataclass
class Rollout:
    """One greedy episode: where the agent was at each step, and how it ended."""

    positions: list[tuple[int, int]]
    """(row, col) after reset, then after every step: len = steps + 1."""
    keys_held: list[tuple[str, ...]]
    """Keys held at each of `positions`."""
    total_reward: float
    """Undiscounted task reward of the episode."""
    success: bool
    """Whether the episode reached the target."""


def greedy_rollout(learner: Learner, env: EnvSource, w: torch.Tensor, seed: int, *,
                   gpi: bool = False) -> Rollout:
    """One episode with epsilon = 0, acting on argmax_a psi(s, a, w)^T w (or its GPI max if `gpi`), from
    the start cell `reset(seed=seed)` draws, until the target or the env's time limit.

    Without GPI the path is the skill w itself, the behaviour w asked for while pretraining.
    """
    dim = learner.config.feature_dim
    if w.shape != (dim,):
        raise ValueError(f"w must have shape ({dim},), got {tuple(w.shape)}")
    environment = make_env(env)
    if environment.spec is None or environment.spec.max_episode_steps is None:
        raise ValueError("the env needs a time limit (gymnasium.make with max_episode_steps)")
    generator = torch.Generator().manual_seed(seed)
    obs, info = environment.reset(seed=seed)
    positions, keys_held = [info["position"]], [info["keys_held"]]
    total, done = 0.0, False
    with single_thread():
        while not done:
            action = learner.act(torch.as_tensor(obs)[None], w[None], 0.0, generator, gpi=gpi)
            obs, reward, terminated, truncated, info = environment.step(int(action[0]))
            positions.append(info["position"])
            keys_held.append(info["keys_held"])
            total += reward
            done = terminated or truncated
    return Rollout(positions, keys_held, total, bool(info["success"]))


def state_observations(level) -> tuple[list[State], torch.Tensor]:
    """Every reachable (position, keys held) state of `level` (a name or ASCII art) and the observation
    the env shows there, stacked as (S, C, H, W) in the order of `reachable_states()`."""
    compiled = gridworld.compile_level(level)
    n = compiled.num_nonterminal
    return list(compiled.states[:n]), torch.from_numpy(compiled.observations[:n].copy())


def transitions(level) -> tuple[list[tuple[State, int]], torch.Tensor, torch.Tensor]:
    """Every move of `level` (a name or ASCII art) from every reachable state, as the env makes it:
    ([(state, action)] (N), the observations s' reached (N, C, H, W) uint8, the rewards r (N,) float32),
    in the order of `reachable_states()`, then actions 0..3."""
    compiled = gridworld.compile_level(level)
    n, actions = compiled.num_nonterminal, compiled.successor.shape[1]
    moves = [(state, action) for state in compiled.states[:n] for action in range(actions)]
    frames = compiled.observations[compiled.successor[:n].ravel()]
    rewards = compiled.reward[:n].ravel().astype(np.float32)
    return moves, torch.from_numpy(frames), torch.from_numpy(rewards)


@torch.no_grad()
def oracle_task(learner: Learner, level) -> torch.Tensor:
    """`infer_task` over every transition of the level instead of sampled rollouts: one (phi(s'), r) pair
    for each reachable state s and action a (`transitions`). It is the w `identify_task` would find if
    its rollouts covered the level evenly, so a policy that fails under it fails for want of behaviour,
    not of task inference."""
    if not learner.config.task_conditioned:
        raise ValueError(f"method {learner.config.method!r} has no features phi to regress on")
    _, frames, rewards = transitions(level)
    return infer_task(learner.features(frames), rewards)
