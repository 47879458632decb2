"""The key-passageway gridworlds: rules, rewards, seeding, the Gymnasium API and bad input."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import gridworld
from gridworld.layout import Layout, shortest_path

UP, DOWN, LEFT, RIGHT = range(4)


def at(level, position, keys_held=()):
    """An unwrapped env reset to a given state, with its first observation and info."""
    env = gridworld.PassagewayEnv(level)
    obs, info = env.reset(seed=0, options={"position": position, "keys_held": keys_held})
    return env, obs, info


def test_levels_are_the_documented_size_and_legend():
    for level in ("easy", "hard"):
        layout = gridworld.resolve_level(level)
        assert layout.shape == (10, 10)
        assert set("".join(layout.art)) <= set(gridworld.LEGEND)
    assert gridworld.resolve_level("easy").key_names == ("green",)
    assert gridworld.resolve_level("hard").key_names == ("green", "purple")


def test_walls_block():
    env, _, _ = at("easy", (1, 1))
    for action in (UP, LEFT):
        _, reward, terminated, _, info = env.step(action)
        assert info["position"] == (1, 1) and reward == 0 and not terminated


def test_closed_passageway_blocks_until_its_key_is_held():
    env, _, _ = at("easy", (4, 3))
    _, _, _, _, info = env.step(RIGHT)
    assert info["position"] == (4, 3)
    env, _, _ = at("easy", (4, 3), keys_held=("green",))
    _, _, _, _, info = env.step(RIGHT)
    assert info["position"] == (4, 4)


def test_picking_up_the_key_opens_its_passageway_and_pays_once():
    env, obs, _ = at("easy", (2, 1))
    green_passage = gridworld.LAYER_NAMES.index("green_passage")
    assert obs[green_passage, 4, 4] == 1
    obs, reward, _, _, info = env.step(RIGHT)  # onto the key at (2, 2)
    assert reward == 1.0 and info["keys_held"] == ("green",)
    assert obs[green_passage].sum() == 0 and obs[gridworld.LAYER_NAMES.index("green_key")].sum() == 0
    rewards = [env.step(a)[1] for a in (LEFT, RIGHT, DOWN, DOWN, RIGHT, RIGHT)]  # back over the key cell
    assert rewards == [0.0] * 6
    assert env.step(RIGHT)[4]["position"] == (4, 5)  # (4, 4) was the passageway


def test_purple_passageway_needs_the_purple_key():
    env, _, _ = at("hard", (3, 6), keys_held=("green",))
    assert env.step(RIGHT)[4]["position"] == (3, 6)
    env, _, _ = at("hard", (6, 6), keys_held=("green",))
    _, reward, _, _, info = env.step(RIGHT)
    assert reward == 1.0 and info["keys_held"] == ("green", "purple")


def test_target_pays_ten_and_ends_the_episode():
    env, _, info = at("easy", (6, 6), keys_held=("green",))
    assert not info["success"]
    _, reward, terminated, truncated, info = env.step(RIGHT)
    assert (reward, terminated, truncated, info["success"]) == (10.0, True, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(UP)


@pytest.mark.parametrize(("level", "expected_return"), [("easy", 11.0), ("hard", 12.0)])
def test_shortest_solution_from_every_start_cell(level, expected_return):
    env = gridworld.make(level)
    for start in env.unwrapped.layout.start_cells:
        _, info = env.reset(options={"position": start})
        total, terminated = 0.0, False
        for action in shortest_path(env.unwrapped.layout, (start, ())):
            _, reward, terminated, truncated, info = env.step(action)
            total += reward
            assert not truncated
        assert terminated and info["success"] and total == expected_return


@pytest.mark.parametrize("level", ["easy", "hard"])
def test_pycolab_game_agrees_with_the_rules_model_everywhere(level):
    """Every reachable state x action: pycolab's step equals `Layout.step`, an independent model."""
    env = gridworld.PassagewayEnv(level)
    layout = env.layout
    reachable = set(env.reachable_states())
    assert {(cell, ()) for cell in layout.start_cells} <= reachable
    for state in reachable:
        for action in range(4):
            env.reset(options={"position": state[0], "keys_held": state[1]})
            obs, reward, terminated, _, info = env.step(action)
            (position, held), model_reward, model_terminated = layout.step(state, action)
            assert (info["position"], info["keys_held"]) == (position, held)
            assert (reward, terminated) == (model_reward, model_terminated)
            if not terminated:
                assert (position, held) in reachable
            assert obs.sum(axis=0).tolist() == np.ones(layout.shape, int).tolist()  # one-hot
            agent_plane = obs[gridworld.LAYER_NAMES.index("agent")]
            assert agent_plane.sum() == (0 if terminated else 1)
            if not terminated:
                assert agent_plane[position] == 1


