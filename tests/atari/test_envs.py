"""The Atari protocol on real ROMs (shipped with ale-py): shapes, life-loss terminals in training only,
autoreset steps flagged and never offered as transitions, game-name checks, reward clipping only where
asked, and the gymnasium backend under the same rules."""

import importlib.util

import numpy as np
import pytest

from aps_teach.atari.config import AtariConfig
from aps_teach.atari.envs import Transition, check_game, gymnasium_id, make_vector_env, rollout

CONFIG = AtariConfig()


def _run(game, num_envs, steps, training, config=CONFIG, seed=0, reward_clip=None, backend="ale"):
    envs = make_vector_env(game, num_envs, config, seed=seed, training=training, backend=backend)
    rng = np.random.default_rng(seed)
    out = list(rollout(envs, lambda obs: rng.integers(envs.num_actions, size=len(obs)), steps, reward_clip))
    envs.close()
    stacked = {k: np.stack([getattr(t, k) for t in out]) for k in Transition.__dataclass_fields__}
    return stacked, envs


def test_observations_are_stacks_of_four_84x84_grey_frames_zero_padded_at_reset():
    envs = make_vector_env("Pong", 2, CONFIG, seed=0, training=False)
    obs = envs.reset()
    assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8 and envs.num_actions == 6
    assert (obs[:, :3] == 0).all() and (obs[:, 3] > 0).any(axis=(1, 2)).all()
    tr = envs.step(np.array([0, 3]))
    envs.close()
    assert tr.next_obs.shape == (2, 4, 84, 84) and tr.next_obs.dtype == np.uint8
    assert tr.reward.dtype == np.float32 and tr.valid.all() and not tr.terminated.any()
    np.testing.assert_array_equal(tr.next_obs[:, :3], obs[:, 1:])  # the stack shifts by one frame
    np.testing.assert_array_equal(tr.obs, obs)


def test_same_seed_same_transitions():
    envs = make_vector_env("pong", 2, CONFIG, seed=0, training=True)

    def run(seed):
        envs.reset(seed=seed)
        rng = np.random.default_rng(0)
        return [t.next_obs for t in rollout(envs, lambda obs: rng.integers(6, size=2), 40)]

    first, again, other = run(3), run(3), run(4)
    envs.close()
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not np.array_equal(np.stack(first), np.stack(other))


def _games(valid_column):
    """Step ranges [start, end) of the complete games of one env column, cut by its autoreset steps."""
    resets = np.flatnonzero(~valid_column)
    return list(zip(np.r_[0, resets + 1], resets, strict=False))


def test_life_loss_is_terminal_in_training_only_and_the_game_goes_on():
    train, _ = _run("breakout", 2, 260, training=True)
    evaluate, _ = _run("breakout", 2, 260, training=False)
    # the same game is played in both modes: the flag only changes what counts as terminal
    np.testing.assert_array_equal(train["next_obs"], evaluate["next_obs"])
    np.testing.assert_array_equal(train["valid"], evaluate["valid"])
    games = 0
    for e in range(2):
        for start, end in _games(train["valid"][:, e]):
            # Breakout has 5 lives: 4 life-loss terminals, then the game over, which ends the game
            assert train["terminated"][start:end, e].sum() == 5 and train["terminated"][end - 1, e]
            assert evaluate["terminated"][start:end, e].sum() == 1 and evaluate["terminated"][end - 1, e]
            games += 1
        life_lost = np.flatnonzero(train["terminated"][:-1, e] & ~evaluate["terminated"][:-1, e])
        assert len(life_lost) >= 4
        assert train["valid"][life_lost + 1, e].all()  # no reset after a life loss: the stack goes on
        np.testing.assert_array_equal(train["next_obs"][life_lost + 1, e, :3],
                                      train["next_obs"][life_lost, e, 1:])
    assert games >= 2


def test_autoreset_steps_are_flagged_and_start_a_new_episode():
    # a 200-frame cap truncates Pong episodes long before a game over
    data, envs = _run("pong", 2, 150, training=True, config=AtariConfig(max_frames_per_episode=200))
    ended = data["terminated"] | data["truncated"]
    assert data["truncated"].sum() >= 4 and not (data["truncated"] & data["terminated"]).any()
    steps, cols = np.nonzero(ended[:-1])
    assert (~data["valid"][steps + 1, cols]).all()  # the step after every end is an autoreset step
    assert data["valid"].sum() == data["valid"].size - len(steps)  # and those are the only ones
    invalid = ~data["valid"]
    assert (data["reward"][invalid] == 0).all() and not ended[invalid].any()
    reset_obs = data["next_obs"][invalid]
    assert (reset_obs[:, :3] == 0).all()  # a fresh zero-padded stack
    np.testing.assert_array_equal(data["obs"][invalid], data["next_obs"][steps, cols])  # last obs of the end
    assert len(envs.episode_returns) == ended.sum()
    # the cap counts frames (ale-py 0.12), no-ops included: 200 frames are at most 50 steps of 4
    for e in range(2):
        lengths = [end - start for start, end in _games(data["valid"][:, e])]
        assert lengths and all(43 <= n <= 50 for n in lengths), lengths


