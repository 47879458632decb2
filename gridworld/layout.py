"""Key-passageway mazes as ASCII art: the legend, validation, and a plain-Python model of the rules.

The environment plays the game with pycolab; this module reads the art, rejects malformed
levels at construction, and enumerates reachable states by breadth-first search over the same
rules, written out independently (the tests check the two agree move by move).
"""

from __future__ import annotations

import functools
import numbers
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gridworld.levels import HELD_OUT, LEVELS, MAZES

Cell = tuple[int, int]
State = tuple[Cell, tuple[str, ...]]
"""(agent position, names of the keys held, in `KEYS` order)."""

KEYS: dict[str, tuple[str, str]] = {
    "green": ("a", "A"), "purple": ("b", "B"), "cyan": ("c", "C"), "red": ("d", "D"), "yellow": ("e", "E"),
    "pink": ("f", "F"),
}
"""Key name -> (key character, passageway character): the keys a level may use (at most `len(KEYS)`, as each
needs its own observation planes). Keys held are always listed in this order."""
MIN_KEY_PLANES = 2
"""Every level has the planes of at least the first two keys (green, purple), so every level using no other
key shows the same 8 planes."""
LEGEND: dict[str, str] = {
    "#": "wall",
    ".": "floor",
    "S": "start cell (floor; each episode starts on one of them, uniformly at random)",
    **{char: meaning for name, (key, passage) in KEYS.items() for char, meaning in (
        (key, f"{name} key"),
        (passage, f"{name} passageway (closed, drawn black, until the {name} key is held)"),
    )},
    "T": "target (reaching it ends the episode)",
}
ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
MOVES: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))
KEY_REWARD = 1.0
TARGET_REWARD = 10.0


def _key_letters() -> str:
    return ", ".join(f"{key!r} {name}" for name, (key, _) in KEYS.items())


def _legend_text() -> str:
    """The legend in one line, the keys as one entry."""
    keys = (f"keys {_key_letters()}, each opening the passageways of its capital letter (closed, drawn "
            "black, until the key is held)")
    return "; ".join([*(f"{char!r} {LEGEND[char]}" for char in "#.S"), keys, f"'T' {LEGEND['T']}"])


def layer_names(num_keys: int = MIN_KEY_PLANES) -> tuple[str, ...]:
    """Observation planes, in order, with the planes of the first `num_keys` keys of `KEYS`: floor, wall,
    agent, each key and its passageway, target. A key's planes have the same index in every level."""
    keys = tuple(KEYS)[:num_keys]
    return ("floor", "wall", "agent", *(f"{name}_{part}" for name in keys for part in ("key", "passage")),
            "target")


