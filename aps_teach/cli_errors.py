"""One error style for every `aps-teach` command.

Bad input (a `ValueError`) and file trouble (an `OSError`: a missing, unreadable or read-only path) end a
command with one line on stderr, `<prog>: error: <what was wrong and what is valid>`, and exit status 2,
without a traceback. Ctrl-C ends it with `<prog>: interrupted[: <where the work stands>]` and status 130
(a command says where it stands by raising `Interrupted(message)`). `--debug` anywhere on the command line
(or APS_TEACH_DEBUG=1) lets the exception through, traceback and all. Any other exception is a bug and keeps
its traceback (status 1).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)
"""What the commands report as one line: bad values (ValueError) and unusable paths (OSError)."""
DEBUG_FLAG = "--debug"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with a message saying where the work stands and how to continue it."""


def pop_debug(argv: Sequence[str], debug: bool = False) -> tuple[list[str], bool]:
    """`argv` without `--debug`, and whether it (or APS_TEACH_DEBUG=1, or `debug`) asked for tracebacks."""
    rest = [arg for arg in argv if arg != DEBUG_FLAG]
    return rest, debug or len(rest) < len(argv) or os.environ.get("APS_TEACH_DEBUG", "") not in ("", "0")


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
