"""Sweeps: many independent runs in parallel, resumable, and one failure never loses the others.

`run_sweep(specs, run, results_csv)` hands each spec to `run` on an executor (by default a pool of
processes, one per local core), appends each finished run's rows to `results_csv` (rewritten
atomically, so the file is always whole), and on a second call skips every spec whose rows are
already there. A run that raises is reported with its traceback; its spec stays pending, so the
next call retries it.
"""

from __future__ import annotations

import ast
import csv
import functools
import hashlib
import inspect
import json
import multiprocessing
import os
import textwrap
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from aps_teach import __version__
from aps_teach.files import write_csv_atomic


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a method on a level with a seed, plus ablation overrides."""

    method: str
    level: str
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()
    """(config field, value) pairs, e.g. (("agent.k", 5),); dotted names reach nested configs."""

    def __post_init__(self) -> None:
        if any(name == "agent.method" for name, _ in self.overrides):
            raise ValueError("RunSpec: the method is RunSpec.method; an 'agent.method' override would be "
                             "silently replaced by it")

    @property
    def key(self) -> str:
        """A stable name for the run, unique within a sweep: method-level-seed[-overrides hash]."""
        key = f"{self.method}-{self.level}-seed{self.seed}"
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
    """Key -> traceback of each run that raised (still pending: the next call retries it)."""


def read_rows(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a results CSV (empty if the file does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return []
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _timed_run(run: Callable[[RunSpec], list[dict]], spec: RunSpec) -> tuple[list[dict], float]:
    """Worker side: one run on one thread (runs in parallel processes must not oversubscribe cores)."""
    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = run(spec)
    return rows, time.perf_counter() - start


def local_executor(workers: int | None = None) -> Executor:
    """A pool of `workers` fresh (spawned) processes; default: one per local core."""
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count(),
                               mp_context=multiprocessing.get_context("spawn"))


def run_sweep(
    specs: Sequence[RunSpec],
    run: Callable[[RunSpec], list[dict]],
    results_csv: str | os.PathLike,
    *,
    executor: Executor | None = None,
    progress: bool = True,
) -> SweepReport:
    """Run every spec not yet in `results_csv` and append its rows (with run_key, run_seconds, version).

    `run` must be a module-level function (it is pickled to the workers) returning the run's rows.
    """
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("run_sweep got the same run twice; each (method, level, seed, overrides) once")
    results_csv = Path(results_csv)
    rows = read_rows(results_csv)
    done = {row["run_key"] for row in rows}
    report = SweepReport(skipped=[spec.key for spec in specs if spec.key in done])
    pending = [spec for spec in specs if spec.key not in done]
    if not pending:
        return report
    own_executor = executor is None
    executor = executor or local_executor(min(len(pending), os.cpu_count() or 1))
    try:
        futures = {executor.submit(_timed_run, run, spec): spec for spec in pending}
        with tqdm(total=len(pending), desc="sweep runs", unit="run", disable=not progress) as bar:
            for future in as_completed(futures):
                spec = futures[future]
                bar.update()
                try:
                    new_rows, seconds = future.result()
                except Exception as error:  # one failing run must not lose the others
                    report.failures[spec.key] = "".join(traceback.format_exception(error))
                    bar.set_postfix(failed=len(report.failures))
                    continue
                rows += [{"run_key": spec.key, **row, "run_seconds": round(seconds, 3),
                          "package_version": __version__} for row in new_rows]
                write_csv_atomic(results_csv, rows)
                report.completed.append(spec.key)
    finally:
        if own_executor:
            executor.shutdown(cancel_futures=True)
    return report


def grid(methods: Iterable[str], levels: Iterable[str], seeds: Iterable[int],
         overrides: tuple[tuple[str, Any], ...] = ()) -> list[RunSpec]:
    """Every (method, level, seed) combination, in that nesting order."""
    return [RunSpec(m, lv, s, overrides) for m in methods for lv in levels for s in seeds]


def with_overrides(config, overrides: Iterable[tuple[str, Any]]):
    """A copy of a (nested) dataclass config with `(dotted field name, value)` pairs applied."""
    for name, value in overrides:
        config = _set_field(config, name.split("."), value, name)
    return config


def _set_field(config, path: list[str], value, name: str):
    _check_field(config, path[0], name)
    if len(path) > 1:
        value = _set_field(getattr(config, path[0]), path[1:], value, name)
    return replace(config, **{path[0]: value})


def field_doc(config, name: str) -> str:
    """The docstring of a (nested) dataclass config field, by dotted name as in `with_overrides`: the
    string literal that follows the field in its class body ('' when it has none)."""
    *parents, leaf = name.split(".")
    for part in parents:
        _check_field(config, part, name)
        config = getattr(config, part)
    _check_field(config, leaf, name)
    return _field_docs(type(config)).get(leaf, "")


def _check_field(config, part: str, name: str) -> None:
    names = [f.name for f in fields(config)] if is_dataclass(config) else []
    if part not in names:
        raise ValueError(f"unknown config field {name!r}; fields here: {', '.join(names) or 'none'}")


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """Field name -> docstring for a dataclass and its dataclass bases (a subclass's docstring wins)."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if is_dataclass(k)]):
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for statement, following in zip(body, body[1:], strict=False):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def config_hash(*parts: Any) -> str:
    """A short, stable fingerprint of JSON-able configuration parts (dataclasses included)."""
    plain = [asdict(part) if is_dataclass(part) else part for part in parts]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:12]
