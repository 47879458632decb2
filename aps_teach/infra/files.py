"""Atomic file writes: a result or checkpoint file is either the old one or the whole new one, and a disk too
full for it is one clear error (`DiskFull`: the path and the bytes it needs) instead of a torch traceback."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch


class DiskFull(OSError):
    """Not enough free space for a file: its path, the bytes it needs and the bytes free (errno ENOSPC)."""

    def __init__(self, path: str | os.PathLike, need: int, free: int):
        super().__init__(errno.ENOSPC, f"not enough disk space to write it: it needs {_size(need)}, "
                                       f"{_size(free)} free; free some space and run the command again (the "
                                       "file it replaces, if any, is intact)", str(path))


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10**6 else f"{n / 1e6:,.1f} MB"


def check_disk(path: str | os.PathLike, need: int) -> None:
    """`DiskFull` if the file system `path` would be written on has fewer than `need` bytes free."""
    free = shutil.disk_usage(Path(path).parent).free
    if need > free:
        raise DiskFull(path, need, free)


@contextmanager
def atomic_path(path: str | os.PathLike, need: int = 0) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success, rename it onto `path` (else delete it).

    `need`: the bytes the file will take (at least), checked against free disk space first; a write that
    runs out of space (ENOSPC, or torch's 'file write failed' with less than `need` free) is `DiskFull`
    too. The suffix is kept so libraries that pick a format from it (matplotlib, torch) still work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_disk(path, need)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; give it a normal file's mode
        os.replace(tmp, path)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFull(path, need, shutil.disk_usage(path.parent).free) from None
        raise
    except RuntimeError as error:  # torch.save reports a failed write as a RuntimeError
        free = shutil.disk_usage(path.parent).free
        if "file write failed" in str(error) and free < max(need, 1):
            raise DiskFull(path, need, free) from None
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_json(path: str | os.PathLike, what: str, remedy: str) -> Any:
    """The JSON value in the file at `path`; a ValueError of one line naming the file, `what` it should be
    and `remedy` (what to do) when it is missing, not UTF-8 text or not JSON."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} not found: {what} is missing; {remedy}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not {what} (not JSON: {error}); {remedy}") from None


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write a whole text file atomically."""
    data = text.encode()
    with atomic_path(path, len(data)) as tmp:
        tmp.write_bytes(data)


def csv_text(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """Dict rows as the text of a CSV file; columns default to every key, in first-seen order."""
    columns = list(dict.fromkeys(key for row in rows for key in row)) if columns is None else list(columns)
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def write_csv_atomic(path: str | os.PathLike, rows: Sequence[dict],
                     columns: Sequence[str] | None = None) -> None:
    """Write dict rows as a whole CSV file atomically (`csv_text`)."""
    write_text_atomic(path, csv_text(rows, columns))


def tensor_bytes(state) -> int:
    """Bytes of the tensors in a (nested) checkpoint state: what `torch.save` writes at least."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(tensor_bytes(value) for value in state.values())
    if isinstance(state, list | tuple):
        return sum(tensor_bytes(value) for value in state)
    return 0


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """`torch.save` a checkpoint atomically: an interrupted save leaves the previous checkpoint intact, and a
    disk without room for its tensors is `DiskFull` before anything is written."""
    with atomic_path(path, tensor_bytes(state)) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device | None = None, *,
                    mmap: bool = False) -> dict:
    """`torch.load` a checkpoint (tensors and plain data only; `mmap`: tensors read from disk when used).

    FileNotFoundError if it is missing; ValueError naming the file and why it cannot be read (never torch's
    advice to load it with weights_only=False, which would run whatever code the file holds)."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except FileNotFoundError:
        raise
    except Exception as error:
        if mmap:  # an old-format file cannot be mapped, and a corrupt one is best described by a plain load
            return load_checkpoint(path, map_location)
        raise ValueError(f"corrupt checkpoint file {path}: {_unreadable(path, error)}; delete it to redo "
                         "its phase") from None


def _unreadable(path: str | os.PathLike, error: Exception) -> str:
    """Why `torch.load` failed, in a few words."""
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        return "the file is empty (0 bytes)"
    text = str(error)
    if "WeightsUnpickler error:" in text:  # torch's message around it advises weights_only=False: drop it
        detail = text.split("WeightsUnpickler error:", 1)[1].strip().splitlines()[0].strip()
        return f"not a checkpoint of tensors and plain data ({detail or 'unpickling failed'})"
    first = text.strip().splitlines()[0].split(". ")[0].strip() if text.strip() else ""
    return f"{type(error).__name__}: {first}" if first else f"{type(error).__name__} while reading it"


def jsonable(value):
    """`value` as it reads back from a JSON file (tuples become lists), to compare it with what was saved."""
    return json.loads(json.dumps(value))