def test_random_start_is_a_start_cell_and_seeding_reproduces_episodes():
    def episode(seed):
        env = gridworld.make("hard")
        obs, info = env.reset(seed=seed)
        env.action_space.seed(seed)
        frames, positions = [obs], [info["position"]]
        for _ in range(60):
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            frames.append(obs)
            positions.append(info["position"])
            if terminated or truncated:
                break
        return np.stack(frames), positions

    first, positions = episode(7)
    again, _ = episode(7)
    np.testing.assert_array_equal(first, again)
    assert positions[0] in gridworld.resolve_level("hard").start_cells
    starts = {gridworld.make("easy").reset(seed=seed)[1]["position"] for seed in range(40)}
    assert starts == set(gridworld.resolve_level("easy").start_cells)


def test_step_limit_truncates():
    env = gridworld.make("easy", max_episode_steps=5)
    env.reset(options={"position": (1, 1)})
    results = [env.step(UP) for _ in range(5)]
    assert [r[3] for r in results] == [False] * 4 + [True]
    assert gridworld.make("hard").spec.max_episode_steps == gridworld.MAX_EPISODE_STEPS


@pytest.mark.parametrize("level", list(gridworld.ENV_IDS))
def test_gymnasium_env_checker_passes_without_warnings(level):
    task = {"reward_map": {(3, 3): 1.0}} if level in gridworld.MAZES else {}
    env = gymnasium.make(gridworld.ENV_IDS[level], render_mode="rgb_array", **task)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert env.unwrapped.layer_names == gridworld.LAYER_NAMES
    assert env.observation_space.shape == (len(gridworld.LAYER_NAMES), *env.unwrapped.layout.shape)


def test_rgb_rendering_uses_the_legend_colours():
    env = gridworld.make("easy", render_mode="rgb_array")
    env.reset(options={"position": (1, 1)})
    image = env.render()
    cell = gridworld.env.CELL_PIXELS
    assert image.shape == (10 * cell, 10 * cell, 3) and image.dtype == np.uint8
    colour = dict(zip(gridworld.LAYER_NAMES, gridworld.COLOURS.tolist(), strict=True))
    assert image[6 * cell + 1, 7 * cell + 1].tolist() == colour["target"]
    assert image[2 * cell + 1, 2 * cell + 1].tolist() == colour["green_key"]
    assert image[4 * cell + 1, 4 * cell + 1].tolist() == [0, 0, 0]  # closed passageway: black
    assert image[1 * cell + 1, 1 * cell + 1].tolist() == colour["agent"]


def test_ansi_rendering_shows_the_board():
    env = gridworld.make("easy", render_mode="ansi")
    env.reset(options={"position": (1, 1)})
    rows = env.render().splitlines()
    assert rows[1] == "#P..#....#" and rows[4] == "#...A....#"


def test_custom_art_works_with_the_same_legend():
    art = ["########",
           "#SaAbBT#",
           "#S######"]
    env = gridworld.make(art)
    _, info = env.reset(seed=0)
    assert info["position"] in {(1, 1), (2, 1)}
    env.reset(options={"position": (1, 1)})
    rewards = [env.step(RIGHT)[1] for _ in range(5)]
    assert rewards == [1.0, 0.0, 1.0, 0.0, 10.0]


