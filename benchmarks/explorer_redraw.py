"""Reward explorer redraw time on one core: CPU seconds per control change (recompute the panels and
render the PNG the notebook shows), split into the two, over a tiny APS run on the hard level, with each
checkpoint on its own colour scale and with the same scale at every checkpoint. CPU time of this process
(one thread), so that other jobs on a shared machine count less.

    python benchmarks/explorer_redraw.py [--repeats 20]

Target (issue 16): a redraw in at most 0.3 s.
"""

from __future__ import annotations

import argparse
import time

import matplotlib
import torch

matplotlib.use("Agg")

from aps_teach.course import widgets  # noqa: E402
from aps_teach.grid.snapshots import pretrain_with_snapshots  # noqa: E402
from aps_teach.grid.train import TrainConfig  # noqa: E402
from aps_teach.learner.config import AgentConfig  # noqa: E402


def time_redraws(explorer, repeats: int) -> tuple[list[float], list[float]]:
    """CPU seconds of each (recompute, render) as the checkpoint slider moves."""
    checkpoints = len(explorer.controls["checkpoint"].options)
    explorer.image()  # warm-up
    compute, render = [], []
    for repeat in range(repeats):
        start = time.process_time()
        explorer.controls["checkpoint"].value = (repeat + 1) % checkpoints  # recomputes the panels
        middle = time.process_time()
        explorer.image()
        compute.append(middle - start)
        render.append(time.process_time() - middle)
    return compute, render


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="control changes to time per mode")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = TrainConfig(agent=AgentConfig(batch_size=256), num_envs=4, learning_starts=400, progress=False)
    _, _, snapshots = pretrain_with_snapshots("aps", "hard", 2400, seed=0, every_rounds=1, config=config)
    explorer = widgets.reward_explorer(snapshots, show=False)
    for fixed in (False, True):
        explorer.controls["fixed_scale"].value = fixed  # its limits over all checkpoints: computed here, once
        compute, render = time_redraws(explorer, args.repeats)
        total = [c + r for c, r in zip(compute, render, strict=True)]
        print(f"{'same scale at every checkpoint' if fixed else 'own scale per checkpoint':>30}: "
              f"{len(snapshots)} checkpoints, {args.repeats} redraws, CPU seconds of one core: recompute "
              f"{sum(compute) / len(compute):.3f}, render {sum(render) / len(render):.3f}, total "
              f"{sum(total) / len(total):.3f} per redraw (max {max(total):.3f}; target 0.3)")


if __name__ == "__main__":
    main()
