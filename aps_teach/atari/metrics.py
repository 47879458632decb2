"""A training phase's metrics: per-interval means of the update statistics, finished games and rates, written
to metrics.csv (and TensorBoard scalars when tensorboard is installed)."""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import torch

from aps_teach.atari.config import AtariTrainConfig
from aps_teach.infra.files import write_csv_atomic


class PhaseMetrics:
    """Per-interval means of the update statistics, finished games, rates; metrics.csv and TensorBoard.

    The statistics arrive as tensors (`AtariLearner` keeps them on the device) and are read, in one copy
    per column, only when a row is written: the updates between rows never wait for the device."""

    def __init__(self, run_dir: Path | None, config: AtariTrainConfig, rows: list[dict]):
        self.run_dir, self.rows = run_dir, rows
        self.stats: dict[str, list[torch.Tensor]] = {}
        self.updates = 0
        self.clock, self.steps_at, self.updates_at = time.perf_counter(), None, None
        self.writer = None
        if run_dir is not None and config.tensorboard and importlib.util.find_spec("tensorboard"):
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    @staticmethod
    def columns(rows: list[dict]) -> list[str]:
        """metrics.csv's columns: every key of the rows, in first-seen order."""
        return list(dict.fromkeys(k for r in rows for k in r))

    def add(self, stats: dict[str, torch.Tensor]) -> None:
        for key, value in stats.items():
            self.stats.setdefault(key, []).append(value)
        self.updates += 1

    def rates(self, env_steps: int, updates: int) -> tuple[float, float]:
        """env-steps/s and updates/s since the last call."""
        now = time.perf_counter()
        elapsed = max(now - self.clock, 1e-9)
        steps_at = env_steps if self.steps_at is None else self.steps_at
        updates_at = updates if self.updates_at is None else self.updates_at
        rates = ((env_steps - steps_at) / elapsed, (updates - updates_at) / elapsed)
        self.clock, self.steps_at, self.updates_at = now, env_steps, updates
        return rates

    def row(self, env_steps: int, updates: int, epsilon: float, returns: list[float],
            rates: tuple[float, float], health: dict[str, float] | None = None) -> dict:
        """Write a metrics row: the interval's games and mean score, the means of the update statistics,
        `health` (e.g. psi's dead units on the last batch), the rates."""
        row = {"env_steps": env_steps, "updates": updates, "epsilon": epsilon, "games": len(returns),
               "score": float(np.mean(returns)) if returns else None,
               **{k: sum(torch.stack(v).tolist()) / max(self.updates, 1)
                  for k, v in sorted(self.stats.items())},
               **(health or {}), "env_steps_per_s": rates[0], "updates_per_s": rates[1]}
        self.rows.append(row)
        self.stats, self.updates = {}, 0
        if self.run_dir is not None:
            write_csv_atomic(self.run_dir / "metrics.csv", self.rows, self.columns(self.rows))
        if self.writer is not None:
            for key, value in row.items():
                if key != "env_steps" and value is not None and math.isfinite(value):
                    self.writer.add_scalar(key, value, env_steps)
            self.writer.flush()
        return row

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
