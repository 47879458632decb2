"""Task families (`gridworld.families`): the task kinds worked by hand and by brute force through pycolab, the
built-in families of easy, hard and deep, the envs' payments and episode rules under a task, and bad input."""

import itertools

import numpy as np
import pytest

import gridworld
from gridworld.families import KEYED_BOX, TARGET, Task, TaskFamily, task_family

CORRIDOR = ("########",
            "#S.aA.T#",
            "########")
"""One start cell (1, 1), the green key at (1, 3), its passageway at (1, 4), the target at (1, 6)."""
TWO_KEYS = ("#######",
            "#SaA.T#",
            "#S#b#.#",
            "#..B..#",
            "#######")
"""Two start cells; the purple key below the green passageway opens the way round through B."""


def corridor_task(kind, cells=(), key=None, value=1.0):
    return Task(CORRIDOR, kind, kind, cells, key, value)


HAND_WORKED = {
    # kind: (task, horizon, optimal, random, room, keys needed), worked out on CORRIDOR from (1, 1)
    "box, 1 step": (corridor_task("box", [(1, 2)], value=2.0), 1, 2.0, 0.25 * 2, "start room", 0),
    # step 1: right (1/4) pays 2, then on the box 1/2 stay (2), left or right leave (0); else from (1, 1) 0.5
    "box, 2 steps": (corridor_task("box", [(1, 2)], value=2.0), 2, 4.0, 0.25 * (2 + 1) + 0.75 * 0.5,
                     "start room", 0),
    # right, right (the key), left back onto the box: only that sequence pays within 3 steps
    "keyed box": (corridor_task(KEYED_BOX, [(1, 2)], key="green"), 3, 1.0, 1 / 64, "start room", 1),
    # four steps right to (1, 5); staying there beats the absorbing target, which pays 0
    "box behind A": (corridor_task("box", [(1, 5)]), 6, 3.0, None, "behind A", 1),
    "box behind A, 4 steps": (corridor_task("box", [(1, 5)]), 4, 1.0, 0.25 ** 4, "behind A", 1),
    # the key in 3 steps (+1), the target in 5 (+10); within 2 steps only right, right pays (+1)
    "target, 5 steps": (corridor_task(TARGET), 5, 11.0, None, "behind A", 1),
    "target, 2 steps": (corridor_task(TARGET), 2, 1.0, 1 / 16, "behind A", 1),
}


@pytest.mark.parametrize("case", list(HAND_WORKED))
def test_references_and_labels_worked_by_hand(case):
    task, horizon, optimal, random, room, keys_needed = HAND_WORKED[case]
    got_optimal, got_random = gridworld.task_references(CORRIDOR, task, horizon)
    assert got_optimal == pytest.approx(optimal)
    if random is not None:
        assert got_random == pytest.approx(random)
    assert (task.room, task.keys_needed) == (room, keys_needed)


def brute_force(art, task, horizon):
    """Mean over start cells of the best and of the average return over all 4^T action sequences, each
    played through the pycolab env (`gridworld.make(art, task=task)`) until it ends."""
    env = gridworld.make(art, task=task, max_episode_steps=horizon)
    best, average = [], []
    for start in env.unwrapped.layout.start_cells:
        returns = []
        for actions in itertools.product(range(4), repeat=horizon):
            env.reset(options={"position": start})
            total, ended = 0.0, False
            for action in actions:
                if not ended:
                    _, reward, terminated, truncated, _ = env.step(action)
                    total, ended = total + reward, terminated or truncated
            returns.append(total)
        best.append(max(returns))
        average.append(np.mean(returns))
    return float(np.mean(best)), float(np.mean(average))


