"""Pretraining and fine-tuning env-steps/s per method on CPU, and the cost of learning relative to stepping.

    python benchmarks/pretrain_speed.py [--steps 8000] [--level easy] [--seed 0]

For each method prints pretraining steps/s (reward-free, one update per step of the env batch) and
fine-tuning steps/s (`finetune_updates_per_step` updates), next to the env batch alone under a random
policy; ratios are learner speed / env-only speed. Rates include the first `learning_starts` steps
(no updates yet), as real runs do. Wall time of a default run is about
pretrain_steps / pretrain rate + finetune_steps / finetune rate, plus evaluation.
"""

import argparse
import time

import torch

from aps_teach.agents import METHODS
from aps_teach.experiments import DEFAULT_FINETUNE_STEPS, DEFAULT_PRETRAIN_STEPS
from aps_teach.train import EnvBatch, TrainConfig, finetune, new_learner, pretrain, single_thread


def env_only_steps_per_second(level: str, steps: int, config: TrainConfig, seed: int) -> float:
    """The env batch with uniformly random actions, rounds as in training, no learner."""
    envs = EnvBatch(level, config.num_envs, reward_free=True)
    generator = torch.Generator().manual_seed(seed)
    rounds = max(1, steps // (config.num_envs * envs.horizon))
    start = time.perf_counter()
    for index in range(rounds):
        envs.reset([seed * 1000 + index * config.num_envs + i for i in range(config.num_envs)])
        for t in range(envs.horizon):
            envs.step(torch.randint(envs.num_actions, (config.num_envs,), generator=generator),
                      last=t == envs.horizon - 1)
    return rounds * config.num_envs * envs.horizon / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--level", default="easy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = TrainConfig(progress=False)
    with single_thread():
        env_rate = env_only_steps_per_second(args.level, args.steps, config, args.seed)
    print(f"{args.level}: env batch only ({config.num_envs} envs, random actions): {env_rate:9,.0f} steps/s")
    for method in METHODS:
        if method != "dqn":
            start = time.perf_counter()
            learner, _ = pretrain(method, args.level, args.steps, args.seed, config)
            pre = args.steps / (time.perf_counter() - start)
        else:
            learner, pre = new_learner(method, args.level, args.seed, config), float("nan")
        start = time.perf_counter()
        w = None if method in ("apt", "dqn") else torch.ones(5) / 5**0.5
        finetune(learner, args.level, w, args.steps, args.seed, config)
        fine = args.steps / (time.perf_counter() - start)
        estimate = (DEFAULT_PRETRAIN_STEPS / pre if method != "dqn" else 0.0) + DEFAULT_FINETUNE_STEPS / fine
        print(f"{method:>5}: pretrain {pre:7,.0f} steps/s ({pre / env_rate:.3f}x env) | "
              f"finetune {fine:7,.0f} steps/s ({fine / env_rate:.3f}x env) | "
              f"default budget ~{estimate:4.0f} s + evaluation")


if __name__ == "__main__":
    main()