@pytest.mark.parametrize(
    ("art", "message"),
    [
        (["#S#", "#T"], "ragged: row 1 has 2"),
        (["#..T#"], "no agent start"),
        (["#S@T#"], "unknown character '@' at row 0, column 2"),
        (["#SGT#"], "unknown character 'G' at row 0, column 2"),  # no key 'g' claims it
        (["#SsT#"], "unknown character 's' at row 0, column 2"),  # not a key: 'S' is the start
        (["#SaAgGT#"], "too many keys for the observation planes: 'g' at row 0, column 4 is not a key"),
        (["#SCT#"], "art has a cyan passageway 'C' but no cyan key 'c'"),
        (["#SdDdT#"], "the red key 'd' appears 2 times"),
        (["#S#T#"], "cannot be reached"),
        (["#SAT#"], "passageway 'A' but no green key"),
        (["#SaT#"], "art has a green key 'a' but no green passageway 'A': every key opens its passageway"),
        (["#S.aaT"], "appears 2 times"),
        (["#S..#"], "no target 'T'"),
        (["#STT#"], "at most one target"),
        ([], "empty"),
    ],
)
def test_malformed_art_raises_a_clear_error(art, message):
    with pytest.raises(ValueError, match=message):
        gridworld.make(art)


def test_a_key_beyond_the_supported_ones_names_the_maximum_and_the_key_letters():
    with pytest.raises(ValueError) as error:
        Layout.parse(["#SaAbBcCdDeEfFgGT#"])
    assert str(error.value) == (
        "too many keys for the observation planes: 'g' at row 0, column 14 is not a key; a level has at most "
        "6 keys, the letters 'a' green, 'b' purple, 'c' cyan, 'd' red, 'e' yellow, 'f' pink")
    with pytest.raises(ValueError) as error:
        Layout.parse(["#S?T#"])
    assert str(error.value) == (
        "unknown character '?' at row 0, column 2; the legend is: '#' wall; '.' floor; 'S' start cell "
        "(floor; each episode starts on one of them, uniformly at random); keys 'a' green, 'b' purple, "
        "'c' cyan, 'd' red, 'e' yellow, 'f' pink, each opening the passageways of its capital letter "
        "(closed, drawn black, until the key is held); 'T' target (reaching it ends the episode)")


def test_the_legend_has_every_key_and_its_passageway():
    assert len(gridworld.KEYS) == 6
    assert list(gridworld.LEGEND) == ["#", ".", "S", *"aAbBcCdDeEfF", "T"]
    assert gridworld.LEGEND["d"] == "red key"
    assert gridworld.LEGEND["D"] == "red passageway (closed, drawn black, until the red key is held)"


GREEN_AND_RED = ["########",
                 "#SdDaAT#",
                 "########"]
"""Keys green and red, the red one first: the level has (empty) purple and cyan planes too."""


def test_planes_run_to_the_last_key_used_and_keys_held_follow_the_table_order():
    env = gridworld.PassagewayEnv(GREEN_AND_RED, render_mode="rgb_array")
    names = ("floor", "wall", "agent", "green_key", "green_passage", "purple_key", "purple_passage",
             "cyan_key", "cyan_passage", "red_key", "red_passage", "target")
    assert env.layer_names == env.layout.layer_names == names == gridworld.layer_names(4)
    assert env.observation_space.shape == (12, 3, 8)
    obs, _ = env.reset(options={"position": (1, 1)})
    planes = dict(zip(names, obs, strict=True))
    for name, cell in [("agent", (1, 1)), ("red_key", (1, 2)), ("red_passage", (1, 3)), ("green_key", (1, 4)),
                       ("green_passage", (1, 5)), ("target", (1, 6))]:
        assert np.argwhere(planes[name]).tolist() == [list(cell)], name
    assert not planes["purple_key"].any() and not planes["cyan_passage"].any()
    image = env.render()
    cell = gridworld.env.CELL_PIXELS
    assert image[1 * cell + 1, 2 * cell + 1].tolist() == list(gridworld.LAYER_COLOURS["red_key"])
    assert gridworld.LAYER_COLOURS["red_key"] == (214, 39, 40)
    assert image[1 * cell + 1, 3 * cell + 1].tolist() == [0, 0, 0]  # closed passageway: black
    steps = [env.step(RIGHT) for _ in range(5)]
    assert [step[1] for step in steps] == [1.0, 0.0, 1.0, 0.0, 10.0]
    assert [step[4]["keys_held"] for step in steps[:3]] == [("red",), ("red",), ("green", "red")]
    assert steps[-1][2] and steps[-1][4]["success"]


