"""`aps-teach demo`: a random policy on every gridworld level, drawn — the picture notebook 00 explains."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

import gridworld
from aps_teach.grid.random_policy import RandomPolicyStats, random_policy_stats
from aps_teach.infra.checks import check_seed


@dataclass
class DemoConfig:
    """Roll a uniformly random policy on each gridworld level and draw where it goes."""

    episodes: int = 500
    """Episodes of the random policy per level."""
    seed: int = 0
    """Seed of the start cells and actions; the same seed gives the same picture."""
    out: Path = Path("runs/demo/gridworlds.png")
    """Where to write the picture (PNG); under runs/ like every command's output (results/ holds only the
    committed results, which ship in the wheel)."""
    progress: bool = True
    """Show progress bars."""

    def __post_init__(self) -> None:
        from aps_teach.infra.figures import check_figure_path

        check_figure_path(self.out, "--out")
        self.seed = check_seed(self.seed)


def run_demo(config: DemoConfig) -> list[RandomPolicyStats]:
    """Collect the random policy's statistics on every level, print them and save the figure."""
    if matplotlib.get_backend().lower() not in {"agg", "module://matplotlib_inline.backend_inline"}:
        matplotlib.use("Agg")  # a command line draws to a file, never to a window
    from aps_teach.grid.plots import plot_random_policy_overview
    from aps_teach.infra.figures import save_figure

    stats = [
        random_policy_stats(level, config.episodes, seed=config.seed, progress=config.progress)
        for level in gridworld.LEVELS
    ]
    for result in stats:
        print(result.summary())
    save_figure(plot_random_policy_overview(stats), config.out)
    print(f"wrote {config.out}")
    return stats
