"""A level compiled once into tables over its states: what the vector engine and the exact tools index.

States 0..num_nonterminal-1 are `Layout.reachable_states()` in its order; after them come the terminal
states, the target cell with each set of keys held on arriving there. Every move from every
non-terminal state is played once through `PassagewayEnv` (pycolab), and each state's observation is
the board pycolab shows there (after `reset(options=...)`, or after the step that enters the target), so
the tables are pycolab's by construction. The tests hold them to the independent rules of `Layout.step`.

The recorded dynamics are cached per art; a reward map or a task (`gridworld.families`) is applied to them in
one gather.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from gridworld.env import PassagewayEnv
from gridworld.families import TARGET, Task, resolve_task
from gridworld.layout import ACTIONS, KEY_REWARD, TARGET_REWARD, Layout, State, as_reward_map, resolve_level

MAX_STATES = 20_000
"""Most states a level may have, counted as open cells x key combinations (an upper bound known before
enumerating). Every move of every state is played through pycolab, ~0.7 ms a state: ~15 s at the limit."""
MAX_OBSERVATION_BYTES = 64 * 2**20
"""Largest observation table (states x planes x H x W bytes) a level may need: it is held in memory and
cached per art."""
CACHE_SIZE = 16
"""How many arts' recorded dynamics are kept."""


@dataclass(frozen=True, eq=False)
class CompiledLevel:
    """A level (and its task) as read-only tables over S states and A = 4 actions."""

    layout: Layout
    states: tuple[State, ...]
    """(position, keys held) of each state: the reachable non-terminal states, then the terminal ones."""
    num_nonterminal: int
    successor: np.ndarray
    """(S, A) int64: the state each action leads to; a terminal state's successor is itself."""
    reward: np.ndarray
    """(S, A) float64: the reward of each move. Key/target protocol (and the target task): +1 per key picked
    up, +10 entering the target; with a reward map, the map at the cell moved to; with a box task,
    `task.reward` of the state moved to. Moves from a terminal state pay 0.
    float64, as `PassagewayEnv` pays it, so the engines agree exactly for any reward map."""
    terminal: np.ndarray
    """(S,) bool: entering this state ends the episode (unless `absorbing_target`)."""
    observations: np.ndarray
    """(S, C, H, W) uint8: what `PassagewayEnv` shows in each state. On a terminal state the target is
    drawn over the agent, so its agent plane is empty."""
    positions: np.ndarray
    """(S, 2) int64: each state's (row, col)."""
    held: np.ndarray
    """(S, K) bool: which keys each state holds, in `layout.key_names` order."""
    start_states: np.ndarray
    """Index of each start cell with no key held, in `layout.start_cells` order."""
    reward_map: np.ndarray | None
    """The task's (H, W) reward map, or None for the key/target protocol."""
    absorbing_target: bool
    """Whether the target keeps the agent (reward 0, until the time limit) instead of ending the episode
    (always, under a box task)."""
    index: Mapping[State, int] = field(repr=False)
    """State -> its index (for lookups; `state_index` checks its arguments)."""
    task: Task | None = None
    """The task (`gridworld.families.Task`) the rewards are of, or None (a reward map or the protocol)."""

    def __repr__(self) -> str:
        height, width = self.layout.shape
        task = ("key/target protocol" if self.reward_map is None and self.task is None
                else "reward map" if self.task is None else f"task {self.task.name!r}")
        return (f"CompiledLevel({height}x{width}, {len(self.states)} states "
                f"({self.num_nonterminal} non-terminal), {task}, absorbing_target={self.absorbing_target})")

    def state_index(self, position, keys_held=()) -> int:
        """Index of the state at `position` holding `keys_held` (a name or names, any order)."""
        held = (keys_held,) if isinstance(keys_held, str) else tuple(keys_held)
        state = (tuple(position), tuple(name for name in self.layout.key_names if name in held))
        if state not in self.index or len(state[1]) != len(held):
            raise ValueError(f"no state at position {tuple(position)} holding keys {held}: a state is one of "
                             f"the level's {len(self.states)} `states` (walls, closed passageways and keys "
                             "not yet held are none)")
        return self.index[state]

    def with_reward_map(self, reward_map) -> CompiledLevel:
        """The same dynamics with the task `reward_map` (H x W, or {(row, col): value}): each move pays
        the map at the cell moved to. Checked like `PassagewayEnv`'s (a maze without a target only)."""
        grid = as_reward_map(self.layout, reward_map)
        rows, cols = self.positions[self.successor].transpose(2, 0, 1)
        return dataclasses.replace(self, reward=_read_only(grid[rows, cols]), reward_map=_read_only(grid),
                                   task=None)

    def with_task(self, task: Task | str) -> CompiledLevel:
        """The same dynamics under the rules of `task` (a `Task` of this level, or the name of one in its
        family). A box task pays r(s, a) = task.reward(s') for the state s' moved to and makes the target
        absorbing; the target task pays the key/target protocol and its target ends the episode
        (`compile_level(..., absorbing_target=True)` keeps the agent there instead)."""
        task = resolve_task(self.layout, task)
        if task.kind == TARGET:
            reward = _protocol_reward(self.successor, self.held, self.terminal)
        else:
            reward = _read_only(np.array([task.reward(*state) for state in self.states])[self.successor])
        return dataclasses.replace(self, reward=reward, reward_map=None, task=task,
                                   absorbing_target=task.kind != TARGET)