BRUTE_FORCE = {
    "corridor box": (CORRIDOR, Task(CORRIDOR, "box", "box", [(1, 2), (1, 5)], value=-0.5), 5),
    "corridor keyed box": (CORRIDOR, Task(CORRIDOR, "keyed", KEYED_BOX, [(1, 2), (1, 5)], key="green"), 5),
    "corridor target": (CORRIDOR, Task(CORRIDOR, "target", TARGET), 5),
    "two-key box": (TWO_KEYS, Task(TWO_KEYS, "box", "box", [(1, 4), (2, 5)]), 4),
    "two-key keyed box": (TWO_KEYS, Task(TWO_KEYS, "keyed", KEYED_BOX, [(2, 3), (1, 4)], key="purple"), 4),
    "two-key target": (TWO_KEYS, Task(TWO_KEYS, "target", TARGET), 4),
}


@pytest.mark.parametrize("case", list(BRUTE_FORCE))
def test_references_match_brute_force_over_every_action_sequence(case):
    art, task, horizon = BRUTE_FORCE[case]
    best, average = brute_force(art, task, horizon)
    assert gridworld.task_references(art, task, horizon) == pytest.approx((best, average))


def test_a_box_pays_every_step_on_it_keys_pay_nothing_and_the_target_absorbs():
    env = gridworld.make(CORRIDOR, task=corridor_task("box", [(1, 2), (1, 5)]), max_episode_steps=9)
    env.reset(seed=0)
    steps = [env.step(action) for action in (3, 0, 3, 3, 3, 3, 3, 2, 1)]
    rewards = [reward for _, reward, *_ in steps]
    assert rewards == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # the key (1, 3) pays nothing
    assert [info["position"] for *_, info in steps][-5:] == [(1, 5), (1, 6), (1, 6), (1, 6), (1, 6)]
    assert [terminated for _, _, terminated, _, _ in steps] == [False] * 9  # the target absorbs ...
    assert [truncated for *_, truncated, _ in steps] == [False] * 8 + [True]  # ... until the step limit
    assert env.unwrapped.absorbing_target and steps[-1][-1]["success"]


def test_a_keyed_box_pays_only_while_its_key_is_held():
    task = Task("hard", "mine", KEYED_BOX, [(5, 5)], key="purple", value=3.0)
    env = gridworld.make("hard", task=task)
    env.reset(options={"position": (5, 6), "keys_held": ("green",)})
    assert env.step(2)[1] == 0.0
    env.reset(options={"position": (5, 6), "keys_held": ("green", "purple")})
    assert env.step(2)[1] == 3.0 == task.reward((5, 5), ("green", "purple"))
    assert task.reward((5, 5), ("green",)) == 0.0 == task.reward((5, 6), ("green", "purple"))


@pytest.mark.parametrize(("level", "task"), [("hard", "target"), (TWO_KEYS, Task(TWO_KEYS, "t", TARGET))])
def test_the_target_task_is_the_key_target_protocol(level, task):
    plain = gridworld.make(level, max_episode_steps=30)
    tasked = gridworld.make(level, task=task, max_episode_steps=30)
    layout, rng = gridworld.resolve_level(level), np.random.default_rng(0)
    _, info = plain.reset(seed=3)
    assert tasked.reset(seed=3)[1] == info
    ended = 0
    for _ in range(300):  # mostly along shortest solutions, so the target gets reached
        action = rng.integers(4) if rng.random() < 0.2 else gridworld.shortest_path(
            layout, (info["position"], info["keys_held"]))[0]
        expected, got = plain.step(action), tasked.step(action)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1:] == expected[1:]
        info = expected[4]
        if expected[2] or expected[3]:
            ended += expected[2]
            info = plain.reset()[1]
            assert tasked.reset()[1] == info
    assert ended >= 5 and not tasked.unwrapped.absorbing_target


def test_the_target_task_s_tables_are_the_protocol_s_and_with_task_sets_each_task_s_rules():
    tables = gridworld.compile_level("hard", task="target")
    np.testing.assert_array_equal(tables.reward, gridworld.compile_level("hard").reward)
    assert not tables.absorbing_target
    assert gridworld.compile_level("hard", task="target", absorbing_target=True).absorbing_target
    box = tables.with_task("behind A box 1")
    assert box.absorbing_target and box.task.name == "behind A box 1"
    back = box.with_task("target")
    assert not back.absorbing_target and back.reward.tolist() == tables.reward.tolist()


