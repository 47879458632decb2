"""APS pretraining speed: the loop before the compiled engine against the loop now, env steps/s and updates/s.

    python benchmarks/pretrain_speed.py [--steps 32000] [--level easy] [--seed 0] [--group 10] [--compile]

Each configuration pretrains APS on `level` for `steps` env steps, the first `learning_starts` (1,600) without
updates as in real runs, on one thread:
- before: the settings of the loop before this change (commit 9e8a5e4), reproduced with today's code: the
  pycolab engine, raw one-hot boards through the full first layer, the exact n-step sum of intrinsic
  rewards with phi and the kNN over every window state; 8 envs, 1 update of batch 32 per step of the batch
  (1/8 update per env step), n = 5, d = 5;
- now, same sizes: the compiled engine, state indices with the first layer run once per state on the
  entries that vary, the authors' last-state n-step reward; the same 8 envs, batch 32, 1 update per step,
  n = 5, d = 5: the same updates per env step, so the ratio is the loop's own speed-up;
- now, the defaults: 32 envs, 2 updates of batch 256 per step (1/16 update per env step), n = 10, d = 16.
Prints env steps/s, updates/s and ms per update, with ratios to `before`; and the env batches alone.

The compute limit: an update's FLOPs (its matrix products, counted by `torch.utils.flop_counter`, plus the
kNN's distances, 3 N^2 d for N particles) times the updates per env step, against the core's own matmul
rate (the best of a few 1024 x 1024 products on one thread): the env steps/s the loop would reach if the
update's arithmetic ran at the core's peak and nothing else cost anything. Each configuration prints its
fraction of that limit; then the same two configurations of now as a seed group of `group` seeds in one
process (`train.pretrain_seeds`, the updates of all seeds made together), their env steps/s summed over the
seeds against the same single-core limit. With --compile, the defaults with `TrainConfig.compile` (the update
compiled by torch.compile's inductor), and without it: each loop's env steps/s after its first round, the
difference in the rest of their time the seconds spent compiling, and so the pretraining length from which
compiling pays.
"""

import argparse
import time
from dataclasses import replace

import torch
from torch.utils.flop_counter import FlopCounterMode

import gridworld
from aps_teach.grid.envs import make_env_batch
from aps_teach.grid.train import TrainConfig, pretrain, pretrain_seeds
from aps_teach.infra.phases import single_thread
from aps_teach.learner.config import AgentConfig

BEFORE = TrainConfig(agent=AgentConfig(feature_dim=5, n_step=5, batch_size=32, nstep_reward="sum",
                                       normalise_observations=False),
                     engine="pycolab", num_envs=8, updates_per_step=1, absorbing_target=False, progress=False)
SAME_SIZES = replace(BEFORE, agent=replace(BEFORE.agent, nstep_reward="last", normalise_observations=True),
                     engine="compiled", absorbing_target=True)
DEFAULTS = TrainConfig(progress=False)


