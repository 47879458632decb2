"""Sweeps: many independent runs in parallel, resumable, and one failure never loses the others.

`run_sweep(specs, run, results_csv, config=...)` hands each spec to `run` on an executor (by default a pool
of processes, one per local core), appends each finished run's rows to `results_csv` (rewritten
atomically, so the file is always whole), and on a second call skips every spec whose rows are
already there. A run that raises is reported with its traceback; its spec stays pending, so the
next call retries it. Given a `group` function, runs that differ only in their seed go to a worker together,
as one seed group (`seed_groups`; `aps_teach.learner.group` trains them as one).

One results file holds runs of one configuration: `config` (everything the runs depend on besides their
spec: budgets, the training config; by default `run`'s name and bound arguments) is recorded beside it in
`<name>.sweep.json` before the first run, and a sweep of another configuration is refused, naming the fields
that differ. A finished run is thus known by its key and the file's full configuration. A torn last row
(the file cut short outside this module's atomic writes) is dropped with its run's other rows, and the run
is done again. Ctrl-C or an error of the driver cancels the pending runs and kills the running ones at
once; local workers also exit by themselves when their driver dies (even by SIGKILL).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import os
import pickle
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import BrokenExecutor, Executor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from aps_teach import __version__
from aps_teach.infra.checks import check_int
from aps_teach.infra.executors import check_not_reimported, local_executor, stop_executor
from aps_teach.infra.files import write_csv_atomic, write_text_atomic
from aps_teach.infra.locks import owning
from aps_teach.infra.run_dir import config_differences, say


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a method in an environment with a seed, plus ablation overrides."""

    method: str
    env: str
    """The environment's name: a gridworld level or maze, or an Atari game."""
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()
    """(config field, value) pairs, e.g. (("agent.k", 5),); dotted names reach nested configs."""

    def __post_init__(self) -> None:
        if any(name == "agent.method" for name, _ in self.overrides):
            raise ValueError("RunSpec: the method is RunSpec.method; an 'agent.method' override would be "
                             "silently replaced by it")

    @property
    def key(self) -> str:
        """A stable name for the run, unique within a sweep: method-env-seed[-overrides hash]."""
        key = f"{self.method}-{self.env}-seed{self.seed}"
        if self.overrides:
            key += "-" + hashlib.sha256(json.dumps(self.overrides).encode()).hexdigest()[:8]
        return key


@dataclass
class SweepReport:
    """What a call to `run_sweep` did."""

    completed: list[str] = field(default_factory=list)
    """Keys of the runs finished by this call."""
    skipped: list[str] = field(default_factory=list)
    """Keys of the runs whose rows were already in the results file."""
    failures: dict[str, str] = field(default_factory=dict)
    """Key -> what went wrong with each run that failed (`failure_text`: the traceback of a run that raised,
    one line for a worker that died); still pending: the next call retries it."""


TIMING_COLUMNS = ("run_seconds", "wall_seconds", "package_version")
"""Columns of a results row that may differ between two copies of the same run's row."""
MAX_SCORE = 1e6
"""The largest size of a score column's value: a normalised score (0 random, 1 optimal) is a few units at
most; one beyond this is a corrupted file."""
KINDS = {"str": "text", "int": "an integer", "float": "a number", "float?": "a number or empty",
         "bool": "True or False", "count": "an integer >= 0", "rate": "a number in [0, 1]",
         "rate?": "a number in [0, 1] or empty", "steps": "an integer >= 0", "flag": "0 or 1",
         "score": f"a finite number in [-{MAX_SCORE:g}, {MAX_SCORE:g}]",
         "score?": f"a finite number in [-{MAX_SCORE:g}, {MAX_SCORE:g}] or empty",
         "measure": f"a finite number in [-{MAX_SCORE:g}, {MAX_SCORE:g}], or nan where it is undefined"}
"""What a column of `read_rows`' `columns` may hold (the row's value as `csv` reads it, a string). A steps
column holds at most the budget of its name recorded beside the file (<name>.sweep.json), if there is one.
A column's kind may also be a tuple of the strings it may hold (a label: a phase, a method; a registered
seed)."""
Kind = str | tuple[str, ...]
"""A column's kind for `read_rows`: a key of `KINDS`, or the tuple of the values it may hold."""


