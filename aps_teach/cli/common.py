"""What every `aps-teach` command shares: subcommand parsing, one error style, the options both wings'
commands take (`ExistingRun`: --resume, --force; `ExecutorChoice`: --executor and the Ray options;
`SeedGroups`: --seeds-per-group, of the gridworld's sweeps), a sweep's outcome (`sweep_outcome`) and where a
command stopped by Ctrl-C stands (`stopped`).

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
import difflib
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Annotated

import tyro

from aps_teach.cli import pop_debug
from aps_teach.infra.checks import check_int
from aps_teach.infra.executors import DEFAULT_MAX_RETRIES, DEFAULT_RAY_TIMEOUT, ExecutorName, make_executor
from aps_teach.infra.run_dir import Interrupted, resume_command, resume_hint_on_interrupt, say
from aps_teach.infra.sweeps import SweepReport


@dataclass
class ExistingRun:
    """What a command writing a run directory does with the run it finds there (flags --resume, --force)."""

    resume: bool = False
    """Continue the run in OUT (same options) from whatever its phases checkpointed: nothing, part or all
    of pretraining, part of fine-tuning; starts it if OUT holds none."""
    force: bool = False
    """Replace the run in OUT, of another config, or start a finished run or phase over (its checkpoints and
    results are deleted first); without it a finished run is kept and the command refused."""


@dataclass
class ExecutorChoice:
    """Where a sweep's runs execute (flags --executor, --ray-address, --max-retries, --ray-timeout)."""

    executor: ExecutorName = "local"
    """local (this machine) | ray (a Ray task per run; needs pip install "aps-teach[cluster]")."""
    ray_address: str | None = None
    """ray: the cluster to use, auto (the one this machine joined with `ray start`) or HOST:PORT of its
    head; default: start Ray on this machine for this sweep."""
    max_retries: int = DEFAULT_MAX_RETRIES
    """ray: re-runs of a run whose worker was lost, before it is reported as failed (a run that raises is
    reported at once)."""
    ray_timeout: float = DEFAULT_RAY_TIMEOUT
    """ray: seconds to wait for the head at --ray-address HOST:PORT to answer before giving up."""

    def make(self, **resources) -> Executor:
        """The chosen executor (`make_executor`), with what each run needs (`resources`); a missing Ray
        is a ValueError naming the extra to install."""
        try:
            return make_executor(self.executor, address=self.ray_address, max_retries=self.max_retries,
                                 connect_timeout=self.ray_timeout, **resources)
        except ImportError as error:
            raise ValueError(str(error)) from None


@dataclass
class SeedGroups:
    """How a sweep's runs that differ only in their seed train (flag --seeds-per-group)."""

    seeds_per_group: int = 10
    """Runs that differ only in their seed train together in groups of up to this many (the same numbers as
    alone, less time: aps_teach.learner.group); 1: each run alone."""

    def __post_init__(self) -> None:
        check_int("--seeds-per-group", self.seeds_per_group)


Flattened = tyro.conf.arg(name="")
"""A nested options dataclass whose flags sit at the command's top level (--resume, not --existing.resume)."""
ExistingRunFlags = Annotated[ExistingRun, Flattened]
ExecutorFlags = Annotated[ExecutorChoice, Flattened]
SeedGroupFlags = Annotated[SeedGroups, Flattened]


@contextlib.contextmanager
def stopped(what: str, kept: object, then: str = "the same command continues it") -> Iterator[None]:
    """Inside, Ctrl-C ends the command saying where its work stands (`Interrupted`, one line):
    '<what> stopped; its finished runs are kept in <kept>: <then>'."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(f"{what} stopped; its finished runs are kept in {kept}: {then}") from None


def sweep_outcome(reports: SweepReport | Sequence[SweepReport]) -> dict[str, int]:
    """Each failed run's traceback on stderr; the number of runs completed, skipped and failed, over one
    report or several (a study's parts, in order)."""
    reports = [reports] if isinstance(reports, SweepReport) else reports
    for key, trace in (item for report in reports for item in report.failures.items()):
        print(f"run {key} failed:\n{trace.rstrip()}", file=sys.stderr)
    return {"completed": sum(len(report.completed) for report in reports),
            "skipped": sum(len(report.skipped) for report in reports),
            "failed": sum(len(report.failures) for report in reports)}


USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)
"""What the commands report as one line: bad values (ValueError) and unusable paths (OSError)."""
@contextlib.contextmanager
def config_errors() -> Iterator[None]:
    """Inside, tyro's argument errors (an unknown option, a missing or malformed value, a value not among the
    choices, a value a config dataclass refuses in its __post_init__) leave tyro.cli as a ValueError of one
    line naming the option (`argument_error`), reported like any other. Uses tyro's parse-error hook, which
    tyro marks private: where it is missing, tyro reports the error itself (a box, also exit status 2)."""
    errors = getattr(sys.modules.get("tyro"), "_errors", None)
    hook = getattr(errors, "on_parse_error", None)
    if hook is None:
        yield
        return

    def reraise(event) -> None:
        raise ValueError(argument_error(event, errors))

    with hook(reraise):
        yield


