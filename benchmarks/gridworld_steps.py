"""Env-steps/s of the gridworlds on one core: the compiled vector engine against batches of pycolab envs.

    python benchmarks/gridworld_steps.py [--steps 50000] [--num-envs 256] [--seed 0] [--cpu 0]

Per level (uniformly random actions, autoresets included) it prints:
- the compiled engine (`gridworld.make_vector`) at --num-envs envs, board and state observations;
- the pycolab batch training used (`SyncVectorEnv` of 8 `gridworld.make` envs) and the same at
  --num-envs envs, with the compiled engine's speed as a multiple of each;
- a single pycolab env: raw `Engine.play`, `PassagewayEnv`, `gridworld.make` (ratios to raw pycolab).
The process is pinned to core --cpu (Linux), so every figure is one core's.
"""

import argparse
import os
import time

import gymnasium
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


def vector_steps_per_second(envs, steps: int, seed: int, repeats: int = 1) -> float:
    """A vector env (autoresetting itself): env steps (vector steps x num_envs) per second, best of
    `repeats` runs of `steps` env steps."""
    actions = np.random.default_rng(seed).integers(4, size=(max(1, steps // envs.num_envs), envs.num_envs))
    best = 0.0
    for _ in range(repeats):
        envs.reset(seed=seed)
        start = time.perf_counter()
        for action in actions:
            envs.step(action)
        best = max(best, actions.size / (time.perf_counter() - start))
    return best


def pycolab_batch(level: str, num_envs: int):
    return gymnasium.vector.SyncVectorEnv([lambda: gridworld.make(level)] * num_envs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000, help="env steps per pycolab measurement")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", type=int, default=0, help="the core to pin the process to")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    n = args.num_envs
    actions = np.random.default_rng(args.seed).integers(4, size=args.steps)
    for level in gridworld.LEVELS:
        compiled_steps = 40 * args.steps
        board = vector_steps_per_second(gridworld.make_vector(level, n), compiled_steps, args.seed, repeats=3)
        state = vector_steps_per_second(gridworld.make_vector(level, n, observation="state"), compiled_steps,
                                        args.seed, repeats=3)
        batch8 = vector_steps_per_second(pycolab_batch(level, 8), args.steps, args.seed)
        batch_n = vector_steps_per_second(pycolab_batch(level, n), args.steps, args.seed)
        print(f"{level}: compiled engine, {n} envs: board observations {board:12,.0f} env-steps/s, "
              f"state observations {state:12,.0f} env-steps/s")
        print(f"{level}: pycolab SyncVectorEnv, 8 envs {batch8:9,.0f} env-steps/s (compiled board: "
              f"{board / batch8:,.0f}x) | {n} envs {batch_n:9,.0f} env-steps/s (compiled board: "
              f"{board / batch_n:,.0f}x)")
        layout = gridworld.resolve_level(level)
        raw = raw_pycolab_steps_per_second(layout, actions)
        bare = env_steps_per_second(gridworld.PassagewayEnv(level), actions, args.seed)
        made = env_steps_per_second(gridworld.make(level), actions, args.seed)
        print(f"{level}: single env: raw pycolab {raw:9,.0f} steps/s | PassagewayEnv {bare:9,.0f} steps/s "
              f"({bare / raw:.2f}x raw) | gridworld.make {made:9,.0f} steps/s ({made / raw:.2f}x raw)")


if __name__ == "__main__":
    main()
