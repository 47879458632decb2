"""Atari environments under one protocol, with ale-py's next-step autoreset made explicit.

The protocol (numbers in `AtariConfig`): 84x84 grey frames, a stack of 4, each action repeated for 4
frames with the last two max-pooled, up to 30 no-op frames at reset, a 108k-frame episode cap, the
minimal action set, no FIRE on reset, sticky actions only if asked, raw rewards (clip them with
`rollout(..., reward_clip=...)` where the phase asks for it). Frames before an episode's first are
zero in the stack.

Two backends give the same protocol: "ale" is `ale_py.vector_env.AtariVectorEnv` (C++ preprocessing,
no OpenCV), "gymnasium" is gymnasium's `AtariPreprocessing` + `FrameStackObservation` over
`ALE/<Game>-v5` in a `SyncVectorEnv` (`make_env` builds one such env; `AtariPreprocessing` needs
OpenCV: `pip install opencv-python-headless`). They follow the same rules but are not frame-identical:
their reset and no-op handling differ in detail (a Pong reset frame differs by up to 31 grey levels).

Both autoreset on the next step: the `step` after an episode ends ignores its action and returns the
first observation of a new episode. That step is not a transition; `AtariEnvs.step` marks it
`valid=False`. A life lost while training is a terminal transition, but the game goes on (as in DQN
and Dopamine), so the step after it is a valid transition: `terminated` says where the learner must not
bootstrap, `valid` which steps are transitions at all.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Literal

import gymnasium
import numpy as np

from aps_teach.atari.config import AtariConfig

BACKENDS = ("ale", "gymnasium")
_GYM_ID = re.compile(r"^(?:ALE/)?(?P<name>.+?)(?:NoFrameskip)?-v\d+$")


def _rom_ids() -> list[str]:
    from ale_py import roms

    return roms.get_all_rom_ids()


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def check_game(name: str) -> str:
    """ale-py's ROM id ("ms_pacman") for a ROM id, a game name ("MsPacman") or a gymnasium id
    ("ALE/MsPacman-v5"); ValueError naming the closest ROMs otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"game must be a non-empty string such as 'pong', got {name!r}")
    match = _GYM_ID.match(name.strip())
    bare = match.group("name") if match else name.strip()
    by_key = {_key(rom): rom for rom in _rom_ids()}
    if _key(bare) in by_key:
        return by_key[_key(bare)]
    close = difflib.get_close_matches(_key(bare), list(by_key), n=5, cutoff=0.6)
    hint = f"closest: {', '.join(by_key[k] for k in close)}" if close else "no close match"
    raise ValueError(f"unknown Atari game {name!r} ({hint}); ale-py ships {len(by_key)} ROMs: "
                     f"{', '.join(sorted(by_key.values()))}")


def check_rom(game: str) -> str:
    """`check_game`, then that ale-py's ROM file of the game is there and whole (its checksum); ValueError
    naming the file and what to do otherwise, before a run writes anything."""
    from ale_py import roms

    rom = check_game(game)
    try:
        roms.get_rom_path(rom)
    except FileNotFoundError as error:
        raise ValueError(f"the ROM of {rom} is missing ({error.filename}); reinstall ale-py "
                         "(pip install --force-reinstall ale-py), or unset ALE_ROMS_DIR") from None
    except OSError as error:
        raise ValueError(f"the ROM of {rom} is damaged: {' '.join(str(error).split())}; reinstall ale-py "
                         "(pip install --force-reinstall ale-py)") from None
    return rom


def gymnasium_id(game: str) -> str:
    """The gymnasium id of a game, e.g. 'ms_pacman' -> 'ALE/MsPacman-v5'."""
    from ale_py.registration import rom_id_to_name

    return f"ALE/{rom_id_to_name(check_game(game))}-v5"


def make_env(game: str, config: AtariConfig) -> gymnasium.Env:
    """One gymnasium env under the protocol: `AtariPreprocessing` + `FrameStackObservation` (zero padding).

    Raw rewards and whole games (life-loss terminals are `AtariEnvs`' job); seed it through `reset(seed=)`.
    """
    import ale_py
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gymnasium.register_envs(ale_py)
    env = gymnasium.make(gymnasium_id(game), frameskip=1, full_action_space=False,
                         repeat_action_probability=config.repeat_action_probability,
                         max_num_frames_per_episode=config.max_frames_per_episode)
    try:
        env = AtariPreprocessing(env, noop_max=config.noop_max, frame_skip=config.action_repeat,
                                 screen_size=config.frame_size, terminal_on_life_loss=False,
                                 grayscale_obs=True, scale_obs=False)
    except gymnasium.error.DependencyNotInstalled as err:
        env.close()
        raise ImportError("the gymnasium backend needs OpenCV for AtariPreprocessing: "
                          "pip install opencv-python-headless (the 'ale' backend does not)") from err
    return FrameStackObservation(env, config.frame_stack, padding_type="zero")