FAMILY_ROOMS = {"easy": ("start room", "behind A"), "hard": ("start room", "behind A", "behind A+B"),
                "deep": ("start room", "behind A", "behind A+B"),
                "detour": ("behind A", "behind B", "start room"),
                "fork": ("start room", "behind A", "behind A+B", "behind B")}
KEYS_NEEDED = {("start room", None): 0, ("behind A", None): 1, ("behind A+B", None): 2,
               ("start room", "green"): 1, ("start room", "purple"): 2, ("behind A", "purple"): 2}
"""Keys needed by the boxes of each room, by the key a keyed box needs (None: a plain box), where the purple
key lies behind the green passageway (easy, hard, deep)."""
HELD_OUT_KEYS_NEEDED = {
    # detour: the purple key behind A, its passageway in the start room's wall: behind B needs both
    "detour": {**KEYS_NEEDED, ("behind B", None): 2},
    # fork: both keys in the start room, each opening one side room; the target's room needs both
    "fork": {**KEYS_NEEDED, ("start room", "purple"): 1, ("behind B", None): 1, ("behind B", "green"): 2},
}


@pytest.mark.parametrize("level", gridworld.TASK_FAMILIES)
def test_each_family_covers_every_room_with_all_three_kinds(level):
    family = task_family(level)
    assert isinstance(family, TaskFamily) and len(family) >= 12
    assert len(set(family.names)) == len(family) and [task.name for task in family] == list(family.names)
    assert {task.kind for task in family} == set(gridworld.TASK_KINDS)
    room_of, names = gridworld.rooms(level)
    assert names == FAMILY_ROOMS[level]
    boxes = [task for task in family if task.kind != TARGET]
    assert {task.room for task in boxes} == set(names)  # every room, a random walk's rare ones included
    layout = gridworld.resolve_level(level)
    for task in boxes:
        assert {names[room_of[cell]] for cell in task.cells} == {task.room}
        assert not any(layout.walls[cell] or cell == layout.target for cell in task.cells)
        assert task.keys_needed == HELD_OUT_KEYS_NEEDED.get(level, KEYS_NEEDED)[task.room, task.key]
        assert task.task_class == task.room + (f" with {task.key}" if task.key else "")
        assert family[task.name] is task
    target = family["target"]
    assert target.room == names[room_of[layout.target]] and target.keys_needed == len(layout.key_names)
    assert target.task_class == "target"


@pytest.mark.parametrize("level", gridworld.TASK_FAMILIES)
def test_every_task_has_an_optimum_above_random_and_the_target_task_the_protocol_s_references(level):
    for task in task_family(level):
        optimal, random = gridworld.task_references(level, task)
        assert optimal > random >= 0.0, task.name
        assert 0 < gridworld.normalised_score((optimal + random) / 2, optimal, random) < 1
    protocol = gridworld.compile_level(level)
    value = {"optimal": np.zeros(len(protocol.states)), "random": np.zeros(len(protocol.states))}
    for _ in range(gridworld.MAX_EPISODE_STEPS):  # the protocol's own tables, no task involved
        value = {"optimal": (protocol.reward + value["optimal"][protocol.successor]).max(axis=1),
                 "random": (protocol.reward + value["random"][protocol.successor]).mean(axis=1)}
    expected = tuple(float(value[name][protocol.start_states].mean()) for name in ("optimal", "random"))
    assert gridworld.task_references(level, "target") == pytest.approx(expected)
    shortest = {"easy": 11.0}.get(level, 12.0)  # the shortest solutions' return: one key, or two
    assert gridworld.task_references(level, "target")[0] == shortest


