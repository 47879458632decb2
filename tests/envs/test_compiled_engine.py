"""The compiled engine against pycolab: its tables against the rules of `Layout.step` and the boards of
`PassagewayEnv`, and `PassagewayVectorEnv` against a `SyncVectorEnv` of pycolab envs, step for step."""

import functools
import hashlib
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import gridworld
from gridworld.compiled import MAX_OBSERVATION_BYTES, MAX_STATES, check_size, compile_level

AGENT = gridworld.LAYER_NAMES.index("agent")
TWO_KEYS = ("#######",
            "#SaA.T#",
            "#S#b#.#",
            "#..B..#",
            "#######")
"""The target is reached holding the green key only (top row) or both keys (around through B)."""
THREE_KEYS = ("#######",
              "#SaA.T#",
              "#S#b#C#",
              "#c.B..#",
              "#######")
"""As `TWO_KEYS`, but the way round through B ends at the cyan passageway C; the cyan key may be picked up
first."""
FOUR_KEYS = ("########",
             "#SaA.D.#",
             "#S#b#cT#",
             "#d.B.C.#",
             "########")
"""Green and red (picked up in either order) open the way to the target; the cyan key lies behind the red
passageway D, and purple plus cyan open a second way round through B and C."""
KEY_MAZE = ("#####",
            "#S..#",
            "#.#.#",
            "#S.b#",
            "##B##",
            "#...#",
            "#####")
"""A target-free maze with a key and its passageway, for reward maps."""
KEY_MAZE_MAP = {(1, 3): 1.0, (3, 2): -0.5, (5, 1): 2.0}


def box_map(level, seed=0):
    return gridworld.random_box_reward_map(gridworld.resolve_level(level), num_boxes=2, box_size=3, seed=seed)


