"""Task families: many downstream tasks on each key level, so one pretraining can be scored on all of them.

A `Task` on a level is one of `TASK_KINDS`:
- "box": pays `value` at every step that ends with the agent on one of its `cells`,
  r(s') = value * [position(s') in cells], a function of the next state as successor features assume;
- "keyed box": the same, only while the agent holds `key`: r(s') = value * [position(s') in cells, key held];
- "target": the level's own key/target protocol (+1 the first time each key is picked up, +10 on reaching
  the target, which ends the episode).

Under a box task (either kind) the level's dynamics and observations are those of pretraining (same art,
same compiled states); keys still open their passageways but pay nothing; the target is absorbing (the agent
that steps on it stays there, paid 0, as with `absorbing_target=True`); episodes run to the step limit. A box
lies on free cells other than the target, each reached by some state (holding the key, for a keyed box).

Each task carries the labels a study groups by, computed once from the level: its `room` (`rooms`: the
connected components of the free cells with passageways taken as walls, named "start room", "behind A",
"behind A+B", ...) and `keys_needed`, the fewest keys held on arriving in a state that pays (on arriving at
the target, for the target task).

`task_family(level)` gives the built-in family of easy, hard, deep and the held-out levels detour and fork
(`TASK_FAMILIES`), by a fixed rule:
the target task; in every room up to `BOXES_PER_ROOM` 2x2 boxes spread over it; and for every room and every
key that a state in the room may or may not hold, a keyed copy of each of the room's boxes. The exact
references of a task (optimal and uniformly random returns) are `gridworld.reward_maps.task_references`.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from gridworld.layout import ACTIONS, BUILT_IN, KEYS, MAX_REWARD, MOVES, Cell, Layout, State, resolve_level

BOX, KEYED_BOX, TARGET = "box", "keyed box", "target"
TASK_KINDS: tuple[str, ...] = (BOX, KEYED_BOX, TARGET)
"""The kinds of task: a box, a box that pays only while a key is held, the level's key/target protocol."""
TASK_FAMILIES: tuple[str, ...] = ("easy", "hard", "deep", "detour", "fork")
"""The levels with a built-in task family (`task_family`): the course's three key levels and the held-out two
(`gridworld.HELD_OUT`)."""
BOX_SIDE = 2
"""A family's boxes are BOX_SIDE x BOX_SIDE squares of cells (a room too small for one: its free cells)."""
BOXES_PER_ROOM = 4
"""The most boxes a family places in one room."""


@dataclass(frozen=True)
class _Level:
    """What the tasks of a level are checked and labelled against, found once per art."""

    layout: Layout
    name: str
    """The built-in name of the art, or "your art"."""
    states: tuple[State, ...]
    """`layout.reachable_states()`: every non-terminal (position, keys held)."""
    arrivals: tuple[State, ...]
    """The target with each set of keys held on arriving there."""
    room_of: np.ndarray
    """(H, W) int, read-only: each cell's room index; -1 on walls and passageways."""
    room_names: tuple[str, ...]


@functools.lru_cache(maxsize=32)
def _level(level: str | tuple[str, ...]) -> _Level:
    layout = resolve_level(level)
    name = next((name for name, art in BUILT_IN.items() if art == layout.art), "your art")
    states = tuple(layout.reachable_states())
    moves = [layout.step(state, action) for state in states for action in range(len(ACTIONS))]
    arrivals = {nxt for nxt, _, terminated in moves if terminated}
    room_of, room_names = _rooms(layout)
    return _Level(layout, name, states, tuple(sorted(arrivals)), room_of, room_names)


