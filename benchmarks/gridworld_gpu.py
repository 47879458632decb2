"""Gridworld seed groups on a GPU: APS pretraining of S seeds as one group, env steps/s summed over the seeds.

    python benchmarks/gridworld_gpu.py [--device cuda] [--steps 8000] [--groups 10 100] [--level easy]

For each group size S (1 and 2 always, first), `train.pretrain_seeds` of APS (the defaults: 32 envs, 2
updates of batch 256 per step of the batch) for seeds seed..seed+S-1 with `TrainConfig.device`: the S seeds'
updates run as one batched launch per layer on the device, while each seed's envs, replay and acting stay
its own (envs and replay on the CPU, one thread). Prints each group's env steps/s summed over its seeds
against one run alone on the CPU, one thread, in the same process (every run after a warm-up); and how far
apart the numbers are: seed `seed` grouped with the next on the device against alone on the device, and
alone on the device against alone on the CPU (the largest difference of any weight, whether they are
bit-identical, and the states each visited).
"""

from __future__ import annotations

import argparse
import time

import torch

from aps_teach.grid.train import TrainConfig, pretrain_seeds


def rate(level: str, steps: int, seeds: list[int], device: str) -> tuple[float, list]:
    """(env steps/s summed over `seeds`, their (learner, log) pairs) of one APS seed group on `device`."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    runs = pretrain_seeds("aps", level, steps, seeds, TrainConfig(progress=False, device=device))
    return len(seeds) * steps / (time.perf_counter() - start), runs


def weights(learner) -> torch.Tensor:
    """Every network weight of a (CPU) learner, flattened into one vector."""
    return torch.cat([p.detach().flatten() for m in (learner.psi, learner.phi) for p in m.parameters()])


def compare(name: str, a, b) -> None:
    """Print how far two runs' weights and coverage are apart."""
    (la, loga), (lb, logb) = a, b
    gap = (weights(la) - weights(lb)).abs().max().item()
    same = "bit-identical" if torch.equal(weights(la), weights(lb)) else "not bit-identical"
    print(f"    {name}: largest weight difference {gap:.2e} ({same}); "
          f"states visited {loga.coverage['states_visited']} vs {logb.coverage['states_visited']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=8_000, help="pretraining env steps per seed")
    parser.add_argument("--groups", type=int, nargs="+", default=[10, 100],
                        help="group sizes S (1 and 2 always run first, for the comparison)")
    parser.add_argument("--level", default="easy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "the CPU"
    print(f"torch {torch.__version__}; APS pretraining on {args.level}, {args.steps:,} env steps per seed, "
          f"updates on {args.device} ({name})")
    for device in ("cpu", args.device):  # warm-up: first calls, kernels loaded, the CUDA context made
        rate(args.level, 3200, [args.seed], device)
    cpu, cpu_runs = rate(args.level, args.steps, [args.seed], "cpu")
    print(f"alone on the CPU (one thread): {cpu:9,.0f} env steps/s")
    for size in sorted(set(args.groups) | {1, 2}):  # 1 and 2 first: the comparison below reads them
        seeds = list(range(args.seed, args.seed + size))
        steps, runs = rate(args.level, args.steps, seeds, args.device)
        print(f"group of {size:>3} on {args.device}: {steps:9,.0f} env steps/s summed over the seeds "
              f"({steps / cpu:.2f}x one CPU run alone)", flush=True)
        if size == 1:
            alone = runs
        if size == 2:
            print(f"  seed {args.seed}, how far apart:")
            compare(f"grouped (2 seeds) against alone, both on {args.device}", runs[0], alone[0])
            compare(f"alone on {args.device} against alone on the CPU", alone[0], cpu_runs[0])


if __name__ == "__main__":
    main()