def read_rows(path: str | os.PathLike, columns: Mapping[str, Kind] | None = None) -> list[dict[str, str]]:
    """The whole rows of a results CSV (empty if the file does not exist yet), checked as `read_results`
    does; a torn last row is left out, and said."""
    rows, torn, _ = read_results(path, columns)
    if torn is not None:
        say(f"{path}: its last row is cut short; left out")
    return rows


def read_results(path: str | os.PathLike, columns: Mapping[str, Kind] | None = None, *,
                 quiet: bool = False) -> tuple[list[dict[str, str]], dict | None, int]:
    """(whole rows, the torn last row or None, how many repeated rows were left out) of a results CSV. Every
    row `write_csv_atomic` writes ends in a line break and has every column; a last row without them was cut
    short.

    `columns` (name -> kind, a key of `KINDS` or the tuple of the values it may hold): the columns the reader
    needs; a file without one of them, or with a value not of its kind (a success rate of 7.5, a score of
    nan, a negative count, more fine-tuning steps than the recorded budget, a phase no reader knows), is a
    ValueError of one line naming the file, the row and the column: no row is left out for it. In a sweep's
    file (a run_key column) a run's rows count once: rows repeating an earlier row (timings aside), or a
    run's rows appearing again after another run's, are left out with a message (`drop_repeats`; `quiet`:
    without it)."""
    path = Path(path)
    if not path.exists():
        return [], None, 0
    try:
        with path.open(newline="", encoding="utf-8") as file:
            text = file.read()
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not a results file (not UTF-8 text: byte {error.start:,} is "
                         f"{error.object[error.start:error.start + 1]!r}); regenerate it or restore it from "
                         "version control") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = list(reader)
    torn = None
    if rows and (not text.endswith("\n") or None in rows[-1] or None in rows[-1].values()):
        rows, torn = rows[:-1], rows[-1]
    check_columns(path, reader.fieldnames or [], rows, columns or {})
    kept = drop_repeats(path, rows, quiet=quiet)
    return kept, torn, len(rows) - len(kept)


def check_columns(path: Path, header: Sequence[str], rows: Sequence[dict[str, str]],
                  columns: Mapping[str, Kind]) -> None:
    """ValueError in one line if the CSV at `path` lacks one of `columns` or a row's value is not of its
    column's kind (see `KINDS`; a steps column is bounded by the budget of its name in the file's record; a
    tuple kind lists the values the column may hold)."""
    missing = [name for name in columns if name not in header]
    if missing:
        raise ValueError(f"{path} has no column {', '.join(map(repr, missing))} (its columns: "
                         f"{', '.join(header) or 'none'}): not a results file of this version, or edited; "
                         "regenerate it or restore the column")
    budget = _recorded_budget(path) if "steps" in columns.values() else {}
    for number, row in enumerate(rows, start=2):
        for name, kind in columns.items():
            limit = budget.get(name) if kind == "steps" else None
            if isinstance(kind, tuple):
                if row[name] not in kind:
                    raise ValueError(f"{path}, row {number}: column {name!r} holds {row[name]!r}, not one of "
                                     f"{', '.join(kind)}")
                continue
            if not _is_kind(row[name], kind, limit):
                valid = KINDS[kind] if limit is None else \
                    f"an integer in [0, {limit:,}] (the budget {sweep_config_path(path).name} records)"
                raise ValueError(f"{path}, row {number}: column {name!r} holds {row[name]!r}, not {valid}")