def test_valid_only_drops_autoreset_steps():
    data, _ = _run("pong", 2, 150, training=True, config=AtariConfig(max_frames_per_episode=200))
    tr = Transition(**{k: v[:, 0] for k, v in data.items()})  # env 0's steps as one batch
    kept = tr.valid_only()
    assert len(kept.action) == tr.valid.sum() < len(tr.valid) and kept.valid.all()
    ended_obs = {o.tobytes() for o in tr.next_obs[tr.terminated | tr.truncated]}
    assert not any(o.tobytes() in ended_obs for o in kept.obs)  # no transition out of an episode's end


def test_rewards_are_clipped_only_where_asked():
    raw, raw_envs = _run("alien", 2, 100, training=True)
    clipped, clipped_envs = _run("alien", 2, 100, training=True, reward_clip=1.0)
    assert raw["reward"].max() >= 10  # Alien pays 10 points an egg
    np.testing.assert_array_equal(clipped["reward"], np.clip(raw["reward"], -1, 1))
    np.testing.assert_array_equal(clipped["next_obs"], raw["next_obs"])
    assert clipped_envs.episode_returns == raw_envs.episode_returns  # scores stay raw


@pytest.mark.parametrize("name", ["ms_pacman", "MsPacman", "ALE/MsPacman-v5", "MsPacmanNoFrameskip-v4",
                                  " mspacman "])
def test_game_names_resolve_to_the_rom_id(name):
    assert check_game(name) == "ms_pacman"
    assert gymnasium_id(name) == "ALE/MsPacman-v5"


def test_unknown_games_name_close_matches():
    with pytest.raises(ValueError, match=r"unknown Atari game 'Pongg' \(closest: pong"):
        check_game("Pongg")
    with pytest.raises(ValueError, match="ale-py ships 1[0-9][0-9] ROMs: .*breakout"):
        check_game("definitely_not_a_game")
    with pytest.raises(ValueError, match="non-empty string"):
        check_game("")
    with pytest.raises(ValueError, match="unknown Atari game"):
        make_vector_env("brekout_", 1, CONFIG, seed=0, training=True)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        make_vector_env("pong", 0, CONFIG, seed=0, training=True)
    with pytest.raises(ValueError, match="unknown backend 'jax'; valid backends: ale, gymnasium"):
        make_vector_env("pong", 1, CONFIG, seed=0, training=True, backend="jax")
    envs = make_vector_env("pong", 2, CONFIG, seed=0, training=True)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.array([0, 0]))
    envs.reset()
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        envs.step(np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="integer array"):
        envs.step(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"in \[0, 6\) for pong"):
        envs.step(np.array([0, 6]))
    envs.close()


def test_gymnasium_backend_follows_the_same_protocol():
    if importlib.util.find_spec("cv2") is None:
        with pytest.raises(ImportError, match="opencv-python-headless"):
            make_vector_env("pong", 1, CONFIG, seed=0, training=True, backend="gymnasium")
        pytest.skip("OpenCV is not installed: checked the error the gymnasium backend gives")
    config = AtariConfig(max_frames_per_episode=400)
    evaluate, envs = _run("breakout", 2, 160, training=False, config=config, backend="gymnasium")
    train, _ = _run("breakout", 2, 160, training=True, config=config, backend="gymnasium")
    assert evaluate["obs"].shape == (160, 2, 4, 84, 84) and evaluate["obs"].dtype == np.uint8
    assert (evaluate["obs"][0, :, :3] == 0).all()
    np.testing.assert_array_equal(train["next_obs"], evaluate["next_obs"])
    ended = evaluate["terminated"] | evaluate["truncated"]
    steps, cols = np.nonzero(ended[:-1])
    assert len(steps) >= 2 and (~evaluate["valid"][steps + 1, cols]).all()
    assert evaluate["valid"].sum() == evaluate["valid"].size - len(steps)
    assert (evaluate["next_obs"][~evaluate["valid"]][:, :3] == 0).all()
    assert len(envs.episode_returns) == ended.sum()
    # life losses (Breakout) are terminal while training only, and the game goes on after them
    life_lost = train["terminated"][:-1] & ~evaluate["terminated"][:-1]
    assert life_lost.sum() >= 2 and train["valid"][1:][life_lost].all()
