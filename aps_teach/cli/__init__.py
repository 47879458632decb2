"""The `aps-teach` command: `main` (the quickstart, `demo`, and the dispatch to the two wings), `gridworld`
and `atari` (their subcommands; the gridworld's study commands in `studies`), `common` (subcommand parsing,
the one-line error style and the options they share).

Here, importing nothing heavy, is what `main` needs before its first import of torch: the --debug flag, so
that Ctrl-C while the libraries load is one line too."""

import os
from collections.abc import Sequence

DEBUG_FLAG = "--debug"


def pop_debug(argv: Sequence[str], debug: bool = False) -> tuple[list[str], bool]:
    """`argv` without `--debug`, and whether it (or APS_TEACH_DEBUG=1, or `debug`) asked for tracebacks."""
    rest = [arg for arg in argv if arg != DEBUG_FLAG]
    return rest, debug or len(rest) < len(argv) or os.environ.get("APS_TEACH_DEBUG", "") not in ("", "0")
