"""Reward explorer redraw time on one core: CPU seconds per control change (recompute the panels and
render the PNG the notebook shows), split into the two, over a tiny APS run on the hard level. CPU time
of this process (one thread), so that other jobs on a shared machine do not count.

    python benchmarks/explorer_redraw.py [--repeats 10]

Target (issue 16): a redraw in at most 0.3 s.
"""

from __future__ import annotations

import argparse
import time

import matplotlib
import torch

matplotlib.use("Agg")

from aps_teach import widgets  # noqa: E402
from aps_teach.agents import AgentConfig  # noqa: E402
from aps_teach.snapshots import pretrain_with_snapshots  # noqa: E402
from aps_teach.train import TrainConfig  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="control changes to time")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = TrainConfig(agent=AgentConfig(batch_size=256), num_envs=4, learning_starts=400, progress=False)
    _, _, snapshots = pretrain_with_snapshots("aps", "hard", 2400, seed=0, every_rounds=1, config=config)
    explorer = widgets.reward_explorer(snapshots, show=False)
    explorer.controls["fixed_scale"].value = True  # its limits over all checkpoints: computed once, here
    explorer.image()  # warm-up
    compute, render = [], []
    for repeat in range(args.repeats):
        start = time.process_time()
        explorer.controls["checkpoint"].value = (repeat + 1) % len(snapshots)  # recomputes the panels
        middle = time.process_time()
        explorer.image()
        compute.append(middle - start)
        render.append(time.process_time() - middle)
    total = [c + r for c, r in zip(compute, render, strict=True)]
    print(f"{len(snapshots)} checkpoints, {args.repeats} redraws, CPU seconds of one core: "
          f"recompute {sum(compute) / len(compute):.3f} s, render {sum(render) / len(render):.3f} s, "
          f"total {sum(total) / len(total):.3f} s per redraw (max {max(total):.3f} s; target 0.3 s)")


if __name__ == "__main__":
    main()
