"""One owner per directory: an exclusive lock on DIR/.lock, held while a command writes a run or sweep
directory.

    with owning(out):      # refused at once if another process owns OUT; nothing in OUT touched
        ...                # check, then write

The lock is `filelock`'s, the operating system's own file lock on every platform (`flock` on Linux and
macOS, which Linux also honours on NFS; `msvcrt.locking` on Windows), so it goes away with its holder
however the holder ends, SIGKILL included. While it holds the lock the owner names itself, pid and host, in
DIR/.owner, which a refused process names in its one-line error; a clean release deletes that record, so
the next owner that finds one knows its last owner ended without releasing and says so. DIR/.lock itself
stays after a release, empty (filelock's rule on Linux and macOS: a lock file deleted while another process
waits on it would let two processes own the directory). A refusal or error inside the block removes the
directories `owning` created, with the lock and record it put in them, so a command refused inside the lock
leaves the file system as it found it. Ownership is per process and re-entrant: a study's two sweeps, or an
Atari sweep's run inside its sweep, take the lock their caller already holds.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_FILE = ".lock"
OWNER_FILE = ".owner"
_held: dict[str, int] = {}
"""Real path of each directory this process owns -> how many `owning` blocks hold it."""


class DirectoryBusy(ValueError):
    """Another process owns the directory (a user error: the command is refused, nothing is written)."""


def _owner_text() -> str:
    return f"{os.getpid()} {socket.gethostname()}"


def _describe(text: str) -> str:
    """'pid N' (and ' on HOST' when it is another machine's) from an owner record; '' if it has none."""
    parts = text.split()
    if not parts:
        return ""
    host = parts[1] if len(parts) > 1 else ""
    return f"pid {parts[0]}" + (f" on {host}" if host and host != socket.gethostname() else "")


def _recorded_owner(directory: Path) -> str:
    """Who DIR/.owner names ('pid N', see `_describe`); '' when there is no record (or it is unreadable)."""
    try:
        return _describe((directory / OWNER_FILE).read_text(errors="replace"))
    except OSError:
        return ""


def holds(directory: str | os.PathLike) -> bool:
    """Whether this process owns `directory` (inside an `owning` block)."""
    return os.path.realpath(directory) in _held


def _missing_parents(path: Path) -> list[Path]:
    """`path` and its ancestors that do not exist yet, deepest first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def _acquire(directory: Path) -> FileLock:
    """DIR/.lock, held; `DirectoryBusy` naming the holder if another process holds it."""
    lock = FileLock(directory / LOCK_FILE, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = _recorded_owner(directory)
        raise DirectoryBusy(f"{directory} is in use by another aps-teach process"
                            f"{f' ({holder})' if holder else ''}: wait for it to end or stop it, then "
                            "run this again (or give another --out)") from None
    return lock


def check_free(directory: str | os.PathLike) -> None:
    """`DirectoryBusy` (as `owning` would say it) if another process owns `directory` now; nothing is created
    or written (a directory without DIR/.lock has never been owned, so none owns it). For a check before
    reading what a directory holds: a file another process is writing says nothing of its own yet."""
    directory = Path(directory)
    if holds(directory) or not (directory / LOCK_FILE).is_file():
        return
    _acquire(directory).release()


@contextmanager
def owning(directory: str | os.PathLike) -> Iterator[Path]:
    """Own `directory` (created if missing) for the block; see the module docstring. Yields its path."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} is a file, not a directory; give another --out")
    key = os.path.realpath(directory)
    if key in _held:
        _held[key] += 1
        try:
            yield directory
        finally:
            _held[key] -= 1
        return
    created = _missing_parents(directory.absolute())
    directory.mkdir(parents=True, exist_ok=True)
    try:
        lock = _acquire(directory)
    except BaseException:
        _remove_empty(created)
        raise
    previous = _recorded_owner(directory)
    if previous:
        print(f"taking over {directory}: its last owner ({previous}) ended without releasing it",
              file=sys.stderr, flush=True)
    (directory / OWNER_FILE).write_text(f"{_owner_text()}\n")
    _held[key] = 1
    failed = True
    try:
        yield directory
        failed = False
    finally:
        del _held[key]
        with suppress(FileNotFoundError):
            (directory / OWNER_FILE).unlink()  # while the lock is still held: a clean release
        if failed and created:  # a directory this block made and nobody else knew of: leave nothing
            with suppress(OSError):  # (Windows deletes it on release, and refuses while it is open)
                (directory / LOCK_FILE).unlink()
        lock.release()
        if failed:
            _remove_empty(created)


def _remove_empty(directories: list[Path]) -> None:
    """Remove those of `directories` (deepest first) that are empty: what a refused command created."""
    for path in directories:
        try:
            path.rmdir()
        except OSError:
            return