@dataclass(frozen=True)
class Transition:
    """One step of every env: (obs, action) -> (reward, next_obs), arrays with the env index first.

    `valid[i]` is False where env i's step was an autoreset step (its action was ignored and next_obs
    is the first observation of a new episode): not a transition, never to be learnt from.
    `terminated`: no bootstrapping past next_obs (game over, or a life lost while training).
    `truncated`: the episode cap cut the episode (bootstrap from next_obs).
    """

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray

    def valid_only(self) -> Transition:
        """The real transitions alone (rows where `valid`), for stores that keep transitions one by one."""
        return Transition(**{f.name: getattr(self, f.name)[self.valid] for f in fields(self)})


class AtariEnvs:
    """`num_envs` games under the protocol, stepped together; see the module docstring for autoreset.

    `episode_returns` collects the raw score of every finished game (all lives), in order of ending.
    """

    def __init__(self, env: gymnasium.vector.VectorEnv, game: str, config: AtariConfig, training: bool,
                 seed: int):
        self.env, self.game, self.config, self.training, self.seed = env, game, config, training, seed
        self.num_envs = env.num_envs
        self.num_actions = int(env.single_action_space.n)
        self.obs: np.ndarray | None = None
        self.episode_returns: list[float] = []
        self._lives = np.zeros(self.num_envs, dtype=np.int64)
        self._score = np.zeros(self.num_envs, dtype=np.float64)
        self._resetting = np.zeros(self.num_envs, dtype=bool)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start a new episode in every env (env i seeded with seed + i; default: the factory's seed)."""
        obs, info = self.env.reset(seed=self.seed if seed is None else seed)
        self.obs = obs
        self._lives = np.asarray(info["lives"], dtype=np.int64).copy()
        self._score[:] = 0.0
        self._resetting[:] = False
        return obs

    def step(self, actions: np.ndarray) -> Transition:
        """Act in every env; the returned transition's `valid` marks which envs really stepped."""
        if self.obs is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be an integer array of shape ({self.num_envs},), got "
                             f"{actions.dtype} {actions.shape}")
        if actions.min() < 0 or actions.max() >= self.num_actions:
            raise ValueError(f"actions must be in [0, {self.num_actions}) for {self.game}, got "
                             f"{actions.min()}..{actions.max()}")
        next_obs, reward, env_terminated, env_truncated, info = self.env.step(actions.astype(np.int64))
        valid = ~self._resetting
        reward = np.asarray(reward, dtype=np.float32) * valid
        lives = np.asarray(info["lives"], dtype=np.int64)
        life_lost = valid & (lives < self._lives)
        terminal_life = self.training and self.config.terminal_on_life_loss
        terminated = valid & (env_terminated | (life_lost & terminal_life))
        truncated = valid & env_truncated & ~terminated
        episode_over = valid & (env_terminated | env_truncated)

        self._score += reward
        self.episode_returns.extend(self._score[episode_over].tolist())
        self._score[episode_over] = 0.0
        self._lives = lives.copy()
        self._resetting = episode_over
        transition = Transition(obs=self.obs, action=actions, reward=reward, next_obs=next_obs,
                                terminated=terminated, truncated=truncated, valid=valid)
        self.obs = next_obs
        return transition

    def close(self) -> None:
        self.env.close()


def make_vector_env(game: str, num_envs: int, config: AtariConfig, seed: int, training: bool,
                    backend: Literal["ale", "gymnasium"] = "ale", threads: int = 1) -> AtariEnvs:
    """`num_envs` copies of `game` under the protocol; `training` turns on life-loss terminals; the "ale"
    backend steps them on `threads` emulator threads (gymnasium's steps them one by one).

    Not reset yet: call `reset()` (seeds env i with `seed + i`).
    """
    rom = check_game(game)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if backend == "ale":
        from ale_py.vector_env import AtariVectorEnv

        env = AtariVectorEnv(rom, num_envs, num_threads=threads,
                             max_num_frames_per_episode=config.max_frames_per_episode,
                             repeat_action_probability=config.repeat_action_probability,
                             img_height=config.frame_size, img_width=config.frame_size, grayscale=True,
                             stack_num=config.frame_stack, frameskip=config.action_repeat, maxpool=True,
                             noop_max=config.noop_max, episodic_life=False, life_loss_info=False,
                             reward_clipping=False, use_fire_reset=False,
                             autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP)
    elif backend == "gymnasium":
        make_env(rom, config).close()  # fail early, e.g. without OpenCV
        env = gymnasium.vector.SyncVectorEnv([lambda: make_env(rom, config)] * num_envs,
                                             autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP)
    else:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    return AtariEnvs(env, rom, config, training, seed)


def rollout(envs: AtariEnvs, policy: Callable[[np.ndarray], np.ndarray], num_steps: int,
            reward_clip: float | None = None) -> Iterator[Transition]:
    """Step `envs` `num_steps` times from their current observations, acting with `policy(obs)`.

    Yields every step, autoreset steps included with `valid=False` (a frame replay still needs the last
    frame of the ended episode; `Transition.valid_only()` drops them). Rewards are clipped to
    [-reward_clip, reward_clip] if given (fine-tuning), raw otherwise; `envs.episode_returns` stays raw.
    """
    if envs.obs is None:
        envs.reset()
    for _ in range(num_steps):
        transition = envs.step(policy(envs.obs))
        if reward_clip is not None:
            transition = replace(transition, reward=np.clip(transition.reward, -reward_clip, reward_clip))
        yield transition
