"""The `aps-teach` command (also `python -m aps_teach`).

    aps-teach [--help]             the main job: APS on the easy level, start to finish, one figure
                                   (aps_teach.quickstart)
    aps-teach demo [--help]        a random policy on both gridworlds, a picture (aps_teach.demo)
    aps-teach gridworld ...        run | pretrain | finetune | evaluate | sweep | transfer | study
                                   (see aps_teach.cli_gridworld)
    aps-teach atari ...            run | pretrain | finetune | evaluate | sweep (see aps_teach.cli_atari)
"""

from __future__ import annotations

import sys

import tyro

OTHER_COMMANDS = ("Other commands: `aps-teach demo` (a random policy on both gridworlds), `aps-teach "
                  "gridworld {run,pretrain,finetune,evaluate,sweep,transfer,study}`, `aps-teach atari "
                  "{run,pretrain,finetune,evaluate,sweep}`; each takes --help.")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gridworld"]:
        from aps_teach.cli_gridworld import gridworld_main

        return gridworld_main(argv[1:])
    if argv[:1] == ["atari"]:
        from aps_teach.cli_atari import atari_main

        return atari_main(argv[1:])
    if argv[:1] == ["demo"]:
        from aps_teach.demo import DemoConfig, run_demo

        config = tyro.cli(DemoConfig, args=argv[1:], prog="aps-teach demo")
        return _run(run_demo, config)
    from aps_teach.quickstart import QuickstartConfig, run_quickstart

    config = tyro.cli(QuickstartConfig, args=argv, prog="aps-teach",
                      description=f"{QuickstartConfig.__doc__} {OTHER_COMMANDS}")
    return _run(run_quickstart, config)


def _run(job, config) -> int:
    try:
        job(config)
    except ValueError as error:
        print(f"aps-teach: error: {error}", file=sys.stderr)
        return 2
    return 0
