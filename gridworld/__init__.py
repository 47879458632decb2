"""Key-passageway gridworlds of the APS paper (Section 4.3), built on pycolab, with the Gymnasium API.

    import gridworld
    env = gridworld.make("easy")                       # or "hard", or your own ASCII art
    env = gymnasium.make("gridworld/Passageway-Hard-v0")

This package never imports `aps_teach`: the environment knows nothing of the learner.
"""

from collections.abc import Sequence

import gymnasium

from gridworld import pycolab_compat

pycolab_compat.apply()

from gridworld.env import COLOURS, LAYER_NAMES, PassagewayEnv, resolve_level  # noqa: E402
from gridworld.layout import ACTIONS, LEGEND, Layout, shortest_path  # noqa: E402
from gridworld.levels import LEVELS, MAZES  # noqa: E402
from gridworld.reward_maps import (  # noqa: E402
    normalised_score,
    optimal_return,
    random_box_reward_map,
    random_return,
)

MAX_EPISODE_STEPS = 100
"""Default step limit (gymnasium's `TimeLimit` truncates): ~9x the longest shortest solution."""
ENV_IDS = {
    "easy": "gridworld/Passageway-Easy-v0",
    "hard": "gridworld/Passageway-Hard-v0",
    "open10": "gridworld/Open10-v0",
    "fourroom": "gridworld/FourRoom-v0",
}
"""Registered ids of the built-in levels (easy, hard) and target-free mazes (open10, fourroom:
`gymnasium.make` them with `reward_map=...`)."""
CUSTOM_ENV_ID = "gridworld/Passageway-v0"

for _level, _env_id in ENV_IDS.items():
    gymnasium.register(
        _env_id, entry_point=PassagewayEnv, kwargs={"level": _level},
        max_episode_steps=MAX_EPISODE_STEPS,
    )
gymnasium.register(CUSTOM_ENV_ID, entry_point=PassagewayEnv, max_episode_steps=MAX_EPISODE_STEPS)


def make(level: str | Sequence[str] = "easy", **kwargs) -> gymnasium.Env:
    """`gymnasium.make` for a built-in name ("easy", "hard", "open10", "fourroom") or your own
    ASCII art (see `LEGEND`).

    Keyword arguments go to `gymnasium.make` (e.g. `render_mode`, `max_episode_steps`, and
    `reward_map` for a reward-map task).
    """
    if isinstance(level, str):
        if level not in ENV_IDS:
            raise ValueError(f"unknown level {level!r}; valid levels: {', '.join(ENV_IDS)} (or ASCII art)")
        return gymnasium.make(ENV_IDS[level], **kwargs)
    return gymnasium.make(CUSTOM_ENV_ID, level=tuple(level), **kwargs)


__all__ = [
    "ACTIONS", "COLOURS", "CUSTOM_ENV_ID", "ENV_IDS", "LAYER_NAMES", "LEGEND", "LEVELS", "MAZES",
    "Layout", "MAX_EPISODE_STEPS", "PassagewayEnv", "make", "normalised_score", "optimal_return",
    "random_box_reward_map", "random_return", "resolve_level", "shortest_path",
]