def _flag(argument) -> str:
    """How an option of tyro's is spelt on the command line, e.g. --train.agent.lr."""
    names = getattr(getattr(argument, "lowered", None), "name_or_flags", None) or ()
    return names[0] if names else getattr(getattr(argument, "field", None), "intern_name", "an option")


def argument_error(event, errors) -> str:
    """One line for a tyro parse-error `event` (`errors` is tyro's module of event types): what was wrong, and
    what is valid or where to look (`<prog> --help`)."""
    help_hint = f"see {event.prog} --help"
    if isinstance(event, errors.InstantiationFailure):
        if event.argument is None:  # a config's own check: its message names the field
            return str(event.message)
        field_type = getattr(event.argument.field, "type_stripped", None)
        kind = {int: "an integer", float: "a number"}.get(field_type)
        value = str(event.message).rpartition(": ")[2]
        if kind and ("invalid literal" in event.message or "could not convert" in event.message):
            return f"{_flag(event.argument)} must be {kind}, got {value}"
        return f"{_flag(event.argument)}: {event.message}"
    if isinstance(event, errors.InvalidChoice):
        return f"{_flag(event.argument)} {event.value!r} is not valid; valid: {', '.join(event.choices)}"
    if isinstance(event, errors.BadValue):
        if event.offending_value is None:
            return f"{_flag(event.argument)} needs a value; {help_hint}"
        return f"{_flag(event.argument)} takes no value, got {event.offending_value!r}; {help_hint}"
    if isinstance(event, errors.UnrecognizedArgs):
        return f"unrecognised arguments: {' '.join(event.tokens)}; {help_hint}"
    if isinstance(event, errors.MissingArgs):
        missing = ", ".join(_flag(arg.arg) for arg in event.missing_arguments)
        return f"missing {missing}; {help_hint}"
    if isinstance(event, errors.MissingSubcommand):
        names = ", ".join(event.subcommand_spec.parser_from_name)
        found = f"unknown command {event.found_token!r}; " if event.found_token else "a command is missing; "
        return f"{found}commands: {names}; {help_hint}"
    if isinstance(event, errors.MutexConflict):
        return f"{event.first_token} and {event.second_token} cannot be given together; {help_hint}"
    return f"the command line was not understood ({type(event).__name__}); {help_hint}"


OLD_DEVICE_FLAGS = ("--train.device", "--grid.train.device", "--grid.device")
"""Earlier spellings of --device (the training config's device: `TrainConfig.device`, spelled --device
wherever the config sits), still accepted, with a line that says so."""


def old_device_flags(argv: list[str]) -> list[str]:
    """`argv` with an earlier spelling of --device (`OLD_DEVICE_FLAGS`, also as --flag=X) replaced by
    --device, saying so; everything else as it is."""
    out = []
    for arg in argv:
        name, equals, value = arg.partition("=")
        if name in OLD_DEVICE_FLAGS:
            say(f"{name} is the old spelling of --device (as aps-teach atari spells it); both work")
            arg = "--device" + equals + value
        out.append(arg)
    return out


def check_command(prog: str, argv: Sequence[str], commands: Sequence[str], *, optional: bool = False) -> None:
    """ValueError naming the nearest of `commands` when argv's first word is none of them (tyro would
    only say the word is unrecognised). `optional`: the command may be left out (options come first)."""
    if not argv or argv[0] in commands or argv[0] in ("-h", "--help"):
        return
    if argv[0].startswith("-"):
        if optional:
            return
        raise ValueError(f"{prog} takes a command first, one of: {', '.join(commands)}; see {prog} --help")
    near = difflib.get_close_matches(argv[0], commands, n=1, cutoff=0.5)
    hint = f"did you mean `{prog} {near[0]}`? " if near else ""
    raise ValueError(f"unknown command {argv[0]!r}; {hint}commands: {', '.join(commands)}"
                     + (" (or none)" if optional else "") + f"; see {prog} --help")


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


def run_subcommands(prog: str, commands: dict[str, tuple[type, Callable[..., dict]]], argv: list[str], *,
                    description: str, show: Callable[[dict], None], run_commands: tuple[type, ...],
                    debug: bool = False) -> int:
    """Parse `argv` into one of `commands` (name -> (options class, handler)), run its handler and `show` the
    summary it returns; 0, or 1 if a run of a sweep failed. Bad input is one line and 2 (`run_cli`); Ctrl-C
    inside a command of `run_commands` (whose `out` is a run directory) says how to --resume it."""
    argv, debug = pop_debug(argv, debug)

    def job() -> int:
        check_command(prog, argv, list(commands))
        with config_errors():
            cmd = tyro.extras.subcommand_cli_from_dict(
                {name: cls for name, (cls, _) in commands.items()}, prog=prog, args=argv,
                description=f"{description} Errors are one line (exit status 2); --debug shows the "
                            "traceback.")
        handler = next(fn for cls, fn in commands.values() if isinstance(cmd, cls))
        out = cmd.out if isinstance(cmd, run_commands) else None
        with resume_hint_on_interrupt(out, resume_command(prog.split(), argv)):
            summary = handler(cmd)
        show(summary)
        return 1 if summary.get("failed") else 0

    return run_cli(prog, job, debug=debug)