def test_families_are_fixed_lists():
    assert task_family("easy").names == (
        "target", "start room box 1", "start room box 2", "start room box 3", "start room box 4",
        "behind A box 1", "behind A box 2", "behind A box 3", "behind A box 4", "start room box 1 with green",
        "start room box 2 with green", "start room box 3 with green", "start room box 4 with green",
    )
    assert [len(task_family(level)) for level in gridworld.TASK_FAMILIES] == [13, 22, 22, 22, 33]
    hard = task_family("hard")
    assert hard["behind A+B box 1"].cells == ((2, 8), (3, 8))  # the room too small for a 2x2 box: all of it
    assert hard["behind A box 2 with purple"].cells == hard["behind A box 2"].cells == (
        (3, 5), (3, 6), (4, 5), (4, 6))
    gridworld.families._task_family.cache_clear()
    assert task_family("hard") == hard and task_family("hard") is not hard


def test_rooms_are_components_with_passageways_as_walls():
    room_of, names = gridworld.rooms("hard")
    assert names[room_of[1, 1]] == "start room" and names[room_of[6, 7]] == "behind A"
    assert names[room_of[1, 8]] == names[room_of[3, 8]] == "behind A+B"
    assert room_of[4, 4] == room_of[3, 7] == room_of[0, 0] == -1  # passageways and walls
    assert gridworld.rooms(("#######", "#SaA.T#", "#######"))[1] == ("start room", "behind A")
    pocket = ("#########", "#SaA.T#.#", "#########")
    assert gridworld.rooms(pocket)[1] == ("start room", "behind A", "walled off")
    twice = ("#########", "#.A.SaA.#", "#########")  # two rooms behind A: numbered
    assert gridworld.rooms(twice)[1] == ("behind A (1)", "start room", "behind A (2)")
    assert gridworld.rooms(TWO_KEYS)[1] == ("start room", "behind A (1)", "behind A (2)")  # (2): the key b
    span = Task(TWO_KEYS, "span", "box", [(1, 1), (1, 3), (1, 4)])
    assert span.room == "start room, passageway A, behind A (1)"


def test_tasks_by_name_in_the_envs_and_tables():
    task = task_family("deep")["behind A box 3"]
    env = gridworld.make("deep", task="behind A box 3")
    vector = gridworld.make_vector("deep", 2, task=task)
    assert env.unwrapped.task is task is vector.compiled.task  # the family's own, looked up by name
    compiled = gridworld.compile_level("deep", task="behind A box 3")
    assert compiled.absorbing_target and compiled.task == task
    assert compiled.successor is gridworld.compile_level("deep").successor  # the cached dynamics
    assert "task 'behind A box 3'" in repr(compiled)


BAD_TASKS = [
    (("easy", "x", "box", [(0, 0)]), r"box cell \(0, 0\) is a wall; a box lies on free cells"),
    (("easy", "x", "box", [(10, 3)]),
     r"box cell \(10, 3\) is outside the 10x10 level easy; rows 0-9, columns 0-9"),
    (("easy", "x", "box", [(5, 5), (6, 7)]), r"box cell \(6, 7\) is the target; a box may not include it"),
    ((("#########", "#SaA.T#.#", "#########"), "x", "box", [(1, 7)]),
     r"box cell \(1, 7\) is reached by no state; a box lies where an episode can go"),
    ((("#######", "#S.TaA#", "#######"), "x", KEYED_BOX, [(1, 2)], "green"),
     r"box cell \(1, 2\) is reached by no state holding the green key"),
    (("easy", "x", KEYED_BOX, [(1, 1)], "purple"),
     "task 'x': a keyed box needs a key of level easy, got 'purple'; its keys: green"),
    (("easy", "x", KEYED_BOX, [(1, 1)]), "a keyed box needs a key of level easy, got None; its keys: green"),
    (("easy", "x", "box", [(1, 1)], "green"), "a box pays whatever keys are held; give kind 'keyed box'"),
    (("easy", "x", "box", []), "a box needs at least one cell"),
    (("easy", "x", "box", [(1, "a")]), "cells must be \\(row, col\\) pairs of integers"),
    (("easy", "x", "box", [(1, 1)], None, 0.0), "value must be a finite non-zero number .*, got 0.0"),
    (("easy", "x", "box", [(1, 1)], None, float("nan")), "value must be a finite non-zero number .*got nan"),
    (("easy", "x", "circle", [(1, 1)]), "unknown kind 'circle'; valid kinds: 'box', 'keyed box', 'target'"),
    (("easy", "", "box", [(1, 1)]), "a task's name must be a non-empty string"),
    (("open10", "x", TARGET),
     "level open10 has no target 'T', so no target task; its kinds: 'box', 'keyed box'"),
    (("easy", "x", TARGET, [(1, 1)]), "a target task pays the key/target protocol; give it no cells"),
    (("medium", "x", "box", [(1, 1)]),
     "unknown level 'medium'; valid levels: easy, hard, deep, detour, fork, open10"),
]


