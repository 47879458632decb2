"""Single-environment steps per second: raw pycolab engine vs `PassagewayEnv` vs `gridworld.make`.

    python benchmarks/gridworld_steps.py [--steps 50000] [--seed 0]

Prints steps/s for each and the wrapper's speed as a fraction of raw pycolab's.
"""

import argparse
import time

import numpy as np

import gridworld
from gridworld.game import build_game


def raw_pycolab_steps_per_second(layout, actions) -> float:
    """pycolab alone: `Engine.play` with a new game whenever one ends."""
    state = (layout.start_cells[0], ())
    game = build_game(layout, state)
    game.its_showtime()
    start = time.perf_counter()
    for action in actions:
        game.play(int(action))
        if game.game_over:
            game = build_game(layout, state)
            game.its_showtime()
    return len(actions) / (time.perf_counter() - start)


def env_steps_per_second(env, actions, seed: int) -> float:
    """A Gymnasium env: `step`, plus `reset` when an episode terminates or truncates."""
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return len(actions) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    actions = np.random.default_rng(args.seed).integers(4, size=args.steps)
    for level in gridworld.LEVELS:
        layout = gridworld.resolve_level(level)
        raw = raw_pycolab_steps_per_second(layout, actions)
        bare = env_steps_per_second(gridworld.PassagewayEnv(level), actions, args.seed)
        made = env_steps_per_second(gridworld.make(level), actions, args.seed)
        print(f"{level:>4}: raw pycolab {raw:9,.0f} steps/s | PassagewayEnv {bare:9,.0f} steps/s "
              f"({bare / raw:.2f}x raw) | gridworld.make {made:9,.0f} steps/s ({made / raw:.2f}x raw)")


if __name__ == "__main__":
    main()
