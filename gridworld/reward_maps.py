"""Reward-map tasks: a reward on some cells instead of the key/target protocol, with exact references (and
the same references for the tasks of `gridworld.families`: `task_references`).

A reward map R (H x W) pays R[cell] at every step for the cell the agent is in after the step
(moved into or stayed on), so a task is a function of the next state, r(s') = R[position(s')],
the form successor features assume. Episodes have a fixed length T and never end early.

The references are exact finite-horizon dynamic programmes over the reachable (position, keys
held) states (the tables of `gridworld.compiled`), averaged over the uniform start cell: the optimal
return and the uniformly random policy's expected return, so a policy's score can be normalised as
(policy - random) / (optimal - random). `as_reward_map` (in `gridworld.layout`) validates a map.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence

import numpy as np

from gridworld.compiled import CompiledLevel, compile_level
from gridworld.env import MAX_EPISODE_STEPS
from gridworld.families import Task, resolve_task
from gridworld.layout import MAX_REWARD, Layout, as_reward_map, resolve_level  # noqa: F401 (as_reward_map re-exported)


def random_box_reward_map(layout: Layout | str | Sequence[str], num_boxes: int, box_size: int, seed: int,
                          value: float = 1.0) -> np.ndarray:
    """`num_boxes` square boxes of side `box_size` placed uniformly at random on `layout` (a `Layout`, a maze
    name or ASCII art), paying `value` on their free cells (walls inside a box pay nothing); every box covers
    at least one free cell. `seed` is an integer >= 0."""
    layout = resolve_level(layout)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    height, width = layout.shape
    free = ~layout.walls
    whole = all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in (num_boxes, box_size))
    if not whole or not 1 <= num_boxes <= free.sum() or not 1 <= box_size <= min(height, width):
        raise ValueError(f"need integers 1 <= num_boxes <= {free.sum()} (the free cells) and 1 <= box_size "
                         f"<= {min(height, width)}, got num_boxes={num_boxes!r}, box_size={box_size!r}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or \
            abs(value) > MAX_REWARD:
        raise ValueError(f"value must be a finite number of size at most {MAX_REWARD:g}, got {value!r}")
    rng = np.random.default_rng(seed)
    grid = np.zeros((height, width))
    for _ in range(num_boxes):
        while True:
            row, col = rng.integers(height - box_size + 1), rng.integers(width - box_size + 1)
            box = np.zeros_like(free)
            box[row:row + box_size, col:col + box_size] = True
            if (box & free).any():
                grid[box & free] = value
                break
    return grid


MAX_HORIZON = 100_000
"""The longest horizon the references take: 1,000 episodes of the default step limit. Each step of the dynamic
programme sweeps every state and move, so a billion steps would run for days without a word."""


def _check_horizon(horizon) -> None:
    """ValueError unless `horizon` is a whole number of steps in [1, `MAX_HORIZON`] (a negative one used to
    return 0.0, a huge one to run for days)."""
    whole = not isinstance(horizon, bool) and isinstance(horizon, numbers.Integral)
    if not whole or not 1 <= horizon <= MAX_HORIZON:
        raise ValueError(f"horizon must be an integer from 1 to {MAX_HORIZON:,} (steps), got {horizon!r}")


def optimal_return(layout: Layout, reward_map, horizon: int) -> float:
    """max over policies of E[sum_{t<T} R(s_{t+1})] from a uniform start cell:
    V_T = 0, V_t(s) = max_a R(s') + V_{t+1}(s'), averaged over start states."""
    _check_horizon(horizon)
    return _expected_return(compile_level(layout, reward_map), horizon, np.max)


def random_return(layout: Layout, reward_map, horizon: int) -> float:
    """E[sum_{t<T} R(s_{t+1})] of the uniformly random policy from a uniform start cell:
    V_T = 0, V_t(s) = mean_a R(s') + V_{t+1}(s')."""
    _check_horizon(horizon)
    return _expected_return(compile_level(layout, reward_map), horizon, np.mean)


def task_references(level: str | Sequence[str] | Layout, task: Task | str,
                    horizon: int = MAX_EPISODE_STEPS) -> tuple[float, float]:
    """(optimal, random): the best and the uniformly random policy's expected return of `task` (a `Task` of
    `level`, or the name of one in its family) over `horizon` steps from a uniform start cell, by the
    dynamic programmes of `optimal_return` and `random_return` on the task's tables, V_t(s) = max_a (or
    mean_a) r(s, a) + V_{t+1}(s'). The target task ends at the target: its terminal states pay nothing
    more. A box task's episode never ends (its target is absorbing, paid 0). Cached per (art, task)."""
    _check_horizon(horizon)
    layout = level if isinstance(level, Layout) else resolve_level(level)
    return _task_references(layout.art, resolve_task(layout, task), horizon)


@functools.lru_cache(maxsize=256)
def _task_references(art: tuple[str, ...], task: Task, horizon: int) -> tuple[float, float]:
    compiled = compile_level(art, task=task)
    return _expected_return(compiled, horizon, np.max), _expected_return(compiled, horizon, np.mean)


def _expected_return(compiled: CompiledLevel, horizon: int, over_actions) -> float:
    """V_0 averaged over the start states, V_T = 0, V_t(s) = over_actions_a r(s, a) + V_{t+1}(s'). A terminal
    state moves to itself paying 0, so an ended episode adds nothing."""
    value = np.zeros(len(compiled.states))
    for _ in range(horizon):
        value = over_actions(compiled.reward + value[compiled.successor], axis=1)
    return float(value[compiled.start_states].mean())


def normalised_score(score: float, optimal: float, random: float) -> float:
    """(score - random) / (optimal - random): 0 is the random policy, 1 the optimum."""
    if optimal <= random:
        raise ValueError(f"cannot normalise: the optimum ({optimal}) does not beat random ({random})")
    return (score - random) / (optimal - random)
