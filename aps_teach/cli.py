"""The `aps-teach` command (also `python -m aps_teach`).

    aps-teach [--help]             the main job: APS on the easy level, start to finish, one figure
                                   (aps_teach.quickstart)
    aps-teach demo [--help]        a random policy on both gridworlds, a picture (aps_teach.demo)
    aps-teach gridworld ...        run | pretrain | finetune | evaluate | sweep | transfer | study
                                   (see aps_teach.cli_gridworld)
    aps-teach atari ...            run | pretrain | finetune | evaluate | sweep (see aps_teach.cli_atari)

Errors follow `aps_teach.cli_errors`: one line and exit status 2; `--debug` shows the traceback.
"""

from __future__ import annotations

import difflib
import sys

import tyro

from aps_teach.cli_errors import config_errors, pop_debug, run_cli

COMMANDS = {
    "demo": "a random policy on both gridworlds: statistics and a picture",
    "gridworld": "the key-passageway gridworlds: run, pretrain, finetune, evaluate, sweep, transfer, study",
    "atari": "Atari games (ale-py): run, pretrain, finetune, evaluate, sweep",
}
"""Subcommand -> its line in `aps-teach --help`."""


def commands_help() -> str:
    """The list of commands, one line each, for `aps-teach --help`."""
    width = max(map(len, COMMANDS)) + len("aps-teach ")
    lines = [f"  {'aps-teach':<{width}}  (no command) this quickstart, options below"]
    lines += [f"  {'aps-teach ' + name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join(["commands (each takes --help):", *lines, "",
                      "Errors are one line (exit status 2); --debug shows the traceback."])


def unknown_command(word: str) -> ValueError:
    """The error for a first argument that is neither a command nor an option, with the nearest command."""
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.5)
    hint = f"did you mean `aps-teach {near[0]}`? " if near else ""
    return ValueError(f"unknown command {word!r}; {hint}commands: {', '.join(COMMANDS)} (or none: the "
                      "quickstart; see aps-teach --help)")


def main(argv: list[str] | None = None) -> int:
    argv, debug = pop_debug(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["gridworld"]:
        from aps_teach.cli_gridworld import gridworld_main

        return gridworld_main(argv[1:], debug=debug)
    if argv[:1] == ["atari"]:
        from aps_teach.cli_atari import atari_main

        return atari_main(argv[1:], debug=debug)
    if argv[:1] == ["demo"]:
        from aps_teach.demo import DemoConfig, run_demo

        def demo() -> int:
            with config_errors():
                config = tyro.cli(DemoConfig, args=argv[1:], prog="aps-teach demo")
            run_demo(config)
            return 0

        return run_cli("aps-teach demo", demo, debug=debug)

    def quickstart() -> int:
        from aps_teach.quickstart import QuickstartConfig, run_quickstart

        if argv and not argv[0].startswith("-"):
            raise unknown_command(argv[0])
        with config_errors():
            config = tyro.cli(QuickstartConfig, args=argv, prog="aps-teach",
                              description=f"{commands_help()}\n\n{QuickstartConfig.__doc__}")
        run_quickstart(config)
        return 0

    return run_cli("aps-teach", quickstart, debug=debug)
