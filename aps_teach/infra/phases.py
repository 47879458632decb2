"""What a training phase does the same way in both wings (`aps_teach.grid.train`, `aps_teach.atari.train`):
what it returns (`PhaseLog`), the epsilon schedule, the torch thread limit while it runs, the check that a
checkpoint is of the run resuming it, its metrics.csv put back as the checkpoint has it, and the check that
torch.compile works here before a run that asks for it. The phases' names and random streams are
`aps_teach.infra.seeds`'.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from aps_teach.infra.files import csv_text, write_text_atomic
from aps_teach.infra.run_dir import PHASE_NAMES, config_differences, describe_differences, say


@dataclass
class PhaseLog:
    """What a training phase returns: its metrics rows, as its metrics.csv holds them, and (gridworld) the
    coverage it reached and the time of its earlier sessions."""

    metrics: list[dict] = field(default_factory=list)
    """One row per round (gridworld) or per `log_every` env steps (Atari), each with its env_steps and
    updates."""
    coverage: dict = field(default_factory=dict)
    """Gridworld: the coverage the phase's env batch reached (`EnvBatch.coverage`); empty on Atari."""
    earlier_seconds: float = 0.0
    """Gridworld, a resumed phase: wall seconds its rounds took in earlier sessions, up to the checkpoint it
    resumed from (0 when it ran in one go); what it adds to this session's time makes timings survive a
    resume."""
    seconds: float = 0.0
    """Gridworld: wall seconds of the phase's rounds, `earlier_seconds` plus this session's (what its last
    checkpoint records): a finished phase loaded again keeps the time it took."""
    replay: Any = None
    """Gridworld pretraining with `AgentConfig.adapt_psi` or `AgentConfig.fb`: the phase's replay
    (`grid.replay.NStepReplay`, restored from the checkpoint when a finished phase is loaded), which psi's
    offline adaptation, or the fb arm's F and B, train on; None otherwise (a replay is not kept alive that
    nothing reads)."""

    @property
    def env_steps(self) -> int:
        """The env steps of the last metrics row (the phase's end once it finished); 0 before any row."""
        return self.metrics[-1]["env_steps"] if self.metrics else 0

    @property
    def updates(self) -> int:
        """The updates of the last metrics row (Atari: the phase's; gridworld: the learner's since it was
        built); 0 before any row."""
        return self.metrics[-1]["updates"] if self.metrics else 0


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


def restore_metrics(path: Path, rows: Sequence[dict], columns: Sequence[str], phase: str) -> None:
    """On resume, make the phase's metrics.csv at `path` the checkpoint's `rows` (as checkpoints are the
    truth of a resumed run) and say what that repaired: a file missing, unreadable or cut short, or rows
    written after the checkpoint (their steps are run again). Nothing is said or written when it matches,
    or when the checkpoint has no row yet."""
    if not rows:
        return
    expected = csv_text(rows, columns)
    try:
        found = path.read_bytes().decode() if path.exists() else None  # line ends as written
    except (OSError, UnicodeDecodeError) as error:
        found, reason = "", f"was unreadable ({error})"
    else:
        reason = "was missing" if found is None else ""
    if found == expected:
        return
    if not reason:
        if found.startswith(expected):
            extra = len(found[len(expected):].splitlines())
            reason = f"had {extra} row(s) written after the checkpoint (those steps are run again)"
        elif expected.startswith(found):
            reason = "was cut short"
        else:
            reason = "did not match the checkpoint's rows"
    write_text_atomic(path, expected)
    say(f"{PHASE_NAMES[phase]}: {path} {reason}; rewritten from the checkpoint ({len(rows)} rows)")


@functools.cache
def compile_backend_error(device_type: str) -> str | None:
    """Why torch.compile cannot run on this machine's `device_type` (cpu, cuda), or None if it can: a tiny
    function compiled and run once (the CPU backend needs a working C++ compiler). Torch's own log lines
    while it fails (torch 2.14 warns where it kept its cache) are held back: the returned reason is what
    the user needs, in one line."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        probe = torch.compile(lambda x: torch.sin(x) * 2.0 + 1.0, dynamic=False)
        probe(torch.arange(4.0, device=device_type))
    except Exception as error:  # whatever the backend raises: the message is what the user needs
        return f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    finally:
        logging.disable(previous)
    return None


def check_compile_backend(device: str | torch.device, flag: str = "--compile") -> None:
    """ValueError in one line, naming the option `flag`, if torch.compile has no working backend for
    `device`."""
    device_type = torch.device(device).type
    error = compile_backend_error(device_type)
    if error is not None:
        raise ValueError(f"{flag}: torch.compile does not work on {device_type} here ({error}); on a CPU "
                         f"it needs a C++ compiler (g++ or clang): install one, or drop {flag}")
