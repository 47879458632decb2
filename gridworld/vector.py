"""`PassagewayVectorEnv`: many key-passageway envs stepped at once by indexing a `CompiledLevel`'s tables.

It equals `gymnasium.vector.SyncVectorEnv([lambda: gridworld.make(level, ...)] * num_envs)` step for step
(same seeds, same actions: same observations, rewards, terminations, truncations and infos, autoresets
and time limit included); tests/envs/test_compiled_engine.py holds the two together.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from gridworld.compiled import CompiledLevel, compile_level
from gridworld.env import MAX_EPISODE_STEPS, env_task, reset_options, unreachable_start
from gridworld.families import Task
from gridworld.layout import ACTIONS, resolve_level

MAX_NUM_ENVS = 2**16
"""The most copies one vector env steps: a batch's boards take num_envs x the board's bytes (65,536 copies of
deep's board: 18 MB), and the engine gains no speed past a few hundred copies."""
OBSERVATIONS = ("board", "state")
AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)


class PassagewayVectorEnv(gym.vector.VectorEnv):
    """`num_envs` copies of `gridworld.make(level, reward_map=..., task=..., absorbing_target=...,
    max_episode_steps=...)` in one array of state indices.

    observation="board": (N, C, H, W) uint8 planes, as the single env shows them. observation="state":
    the (N,) int64 state indices, the fast path; `observation_table[states]` turns them into boards.
    Each env draws its start cell from its own generator, seeded as `Env.reset(seed=...)` seeds one
    (an int seed gives env i seed + i, a list gives env i its element), and truncates after
    `max_episode_steps` steps as gymnasium's `TimeLimit` does (even on the step that terminates).
    Infos are gymnasium's vector format: position, keys_held (object arrays), success, each with its
    `_key` mask; with SAME_STEP autoresets also final_obs and final_info.
    """

    def __init__(self, level: str | Sequence[str] = "easy", num_envs: int = 8, *, reward_map=None,
                 task: Task | str | None = None, max_episode_steps: int = MAX_EPISODE_STEPS,
                 absorbing_target: bool = False, observation: str = "board",
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP):
        layout = resolve_level(level)
        reward_map, task = env_task(layout, reward_map, task)
        self.compiled: CompiledLevel = compile_level(layout, reward_map, task=task,
                                                     absorbing_target=absorbing_target)
        self.num_envs = positive_int("num_envs", num_envs)
        if self.num_envs > MAX_NUM_ENVS:
            raise ValueError(f"num_envs must be at most {MAX_NUM_ENVS:,} (the engine keeps each copy's "
                             f"state, step count and board in arrays of that length), got {self.num_envs:,}")
        self.max_episode_steps = positive_int("max_episode_steps", max_episode_steps)
        if observation not in OBSERVATIONS:
            raise ValueError(f"unknown observation {observation!r}; valid: {', '.join(OBSERVATIONS)}")
        self.observation = observation
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            self.autoreset_mode = None
        if self.autoreset_mode not in AUTORESET_MODES:
            valid = ", ".join(f"AutoresetMode.{mode.name} ({mode.value!r})" for mode in AUTORESET_MODES)
            raise ValueError(f"unsupported autoreset_mode {autoreset_mode!r}; valid: {valid}")
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        compiled = self.compiled
        self.observation_table = compiled.observations
        """(S, C, H, W) uint8: the board of each state index."""
        self.single_action_space = gym.spaces.Discrete(len(ACTIONS))
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        if observation == "board":
            self.single_observation_space = gym.spaces.Box(0, 1, compiled.observations.shape[1:], np.uint8)
        else:
            self.single_observation_space = gym.spaces.Discrete(len(compiled.states))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._successor = compiled.successor.ravel()
        self._reward = compiled.reward.ravel()
        self._ends = compiled.terminal & (not compiled.absorbing_target)
        self._position_objects = _objects([position for position, _ in compiled.states])
        self._held_objects = _objects([held for _, held in compiled.states])
        self._generators: list[np.random.Generator | None] = [None] * self.num_envs
        self._state = np.zeros(self.num_envs, dtype=np.int64)
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._started = False

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None):
        """Reset every env (or those in options["reset_mask"]); other options as `PassagewayEnv.reset`."""
        seeds = self._seeds(seed)
        options = dict(options or {})
        mask = _reset_mask(options.pop("reset_mask", None), self.num_envs)
        position, held = reset_options(self.compiled.layout, options)
        envs = np.flatnonzero(mask)
        for i in envs:
            if seeds[i] is not None or self._generators[i] is None:
                self._generators[i] = seeding.np_random(seeds[i])[0]
        self._state[envs] = self._starts(envs, position, held)
        self._elapsed[envs] = 0
        self._autoreset[envs] = False
        self._started = True
        return self._observe(self._state), self._infos(self._state, None if mask.all() else mask)

    def step(self, actions):
        """Move env i by actions[i] (N integers in 0..3); ended envs reset as `autoreset_mode` says."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        moves = self._state * len(ACTIONS) + self._actions(actions)
        state, reward = self._successor[moves], self._reward[moves]
        elapsed = self._elapsed + 1
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset.any():
            envs = np.flatnonzero(self._autoreset)
            state[envs] = self._starts(envs)
            reward[envs], elapsed[envs] = 0.0, 0
        terminated = self._ends[state]
        truncated = elapsed >= self.max_episode_steps
        done = terminated | truncated
        infos = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            envs = np.flatnonzero(done)
            infos["final_obs"] = np.full(self.num_envs, None, dtype=object)
            for i in envs:
                infos["final_obs"][i] = self._observe(state[i:i + 1])[0]
            infos["_final_obs"] = done.copy()
            infos["final_info"], infos["_final_info"] = self._infos(state, done), done.copy()
            state[envs] = self._starts(envs)
            elapsed[envs] = 0
        self._state, self._elapsed, self._autoreset = state, elapsed, done
        infos.update(self._infos(state, None))
        return self._observe(state), reward, terminated, truncated, infos

    def _actions(self, actions) -> np.ndarray:
        actions = np.asarray(actions)
        if (actions.shape != (self.num_envs,) or actions.dtype.kind not in "iub"
                or (actions.size and (actions.min() < 0 or actions.max() >= len(ACTIONS)))):
            names = ", ".join(f"{i} {name}" for i, name in enumerate(ACTIONS))
            raise ValueError(f"invalid actions: expected {self.num_envs} integers in 0..{len(ACTIONS) - 1} "
                             f"({names}), got {actions.dtype} array of shape {actions.shape}: {actions!r}")
        return actions

    def _seeds(self, seed) -> list[int | None]:
        """One seed per env, as `SyncVectorEnv.reset` hands them out."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={self.num_envs} "
                             f"but got length={len(seed)}.")
        return list(seed)

    def _starts(self, envs: np.ndarray, position=None, held: tuple[str, ...] = ()) -> np.ndarray:
        """Start states for `envs`: `position` if given, else each env's draw of a start cell, drawn as
        `PassagewayEnv` draws it (`np_random.integers(number of start cells)`)."""
        compiled = self.compiled
        if position is not None:
            return np.full(len(envs), self._start_index(position, held), dtype=np.int64)
        cells = len(compiled.layout.start_cells)
        draws = np.array([self._generators[i].integers(cells) for i in envs], dtype=np.int64)
        if not held:
            return compiled.start_states[draws]
        return np.array([self._start_index(compiled.layout.start_cells[d], held) for d in draws],
                        dtype=np.int64)

    def _start_index(self, position, held: tuple[str, ...]) -> int:
        index = self.compiled.index.get((position, held))
        if index is None or index >= self.compiled.num_nonterminal:
            raise unreachable_start((position, held))
        return index

    def _observe(self, state: np.ndarray) -> np.ndarray:
        if self.observation == "state":
            return state.copy()
        return np.take(self.observation_table, state, axis=0)

    def _infos(self, state: np.ndarray, mask: np.ndarray | None) -> dict[str, np.ndarray]:
        """position, keys_held and success of each env (only of envs in `mask`, if given)."""
        position, held = self._position_objects[state], self._held_objects[state]
        success = self.compiled.terminal[state]
        if mask is None:
            mask = np.ones(self.num_envs, dtype=bool)
        else:
            position[~mask], held[~mask], success = None, None, success & mask
        return {"position": position, "_position": mask, "keys_held": held, "_keys_held": mask.copy(),
                "success": success, "_success": mask.copy()}


def _objects(values: list) -> np.ndarray:
    """A 1-D object array holding `values` (tuples stay whole)."""
    array = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        array[i] = value
    return array


def positive_int(name: str, value) -> int:
    """`value` as an int if it is an integer >= 1; else ValueError naming `name`."""
    try:
        number = operator.index(value)
    except TypeError:
        number = 0
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number


def _reset_mask(mask, num_envs: int) -> np.ndarray:
    """options["reset_mask"] checked as `SyncVectorEnv.reset` checks it (all True when absent)."""
    if mask is None:
        return np.ones(num_envs, dtype=bool)
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape ({num_envs},), "
                         f"got {mask!r}")
    if not mask.any():
        raise ValueError("options['reset_mask'] must reset at least one env (some True)")
    return mask