def _recorded_budget(path: Path) -> dict:
    """The budget recorded beside a results file (<name>.sweep.json's "budget"), or {} if there is none."""
    try:
        budget = json.loads(sweep_config_path(path).read_text()).get("budget", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {name: value for name, value in budget.items() if type(value) is int} if isinstance(budget, dict) \
        else {}


def _is_kind(value: str, kind: str, limit: int | None = None) -> bool:
    if kind == "str":
        return True
    if kind == "bool":
        return value in ("True", "False")
    if kind == "flag":
        return value in ("0", "1")
    if kind.endswith("?") and value == "":
        return True
    try:
        number = int(value) if kind in ("int", "count", "steps") else float(value)
    except ValueError:
        return False
    if kind in ("count", "steps"):
        return 0 <= number and (limit is None or number <= limit)
    if kind == "measure" and math.isnan(number):
        return True
    if kind.startswith(("score", "measure")):
        return math.isfinite(number) and abs(number) <= MAX_SCORE
    return 0 <= number <= 1 if kind.startswith("rate") else True


def drop_repeats(path: Path, rows: list[dict[str, str]], *, quiet: bool = False) -> list[dict[str, str]]:
    """A sweep file's rows with each run counted once: a row equal to an earlier one (timing columns aside),
    and every row of a run whose rows already ended earlier in the file (the run appended twice), are
    left out, saying which unless `quiet` (the first rows of a run are its own). Files without a run_key
    column are returned as they are."""
    if not rows or "run_key" not in rows[0]:
        return rows
    kept, seen, ended, current, again, dropped = [], set(), set(), None, False, []
    for number, row in enumerate(rows, start=2):
        if row["run_key"] != current:
            ended.add(current)
            current, again = row["run_key"], row["run_key"] in ended
        identity = tuple((key, value) for key, value in row.items() if key not in TIMING_COLUMNS)
        if again or identity in seen:
            dropped.append(f"{number} ({row['run_key']})")
            continue
        seen.add(identity)
        kept.append(row)
    if dropped and not quiet:
        say(f"{path}: left out {len(dropped)} repeated row(s), row {', '.join(dropped)}: a run counts once")
    return kept


def sweep_config_path(results_csv: str | os.PathLike) -> Path:
    """Where the configuration of a results file's runs is recorded: beside it, <name>.sweep.json."""
    return Path(results_csv).with_suffix(".sweep.json")


def default_sweep_config(run: Callable) -> dict:
    """What a sweep's runs depend on, read off `run`: its name and, for a `functools.partial`, the
    arguments it binds (e.g. the budget)."""
    func = run.func if isinstance(run, functools.partial) else run
    bound = dict(run.keywords) if isinstance(run, functools.partial) else {}
    if isinstance(run, functools.partial) and run.args:
        bound["args"] = list(run.args)
    return {"run": f"{func.__module__}.{func.__qualname__}", **bound}


def config_dict(value: Any) -> Any:
    """`dataclasses.asdict`, recursively, but leaving out every field whose metadata marks it
    `omit_at_default` while it holds its default: a field added after results were recorded, so that their
    records and fingerprints (`config_hash`) stay those of the configuration they ran with."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: config_dict(getattr(value, f.name)) for f in fields(value)
                if not (f.metadata.get("omit_at_default") and getattr(value, f.name) == f.default)}
    if isinstance(value, (list, tuple)):
        return type(value)(config_dict(item) for item in value)
    if isinstance(value, dict):
        return {key: config_dict(item) for key, item in value.items()}
    return value


def plain_config(config: Any) -> Any:
    """`config` as plain JSON data (dataclasses as dicts by `config_dict`, tuples as lists, paths as text)."""
    def encode(value: Any) -> Any:
        if is_dataclass(value) and not isinstance(value, type):
            return config_dict(value)
        return str(value)

    return json.loads(json.dumps(config, sort_keys=True, default=encode))


def check_results(results_csv: str | os.PathLike, config: Mapping) -> None:
    """ValueError, naming the fields that differ, if `results_csv` holds runs of a configuration other than
    `config` (or runs whose configuration was never recorded)."""
    rows, torn, _ = read_results(results_csv, quiet=True)
    if not rows and torn is None:
        return
    path = sweep_config_path(results_csv)
    if not path.exists():
        raise ValueError(f"{results_csv} holds runs but no record of their configuration ({path.name}), "
                         "so they cannot be checked against this sweep's: give another --out, or remove "
                         "the file to start over")
    try:
        theirs = json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); remove it and {results_csv} to start "
                         "over") from None
    diff = config_differences(theirs, plain_config(config))
    if diff:
        shown = ", ".join(f"{name} (file {a!r}, this sweep {b!r})" for name, a, b in diff[:8])
        more = f" and {len(diff) - 8} more" if len(diff) > 8 else ""
        raise ValueError(f"{results_csv} holds runs of another configuration; differing fields: {shown}"
                         f"{more}. Give another --out, or the same settings to continue it")


def claim_results(results_csv: str | os.PathLike, config: Mapping) -> None:
    """`check_results`, then record `config` beside `results_csv` (<name>.sweep.json). Done before any run,
    so an --out that cannot be written fails at once (OSError)."""
    check_results(results_csv, config)
    record_config(results_csv, config)


def record_config(results_csv: str | os.PathLike, config: Mapping) -> Path:
    """Write `config` as the record of `results_csv`'s configuration (<name>.sweep.json), atomically."""
    path = sweep_config_path(results_csv)
    write_text_atomic(path, json.dumps(plain_config(config), indent=2, sort_keys=True) + "\n")
    return path


GroupRun = Callable[[Sequence[RunSpec]], list[list[dict]]]
"""Runs that differ only in their seed, made together (a seed group): each run's rows, in the specs' order."""


def _timed_runs(run: Callable[[RunSpec], list[dict]], group: GroupRun | None,
                specs: Sequence[RunSpec]) -> tuple[list[list[dict]], float]:
    """Worker side: one run, or one seed group (`group`), on one thread (runs in parallel processes must not
    oversubscribe cores); each run's rows and the seconds they took together."""
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = group(specs) if group is not None else [run(specs[0])]
    return rows, time.perf_counter() - start


def seed_groups(specs: Sequence[RunSpec], size: int) -> list[list[RunSpec]]:
    """`specs` as groups of at most `size` runs that differ only in their seed (same method, environment and
    overrides), in the order their first runs come."""
    cells: dict[tuple, list[RunSpec]] = {}
    for spec in specs:
        cells.setdefault(_cell(spec), []).append(spec)
    return [cell[i:i + size] for cell in cells.values() for i in range(0, len(cell), size)]


def check_seed_group(specs: Sequence[RunSpec]) -> RunSpec:
    """The first of `specs` if they are runs of one seed group (`seed_groups`), else a ValueError."""
    if not specs or any(_cell(spec) != _cell(specs[0]) for spec in specs):
        raise ValueError("a seed group's runs share method, environment and overrides, and differ in their "
                         f"seed only; got {[spec.key for spec in specs]}")
    return specs[0]


def _cell(spec: RunSpec) -> tuple:
    """What the runs of a seed group share: all of a spec but its seed."""
    return spec.method, spec.env, spec.overrides


def run_sweep(
    specs: Sequence[RunSpec],
    run: Callable[[RunSpec], list[dict]],
    results_csv: str | os.PathLike,
    *,
    config: Mapping | None = None,
    executor: Executor | None = None,
    workers: int | None = None,
    progress: bool = True,
    group: GroupRun | None = None,
    group_size: int = 10,
) -> SweepReport:
    """Run every spec not yet in `results_csv` and append its rows (with run_key, run_seconds, version).

    With `group` (a module-level function too), the pending runs that differ only in their seed go to it
    in seed groups of at most `group_size` (`seed_groups`), one task each; a run's run_seconds is then its
    group's over the group's size, and a group that fails leaves each of its runs pending.

    `run` must be a module-level function (it is pickled to the workers) returning the run's rows.
    `config` is what the runs depend on besides their spec (default: `default_sweep_config(run)`); a
    results file of another configuration is refused (see the module docstring). The results file's
    directory is owned for the sweep (`locks.owning`): a second sweep into it is refused, naming this
    process. The runs go to `executor` (left open), else to a local pool of its own, `workers` processes
    (default: one per core, at most one per pending run). Ctrl-C or an error here stops the executor
    (`executors.stop_executor`) before it propagates.
    """
    check_not_reimported()
    if executor is not None and workers is not None:
        raise ValueError("give workers (local processes) or an executor, not both")
    if not isinstance(executor, ThreadPoolExecutor):  # its runs go to other processes, by pickle
        for name, function in (("run", run), ("group", group)):
            if function is not None:
                check_sendable(name, function)
    workers = check_int("workers", workers, default="one per core")
    group_size = check_int("group_size", group_size)
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("run_sweep got the same run twice; each (method, level, seed, overrides) once")
    results_csv = Path(results_csv)
    if results_csv.exists() and not results_csv.is_file():
        raise ValueError(f"results file {results_csv} is not a file")
    with owning(results_csv.parent):
        return _run_sweep(specs, run, results_csv, default_sweep_config(run) if config is None else config,
                          executor, workers, progress, group, group_size)


def check_sendable(name: str, function: Callable) -> None:
    """ValueError of one line if `function` (run_sweep's `run` or `group`) cannot be sent to a worker process:
    the workers import it by name, so it must be a module-level function (a lambda, or a function defined
    inside another, is not; a `functools.partial` of one is)."""
    try:
        pickle.dumps(function)
    except Exception as error:  # pickle raises PicklingError, AttributeError or TypeError
        label = getattr(function, "__qualname__", None) or type(function).__name__
        raise ValueError(f"run_sweep's {name} must be a module-level function (worker processes import it by "
                         f"name), got {label}: {' '.join(str(error).split())}") from None


def _run_sweep(specs: Sequence[RunSpec], run: Callable[[RunSpec], list[dict]], results_csv: Path,
               config: Mapping, executor: Executor | None, workers: int | None,
               progress: bool, group: GroupRun | None, group_size: int) -> SweepReport:
    """`run_sweep` once its directory is owned."""
    claim_results(results_csv, config)
    rows, torn, repeated = read_results(results_csv, {"run_key": "str"})
    if torn is not None:  # the torn run's other rows are not all of its rows: do it again
        key = torn.get("run_key")
        rows = [row for row in rows if row.get("run_key") != key]
        say(f"{results_csv}: the last row (run {key}) is cut short; that run is done again")
    if torn is not None or repeated:  # written as read, so later readers find the file whole and say nothing
        if rows:
            write_csv_atomic(results_csv, rows)
        else:
            results_csv.unlink()
    done = {row["run_key"] for row in rows}
    report = SweepReport(skipped=[spec.key for spec in specs if spec.key in done])
    pending = [spec for spec in specs if spec.key not in done]
    if not pending:
        return report
    tasks = seed_groups(pending, group_size) if group is not None else [[spec] for spec in pending]
    own_executor = executor is None
    executor = executor or local_executor(workers or min(len(tasks), os.cpu_count() or 1))
    try:
        futures = {executor.submit(_timed_runs, run, group, task): task for task in tasks}
        with tqdm(total=len(pending), desc="sweep runs", unit="run", disable=not progress) as bar:
            for future in as_completed(futures):
                task = futures[future]
                bar.update(len(task))
                try:
                    task_rows, seconds = future.result()
                except Exception as error:  # one failing run must not lose the others
                    report.failures.update(dict.fromkeys([spec.key for spec in task],
                                                         failure_text(error, executor)))
                    bar.set_postfix(failed=len(report.failures))
                    continue
                for spec, new_rows in zip(task, task_rows, strict=True):
                    rows += [{"run_key": spec.key, **row, "run_seconds": round(seconds / len(task), 3),
                              "package_version": __version__} for row in new_rows]
                    report.completed.append(spec.key)
                write_csv_atomic(results_csv, rows)
    except BaseException:  # Ctrl-C or a driver error: nothing pending may go on running
        stop_executor(executor)
        raise
    finally:
        if own_executor:
            executor.shutdown(cancel_futures=True)
    return report


def failure_text(error: Exception, executor: Executor) -> str:
    """What a sweep reports of a failed run: one line when its worker process died (killed, out of memory,
    its machine gone: the local pool's `BrokenExecutor`, or the executor's own `lost_worker_errors`), which
    leaves nothing of the run to trace; the traceback of a run that raised."""
    if isinstance(error, (BrokenExecutor, *getattr(executor, "lost_worker_errors", ()))):
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return (f"not finished: its worker process died ({type(error).__name__}"
                f"{': ' + first if first else ''}); the same command runs it again")
    return "".join(traceback.format_exception(error))


def grid(methods: Iterable[str], levels: Iterable[str], seeds: Iterable[int],
         overrides: tuple[tuple[str, Any], ...] = ()) -> list[RunSpec]:
    """Every (method, level, seed) combination, in that nesting order."""
    return [RunSpec(m, lv, s, overrides) for m in methods for lv in levels for s in seeds]


def default_sweep_dir(kind: str, config: Any) -> Path:
    """runs/<kind>/<hash of config>: a fresh directory for each configuration, outside the committed
    results/, that the same command finds again (and resumes)."""
    return Path("runs") / kind / config_hash(plain_config(config))


def config_hash(*parts: Any) -> str:
    """A short, stable fingerprint of JSON-able configuration parts (dataclasses included)."""
    plain = [config_dict(part) for part in parts]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:12]