@dataclass(frozen=True)
class Layout:
    """A validated maze. Build it with `Layout.parse(art)`."""

    art: tuple[str, ...]
    start_cells: tuple[Cell, ...]
    key_cells: dict[str, Cell]
    passage_cells: dict[str, tuple[Cell, ...]]
    target: Cell | None
    """The target's cell; None for a maze without one (usable with reward-map tasks only)."""

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.art), len(self.art[0])

    @property
    def walls(self) -> np.ndarray:
        """(H, W) boolean mask of the wall cells."""
        return np.array([[char == "#" for char in row] for row in self.art])

    @property
    def key_names(self) -> tuple[str, ...]:
        """Names of the keys this maze contains, in `KEYS` order."""
        return tuple(name for name in KEYS if name in self.key_cells)

    @property
    def layer_names(self) -> tuple[str, ...]:
        """This maze's observation planes: `layer_names` up to its last key in `KEYS` order, and at least
        `MIN_KEY_PLANES` keys' (a maze with keys green and red has empty purple and cyan planes)."""
        last = max((tuple(KEYS).index(name) + 1 for name in self.key_names), default=0)
        return layer_names(max(MIN_KEY_PLANES, last))

    @classmethod
    def parse(cls, art: Sequence[str]) -> Layout:
        """Check `art` against the legend and the rules; raise ValueError saying what is wrong."""
        if isinstance(art, str) or not all(isinstance(row, str) for row in art):
            raise TypeError("art must be a sequence of strings, one per row of the maze")
        art = tuple(art)
        if not art or not art[0]:
            raise ValueError("art is empty: give at least one non-empty row")
        for i, row in enumerate(art):
            if len(row) != len(art[0]):
                raise ValueError(
                    f"art is ragged: row {i} has {len(row)} characters, row 0 has {len(art[0])}"
                )
        cells: dict[str, list[Cell]] = {char: [] for char in LEGEND}
        unknown = []
        for r, row in enumerate(art):
            for c, char in enumerate(row):
                (cells[char] if char in LEGEND else unknown).append((r, c))
        for r, c in unknown:
            char = art[r][c]
            if char.isascii() and char.islower() and char.upper() not in LEGEND:
                raise ValueError(
                    f"too many keys for the observation planes: {char!r} at row {r}, column {c} is not a "
                    f"key; a level has at most {len(KEYS)} keys, the letters {_key_letters()}"
                )
        if unknown:
            r, c = unknown[0]
            raise ValueError(
                f"unknown character {art[r][c]!r} at row {r}, column {c}; the legend is: {_legend_text()}"
            )
        if not cells["S"]:
            raise ValueError("art has no agent start: mark at least one start cell with 'S'")
        if len(cells["T"]) > 1:
            raise ValueError(f"art may have at most one target 'T', found {len(cells['T'])}")
        key_cells, passage_cells = {}, {}
        for name, (key_char, passage_char) in KEYS.items():
            if len(cells[key_char]) > 1:
                raise ValueError(
                    f"the {name} key {key_char!r} appears {len(cells[key_char])} times; at most once"
                )
            if cells[passage_char] and not cells[key_char]:
                raise ValueError(
                    f"art has a {name} passageway {passage_char!r} but no {name} key {key_char!r}"
                )
            if cells[key_char] and not cells[passage_char]:
                raise ValueError(
                    f"art has a {name} key {key_char!r} but no {name} passageway {passage_char!r}: every key "
                    f"opens its passageway (a key that only pays can open a walled-off {passage_char!r})"
                )
            if cells[key_char]:
                key_cells[name] = cells[key_char][0]
                passage_cells[name] = tuple(cells[passage_char])
        layout = cls(art, tuple(cells["S"]), key_cells, passage_cells, (cells["T"] or [None])[0])
        for start in layout.start_cells if layout.target is not None else ():
            if shortest_path(layout, (start, ())) is None:
                raise ValueError(
                    f"the target at {layout.target} cannot be reached from the start cell "
                    f"{start}, even picking up every key on the way"
                )
        return layout

    def step(self, state: State, action: int) -> tuple[State, float, bool]:
        """The rules: (next state, reward, terminated) for one move from a non-terminal state.

        A move into a wall, off the board, or into a passageway whose key is not held leaves the
        agent where it is. Entering a key's cell picks the key up (+1, once); holding a key opens
        its passageway from the next move on. Entering the target pays +10 and ends the episode.
        """
        (r, c), held = state
        dr, dc = MOVES[action]
        nr, nc = r + dr, c + dc
        height, width = self.shape
        if not (0 <= nr < height and 0 <= nc < width):
            return state, 0.0, False
        char = self.art[nr][nc]
        closed = {KEYS[name][1] for name in self.key_names if name not in held}
        if char == "#" or char in closed:
            return state, 0.0, False
        reward = 0.0
        for name in self.key_names:
            if (nr, nc) == self.key_cells[name] and name not in held:
                held = tuple(k for k in self.key_names if k in held or k == name)
                reward += KEY_REWARD
        if (nr, nc) == self.target:
            return ((nr, nc), held), reward + TARGET_REWARD, True
        return ((nr, nc), held), reward, False

    def reachable_states(self) -> list[State]:
        """Every non-terminal (position, keys held) state reachable from a start cell, sorted."""
        seen = {(cell, ()) for cell in self.start_cells}
        frontier = deque(seen)
        while frontier:
            state = frontier.popleft()
            for action in range(len(ACTIONS)):
                nxt, _, terminated = self.step(state, action)
                if not terminated and nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        return sorted(seen, key=lambda s: (len(s[1]), s[1], s[0]))