def env_steps_per_second(level: str, engine: str, num_envs: int, steps: int, seed: int) -> float:
    """The env batch alone under uniformly random actions, in rounds as in training."""
    envs = make_env_batch(level, num_envs, engine=engine, reward_free=True)
    generator = torch.Generator().manual_seed(seed)
    rounds = max(1, steps // (num_envs * envs.horizon))
    start = time.perf_counter()
    for index in range(rounds):
        envs.reset([seed * 1000 + index * num_envs + i for i in range(num_envs)])
        for t in range(envs.horizon):
            envs.step(torch.randint(envs.num_actions, (num_envs,), generator=generator),
                      last=t == envs.horizon - 1)
    return rounds * num_envs * envs.horizon / (time.perf_counter() - start)


def group_rate(level: str, config: TrainConfig, steps: int, seeds: range) -> float:
    """Env steps/s of APS pretraining of `seeds` as one seed group, summed over the seeds."""
    start = time.perf_counter()
    pretrain_seeds("aps", level, steps, list(seeds), config)
    return len(seeds) * steps / (time.perf_counter() - start)


def pretraining_rates(level: str, config: TrainConfig, steps: int, seed: int) -> tuple[float, float]:
    """(env steps/s, updates/s) of one APS pretraining."""
    start = time.perf_counter()
    learner, _ = pretrain("aps", level, steps, seed, config)
    seconds = time.perf_counter() - start
    return steps / seconds, learner.updates / seconds


def steady_rate(level: str, config: TrainConfig, steps: int, seed: int) -> tuple[float, float]:
    """(env steps/s, fixed seconds) of one APS pretraining: the rate from the end of its first round (the
    update-free start and, compiled, the compiling) to its last, and what the run took beyond its steps at
    that rate."""
    ends = []
    start = time.perf_counter()
    pretrain("aps", level, steps, seed, config, on_round=lambda end: ends.append(time.perf_counter()))
    per_round = config.num_envs * gridworld.MAX_EPISODE_STEPS
    rate = per_round * (len(ends) - 1) / (ends[-1] - ends[0])
    return rate, ends[-1] - start - steps / rate


def matmul_rate(size: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of the best of `repeats` (size x size) @ (size x size) float32 products on this thread."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * size**3 / best


def _timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def update_flops(level: str, config: TrainConfig, seed: int) -> float:
    """FLOPs of one APS update at `config`'s sizes: its matrix products as torch counts them, plus the kNN's
    squared distances between its particles (3 N^2 d: a subtraction, a multiply and an add per entry)."""
    kept = {}
    learner, _ = pretrain("aps", level, config.learning_starts + config.num_envs * 100, seed, config,
                          on_round=lambda end: kept.__setitem__("replay", end.replay))
    generator = torch.Generator().manual_seed(seed)
    batch = kept["replay"].sample(config.agent.batch_size, config.agent.n_step, generator)
    with FlopCounterMode(display=False) as counter:
        learner.update(batch)
    particles, d = config.agent.particles, config.agent.feature_dim
    return counter.get_total_flops() + 3 * particles**2 * d


def updates_per_env_step(config: TrainConfig) -> float:
    """Updates per env step: `updates_per_step` per step of the `num_envs` envs."""
    return config.updates_per_step / config.num_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=32_000)
    parser.add_argument("--level", default="easy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--group", type=int, default=10, help="seeds in the seed group (0: no group rows)")
    parser.add_argument("--compile", action="store_true", help="also the defaults with TrainConfig.compile")
    args = parser.parse_args()
    with single_thread():
        for engine, num_envs in (("pycolab", 8), ("compiled", 8), ("compiled", 32)):
            rate = env_steps_per_second(args.level, engine, num_envs, args.steps, args.seed)
            print(f"env batch alone, {engine:>8}, {num_envs:>2} envs: {rate:12,.0f} env steps/s")
    rows = {}
    for name, config in (("before", BEFORE), ("now, same sizes", SAME_SIZES), ("now, defaults", DEFAULTS)):
        rows[name] = pretraining_rates(args.level, config, args.steps, args.seed)
    base_steps, base_updates = rows["before"]
    for name, (steps, updates) in rows.items():
        print(f"APS pretraining, {name:>15}: {steps:8,.0f} env steps/s ({steps / base_steps:5.2f}x), "
              f"{updates:6,.0f} updates/s ({updates / base_updates:5.2f}x), "
              f"{1000 / updates:5.2f} ms per update (acting and stepping included)")
    with single_thread():
        peak = matmul_rate()
    print(f"this core's matmul rate (1024 x 1024, one thread): {peak / 1e9:.1f} GFLOP/s")
    limits = {}
    for name, config in (("before", BEFORE), ("now, same sizes", SAME_SIZES), ("now, defaults", DEFAULTS)):
        with single_thread():
            flops = update_flops(args.level, config, args.seed)
        limits[name] = limit = peak / (flops * updates_per_env_step(config))
        steps = rows[name][0]
        print(f"compute limit, {name:>15}: {flops / 1e6:6.1f} MFLOP per update x "
              f"{updates_per_env_step(config):.4f} updates per env step -> {limit:8,.0f} env steps/s; "
              f"measured {steps:,.0f} = {steps / limit:.2f} of the limit")
    if args.compile:
        (plain, plain_fixed), (rate, fixed) = (steady_rate(args.level, config, args.steps, args.seed)
                                               for config in (DEFAULTS, replace(DEFAULTS, compile=True)))
        compiling = fixed - plain_fixed
        print(f"compiled (TrainConfig.compile), the defaults: {rate:8,.0f} env steps/s once compiled, "
              f"against {plain:,.0f} ({rate / plain:.2f}x); {compiling:.0f} s of compiling: pays from about "
              f"{compiling / (1 / plain - 1 / rate):,.0f} env steps of pretraining")
    if args.group:
        seeds = range(args.seed, args.seed + args.group)
        for name, config in (("now, same sizes", SAME_SIZES), ("now, defaults", DEFAULTS)):
            steps = group_rate(args.level, config, args.steps, seeds)
            print(f"seed group of {args.group}, {name:>15}: {steps:8,.0f} env steps/s summed over the seeds "
                  f"({steps / rows[name][0]:.2f}x one run alone) = {steps / limits[name]:.2f} of the limit")


if __name__ == "__main__":
    main()