def rooms(level: str | Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """A level's rooms: the connected components of its free cells, passageway cells taken as walls, indexed
    in reading order of their first cell. Returns each cell's room index ((H, W) int, read-only, -1 on walls
    and passageways) and each room's name: "start room" for one holding start cells; "behind A+B" for one
    entered, on the way from a start room through the fewest rooms and passageway cells, through passageway
    A then B; "walled off" for one no way reaches. A name that repeats is numbered: "behind A (2)"."""
    facts = _level(_key(level))
    return facts.room_of, facts.room_names


def _rooms(layout: Layout) -> tuple[np.ndarray, tuple[str, ...]]:
    height, width = layout.shape
    passage = {cell: KEYS[name][1] for name, cells in layout.passage_cells.items() for cell in cells}
    open_cells = ~layout.walls
    room_of = np.full(layout.shape, -1)
    members: list[list[Cell]] = []

    def neighbours(cell: Cell) -> Iterator[Cell]:
        for dr, dc in MOVES:
            row, col = cell[0] + dr, cell[1] + dc
            if 0 <= row < height and 0 <= col < width and open_cells[row, col]:
                yield row, col

    for first in map(tuple, np.argwhere(open_cells).tolist()):
        if first in passage or room_of[first] >= 0:
            continue
        room_of[first] = len(members)
        members.append([first])
        frontier = deque([first])
        while frontier:
            for nxt in neighbours(frontier.popleft()):
                if nxt not in passage and room_of[nxt] < 0:
                    room_of[nxt] = len(members) - 1
                    members[-1].append(nxt)
                    frontier.append(nxt)
    starts = sorted({int(room_of[cell]) for cell in layout.start_cells})
    paths: dict[int | Cell, tuple[str, ...]] = dict.fromkeys(starts, ())
    frontier = deque(starts)
    while frontier:  # over rooms (ints) and passageway cells, collecting the passageway letters crossed
        node = frontier.popleft()
        for nxt_cell in sorted({n for cell in ([node] if isinstance(node, tuple) else members[node])
                                for n in neighbours(cell)}):
            nxt = nxt_cell if nxt_cell in passage else int(room_of[nxt_cell])
            if nxt not in paths:
                letter = passage.get(nxt_cell)
                paths[nxt] = paths[node] + ((letter,) if letter and letter not in paths[node] else ())
                frontier.append(nxt)
    names = ["start room" if room in starts else f"behind {'+'.join(paths[room])}" if room in paths
             else "walled off" for room in range(len(members))]
    room_of.setflags(write=False)
    return room_of, tuple(f"{name} ({names[:room].count(name) + 1})" if names.count(name) > 1 else name
                          for room, name in enumerate(names))


def _key(level: str | Sequence[str] | Layout) -> str | tuple[str, ...]:
    """A level as a hashable key: its name, or its art as a tuple; a TypeError naming `level` for anything
    else."""
    if isinstance(level, str):
        return level
    if isinstance(level, Layout):
        return level.art
    if not isinstance(level, Sequence):
        raise TypeError(f"level must be a level name ({', '.join(TASK_FAMILIES)}, ...) or ASCII art (a "
                        f"sequence of strings, one per row), got {type(level).__name__} {level!r:.60}")
    return tuple(level)


@dataclass(frozen=True)
class Task:
    """One downstream task on a level (see the module's docstring for the kinds and their rules).

    Task("hard", "my box", "box", cells=[(5, 5), (5, 6)]) or Task("hard", "mine", "keyed box", [(2, 1)],
    key="purple"); checked at construction. `room` and `keys_needed` are computed from the level then.
    """

    level: str | tuple[str, ...]
    """A built-in level's name, or ASCII art."""
    name: str
    kind: str
    """One of `TASK_KINDS`."""
    cells: tuple[Cell, ...] = ()
    """A box's cells, sorted (none for the target task)."""
    key: str | None = None
    """The key a keyed box needs held (a name in `gridworld.KEYS`); None for the other kinds."""
    value: float = 1.0
    """What a box pays per step on it (the target task pays the protocol's rewards instead)."""
    room: str = field(init=False, compare=False)
    """The name of the room the box lies in (its rooms, comma-separated, if it spans several; "passageway A"
    for a passageway cell); for the target task, the target's room."""
    keys_needed: int = field(init=False, compare=False)
    """The fewest keys held on arriving in a state that pays (for the target task: at the target)."""

    def __post_init__(self):
        object.__setattr__(self, "level", _key(self.level))
        facts = _level(self.level)
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a task's name must be a non-empty string, got {self.name!r}")
        if self.kind not in TASK_KINDS:
            raise ValueError(f"task {self.name!r}: unknown kind {self.kind!r}; valid kinds: "
                             f"{', '.join(map(repr, TASK_KINDS))}")
        if self.kind == TARGET:
            self._check_target(facts)
            paying = facts.arrivals
            cells = (facts.layout.target,)
        else:
            object.__setattr__(self, "cells", self._checked_cells(facts))
            paying = self._check_box(facts)
            cells = self.cells
        labels = [facts.room_names[facts.room_of[cell]] if facts.room_of[cell] >= 0
                  else f"passageway {facts.layout.art[cell[0]][cell[1]]}" for cell in cells]
        object.__setattr__(self, "room", ", ".join(dict.fromkeys(labels)))
        object.__setattr__(self, "keys_needed", min(len(held) for _, held in paying))

    def _check_target(self, facts: _Level) -> None:
        if facts.layout.target is None:
            raise ValueError(f"task {self.name!r}: level {facts.name} has no target 'T', so no target task; "
                             f"its kinds: {BOX!r}, {KEYED_BOX!r}")
        if self.cells or self.key is not None or self.value != 1.0:
            raise ValueError(f"task {self.name!r}: a target task pays the key/target protocol; give it no "
                             "cells, key or value (those are a box's)")

    def _checked_cells(self, facts: _Level) -> tuple[Cell, ...]:
        try:
            cells = sorted({(operator.index(row), operator.index(col)) for row, col in self.cells})
        except (TypeError, ValueError):
            raise ValueError(f"task {self.name!r}: cells must be (row, col) pairs of integers, "
                             f"got {self.cells!r}") from None
        if not cells:
            raise ValueError(f"task {self.name!r}: a box needs at least one cell")
        height, width = facts.layout.shape
        for row, col in cells:
            if not (0 <= row < height and 0 <= col < width):
                raise ValueError(f"task {self.name!r}: box cell {(row, col)} is outside the {height}x{width} "
                                 f"level {facts.name}; rows 0-{height - 1}, columns 0-{width - 1}")
            if facts.layout.walls[row, col]:
                raise ValueError(f"task {self.name!r}: box cell {(row, col)} is a wall; a box lies on free "
                                 "cells (floor, start, key, passageway)")
            if (row, col) == facts.layout.target:
                raise ValueError(f"task {self.name!r}: box cell {(row, col)} is the target; a box may not "
                                 "include it (under a box task the target is absorbing and pays 0)")
        return tuple(cells)

    def _check_box(self, facts: _Level) -> list[State]:
        """The states that pay; ValueError unless the kind, key and value fit and every cell pays."""
        if self.kind == BOX and self.key is not None:
            raise ValueError(f"task {self.name!r}: a box pays whatever keys are held; give kind "
                             f"{KEYED_BOX!r} to gate it on the {self.key} key")
        if self.kind == KEYED_BOX and self.key not in facts.layout.key_names:
            raise ValueError(f"task {self.name!r}: a keyed box needs a key of level {facts.name}, got "
                             f"{self.key!r}; its keys: {', '.join(facts.layout.key_names) or 'none'}")
        if (isinstance(self.value, bool) or not isinstance(self.value, numbers.Real)
                or not math.isfinite(self.value) or self.value == 0 or abs(self.value) > MAX_REWARD):
            raise ValueError(f"task {self.name!r}: value must be a finite non-zero number of size at most "
                             f"{MAX_REWARD:g} (a return summed over an episode must stay finite), "
                             f"got {self.value!r}")
        object.__setattr__(self, "value", float(self.value))
        paying = [(position, held) for position, held in facts.states if self.reward(position, held)]
        reached = {position for position, _ in paying}
        for cell in self.cells:
            if cell not in reached:
                holding = f" holding the {self.key} key" if self.key else ""
                raise ValueError(f"task {self.name!r}: box cell {cell} is reached by no state{holding}; "
                                 "a box lies where an episode can go (see the level's reachable_states())")
        return paying

    @property
    def task_class(self) -> str:
        """The class a study judges the task in: "target" for the target task, else its room, and for a keyed
        box the key it needs ("behind A with purple")."""
        if self.kind == TARGET:
            return TARGET
        return self.room + (f" with {self.key}" if self.key is not None else "")

    def reward(self, position: Cell, keys_held: Sequence[str] = ()) -> float:
        """r(s') of a box task for arriving at `position` holding `keys_held`: `value` if the position is one
        of `cells` (and, for a keyed box, `key` is held), else 0."""
        if self.kind == TARGET:
            raise ValueError(f"task {self.name!r} pays the key/target protocol, by move, not by state")
        on_box = (int(position[0]), int(position[1])) in self.cells
        return self.value if on_box and (self.key is None or self.key in keys_held) else 0.0


@dataclass(frozen=True)
class TaskFamily:
    """Tasks on one level with unique names: iterate over it, or look one up by name (`family["target"]`)."""

    level: str | tuple[str, ...]
    tasks: tuple[Task, ...]

    def __post_init__(self):
        object.__setattr__(self, "level", _key(self.level))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        facts = _level(self.level)
        if not self.tasks:
            raise ValueError("a task family needs at least one task")
        repeated = sorted({name for name in self.names if self.names.count(name) > 1})
        if repeated:
            raise ValueError(f"task names must be unique in a family; repeated: "
                             f"{', '.join(map(repr, repeated))}")
        for task in self.tasks:
            if _level(task.level).layout.art != facts.layout.art:
                raise ValueError(f"task {task.name!r} is on level {_level(task.level).name}, not on the "
                                 f"family's level {facts.name}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(task.name for task in self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __getitem__(self, name: str) -> Task:
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(f"unknown task {name!r} in the family of level {_level(self.level).name}; "
                       f"valid tasks: {', '.join(map(repr, self.names))}")


def task_family(level: str) -> TaskFamily:
    """The built-in task family of `level` (one of `TASK_FAMILIES`): the target task; per room (in reading
    order) up to `BOXES_PER_ROOM` boxes spread over it (`_spread_boxes`), "<room> box <i>"; then per room,
    per key that the room's states may or may not hold, a keyed copy of each of the room's boxes,
    "<room> box <i> with <key>"."""
    if not isinstance(level, str) or level not in TASK_FAMILIES:
        raise ValueError(f"no task family for level {level!r:.60}; levels with families: "
                         f"{', '.join(TASK_FAMILIES)}")
    return _task_family(level)


@functools.cache
def _task_family(level: str) -> TaskFamily:
    facts = _level(level)
    boxes = [_spread_boxes(facts, room) for room in range(len(facts.room_names))]
    tasks = [Task(level, TARGET, TARGET)]
    tasks += [Task(level, f"{facts.room_names[room]} box {i}", BOX, cells)
              for room, room_boxes in enumerate(boxes) for i, cells in enumerate(room_boxes, 1)]
    for room, room_boxes in enumerate(boxes):
        held = [keys for position, keys in facts.states if facts.room_of[position] == room]
        for key in facts.layout.key_names:
            if any(key in keys for keys in held) and not all(key in keys for keys in held):
                tasks += [Task(level, f"{facts.room_names[room]} box {i} with {key}", KEYED_BOX, cells,
                               key=key) for i, cells in enumerate(room_boxes, 1)]
    return TaskFamily(level, tuple(tasks))


def _spread_boxes(facts: _Level, room: int) -> list[tuple[Cell, ...]]:
    """Up to `BOXES_PER_ROOM` boxes in `room`, in reading order. The room's cells but the target are tiled
    into `BOX_SIDE` x `BOX_SIDE` squares from the room's top-left corner; of the squares wholly on them, the
    first pick is the farthest from their centroid, each next one the farthest from its nearest pick so far
    (Euclidean, between centres; ties go to reading order). A room too small for a square gets one box: its
    cells but the target."""
    cells = {tuple(cell) for cell in np.argwhere(facts.room_of == room).tolist()} - {facts.layout.target}
    top, left = min(row for row, _ in cells), min(col for _, col in cells)
    squares = [tuple((row + dr, col + dc) for dr in range(BOX_SIDE) for dc in range(BOX_SIDE))
               for row, col in sorted(cells) if (row - top) % BOX_SIDE == 0 and (col - left) % BOX_SIDE == 0]
    squares = [square for square in squares if set(square) <= cells]
    if not squares:
        return [tuple(sorted(cells))]
    centres = np.array([np.mean(square, axis=0) for square in squares])
    farthest = np.linalg.norm(centres - np.mean(sorted(cells), axis=0), axis=1)
    picked = np.zeros(len(squares), dtype=bool)
    for _ in range(min(BOXES_PER_ROOM, len(squares))):
        best = int(np.argmax(np.where(picked, -np.inf, farthest)))
        from_best = np.linalg.norm(centres - centres[best], axis=1)
        farthest = from_best if not picked.any() else np.minimum(farthest, from_best)
        picked[best] = True
    return [squares[i] for i in np.flatnonzero(picked)]


def resolve_task(level: str | Sequence[str] | Layout, task: Task | str) -> Task:
    """`task` checked against `level`: a `Task` on the same art, or the name of a task in the family of the
    level's art (see `task_family`)."""
    facts = _level(level.art if isinstance(level, Layout) else _key(level))
    if isinstance(task, str):
        if facts.name not in TASK_FAMILIES:
            raise ValueError(f"task {task!r} is a name, but only the levels {', '.join(TASK_FAMILIES)} have "
                             "a task family to look it up in: give a Task for this level")
        try:
            return task_family(facts.name)[task]
        except KeyError as error:
            raise ValueError(error.args[0]) from None
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task or the name of one in the level's family, got {task!r}")
    if _level(task.level).layout.art != facts.layout.art:
        raise ValueError(f"task {task.name!r} is on level {_level(task.level).name}, not on this level "
                         f"({facts.name})")
    return task

