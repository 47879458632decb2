"""The uniformly random policy on a gridworld: where it goes and how often it finds keys and target.

The baseline every pretraining method must beat at exploration (notebook 00, `aps-teach demo`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

import gridworld
from aps_teach.infra.checks import check_int


@dataclass
class RandomPolicyStats:
    """What `episodes` episodes of uniformly random actions did on one level."""

    level: str
    episodes: int
    visits: np.ndarray
    """(H, W) how often the agent was on each cell: at each episode's start and after each step."""
    key_rates: dict[str, float]
    """Fraction of episodes in which each key was picked up."""
    success_rate: float
    """Fraction of episodes that reached the target before the step limit."""
    mean_return: float
    distinct_states: int
    """Distinct (position, keys held) states visited over all episodes."""
    reachable_states: int
    """How many (position, keys held) states the level has in all."""

    def summary(self) -> str:
        keys = ", ".join(f"{name} key {rate:.1%}" for name, rate in self.key_rates.items())
        return (
            f"{self.level}: {self.episodes} episodes | {keys} | target {self.success_rate:.1%} | "
            f"mean return {self.mean_return:.2f} | states visited "
            f"{self.distinct_states}/{self.reachable_states}"
        )


def random_policy_stats(
    level: str, episodes: int, seed: int = 0, max_episode_steps: int | None = None, progress: bool = True
) -> RandomPolicyStats:
    """Run `episodes` episodes of uniformly random actions on `level` and count what happened."""
    episodes = check_int("episodes", episodes)
    env = gridworld.make(level, max_episode_steps=max_episode_steps)
    layout = env.unwrapped.layout
    rng = np.random.default_rng(seed)
    visits = np.zeros(layout.shape, dtype=np.int64)
    key_counts = dict.fromkeys(layout.key_names, 0)
    successes, total_return, states = 0, 0.0, set()
    _, info = env.reset(seed=seed)
    for _ in tqdm(range(episodes), desc=f"random policy on {level}", disable=not progress):
        visits[info["position"]] += 1
        states.add((info["position"], info["keys_held"]))
        terminated = truncated = False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
            total_return += reward
            visits[info["position"]] += 1
            if not terminated:  # the target ends the episode: it is not a state one acts from
                states.add((info["position"], info["keys_held"]))
        for name in info["keys_held"]:
            key_counts[name] += 1
        successes += info["success"]
        _, info = env.reset()
    return RandomPolicyStats(
        level=level,
        episodes=episodes,
        visits=visits,
        key_rates={name: count / episodes for name, count in key_counts.items()},
        success_rate=successes / episodes,
        mean_return=total_return / episodes,
        distinct_states=len(states),
        reachable_states=len(layout.reachable_states()),
    )


@dataclass
class ExactRandomPolicy:
    """The uniformly random policy's behaviour computed exactly, with no sampling."""

    success_by_step: np.ndarray
    """success_by_step[t]: probability the target has been reached within t steps (t = 0..horizon)."""
    key_probability: dict[str, float]
    """Probability each key is held when the episode ends (target or step limit)."""
    expected_visits: np.ndarray
    """(H, W) expected number of times the agent is on each cell, start included."""


def exact_random_policy(level: str | Sequence[str], horizon: int) -> ExactRandomPolicy:
    """Propagate the distribution over (position, keys held) of the uniformly random policy.

    p_{t+1}(s') = sum_s sum_a p_t(s) / 4 [successor(s, a) = s'] over the level's compiled tables
    (`gridworld.compile_level`, not stepping pycolab), from a uniform start cell, for `horizon` steps;
    mass entering a terminal state (the target) stops there.
    """
    compiled = gridworld.compile_level(level)
    n, actions = compiled.num_nonterminal, compiled.successor.shape[1]
    rows, cols = compiled.positions.T
    alive = np.zeros(len(compiled.states))
    alive[compiled.start_states] = 1 / len(compiled.start_states)
    visits = np.zeros(compiled.layout.shape)
    np.add.at(visits, (rows, cols), alive)
    ended = np.zeros(compiled.held.shape[1])
    success = [0.0]
    for _ in range(horizon):
        alive = np.bincount(compiled.successor[:n].ravel(), weights=np.repeat(alive[:n] / actions, actions),
                            minlength=len(compiled.states))
        np.add.at(visits, (rows, cols), alive)
        ended += alive[n:] @ compiled.held[n:]
        success.append(success[-1] + alive[n:].sum())
    ended += alive[:n] @ compiled.held[:n]
    key_probability = {name: float(p) for name, p in zip(compiled.layout.key_names, ended, strict=True)}
    return ExactRandomPolicy(np.array(success), key_probability, visits)