def compile_level(level: str | Sequence[str] | Layout, reward_map=None, *,
                  absorbing_target: bool = False, task: Task | str | None = None) -> CompiledLevel:
    """Compile a built-in level (easy, hard, deep, detour, fork, open10, fourroom), ASCII art or a `Layout`,
    with the key/target protocol, a `reward_map` task or a `task` (`gridworld.families`; a box task's target
    is always absorbing). A maze without a target compiles without either too (keys pay, nothing ends), for
    tools that only need its dynamics; the envs ask for a task there.
    """
    layout = level if isinstance(level, Layout) else resolve_level(level)
    if reward_map is not None and task is not None:
        raise ValueError("give a reward_map or a task, not both: each replaces the key/target protocol")
    task = None if task is None else resolve_task(layout, task)
    compiled = _record(layout.art)
    if reward_map is not None:
        compiled = compiled.with_reward_map(reward_map)
    if task is not None:
        compiled = compiled.with_task(task)
    return dataclasses.replace(compiled, absorbing_target=compiled.absorbing_target or bool(absorbing_target))


def check_size(layout: Layout) -> None:
    """Refuse a level whose tables would exceed `MAX_STATES` or `MAX_OBSERVATION_BYTES`."""
    open_cells = int((~layout.walls).sum())
    key_sets = 2 ** len(layout.key_names)
    bound = open_cells * key_sets
    if bound > MAX_STATES:
        raise ValueError(
            f"level too large to compile: up to {bound:,} states ({open_cells} open cells x {key_sets} key "
            f"combinations); the limit is {MAX_STATES:,}, as every state's moves are played through pycolab "
            "(~0.7 ms a state)"
        )
    height, width = layout.shape
    planes = len(layout.layer_names)
    size = bound * planes * height * width
    if size > MAX_OBSERVATION_BYTES:
        raise ValueError(
            f"level too large to compile: its observation table needs up to {size / 2**20:,.1f} MiB "
            f"({bound:,} states x {planes} planes x {height}x{width} cells); the limit is "
            f"{MAX_OBSERVATION_BYTES / 2**20:.0f} MiB, as the table is held in memory and cached per level"
        )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _record(art: tuple[str, ...]) -> CompiledLevel:
    """Play every move of every reachable state through pycolab, with the key/target protocol's rewards."""
    layout = Layout.parse(art)
    check_size(layout)
    env = PassagewayEnv(art, reward_map=None if layout.target is not None else np.zeros(layout.shape))
    states = layout.reachable_states()
    observations, arrivals, moves = [], {}, []
    for position, held in states:
        for action in range(len(ACTIONS)):
            obs, _ = env.reset(options={"position": position, "keys_held": held})
            if action == 0:
                observations.append(obs)
            obs, _, terminated, _, info = env.step(action)
            moves.append((info["position"], info["keys_held"]))
            if terminated:
                arrivals.setdefault(moves[-1], obs)
    terminals = sorted(arrivals, key=lambda state: (len(state[1]), state[1]))
    num_nonterminal = len(states)
    states = (*states, *terminals)
    observations += [arrivals[state] for state in terminals]
    index = {state: i for i, state in enumerate(states)}
    successor = np.empty((len(states), len(ACTIONS)), dtype=np.int64)
    successor[:num_nonterminal] = np.array([index[state] for state in moves]).reshape(-1, len(ACTIONS))
    successor[num_nonterminal:] = np.arange(num_nonterminal, len(states))[:, None]
    terminal = np.arange(len(states)) >= num_nonterminal
    held = np.array([[name in keys for name in layout.key_names] for _, keys in states], dtype=bool)
    return CompiledLevel(
        layout=layout,
        states=states,
        num_nonterminal=num_nonterminal,
        successor=_read_only(successor),
        reward=_protocol_reward(successor, held, terminal),
        terminal=_read_only(terminal),
        observations=_read_only(np.stack(observations)),
        positions=_read_only(np.array([position for position, _ in states], dtype=np.int64)),
        held=_read_only(held),
        start_states=_read_only(np.array([index[(cell, ())] for cell in layout.start_cells], dtype=np.int64)),
        reward_map=None,
        absorbing_target=False,
        index=MappingProxyType(index),
    )


def _protocol_reward(successor: np.ndarray, held: np.ndarray, terminal: np.ndarray) -> np.ndarray:
    """The key/target protocol's (S, A) rewards: +1 per key picked up, +10 entering the target."""
    picked = (held[successor] & ~held[:, None]).sum(axis=2)
    entered = terminal[successor] & ~terminal[:, None]
    return _read_only(KEY_REWARD * picked + TARGET_REWARD * entered)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