def test_gymnasium_env_checker_passes_on_a_four_key_art():
    art = ["#######",
           "#SaAbB#",
           "#cCdDT#",
           "#######"]
    env = gridworld.make(art, render_mode="rgb_array").unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)
    assert env.observation_space.shape == (12, 4, 7) and env.colours.shape == (12, 3)


@pytest.mark.parametrize("task", ["target", "behind A box 1", "start room box 2 with purple"])
def test_gymnasium_env_checker_passes_with_a_task_of_the_level_s_family(task):
    env = gymnasium.make(gridworld.ENV_IDS["hard"], render_mode="rgb_array", task=task)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert env.unwrapped.task is gridworld.task_family("hard")[task]
    assert env.spec.max_episode_steps == gridworld.MAX_EPISODE_STEPS


def test_unreachable_target_behind_a_passageway_whose_key_is_locked_away():
    with pytest.raises(ValueError, match="cannot be reached"):
        Layout.parse(["#S.A.T#",
                      "####a##"])  # the green key is walled off behind its own passageway


def test_unknown_level_lists_the_valid_ones():
    for factory in (gridworld.make, gridworld.PassagewayEnv):
        with pytest.raises(ValueError, match="unknown level 'medium'; valid levels: easy, hard"):
            factory("medium")


@pytest.mark.parametrize("action", [4, -1, 1.5, "up", None])
def test_out_of_range_action_raises(action):
    env = gridworld.make("easy")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"invalid action .*\(0 up, 1 down, 2 left, 3 right\)"):
        env.step(action)


def test_keys_held_may_be_a_single_name():
    _, _, info = at("easy", (4, 3), keys_held="green")
    assert info["keys_held"] == ("green",)


def test_numpy_integer_actions_are_accepted():
    env, _, _ = at("easy", (2, 1))
    assert env.step(np.int64(RIGHT))[4]["position"] == (2, 2)
    assert env.step(np.array(LEFT))[4]["position"] == (2, 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"position": (0, 0)}, "no episode reaches position"),
        ({"position": (4, 4)}, "no episode reaches position"),  # closed passageway
        ({"position": (6, 7), "keys_held": ("green",)}, "no episode reaches position"),  # the target
        ({"keys_held": ("purple",)}, "not in this level"),
        ({"start": (1, 1)}, "unknown reset options"),
        ({"position": "ab"}, r"position must be a \(row, col\) pair of integers"),
        ({"position": (1.5, 2)}, r"position must be a \(row, col\) pair of integers"),
        ({"position": (1, 2, 3)}, r"position must be a \(row, col\) pair of integers"),
    ],
)
def test_bad_reset_options_raise(options, message):
    with pytest.raises(ValueError, match=message):
        gridworld.make("easy").reset(options=options)


def test_bad_render_mode_raises():
    with pytest.raises(ValueError, match="unknown render_mode 'human'"):
        gridworld.PassagewayEnv("easy", render_mode="human")