@pytest.mark.parametrize(("arguments", "message"), BAD_TASKS, ids=[message[:40] for _, message in BAD_TASKS])
def test_bad_tasks_are_refused_at_construction(arguments, message):
    with pytest.raises(ValueError, match=message):
        Task(*arguments)


def test_bad_families_and_lookups_are_refused():
    box = Task("easy", "x", "box", [(1, 1)])
    with pytest.raises(ValueError, match="a task family needs at least one task"):
        TaskFamily("easy", ())
    with pytest.raises(ValueError, match="task names must be unique in a family; repeated: 'x'"):
        TaskFamily("easy", (box, Task("easy", "x", "box", [(1, 2)])))
    with pytest.raises(ValueError, match="task 'x' is on level easy, not on the family's level hard"):
        TaskFamily("hard", (box,))
    for level in ("open10", "medium", CORRIDOR):
        with pytest.raises(ValueError, match="no task family for level .*; levels with families: easy, hard, "
                                             "deep, detour, fork$"):
            task_family(level)
    with pytest.raises(KeyError, match="unknown task 'nope' in the family of level easy; valid tasks: "
                                       "'target', 'start room box 1', "):
        task_family("easy")["nope"]
    for make in (gridworld.make, gridworld.make_vector, gridworld.compile_level):
        with pytest.raises(ValueError, match="unknown task 'nope' in the family of level hard; valid tasks"):
            make("hard", task="nope")
        with pytest.raises(ValueError, match="task 'x' is on level easy, not on this level \\(hard\\)"):
            make("hard", task=box)
        with pytest.raises(ValueError, match="task 'target' is a name, but only the levels easy, hard, deep, "
                                             "detour, fork"):
            make(CORRIDOR, task="target")
    with pytest.raises(ValueError, match="give a reward_map or a task, not both"):
        gridworld.make("open10", reward_map={(1, 1): 1.0}, task=Task("open10", "x", "box", [(1, 1)]))
    with pytest.raises(TypeError, match="task must be a Task or the name of one"):
        gridworld.compile_level("easy", task=3)
    with pytest.raises(ValueError, match="pays the key/target protocol, by move, not by state"):
        task_family("easy")["target"].reward((1, 1))
    with pytest.raises(ValueError, match="horizon must be an integer from 1 to 100,000"):
        gridworld.task_references("easy", "target", 0)


def test_a_box_task_on_a_target_free_maze_is_its_reward_map():
    task = Task("fourroom", "corner", "box", [(1, 1), (1, 2)], value=2.0)
    grid = np.zeros((12, 12))
    grid[1, 1] = grid[1, 2] = 2.0
    assert gridworld.task_references("fourroom", task, 20) == pytest.approx(
        (gridworld.optimal_return(gridworld.resolve_level("fourroom"), grid, 20),
         gridworld.random_return(gridworld.resolve_level("fourroom"), grid, 20)))
    np.testing.assert_array_equal(gridworld.compile_level("fourroom", task=task).reward,
                                  gridworld.compile_level("fourroom", grid).reward)
