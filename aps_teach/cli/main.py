"""The `aps-teach` command (also `python -m aps_teach`).

    aps-teach [--help]             the main job: APS on the easy level, start to finish, one figure
                                   (aps_teach.grid.quickstart)
    aps-teach demo [--help]        a random policy on every level, a picture (aps_teach.cli.demo)
    aps-teach gridworld ...        run | pretrain | finetune | evaluate | sweep | transfer | study | parts |
                                   families | families-budget | held-out | zero-shot | zero-shot-loss
                                   (see aps_teach.cli.gridworld, aps_teach.cli.studies)
    aps-teach atari ...            run | pretrain | finetune | evaluate | sweep | study | compare
                                   (see aps_teach.cli.atari)

Errors follow `aps_teach.cli.common`: one line and exit status 2; `--debug` shows the traceback.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aps_teach.cli import pop_debug

if TYPE_CHECKING:
    from aps_teach.grid.quickstart import QuickstartConfig, QuickstartResult

SUBCOMMANDS = {
    "gridworld": ("run", "pretrain", "finetune", "evaluate", "sweep", "transfer", "study", "parts",
                  "families", "families-budget", "held-out", "zero-shot", "zero-shot-loss"),
    "atari": ("run", "pretrain", "finetune", "evaluate", "sweep", "study", "compare"),
}
"""Each command group's subcommands, as `aps-teach --help` lists them (kept here, not read from the groups'
modules, so that --help imports no torch; tests/cli/test_cli.py holds them equal to the groups' own)."""
COMMANDS = {
    "demo": "a random policy on every gridworld level: statistics and a picture",
    "gridworld": f"the key-passageway gridworlds: {', '.join(SUBCOMMANDS['gridworld'])}",
    "atari": f"Atari games (ale-py): {', '.join(SUBCOMMANDS['atari'])}",
}
"""Subcommand -> its line in `aps-teach --help`."""


def commands_help() -> str:
    """The list of commands, one line each, for `aps-teach --help`."""
    width = max(map(len, COMMANDS)) + len("aps-teach ")
    lines = [f"  {'aps-teach':<{width}}  (no command) this quickstart, options below"]
    lines += [f"  {'aps-teach ' + name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join(["commands (each takes --help):", *lines, "",
                      "Errors are one line (exit status 2); --debug shows the traceback."])


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` (default: the command line) and return its exit status. Nothing heavy is
    imported before the Ctrl-C handler is in place: Ctrl-C while torch loads is one line too (130)."""
    argv, debug = pop_debug(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv, debug)
    except KeyboardInterrupt:  # before a command's own handler (`common.run_cli`) is in place
        if debug:
            raise
        prog = " ".join(["aps-teach", *argv[:1]]) if argv[:1] and argv[0] in COMMANDS else "aps-teach"
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _dispatch(argv: list[str], debug: bool) -> int:
    """`main` once --debug is taken out: the libraries imported, the command run."""
    import tyro

    from aps_teach.cli.common import check_command, config_errors, old_device_flags, run_cli

    if argv[:1] == ["gridworld"]:
        from aps_teach.cli.gridworld import gridworld_main

        return gridworld_main(argv[1:], debug=debug)
    if argv[:1] == ["atari"]:
        from aps_teach.cli.atari import atari_main

        return atari_main(argv[1:], debug=debug)
    if argv[:1] == ["demo"]:
        from aps_teach.cli.demo import DemoConfig, run_demo

        def demo() -> int:
            with config_errors():
                config = tyro.cli(DemoConfig, args=argv[1:], prog="aps-teach demo")
            run_demo(config)
            return 0

        return run_cli("aps-teach demo", demo, debug=debug)

    def quickstart() -> int:
        from aps_teach.grid.quickstart import QuickstartConfig, run_quickstart
        from aps_teach.infra.run_dir import RunDir

        check_command("aps-teach", argv, list(COMMANDS), optional=True)
        with config_errors():
            config = tyro.cli(QuickstartConfig, args=old_device_flags(argv), prog="aps-teach",
                              description=f"{commands_help()}\n\n{QuickstartConfig.__doc__}")
        with RunDir(config.out):  # owned while it runs and while its figure is drawn
            show_quickstart(config, run_quickstart(config))
        return 0

    return run_cli("aps-teach", quickstart, debug=debug)


def show_quickstart(config: QuickstartConfig, run: QuickstartResult) -> None:
    """Draw a `quickstart.run_quickstart` result to OUT/overview.png and print its summary."""
    import matplotlib

    if matplotlib.get_backend().lower() not in {"agg", "module://matplotlib_inline.backend_inline"}:
        matplotlib.use("Agg")  # a command line draws to a file, never to a window
    import gridworld
    from aps_teach.grid.cell_maps import overview_maps
    from aps_teach.grid.plots import plot_run_overview
    from aps_teach.infra.figures import save_figure

    result, snapshot, out = run.result, run.snapshot, Path(config.out)
    layout = gridworld.resolve_level(config.level)
    figure = out / "overview.png"
    budget = config.budget
    title = (f"{config.method} on the {config.level} level, seed {config.seed}: "
             f"{budget.pretrain_steps:,} reward-free steps, then {budget.finetune_steps:,} on the task")
    maps = overview_maps(snapshot.learner, layout, snapshot.particles, run.w)
    save_figure(plot_run_overview(layout, maps, config.method, run.zero_shot, run.finetuned,
                                  result.adaptation, title), figure)
    print(f"{config.method} on {config.level}, seed {config.seed}: pretraining "
          f"{result.pretrain_seconds:.0f} s, coverage {result.state_coverage:.2f}, target reached: "
          f"{result.target_reached}")
    print(f"zero-shot success {result.zero_shot_success:.2f} (identified w, GPI) -> fine-tuned "
          f"{result.finetuned_success:.2f}; {result.wall_seconds:.0f} s in all")
    blame = result.blame
    planner = "nothing fitted" if math.isnan(blame.planner_success) else \
        f"{blame.planner_success:.2f} of start cells"
    verdict = blame.blame if blame.blame != "identification" or blame.ceiling == "none" else \
        f"identification; with the best-case w: {blame.ceiling}"
    print(f"zero-shot blame: {verdict} (identification data: {blame.target_rewards} target rewards; "
          f"exact planner on the fitted reward: {planner}; psi under the oracle w: "
          f"{blame.oracle_success:.2f})")
    print(f"wrote {out}/ (checkpoints, metrics, summary.json) and {figure}")
