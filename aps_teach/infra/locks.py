"""One owner per directory: an exclusive lock on DIR/.lock, held while a command writes a run or sweep
directory.

    with owning(out):      # refused at once if another process owns OUT; nothing in OUT touched
        ...                # check, then write

The lock is the kernel's (`fcntl.flock`, which Linux also honours on NFS), so it goes away with its holder
however the holder ends, SIGKILL included: a lock file still naming a process that ended without releasing
it is free, and the next owner takes it over with a status line. The file holds the owner's pid and host,
which a refused process names in its one-line error. On release the owner deletes the file (while it still
holds the lock; a process that opened the old file finds it gone and tries again), and a refusal or error
inside the block also removes the directories `owning` created, so a command refused inside the lock leaves
the file system as it found it. Ownership is per process and re-entrant: a study's two sweeps, or an Atari
sweep's run inside its sweep, take the lock their caller already holds.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

LOCK_FILE = ".lock"
_held: dict[str, int] = {}
"""Real path of each directory this process owns -> how many `owning` blocks hold it."""


class DirectoryBusy(ValueError):
    """Another process owns the directory (a user error: the command is refused, nothing is written)."""


def _owner_text() -> str:
    return f"{os.getpid()} {socket.gethostname()}"


def _describe(text: str) -> str:
    """'pid N' (and ' on HOST' when it is another machine's) from a lock file's text; '' if it has none."""
    parts = text.split()
    if not parts:
        return ""
    host = parts[1] if len(parts) > 1 else ""
    return f"pid {parts[0]}" + (f" on {host}" if host and host != socket.gethostname() else "")


def _read(fd: int) -> str:
    return os.pread(fd, 256, 0).decode(errors="replace").strip()


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


def _acquire(directory: Path) -> int:
    """An open descriptor of DIR/.lock holding its exclusive lock; `DirectoryBusy` naming the holder."""
    path = directory / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(_read(fd))
            os.close(fd)
            raise DirectoryBusy(f"{directory} is in use by another aps-teach process"
                                f"{f' ({holder})' if holder else ''}: wait for it to end or stop it, then "
                                "run this again (or give another --out)") from None
        except BaseException:
            os.close(fd)
            raise
        try:  # the file we locked must still be the one at `path` (its last owner deletes it on release)
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


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
        fd = _acquire(directory)
    except BaseException:
        _remove_empty(created)
        raise
    previous = _describe(_read(fd))
    if previous:
        print(f"taking over {directory}: its last owner ({previous}) ended without releasing it",
              file=sys.stderr, flush=True)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{_owner_text()}\n".encode(), 0)
    _held[key] = 1
    failed = True
    try:
        yield directory
        failed = False
    finally:
        del _held[key]
        with suppress(FileNotFoundError):
            os.unlink(directory / LOCK_FILE)  # before the lock goes: see _acquire
        os.close(fd)
        if failed:
            _remove_empty(created)


def _remove_empty(directories: list[Path]) -> None:
    """Remove those of `directories` (deepest first) that are empty: what a refused command created."""
    for path in directories:
        try:
            path.rmdir()
        except OSError:
            return
