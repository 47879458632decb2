"""One error style for every `aps-teach` command.

Bad input (a `ValueError`) and file trouble (an `OSError`: a missing, unreadable or read-only path) end a
command with one line on stderr, `<prog>: error: <what was wrong and what is valid>`, and exit status 2,
without a traceback. Inside `config_errors()`, a value a config dataclass refuses while tyro builds it is
such a ValueError too. Ctrl-C ends a command with `<prog>: interrupted[: <where the work stands>]` and
status 130 (a command says where it stands by raising `Interrupted(message)`). `--debug` anywhere on the
command line (or APS_TEACH_DEBUG=1) lets the exception through, traceback and all. Any other exception is
a bug and keeps its traceback (status 1).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)
"""What the commands report as one line: bad values (ValueError) and unusable paths (OSError)."""
DEBUG_FLAG = "--debug"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with a message saying where the work stands and how to continue it."""


def pop_debug(argv: Sequence[str], debug: bool = False) -> tuple[list[str], bool]:
    """`argv` without `--debug`, and whether it (or APS_TEACH_DEBUG=1, or `debug`) asked for tracebacks."""
    rest = [arg for arg in argv if arg != DEBUG_FLAG]
    return rest, debug or len(rest) < len(argv) or os.environ.get("APS_TEACH_DEBUG", "") not in ("", "0")


@contextlib.contextmanager
def config_errors() -> Iterator[None]:
    """Inside, a value a config refuses while tyro builds it (its __post_init__'s ValueError) leaves tyro.cli
    as that ValueError, to be reported as one line like any other. Uses tyro's parse-error hook, which tyro
    marks private: where it is missing, tyro reports the error itself (a box, also exit status 2)."""
    errors = getattr(sys.modules.get("tyro"), "_errors", None)
    hook, failure = getattr(errors, "on_parse_error", None), getattr(errors, "InstantiationFailure", None)
    if hook is None or failure is None:
        yield
        return

    def reraise(event) -> None:
        if isinstance(event, failure):
            raise ValueError(str(event.message))

    with hook(reraise):
        yield


def check_out(path: Path | None, option: str = "--out") -> None:
    """ValueError for an empty output path (`--out ""`, which would write into the current directory)."""
    if path is not None and str(path) in ("", "."):
        raise ValueError(f"{option} is empty; give a directory (for the current one, its full path)")


def describe(error: BaseException) -> str:
    """The error as one line: an OSError as `<path>: <reason>`, anything else as its message."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        text = f"{error.filename}: {error.strerror}"
    else:
        text = str(error) or type(error).__name__
    return " ".join(text.split())


def run_cli(prog: str, job: Callable[[], int], *, debug: bool = False) -> int:
    """`job()`'s exit status; a user error is one line `<prog>: error: ...` and 2, Ctrl-C a line and 130
    (with `debug`, both raise as they are)."""
    try:
        return job()
    except KeyboardInterrupt as stop:
        if debug:
            raise
        where = describe(stop) if isinstance(stop, Interrupted) and str(stop) else ""
        print(f"{prog}: interrupted" + (f": {where}" if where else ""), file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        if debug:
            raise
        print(f"{prog}: error: {describe(error)}", file=sys.stderr)
        return 2
