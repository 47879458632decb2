"""What the command tests share: a tiny learner for every command that builds its own training settings, and
sweeps run in this process, so that a study command runs to its end in seconds through `main`."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from aps_teach.grid.config import TrainConfig
from aps_teach.learner.config import AgentConfig

TINY_TRAIN = {"num_envs": 2, "learning_starts": 100, "updates_per_step": 1, "finetune_updates_per_step": 1}
"""The training settings of a tiny run: rounds of 2 envs x 100 steps, one update per step."""
TINY_AGENT = {"hidden": 16, "batch_size": 8, "k": 3}
"""The learner of a tiny run."""
TINY_FLAGS = ["--train.num-envs", "2", "--train.learning-starts", "100", "--train.updates-per-step", "1",
              "--train.finetune-updates-per-step", "1", "--train.agent.hidden", "16",
              "--train.agent.batch-size", "8", "--train.agent.k", "3", "--train.no-progress"]
"""TINY_TRAIN and TINY_AGENT as the flags of a command with a --train group (run, transfer)."""


@pytest.fixture
def tiny_learners(monkeypatch):
    """`TrainConfig()` with TINY_TRAIN and a TINY_AGENT learner as its defaults, for the commands that take no
    --train flags (the study commands build `TrainConfig(progress=False)` themselves). A value given is kept;
    `dataclasses.replace` gives every field, so overrides apply as they do. The configs a sweep records hold
    these settings: a test can check that its runs were tiny."""
    original = TrainConfig.__init__

    def tiny_init(self, *args, **kwargs):
        if not args:
            kwargs = {**TINY_TRAIN, **kwargs}
            kwargs.setdefault("agent", AgentConfig(**TINY_AGENT))
        original(self, *args, **kwargs)

    monkeypatch.setattr(TrainConfig, "__init__", tiny_init)


class InProcessPool(ThreadPoolExecutor):
    """`executors.LocalPool` as one thread of this process: the runs see this test's patches (a spawned
    worker would import the library afresh) and no worker pays torch's start-up."""

    def __init__(self, workers: int, initializer=None, initargs: tuple = ()):
        super().__init__(max_workers=1, initializer=initializer, initargs=initargs)

    def stop(self) -> None:
        self.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def in_process(monkeypatch, tiny_learners):
    """Tiny learners, and every local pool a sweep makes runs in this process (torch's thread count, which a
    sweep's run sets to 1, restored after)."""
    from aps_teach.infra import executors

    monkeypatch.setattr(executors, "LocalPool", InProcessPool)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def files(root: Path) -> dict[str, bytes]:
    """Every file under root, by its path relative to root, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
