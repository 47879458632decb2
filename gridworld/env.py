"""`PassagewayEnv`: the key-passageway gridworlds behind the Gymnasium API."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from gridworld.families import TARGET, Task, resolve_task
from gridworld.game import AGENT, build_game
from gridworld.layout import ACTIONS, KEYS, Cell, Layout, State, as_reward_map, layer_names, resolve_level

MAX_EPISODE_STEPS = 100
"""Default step limit (gymnasium's `TimeLimit` truncates): ~9x the longest shortest solution."""

LAYER_NAMES: tuple[str, ...] = layer_names()
"""Observation planes, in order, of every level using no key but green and purple (every built-in one);
each cell is 1 in exactly one of them. A level's own: `Layout.layer_names`."""
_KEY_COLOURS = {"green": (44, 160, 44), "purple": (148, 103, 189), "cyan": (23, 190, 207),
                "red": (214, 39, 40), "yellow": (230, 190, 0), "pink": (227, 119, 194)}
LAYER_COLOURS: dict[str, tuple[int, int, int]] = {
    "floor": (245, 245, 245),
    "wall": (110, 110, 110),
    "agent": (31, 119, 180),
    **{f"{name}_{part}": _KEY_COLOURS[name] if part == "key" else (0, 0, 0)  # a closed passageway: black
       for name in KEYS for part in ("key", "passage")},
    "target": (255, 127, 14),  # orange
}
"""RGB colour of every observation plane a level may have, by name, for rendering."""
COLOURS = np.array([LAYER_COLOURS[name] for name in LAYER_NAMES], dtype=np.uint8)
"""RGB colour of each of the `LAYER_NAMES` planes; a level's own: `PassagewayEnv.colours`."""
_LAYER_CHARS: dict[str, str] = {
    "floor": ".", "wall": "#", "agent": AGENT, "target": "T",
    **{f"{name}_key": key for name, (key, _) in KEYS.items()},
    **{f"{name}_passage": passage for name, (_, passage) in KEYS.items()},
}
"""The character on pycolab's board that each observation plane shows."""
CELL_PIXELS = 16
"""Side of one grid cell in `render_mode="rgb_array"` images."""


def env_task(layout: Layout, reward_map, task: Task | str | None) -> tuple[np.ndarray | None, Task | None]:
    """An env's task, checked: the reward map (validated) or the `Task` (a task of the level's family may be
    given by name), at most one of them; neither means the key/target protocol, which a maze without a target
    does not have."""
    if reward_map is not None and task is not None:
        raise ValueError("give a reward_map or a task, not both: each replaces the key/target protocol")
    if reward_map is None and task is None and layout.target is None:
        raise ValueError("this maze has no target 'T': give it a reward_map task "
                         "(see gridworld.reward_maps) or a box task (gridworld.Task), or draw a target")
    return (None if reward_map is None else as_reward_map(layout, reward_map),
            None if task is None else resolve_task(layout, task))


def reset_options(layout: Layout, options: Mapping[str, Any]) -> tuple[Cell | None, tuple[str, ...]]:
    """`reset(options=...)` checked: the start position (None: draw a start cell) and the keys held, in
    the level's key order."""
    unknown = set(options) - {"position", "keys_held"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(unknown)}; valid: 'position', 'keys_held'")
    names = layout.key_names
    held = options.get("keys_held", ())
    held = (held,) if isinstance(held, str) else tuple(held)
    if set(held) - set(names):
        raise ValueError(f"keys_held {held!r} names keys not in this level; its keys: {names}")
    held = tuple(name for name in names if name in held)
    if "position" not in options:
        return None, held
    try:
        row, col = (operator.index(x) for x in options["position"])
    except (TypeError, ValueError):
        raise ValueError(
            f"position must be a (row, col) pair of integers, got {options['position']!r}"
        ) from None
    return (row, col), held


def unreachable_start(state: State) -> ValueError:
    """The error for a reset to a state no episode visits."""
    position, held = state
    return ValueError(
        f"no episode reaches position {position} holding keys {held}: the cell is a wall, "
        "a closed passageway, a key not yet held, the target, or off the grid; "
        "see the level's reachable_states()"
    )


class PassagewayEnv(gym.Env):
    """Fetch the key(s), pass the opened passageway(s), reach the target (APS paper, Section 4.3).

    Observation: uint8 one-hot planes of shape (C, H, W), named by `layer_names` (the level's
    `Layout.layer_names`) and drawn in `colours` (C x RGB). Actions:
    0 up, 1 down, 2 left, 3 right. Reward: +1 the first time each key is picked up, +10 on the
    target, which terminates the episode (`info["success"]` is then True). `info` also carries
    the agent's `position` (row, col) and the `keys_held`. The registered ids add gymnasium's
    `TimeLimit` (see `gridworld.MAX_EPISODE_STEPS`).

    `reset(options={"position": (row, col), "keys_held": ("green",)})` starts from any state
    in `reachable_states()`; without options the agent starts on a random start cell with no key.

    With `absorbing_target=True` (a pretraining protocol) the target still pays +10 and sets
    `info["success"]`, but does not end the episode: the agent stays on it (every action: reward 0,
    the same observation) until the time limit truncates. No effect on a maze without a target.

    With a `reward_map` (H x W, or {(row, col): value}; see `gridworld.reward_maps`) the task is
    that map instead: each step pays the value of the cell the agent is in after it, keys still
    open their passageways but pay nothing, and episodes end only at the step limit. The maze
    must then have no target.

    With a `task` (a `gridworld.Task` of this level, or the name of one in its family; see
    `gridworld.families`) each step pays the task's reward: a box task pays `task.reward(position,
    keys_held)` after each step, keys pay nothing and the target is absorbing (`absorbing_target` is
    then True); the target task is the key/target protocol.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 8}

    def __init__(self, level: str | Sequence[str] = "easy", render_mode: str | None = None,
                 reward_map=None, absorbing_target: bool = False, task: Task | str | None = None):
        self.layout = resolve_level(level)
        self.reward_map, self.task = env_task(self.layout, reward_map, task)
        self.absorbing_target = bool(absorbing_target) or (self.task is not None and self.task.kind != TARGET)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}; valid: {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.layer_names = self.layout.layer_names
        self.colours = np.array([LAYER_COLOURS[name] for name in self.layer_names], dtype=np.uint8)
        height, width = self.layout.shape
        self.observation_space = gym.spaces.Box(0, 1, (len(self.layer_names), height, width), np.uint8)
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        chars = "".join(_LAYER_CHARS[name] for name in self.layer_names)
        self._layer_codes = np.frombuffer(chars.encode("ascii"), np.uint8)[:, None, None]
        self._reachable = frozenset(self.layout.reachable_states())
        self._game = None

    def reachable_states(self) -> list[State]:
        """Every non-terminal (position, keys held) state an episode can visit."""
        return self.layout.reachable_states()

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        state = self._initial_state(options or {})
        self._held = state[1]
        self._success = False
        self._game = build_game(self.layout, state)
        observation, _, _ = self._game.its_showtime()
        self._board = observation.board
        return self._observe(), self._info()

    def step(self, action):
        try:
            move = operator.index(action)
        except TypeError:
            move = -1
        if not 0 <= move < len(ACTIONS):
            raise ValueError(
                f"invalid action {action!r}: expected an integer in 0..{len(ACTIONS) - 1} "
                f"({', '.join(f'{i} {name}' for i, name in enumerate(ACTIONS))})"
            )
        if self._game is None or (self._game.game_over and not self.absorbing_target):
            raise RuntimeError("the episode has ended (or never began): call reset() first")
        if self._game.game_over:  # absorbed on the target: nothing moves, nothing pays
            return self._observe(), 0.0, False, False, self._info()
        observation, reward, _ = self._game.play(move)
        self._board = observation.board
        if reward:  # every key pick-up pays a reward, so only then can the keys held change
            self._held = tuple(
                name for name in self.layout.key_names
                if name in self._held or not self._game.things[KEYS[name][0]].curtain.any()
            )
        terminated = self._game.game_over
        self._success = terminated
        info = self._info()
        if self.reward_map is not None:
            reward = self.reward_map[info["position"]]
        elif self.task is not None and self.task.kind != TARGET:
            reward = self.task.reward(info["position"], self._held)
        return self._observe(), float(reward or 0.0), terminated and not self.absorbing_target, False, info

    def render(self):
        if self.render_mode == "ansi":
            return "\n".join(row.tobytes().decode("ascii") for row in self._board)
        if self.render_mode == "rgb_array":
            image = self.colours[self._observe().argmax(axis=0)]
            return image.repeat(CELL_PIXELS, axis=0).repeat(CELL_PIXELS, axis=1)
        return None

    def _observe(self) -> np.ndarray:
        return (self._board[None] == self._layer_codes).astype(np.uint8)

    def _info(self) -> dict[str, Any]:
        row, col = self._game.things[AGENT].position
        return {"position": (int(row), int(col)), "keys_held": self._held, "success": self._success}

    def _initial_state(self, options: Mapping[str, Any]) -> State:
        position, held = reset_options(self.layout, options)
        if position is None:
            position = self.layout.start_cells[self.np_random.integers(len(self.layout.start_cells))]
        if (position, held) not in self._reachable:
            raise unreachable_start((position, held))
        return position, held