BUILT_IN: dict[str, tuple[str, ...]] = {**LEVELS, **HELD_OUT, **MAZES}
"""Every built-in level and maze by name."""


@functools.cache
def _built_in(name: str) -> Layout:
    """The built-in level or maze `name`, parsed once per process (a parse walks every shortest path: ~10 ms,
    asked for hundreds of times by a study's evaluations). A `Layout` is frozen and shared."""
    return Layout.parse(BUILT_IN[name])


def resolve_level(level: str | Sequence[str]) -> Layout:
    """A built-in level or maze by name, or a user's ASCII art, as a validated `Layout`."""
    if isinstance(level, str):
        if level not in BUILT_IN:
            raise ValueError(f"unknown level {level!r}; valid levels: {', '.join(BUILT_IN)} (or ASCII art)")
        return _built_in(level)
    if isinstance(level, Layout):
        return level
    if not isinstance(level, Sequence):
        raise TypeError(f"level must be a level name ({', '.join(BUILT_IN)}) or ASCII art (a sequence of "
                        f"strings, one per row), got {type(level).__name__} {level!r:.60}")
    return Layout.parse(level)


MAX_REWARD = 1e100
"""The largest size of a reward map's value: far beyond any task, yet a return summed over a billion steps
stays a finite float64 (1e308 per step made the optimal return inf)."""


def as_reward_map(layout: Layout, reward_map) -> np.ndarray:
    """Validate a reward-map task for `layout` (H x W array, or {(row, col): value} /
    [((row, col), value), ...]): finite, nothing on walls, and only on a maze without a target."""
    if layout.target is not None:
        raise ValueError("a reward_map replaces the key/target protocol: use a maze without a target 'T'")
    height, width = layout.shape
    first = reward_map[0] if isinstance(reward_map, Sequence) and len(reward_map) else None
    pairs = isinstance(first, Sequence) and not isinstance(first, str) and len(first) == 2 and \
        isinstance(first[0], Sequence) and not isinstance(first[0], str)
    if isinstance(reward_map, Mapping) or pairs:
        cells = reward_map.items() if isinstance(reward_map, Mapping) else reward_map
        grid = np.zeros((height, width))
        for cell, value in cells:
            if len(cell) != 2 or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool)
                                         for i in cell):
                raise ValueError(f"reward cell {cell!r} must be a (row, col) pair of integers")
            row, col = (int(i) for i in cell)
            if not (0 <= row < height and 0 <= col < width):
                raise ValueError(f"reward cell ({row}, {col}) is off the {height}x{width} grid")
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"reward cell ({row}, {col}) pays {value!r}: reward map values must be real "
                                 "numbers")
            grid[row, col] = value
    else:
        raw = np.asarray(reward_map)
        if raw.dtype.kind not in "iuf":
            raise ValueError(f"reward map values must be real numbers, got an array of {raw.dtype}")
        grid = raw.astype(float)
        if grid.shape != (height, width):
            raise ValueError(f"reward map has shape {grid.shape}; this maze is {height}x{width}")
    if not np.isfinite(grid).all():
        raise ValueError("reward map values must be finite numbers")
    if np.abs(grid).max(initial=0.0) > MAX_REWARD:
        raise ValueError(f"reward map values must be at most {MAX_REWARD:g} in size (a return summed over "
                         f"an episode's steps must stay a finite float), got {np.abs(grid).max():g}")
    walls = np.argwhere((grid != 0) & layout.walls)
    if len(walls):
        raise ValueError(f"reward map puts reward on wall cells {[(int(r), int(c)) for r, c in walls]}")
    return grid


def shortest_path(layout: Layout, state: State) -> list[int] | None:
    """The fewest actions that take the agent from `state` to the target (None if impossible)."""
    parents: dict[State, tuple[State, int] | None] = {state: None}
    frontier = deque([state])
    while frontier:
        current = frontier.popleft()
        for action in range(len(ACTIONS)):
            nxt, _, terminated = layout.step(current, action)
            if terminated:
                actions = [action]
                while parents[current] is not None:
                    current, previous_action = parents[current]
                    actions.append(previous_action)
                return actions[::-1]
            if nxt not in parents:
                parents[nxt] = (current, action)
                frontier.append(nxt)
    return None