def test_absorbing_target_pays_once_and_keeps_the_agent_there():
    env = gridworld.PassagewayEnv("easy", absorbing_target=True)
    env.reset(options={"position": (6, 6), "keys_held": ("green",)})
    first = env.step(RIGHT)
    assert first[1:4] == (10.0, False, False) and first[4]["success"]
    for action in (UP, DOWN, LEFT, RIGHT) * 3:  # no time limit on the bare env: it stays for ever
        obs, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert (info["position"], info["success"]) == ((6, 7), True)
        np.testing.assert_array_equal(obs, first[0])
    _, info = env.reset(seed=0)
    assert not info["success"] and info["position"] in env.layout.start_cells


@pytest.mark.parametrize("limit", [0, -1])
def test_a_time_limit_below_one_step_is_refused_not_taken_as_none(limit):
    with pytest.raises(ValueError, match=f"max_episode_steps must be a positive integer, got {limit}"):
        gridworld.make("easy", max_episode_steps=limit)
    with pytest.raises(ValueError, match=f"max_episode_steps must be a positive integer, got {limit}"):
        gridworld.make_vector("easy", 2, max_episode_steps=limit)
    registered = gridworld.make("easy", max_episode_steps=None).spec.max_episode_steps
    assert registered == gridworld.MAX_EPISODE_STEPS


def test_deep_level_needs_exploration():
    """Its defining measurement: at the default pretraining budget (64k steps, 32 envs, the target absorbing)
    a uniformly random walk covers under 60% of its states and never enters the target's room."""
    from aps_teach.grid.train import random_walk

    compiled = gridworld.compile_level("deep")
    bottom_room = [s for s, (position, _) in enumerate(compiled.states[:compiled.num_nonterminal])
                   if position[0] > 7]
    assert len(bottom_room) == 89  # 5 x 18 cells but the target, entered holding both keys
    for seed in range(3):
        coverage = random_walk("deep", 64_000, seed)
        assert coverage["state_coverage"] < 0.6 and not coverage["target_reached"]
        assert coverage["states_visited"] <= compiled.num_nonterminal - len(bottom_room)


OPEN10 = gridworld.resolve_level("open10")


@pytest.mark.parametrize(("call", "error", "named"), [
    (lambda: gridworld.make(123), TypeError, "level must be a level name"),
    (lambda: gridworld.make(None), TypeError, "got NoneType None"),
    (lambda: gridworld.make_vector(123, 2), TypeError, "or ASCII art (a sequence of strings"),
    (lambda: gridworld.make("open10", reward_map={(1.5, 2): 1}), ValueError,
     "reward cell (1.5, 2) must be a (row, col) pair of integers"),
    (lambda: gridworld.make("open10", reward_map={(1, 2): "x"}), ValueError,
     "reward map values must be real"),
    (lambda: gridworld.make("open10", reward_map=np.ones((12, 12)) * (1 + 1j)), ValueError,
     "got an array of complex128"),
    (lambda: gridworld.optimal_return(OPEN10, np.full((12, 12), 1e308) * ~OPEN10.walls, 100), ValueError,
     "must be at most 1e+100 in size"),
    (lambda: gridworld.optimal_return(OPEN10, np.zeros((12, 12)), 10**9), ValueError,
     "horizon must be an integer from 1 to 100,000"),
    (lambda: gridworld.random_box_reward_map(OPEN10, 2, 3, seed=-1), ValueError,
     "seed must be an integer >= 0"),
    (lambda: gridworld.make_vector("easy", num_envs=10**8), ValueError, "num_envs must be at most 65,536"),
])
def test_bad_input_to_the_environments_is_one_line_naming_it(call, error, named):
    """Each used to end in a numpy or iteration error, an inf, a silent loss of the imaginary part, or days of
    work; each is now refused before anything is built."""
    with pytest.raises(error) as refused:
        call()
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_a_random_box_task_takes_a_maze_by_name():
    assert np.array_equal(gridworld.random_box_reward_map("fourroom", 2, 3, seed=0),
                          gridworld.random_box_reward_map(gridworld.resolve_level("fourroom"), 2, 3, seed=0))
