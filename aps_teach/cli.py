"""The `aps-teach` command (also `python -m aps_teach`).

    aps-teach                      the demo (random policy on both gridworlds, a picture)
    aps-teach demo [--help]        the same, with options
    aps-teach gridworld ...        run | pretrain | finetune | evaluate | sweep | transfer
                                   (see aps_teach.cli_gridworld)
    aps-teach atari ...            run | pretrain | finetune | evaluate (see aps_teach.cli_atari)
"""

from __future__ import annotations

import sys

import tyro

from aps_teach.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gridworld"]:
        from aps_teach.cli_gridworld import gridworld_main

        return gridworld_main(argv[1:])
    if argv[:1] == ["atari"]:
        from aps_teach.cli_atari import atari_main

        return atari_main(argv[1:])
    config = tyro.cli(DemoConfig, args=argv[1:] if argv[:1] == ["demo"] else argv, prog="aps-teach demo")
    try:
        run_demo(config)
    except ValueError as error:
        print(f"aps-teach: error: {error}", file=sys.stderr)
        return 2
    return 0
