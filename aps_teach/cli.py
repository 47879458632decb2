"""The `aps-teach` command (also `python -m aps_teach`). With no arguments it runs the demo."""

from __future__ import annotations

import sys

import tyro

from aps_teach.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    config = tyro.cli(DemoConfig, args=argv[1:] if argv[:1] == ["demo"] else argv, prog="aps-teach demo")
    try:
        run_demo(config)
    except ValueError as error:
        print(f"aps-teach: error: {error}", file=sys.stderr)
        return 2
    return 0