TWO_KEYS_TASK = gridworld.Task(TWO_KEYS, "keyed", "keyed box", [(1, 4), (2, 3)], key="purple")
FOUR_KEYS_TASK = gridworld.Task(FOUR_KEYS, "box", "box", [(2, 5), (1, 6)], value=-2.0)
"""Tasks on custom art: a box paying only with the purple key (its own cell among them), a box to avoid
beside the target."""
CASES = {
    "easy": ("easy", {"max_episode_steps": 13}),
    "hard": ("hard", {"max_episode_steps": 22}),
    "deep": ("deep", {"max_episode_steps": 36}),
    "deep absorbing": ("deep", {"absorbing_target": True, "max_episode_steps": 40}),
    "open10": ("open10", {"reward_map": box_map("open10"), "max_episode_steps": 7}),
    "fourroom": ("fourroom", {"reward_map": box_map("fourroom", 1), "max_episode_steps": 9}),
    "two-key art": (TWO_KEYS, {"max_episode_steps": 7}),
    "reward-map maze": (KEY_MAZE, {"reward_map": KEY_MAZE_MAP, "max_episode_steps": 10}),
    "easy absorbing": ("easy", {"absorbing_target": True, "max_episode_steps": 14}),
    "two-key absorbing": (TWO_KEYS, {"absorbing_target": True, "max_episode_steps": 7}),
    "three-key art": (THREE_KEYS, {"max_episode_steps": 7}),
    "three-key absorbing": (THREE_KEYS, {"absorbing_target": True, "max_episode_steps": 7}),
    "four-key art": (FOUR_KEYS, {"max_episode_steps": 12}),
    "four-key absorbing": (FOUR_KEYS, {"absorbing_target": True, "max_episode_steps": 12}),
    "easy box task": ("easy", {"task": "start room box 2", "max_episode_steps": 13}),
    "hard box task": ("hard", {"task": "behind A box 3", "max_episode_steps": 22}),
    "hard keyed box task": ("hard", {"task": "behind A box 3 with purple", "max_episode_steps": 22}),
    "deep target task": ("deep", {"task": "target", "max_episode_steps": 36}),
    "two-key keyed box task": (TWO_KEYS, {"task": TWO_KEYS_TASK, "max_episode_steps": 7}),
    "four-key box task, absorbing": (FOUR_KEYS, {"task": FOUR_KEYS_TASK, "absorbing_target": True,
                                                 "max_episode_steps": 12}),
}
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def assert_same(got, expected, where="result"):
    """Equal values, keys, dtypes and shapes, through dicts and object arrays (of arrays too)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and set(got) == set(expected), f"{where}: keys {set(got)}"
        for key in expected:
            assert_same(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, tuple | list):
        assert type(got) is type(expected) and len(got) == len(expected), f"{where}: {got!r} != {expected!r}"
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)} is not an array"
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), f"{where}: {got.dtype}{got.shape}"
        if expected.dtype == object:
            for i, (a, b) in enumerate(zip(got, expected, strict=True)):
                assert_same(a, b, f"{where}[{i}]")
        else:
            np.testing.assert_array_equal(got, expected, err_msg=where)
    else:
        assert type(got) is type(expected) and got == expected, f"{where}: {got!r} != {expected!r}"


@functools.cache
def guide(level) -> dict:
    """The first action of a shortest solution from each state (none on a maze without a target)."""
    layout = gridworld.resolve_level(level)
    if layout.target is None:
        return {}
    return {state: gridworld.shortest_path(layout, state)[0] for state in layout.reachable_states()}


def guided_actions(level, info, rng, greedy=0.85):
    """Shortest-solution actions with probability `greedy`, else uniform: the targets get reached."""
    actions = rng.integers(4, size=len(info["position"]))
    for i, state in enumerate(zip(info["position"], info["keys_held"], strict=True)):
        if rng.random() < greedy:
            actions[i] = guide(level).get(state, actions[i])
    return actions


def pycolab_batch(level, num_envs, mode, **kwargs):
    return gymnasium.vector.SyncVectorEnv([lambda: gridworld.make(level, **kwargs)] * num_envs,
                                          autoreset_mode=mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("case", list(CASES))
def test_vector_engine_equals_a_batch_of_pycolab_envs_step_for_step(case, mode):
    level, kwargs = CASES[case]
    num_envs, steps = 6, max(120, 4 * kwargs["max_episode_steps"])  # several episodes of the longest levels
    reference = pycolab_batch(level, num_envs, mode, **kwargs)
    engine = gridworld.make_vector(level, num_envs, autoreset_mode=mode, **kwargs)
    got, expected = engine.reset(seed=11), reference.reset(seed=11)
    assert_same(got, expected, "reset")
    rng = np.random.default_rng(0)
    ended = {"terminated": 0, "truncated": 0, "success": 0, "paid": 0}
    for t in range(steps):
        action = guided_actions(level, expected[-1], rng)
        got, expected = engine.step(action), reference.step(action)
        assert_same(got, expected, f"step {t}")
        ended["paid"] += (expected[1] != 0).sum()
        ended["terminated"] += expected[2].sum()
        ended["truncated"] += expected[3].sum()
        ended["success"] += expected[4]["success"].sum()
        ended["success"] += expected[4].get("final_info", {}).get("success", np.zeros(1, bool)).sum()
    assert ended["truncated"] >= num_envs * 2 and ended["paid"] > 0  # several time limits per env ...
    if gridworld.resolve_level(level).target is not None:  # ... and targets reached
        assert ended["success"] >= 10
        absorbing = kwargs.get("absorbing_target") or "box" in case  # a box task's target absorbs
        assert engine.compiled.absorbing_target == bool(absorbing)
        assert ended["terminated"] == (0 if absorbing else ended["success"])


def test_resets_with_seed_lists_options_and_masks_match_the_pycolab_batch():
    num_envs = 4
    reference = pycolab_batch("hard", num_envs, AutoresetMode.NEXT_STEP, max_episode_steps=9)
    engine = gridworld.make_vector("hard", num_envs, max_episode_steps=9)
    rng = np.random.default_rng(1)
    resets = [
        {"seed": [3, 8, 70, 2**40]},
        {},  # no seed: every env keeps drawing from its generator
        {"seed": [None, 9, None, 1]},
        {"options": {"keys_held": "green", "position": (5, 6)}},
        {"options": {"keys_held": ("green",)}},
        {"options": {"reset_mask": np.array([True, False, True, False])}},
        {"seed": 5, "options": {"reset_mask": np.array([False, True, False, False])}},
    ]
    for reset in resets:
        options = reset.get("options")
        copy = None if options is None else dict(options)  # SyncVectorEnv pops reset_mask
        assert_same(engine.reset(seed=reset.get("seed"), options=copy), reference.reset(**reset), str(reset))
        for t in range(25):
            action = rng.integers(4, size=num_envs)
            assert_same(engine.step(action), reference.step(action), f"{reset}, step {t}")


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
def test_state_observations_index_the_boards_of_board_mode(mode):
    kwargs = {"max_episode_steps": 10, "autoreset_mode": mode}
    boards = gridworld.make_vector("hard", 5, **kwargs)
    states = gridworld.make_vector("hard", 5, observation="state", **kwargs)
    table = states.observation_table
    assert table is states.compiled.observations
    obs, info = states.reset(seed=3)
    assert obs.dtype == np.int64 and states.observation_space.contains(obs)
    np.testing.assert_array_equal(table[obs], boards.reset(seed=3)[0])
    for action in np.random.default_rng(2).integers(4, size=(80, 5)):
        obs, *rest, info = states.step(action)
        board, *board_rest, board_info = boards.step(action)
        np.testing.assert_array_equal(table[obs], board)
        assert_same(rest, board_rest)
        if "final_obs" in board_info:
            for i in np.flatnonzero(board_info["_final_obs"]):
                np.testing.assert_array_equal(table[info["final_obs"][i]], board_info["final_obs"][i])


@pytest.mark.parametrize(("level", "reward_map"), [
    ("easy", None), ("hard", None), (TWO_KEYS, None), (THREE_KEYS, None), (FOUR_KEYS, None),
    (KEY_MAZE, KEY_MAZE_MAP), ("fourroom", box_map("fourroom")), ("open10", None),
])
def test_tables_follow_the_rules_of_layout_step(level, reward_map):
    """Every (state, action) of the tables against the plain-Python rules, an independent model."""
    compiled = compile_level(level, reward_map)
    layout = compiled.layout
    grid = None if reward_map is None else gridworld.layout.as_reward_map(layout, reward_map)
    nonterminal = layout.reachable_states()
    assert list(compiled.states[:compiled.num_nonterminal]) == nonterminal
    terminals = compiled.states[compiled.num_nonterminal:]
    assert all(position == layout.target for position, _ in terminals)
    assert compiled.terminal.tolist() == [False] * len(nonterminal) + [True] * len(terminals)
    for i, state in enumerate(nonterminal):
        for action in range(4):
            nxt, reward, terminated = layout.step(state, action)
            j = compiled.successor[i, action]
            assert (compiled.states[j], bool(compiled.terminal[j])) == (nxt, terminated)
            assert compiled.reward[i, action] == (reward if grid is None else grid[nxt[0]])
            assert compiled.index[nxt] == j == compiled.state_index(*nxt)
    assert {held for _, held in terminals} == {
        layout.step(s, a)[0][1] for s in nonterminal for a in range(4) if layout.step(s, a)[2]}
    for j in range(compiled.num_nonterminal, len(compiled.states)):
        assert compiled.successor[j].tolist() == [j] * 4 and compiled.reward[j].tolist() == [0.0] * 4
    assert [compiled.states[s] for s in compiled.start_states] == [(cell, ()) for cell in layout.start_cells]
    assert [tuple(p) for p in compiled.positions] == [position for position, _ in compiled.states]
    assert compiled.held.tolist() == [[k in held for k in layout.key_names] for _, held in compiled.states]
    assert compiled.successor.dtype == np.int64 and compiled.reward.dtype == np.float64


@pytest.mark.parametrize(("level", "tasks"), [
    ("easy", list(gridworld.task_family("easy"))), ("hard", list(gridworld.task_family("hard"))),
    (TWO_KEYS, [TWO_KEYS_TASK, gridworld.Task(TWO_KEYS, "target", "target")]), (FOUR_KEYS, [FOUR_KEYS_TASK]),
])
def test_task_tables_follow_the_rules_of_layout_step(level, tasks):
    """A box task pays task.reward of the state `Layout.step` moves to, and its target absorbs; the target
    task pays the rules' own rewards; the dynamics and boards are the level's."""
    protocol = compile_level(level)
    layout = protocol.layout
    for task in tasks:
        compiled = compile_level(level, task=task)
        assert compiled.task is task and compiled.absorbing_target == (task.kind != "target")
        assert compiled.successor is protocol.successor and compiled.observations is protocol.observations
        for i, state in enumerate(layout.reachable_states()):
            for action in range(4):
                nxt, reward, _ = layout.step(state, action)
                expected = reward if task.kind == "target" else task.reward(*nxt)
                assert compiled.reward[i, action] == expected, (task.name, state, action)
        assert not compiled.reward[compiled.num_nonterminal:].any() and not compiled.reward.flags.writeable


@pytest.mark.parametrize("level", ["hard", TWO_KEYS, THREE_KEYS, FOUR_KEYS])
def test_observations_are_what_pycolab_shows_after_every_move(level):
    compiled = compile_level(level)
    env = gridworld.PassagewayEnv(level)
    assert compiled.observations.shape[1] == len(env.layer_names) == len(compiled.layout.layer_names)
    target = env.layer_names.index("target")
    for i, (position, held) in enumerate(compiled.states[:compiled.num_nonterminal]):
        for action in range(4):
            obs, _ = env.reset(options={"position": position, "keys_held": held})
            np.testing.assert_array_equal(compiled.observations[i], obs)
            obs, *_ = env.step(action)
            np.testing.assert_array_equal(compiled.observations[compiled.successor[i, action]], obs)
    for j in range(compiled.num_nonterminal, len(compiled.states)):
        board = compiled.observations[j]
        assert board[AGENT].sum() == 0 and board[target][compiled.layout.target] == 1  # target over agent


def test_reward_maps_are_cheap_views_of_the_cached_dynamics():
    first, second = compile_level("open10", box_map("open10")), compile_level("open10", box_map("open10", 3))
    assert first.successor is second.successor and first.observations is second.observations
    assert not np.array_equal(first.reward, second.reward)
    again = compile_level("open10").with_reward_map(box_map("open10", 3))
    assert again.reward.tolist() == second.reward.tolist()
    for table in (first.successor, first.reward, first.observations, first.terminal):
        assert not table.flags.writeable


def test_absorbing_target_keeps_the_agent_on_the_target_in_both_engines():
    single = gridworld.make("easy", absorbing_target=True, max_episode_steps=6)
    vector = gridworld.make_vector("easy", 1, absorbing_target=True, max_episode_steps=6)
    single.reset(options={"position": (6, 6), "keys_held": ("green",)})
    vector.reset(options={"position": (6, 6), "keys_held": ("green",)})
    results = []
    for action in [3, 0, 1, 2, 3, 3]:  # onto the target, then every direction
        obs, reward, terminated, truncated, info = single.step(action)
        expected = (obs[None], np.array([reward]), np.array([terminated]), np.array([truncated]))
        assert_same(vector.step(np.array([action]))[:4], expected)
        results.append((reward, terminated, truncated, info["success"], info["position"], obs))
    assert [r[:5] for r in results] == [(10.0, False, False, True, (6, 7))] + [
        (0.0, False, False, True, (6, 7))] * 4 + [(0.0, False, True, True, (6, 7))]
    assert all(np.array_equal(r[5], results[0][5]) for r in results)
    assert results[0][5][AGENT].sum() == 0


def test_make_vec_gives_the_compiled_engine_with_gymnasium_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        envs = gymnasium.make_vec("gridworld/Passageway-Easy-v0", num_envs=16,
                                  vectorization_mode="vector_entry_point")
    assert isinstance(envs, gridworld.PassagewayVectorEnv) and envs.spec.id == "gridworld/Passageway-Easy-v0"
    assert envs.max_episode_steps == gridworld.MAX_EPISODE_STEPS and envs.num_envs == 16
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert envs.single_action_space == gymnasium.spaces.Discrete(4)
    assert envs.action_space == gymnasium.spaces.MultiDiscrete([4] * 16)
    assert envs.observation_space.shape == (16, 8, 10, 10) and envs.observation_space.dtype == np.uint8
    obs, _ = envs.reset(seed=4)
    assert envs.observation_space.contains(obs)
    np.testing.assert_array_equal(envs.reset(seed=4)[0], obs)  # seeding reproduces
    assert not np.array_equal(envs.reset(seed=5)[0], obs)
    envs.action_space.seed(0)
    obs, reward, terminated, truncated, _ = envs.step(envs.action_space.sample())
    assert envs.observation_space.contains(obs)
    assert (reward.dtype, terminated.dtype, truncated.dtype) == (np.float64, np.bool_, np.bool_)
    assert reward.shape == terminated.shape == truncated.shape == (16,)
    assert gridworld.make_vector("easy", 2, max_episode_steps=None).max_episode_steps == 100  # as make's
    custom = gridworld.make_vector(TWO_KEYS, 2, observation="state")
    assert custom.single_observation_space == gymnasium.spaces.Discrete(len(custom.compiled.states))
    assert custom.spec.id == gridworld.CUSTOM_ENV_ID


def open_room(height, width, keys=""):
    """A walled room, start top-left, then the given key characters."""
    inner = "S" + keys + "." * (width - 3 - len(keys))
    return ("#" * width, "#" + inner + "#", *["#" + "." * (width - 2) + "#"] * (height - 3), "#" * width)


@pytest.mark.parametrize(("level", "reward_map", "message"), [
    (open_room(150, 150), None,
     rf"up to 21,904 states \(21904 open cells x 1 key combinations\); the limit is {MAX_STATES:,}"),
    (open_room(102, 100, "aA"), None,
     rf"observation table needs up to 1,5\d\d.\d MiB .*19,600 states x 8 planes x 102x100 cells.* "
     rf"limit is {MAX_OBSERVATION_BYTES // 2**20} MiB"),
    (open_room(42, 42, "fF"), None,  # within the limit with 8 planes (see the next test)
     r"observation table needs up to 86.1 MiB \(3,200 states x 16 planes x 42x42 cells\)"),
    ("easy", {(1, 1): 1.0}, "replaces the key/target protocol"),
    ("open10", np.zeros((3, 3)), r"shape \(3, 3\); this maze is 12x12"),
    ("open10", np.full((12, 12), np.inf), "finite"),
    ("open10", {(0, 0): 1.0}, r"wall cells \[\(0, 0\)\]"),
    (["#S#", "#T"], None, "ragged: row 1 has 2"),
    ("medium", None,
     "unknown level 'medium'; valid levels: easy, hard, deep, detour, fork, open10, fourroom"),
])
def test_compile_level_refuses_bad_input_with_a_clear_error(level, reward_map, message):
    with pytest.raises(ValueError, match=message):
        compile_level(level, reward_map)


def test_the_observation_size_limit_counts_the_level_s_own_planes():
    pink = gridworld.Layout.parse(open_room(42, 42, "fF"))
    green = gridworld.Layout.parse(open_room(42, 42, "aA"))
    assert len(pink.layer_names) == 16 and len(green.layer_names) == 8
    check_size(green)  # the same room with the green key: 3,200 states x 8 planes x 42x42 cells = 43 MiB


OLD_PLANES = ("floor", "wall", "agent", "green_key", "green_passage", "purple_key", "purple_passage",
              "target")
"""The observation planes of every level before levels could have more than two keys."""
BUILT_IN_TABLES = {
    "easy": (80, "96cf21d36d1cf436"),
    "hard": (124, "8167bfb715228ba1"),
    "open10": (100, "5cc55cbebf947f53"),
    "fourroom": (85, "7a63ec20ac26d7ee"),
}
"""Number of states and the digest of the tables of each built-in level, computed before levels could have
more than two keys (`table_digest`)."""


def table_digest(compiled) -> str:
    tables = (compiled.observations, compiled.successor, compiled.reward, compiled.terminal,
              compiled.positions, compiled.held, compiled.start_states)
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(table).tobytes() for table in tables))
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("level", list(BUILT_IN_TABLES))
def test_built_in_levels_keep_their_eight_planes_and_tables(level):
    compiled = compile_level(level)
    assert compiled.layout.layer_names == gridworld.LAYER_NAMES == OLD_PLANES
    states, digest = BUILT_IN_TABLES[level]
    assert compiled.observations.shape == (states, 8, *compiled.layout.shape)
    assert table_digest(compiled) == digest


@pytest.mark.parametrize(("level", "cells"), [
    ("easy", {"agent": [(1, 1)], "green_key": [(2, 2)], "green_passage": [(4, 4)], "purple_key": [],
              "purple_passage": [], "target": [(6, 7)]}),
    ("hard", {"agent": [(1, 1)], "green_key": [(2, 2)], "green_passage": [(4, 4)], "purple_key": [(6, 7)],
              "purple_passage": [(3, 7)], "target": [(1, 8)]}),
])
def test_built_in_boards_by_hand(level, cells):
    """The start board on (1, 1), plane by plane, in the old order."""
    compiled = compile_level(level)
    planes = dict(zip(OLD_PLANES, compiled.observations[compiled.state_index((1, 1))], strict=True))
    for name, expected in cells.items():
        assert [tuple(cell) for cell in np.argwhere(planes[name]).tolist()] == expected, name
    np.testing.assert_array_equal(planes["wall"], compiled.layout.walls)
    assert planes["floor"].sum() == 100 - compiled.layout.walls.sum() - sum(map(len, cells.values()))


def test_state_index_names_what_is_wrong():
    compiled = compile_level("easy")
    assert compiled.state_index((1, 1)) == 0
    assert compiled.state_index([6, 7], "green") == len(compiled.states) - 1
    for position, held in [((0, 0), ()), ((2, 1), ("purple",)), ((4, 4), ())]:
        with pytest.raises(ValueError, match=r"no state at position \(\d, \d\) holding keys"):
            compiled.state_index(position, held)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
    ({"max_episode_steps": 2.5}, "max_episode_steps must be a positive integer, got 2.5"),
    ({"observation": "pixels"}, "unknown observation 'pixels'; valid: board, state"),
    ({"autoreset_mode": "Disabled"}, "unsupported autoreset_mode 'Disabled'; valid: AutoresetMode.NEXT_STEP"),
    ({"level": "open10"}, "no target 'T': give it a reward_map"),
    ({"level": "maze"},
     "unknown level 'maze'; valid levels: easy, hard, deep, detour, fork, open10, fourroom"),
    ({"task": "behind B box 1"}, "unknown task 'behind B box 1' in the family of level easy; valid tasks: "),
    ({"task": TWO_KEYS_TASK}, r"task 'keyed' is on level your art, not on this level \(easy\)"),
    ({"level": "open10", "task": "target"},
     "is a name, but only the levels easy, hard, deep, detour, fork have a task"),
    ({"level": "open10", "reward_map": {(1, 1): 1.0}, "task": gridworld.Task("open10", "b", "box", [(1, 1)])},
     "give a reward_map or a task, not both"),
])
def test_vector_env_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gridworld.make_vector(**{"level": "easy", "num_envs": 2, **kwargs})


def test_vector_env_refuses_bad_steps_and_resets():
    envs = gridworld.make_vector("easy", 3)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        envs.step(np.zeros(3, dtype=int))
    envs.reset(seed=0)
    for actions in (np.array([0, 1, 4]), np.array([0, -1, 2]), np.zeros(2, int), np.zeros(3), [[0, 1, 2]]):
        with pytest.raises(ValueError, match=r"invalid actions: expected 3 integers in 0..3 \(0 up, 1 down"):
            envs.step(actions)
    for options, message in [
        ({"position": (4, 4)}, "no episode reaches position"),
        ({"position": (6, 7), "keys_held": ("green",)}, "no episode reaches position"),  # the target
        ({"keys_held": ("purple",)}, "not in this level"),
        ({"start": (1, 1)}, "unknown reset options"),
        ({"reset_mask": np.array([True, False])}, r"must be a numpy bool array of shape \(3,\)"),
        ({"reset_mask": np.zeros(3, bool)}, "must reset at least one env"),
    ]:
        with pytest.raises(ValueError, match=message):
            envs.reset(options=options)
    with pytest.raises(ValueError, match="length must match num_envs=3"):
        envs.reset(seed=[1, 2])
