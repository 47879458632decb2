"""What a training phase does the same way in both wings (`aps_teach.train`, `aps_teach.atari.train`): the
epsilon schedule, the torch thread limit while it runs, and the check that a checkpoint is of the run
resuming it. The phases' names and random streams are `aps_teach.seeds`'.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import torch

from aps_teach.run_dir import config_differences, describe_differences


def linear_schedule(start: float, end: float, duration: float, step: int) -> float:
    """start, moving linearly to end over `duration` steps, then end: end + (start - end) max(0, 1 - step /
    duration); end throughout if `duration` is 0."""
    return end if duration == 0 else end + (start - end) * max(0.0, 1.0 - step / duration)


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch on `count` CPU threads inside (None: torch's setting), the previous number restored after."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def single_thread() -> contextlib.AbstractContextManager[None]:
    """`torch_threads(1)`, the gridworld's setting: its small networks are faster without intra-op threads."""
    return torch_threads(1)


def check_checkpoint(path: Path | None, saved: Mapping, expected: Mapping, *, ignore: Collection[str] = (),
                     hints: Mapping[str, str] | None = None) -> None:
    """Refuse (ValueError) a checkpoint whose entries differ from those `expected` of the run resuming it,
    naming every differing field (dotted inside a config: `config_differences`), `ignore`d fields aside.
    `hints`: field -> advice added when that field differs ('{saved}' stands for the checkpoint's value)."""
    diff = config_differences({key: saved.get(key) for key in expected}, expected, ignore=ignore)
    if diff:
        advice = [hint.format(saved=theirs) for name, theirs, _ in diff
                  for field, hint in (hints or {}).items() if name == field]
        raise ValueError(f"checkpoint {path} is not of this run: "
                         f"{describe_differences(diff, 'checkpoint', 'this run')}"
                         + "".join(f"; {line}" for line in advice))
