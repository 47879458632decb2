"""Key-passageway gridworlds of the APS paper (Section 4.3), built on pycolab, with the Gymnasium API.

    import gridworld
    env = gridworld.make("easy")                       # or "hard", or your own ASCII art
    env = gymnasium.make("gridworld/Passageway-Hard-v0")
    envs = gridworld.make_vector("easy", num_envs=256)  # the compiled engine, gymnasium's vector API
    env = gridworld.make("hard", task="behind A box 1")  # a task of the level's family (task_family)

This package never imports `aps_teach`: the environment knows nothing of the learner.
"""

from collections.abc import Sequence

import gymnasium

from gridworld import pycolab_compat

pycolab_compat.apply()

from gridworld.compiled import CompiledLevel, compile_level  # noqa: E402
from gridworld.env import (  # noqa: E402
    COLOURS,
    LAYER_COLOURS,
    LAYER_NAMES,
    MAX_EPISODE_STEPS,
    PassagewayEnv,
    resolve_level,
)
from gridworld.families import TASK_FAMILIES, TASK_KINDS, Task, TaskFamily, rooms, task_family  # noqa: E402
from gridworld.layout import ACTIONS, KEYS, LEGEND, Layout, layer_names, shortest_path  # noqa: E402
from gridworld.levels import HELD_OUT, LEVELS, MAZES  # noqa: E402
from gridworld.reward_maps import (  # noqa: E402
    normalised_score,
    optimal_return,
    random_box_reward_map,
    random_return,
    task_references,
)
from gridworld.vector import PassagewayVectorEnv, positive_int  # noqa: E402

ENV_IDS = {
    "easy": "gridworld/Passageway-Easy-v0",
    "hard": "gridworld/Passageway-Hard-v0",
    "deep": "gridworld/Passageway-Deep-v0",
    "detour": "gridworld/Passageway-Detour-v0",
    "fork": "gridworld/Passageway-Fork-v0",
    "open10": "gridworld/Open10-v0",
    "fourroom": "gridworld/FourRoom-v0",
}
"""Registered ids of the built-in levels (easy, hard, deep; the held-out detour and fork) and target-free
mazes (open10, fourroom: `gymnasium.make` them with `reward_map=...`)."""
CUSTOM_ENV_ID = "gridworld/Passageway-v0"

for _level, _env_id in ENV_IDS.items():
    gymnasium.register(
        _env_id, entry_point=PassagewayEnv, vector_entry_point=PassagewayVectorEnv, kwargs={"level": _level},
        max_episode_steps=MAX_EPISODE_STEPS,
    )
gymnasium.register(CUSTOM_ENV_ID, entry_point=PassagewayEnv, vector_entry_point=PassagewayVectorEnv,
                   max_episode_steps=MAX_EPISODE_STEPS)


def _id_and_kwargs(level: str | Sequence[str], kwargs: dict) -> tuple[str, dict]:
    """The registered id of a built-in name, or the custom id with the art as a keyword."""
    if isinstance(level, str):
        if level not in ENV_IDS:
            raise ValueError(f"unknown level {level!r}; valid levels: {', '.join(ENV_IDS)} (or ASCII art)")
        return ENV_IDS[level], kwargs
    return CUSTOM_ENV_ID, {"level": tuple(resolve_level(level).art), **kwargs}


def make(level: str | Sequence[str] = "easy", **kwargs) -> gymnasium.Env:
    """`gymnasium.make` for a built-in name ("easy", "hard", "open10", "fourroom") or your own
    ASCII art (see `LEGEND`).

    Keyword arguments go to `gymnasium.make` (e.g. `render_mode`, `max_episode_steps`,
    `absorbing_target`, `reward_map` for a reward-map task, `task` for a `Task` or a task name of the level's
    family). `max_episode_steps` must be >= 1 (None keeps
    the registered limit): gymnasium would take 0 or less as no limit at all.
    """
    env_id, kwargs = _id_and_kwargs(level, kwargs)
    if kwargs.get("max_episode_steps") is not None:
        positive_int("max_episode_steps", kwargs["max_episode_steps"])
    return gymnasium.make(env_id, **kwargs)


def make_vector(level: str | Sequence[str] = "easy", num_envs: int = 8, **kwargs) -> PassagewayVectorEnv:
    """`gymnasium.make_vec` of the compiled engine (`PassagewayVectorEnv`) for a built-in name or your
    own ASCII art: the same envs as `make` gives, `num_envs` at once.

    Keyword arguments go to `PassagewayVectorEnv` (e.g. `max_episode_steps`, `reward_map`, `task`,
    `absorbing_target`, `observation`, `autoreset_mode`).
    """
    env_id, kwargs = _id_and_kwargs(level, kwargs)
    if "max_episode_steps" in kwargs and kwargs["max_episode_steps"] is None:
        del kwargs["max_episode_steps"]  # as in gymnasium.make: None keeps the registered limit
    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


__all__ = [
    "ACTIONS", "COLOURS", "CUSTOM_ENV_ID", "CompiledLevel", "ENV_IDS", "HELD_OUT", "KEYS", "LAYER_COLOURS",
    "LAYER_NAMES", "LEGEND", "LEVELS", "MAZES", "Layout", "MAX_EPISODE_STEPS", "PassagewayEnv",
    "PassagewayVectorEnv",
    "TASK_FAMILIES", "TASK_KINDS", "Task", "TaskFamily", "compile_level", "layer_names", "make",
    "make_vector", "normalised_score", "optimal_return", "random_box_reward_map", "random_return",
    "resolve_level", "rooms", "shortest_path", "task_family", "task_references",
]
