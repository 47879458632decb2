"""Atari sweeps: games x methods x seeds, each run the whole pipeline (`aps_teach.atari.experiments.run`) in
its own directory, through `aps_teach.infra.sweeps.run_sweep` on any executor
(`aps_teach.infra.executors.make_executor`).

    OUT/scores.csv                       per finished run its rows (`score_row` + run_key, run_seconds,
                                         package_version; the same whichever executor ran it): visr and aps
                                         a zero-shot row (checkpoint pretrain: identified w, GPI, no
                                         fine-tuning) and a fine-tuned row, apt and dqn a fine-tuned row
    OUT/runs/<method>-<game>-seed<k>/    the run's directory: config.json, pretrain/, finetune/ (metrics.csv,
                                         checkpoint.pt), task.json, scores.csv
    OUT/summary.csv                      per method and checkpoint (pretrain = zero-shot, finetune):
                                         human-normalised mean, median, IQM over games (each game the mean
                                         of its seeds, as the paper's table) and the number of super-human
                                         games; rliable's IQM over runs x games (iqm_runs) with its 95%
                                         stratified-bootstrap interval (iqm_runs_low, iqm_runs_high)
    OUT/scores.png                       drawn by `aps-teach atari sweep` (`atari.plots.write_scores_figure`)
                                         from OUT/scores.csv: per game and method the seeds' mean and each
                                         seed, with lines at random (0) and human (1)

A second call skips the runs already in OUT/scores.csv; a run whose directory exists resumes from its
checkpoints, and one that finished but whose row never reached OUT/scores.csv (the driver was stopped)
gives the row it wrote into its own scores.csv without training again. OUT/scores.sweep.json records
`sweep_config` (`sweeps.run_sweep`): a sweep of another protocol into the same OUT (another n-step reward
mode, `AtariConfig.nstep_reward`, included) is refused before anything is written.
"""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from aps_teach.atari.config import AtariTrainConfig
from aps_teach.atari.envs import check_game
from aps_teach.atari.experiments import ATARI_METHODS, SCORE_COLUMNS, run
from aps_teach.atari.scores import ATARI_26, aggregates, run_aggregates
from aps_teach.atari.train import check_replay_memory, replay_bytes
from aps_teach.infra.checks import check_int, check_seed
from aps_teach.infra.executors import gpu_executor, make_executor, visible_gpus
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.locks import owning
from aps_teach.infra.sweeps import RunSpec, SweepReport, read_rows, run_sweep
from aps_teach.learner.config import check_method, pretrains

GAME_SETS = {"atari26": ATARI_26}
"""Names that stand for a list of games in `expand_games`."""


def expand_games(games: Iterable[str]) -> list[str]:
    """ROM ids of `games`, each a game name or id or `atari26` (the paper's 26 games); no duplicates."""
    roms = [rom for name in games for rom in (GAME_SETS.get(name.lower()) or (check_game(name),))]
    if not roms:
        raise ValueError(f"no games given; give game names or one of: {', '.join(GAME_SETS)}")
    return list(dict.fromkeys(roms))


def sweep_runs(games: Iterable[str], methods: Iterable[str], seeds: Iterable[int]) -> list[RunSpec]:
    """One `RunSpec` per method x game x seed (the game is the spec's level), checked up front."""
    methods, seeds = list(methods), list(seeds)
    for method in methods:
        check_method(method, ATARI_METHODS)
    if not methods or not seeds:
        raise ValueError(f"need at least one method and one seed, got methods={methods}, seeds={seeds}")
    roms = expand_games(games)
    return [RunSpec(method, game, seed) for method in methods for game in roms for seed in seeds]


def run_dir(out: str | os.PathLike, spec: RunSpec) -> Path:
    """The directory of one run of a sweep in `out`."""
    return Path(out) / "runs" / spec.key


def run_dirs(runs) -> list[Path]:
    """The run directories of an Atari sweep directory (its runs/*/ holding a config.json), of one run
    directory, or of a list of run directories; FileNotFoundError if there is none."""
    paths = [Path(runs)] if isinstance(runs, str | os.PathLike) else [Path(run) for run in runs]
    found = []
    for path in paths:
        if (path / "config.json").exists():
            found.append(path)
        else:
            found += sorted(p.parent for p in path.glob("runs/*/config.json"))
    if not found:
        raise FileNotFoundError(f"no Atari run directory (a folder with config.json, or a sweep's runs/*/) "
                                f"in {[str(p) for p in paths]}")
    return found


def run_one(spec: RunSpec, config: AtariTrainConfig, out: str) -> list[dict]:
    """Worker side: the whole pipeline for `spec` in its run directory (resumed if it exists); its rows
    (zero-shot, if the method has one, then fine-tuned; the random arm's one row)."""
    directory = run_dir(out, spec)
    if not (directory / "scores.csv").exists():
        run(spec.method, spec.env, spec.seed, config, out=directory,
            resume=(directory / "config.json").exists())
    rows = read_rows(directory / "scores.csv", SCORE_COLUMNS)
    return [row for phase in ("pretrain", "finetune", "none")
            for row in [next((r for r in rows if r["checkpoint"] == phase), None)] if row is not None]


def _nstep_reward(row: dict) -> str:
    """The n-step reward mode of a scores.csv row; rows from before the column existed were 'sum'."""
    return row.get("nstep_reward") or "sum"


def sweep_config(config: AtariTrainConfig) -> dict:
    """What a sweep's scores depend on besides game, method and seed: the protocol and schedule, the envs
    (as `train.start_run_dir` compares them); not the device, threads or logging."""
    return {"atari": config.atari, "num_envs": config.num_envs, "backend": config.backend}


def default_executor(config: AtariTrainConfig, gpus: Sequence[int] | None = None,
                     runs_at_once: int | None = None) -> tuple[Executor, int]:
    """The local executor for `config.device` and how many runs it runs at once: on a CPU `runs_at_once`
    processes (default one per `config.threads` cores: one single-threaded run per core); on CUDA
    `runs_at_once` runs on each local GPU (`gpus`, default all visible; default one run each)."""
    if config.device.startswith("cuda:"):
        raise ValueError(f"a sweep on GPUs gives each run its own GPU as cuda: use --device cuda (and --gpus "
                         f"to choose them), not {config.device!r}")
    if config.device == "cuda":
        gpus = visible_gpus() if gpus is None else list(gpus)
        per_gpu = runs_at_once or 1
        return gpu_executor(gpus, per_gpu), len(gpus) * per_gpu
    if gpus is not None:
        raise ValueError("gpus is for a sweep on local GPUs (--device cuda)")
    workers = runs_at_once or max(1, (os.cpu_count() or 1) // config.threads)
    return make_executor("local", workers=workers), workers


def run_atari_sweep(games: Iterable[str], methods: Iterable[str], seeds: int, config: AtariTrainConfig,
                    out: str | os.PathLike, *, first_seed: int = 0, executor: Executor | None = None,
                    gpus: Sequence[int] | None = None, runs_at_once: int | None = None,
                    progress: bool = True, record: dict | None = None) -> SweepReport:
    """Every method x game x seed (first_seed .. first_seed + seeds - 1) into `out` (see the module
    docstring), then OUT/summary.csv.

    Runs on `executor` (left open) if given, else on `default_executor` (over `gpus`, or `runs_at_once`
    processes on the CPU), each on `config.threads` threads; their replays are checked to fit in memory
    together before any starts, and a CPU asked for more threads than it has cores is warned about. A run's
    own progress bar shows only when runs go one at a time on this machine. `record` joins `sweep_config`
    in the sweep's record (e.g. a pre-registration's digest): results under another record are refused."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds!r}")
    check_seed(first_seed)
    check_seed(first_seed + seeds - 1)
    if runs_at_once is not None:
        check_int("runs_at_once", runs_at_once)
    specs = sweep_runs(games, methods, range(first_seed, first_seed + seeds))
    own, parallel = (None, 0) if executor is not None else default_executor(config, gpus, runs_at_once)
    try:
        check_parallel_memory(specs, config, parallel or 1)
    except ValueError:
        if own is not None:
            own.shutdown()
        raise
    cores = os.cpu_count() or 1
    if own is not None and config.device == "cpu" and parallel * config.threads > cores:
        warnings.warn(f"{parallel} runs at once x {config.threads} threads each ask for "
                      f"{parallel * config.threads} cores; this machine has {cores}: each run goes slower",
                      stacklevel=2)
    config = replace(config, progress=config.progress and parallel == 1)
    runner = partial(run_one, config=config, out=str(Path(out).absolute()))  # Ray workers run elsewhere
    try:
        with owning(out):
            report = run_sweep(specs, runner, Path(out) / "scores.csv", config={**sweep_config(config),
                                                                                 **(record or {})},
                               executor=executor or own, progress=progress)
            write_summary(out)
    finally:
        if own is not None:
            own.shutdown(cancel_futures=True)
    return report


def check_parallel_memory(specs: Sequence[RunSpec], config: AtariTrainConfig,
                          runs_at_once: int) -> None:
    """ValueError before anything runs if the largest replays of `runs_at_once` runs would not fit in memory
    together (`train.check_replay_memory`)."""
    if config.device != "cpu":
        return
    parallel = min(len(specs), runs_at_once)
    learners = [spec for spec in specs if spec.method != "random"]
    if not learners:
        return
    phases = {spec.method: ("pretrain", "finetune") if pretrains(spec.method) else ("finetune",)
              for spec in learners}
    phase, method = max(((phase, method) for method, names in phases.items() for phase in names),
                        key=lambda pair: replay_bytes(config.atari, config.num_envs, *pair))
    check_replay_memory(config.atari, config.num_envs, phase, method, "cpu",
                        runs=min(parallel, len(learners)))


def summary_rows(rows: Iterable[dict]) -> list[dict]:
    """Per method and checkpoint (pretrain: the zero-shot score; finetune): the games with reference scores,
    `aggregates` (mean, median, IQM, super-human count) of their human-normalised scores, each game's
    score the mean over its seeds (as in the paper's table), and `run_aggregates` (runs, rliable's IQM over
    runs x games and its stratified-bootstrap interval: iqm_runs, iqm_runs_low, iqm_runs_high), games in
    name order. Rows of two n-step reward modes: ValueError."""
    rows = list(rows)
    modes = sorted({_nstep_reward(row) for row in rows})
    if len(modes) > 1:
        raise ValueError(f"scores of runs with different nstep_reward ({', '.join(modes)}) do not make one "
                         "summary; keep each mode in its own sweep directory")
    seeds: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in rows:
        seeds[row["method"], row.get("checkpoint") or "finetune", row["game"]].append(
            float(row["human_normalised"] or "nan"))
    groups: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for (method, checkpoint, _), values in sorted(seeds.items(), key=lambda item: (item[0][0], item[0][1] !=
                                                                                    "pretrain", item[0][2])):
        if np.isfinite(np.mean(values)):  # NaN: a game without reference scores
            groups[method, checkpoint].append(values)
    return [{"method": method, "checkpoint": checkpoint, "games": len(games),
             **aggregates(np.mean(runs) for runs in games), **run_aggregates(games)}
            for (method, checkpoint), games in groups.items()]


def write_summary(out: str | os.PathLike) -> Path | None:
    """OUT/summary.csv from OUT/scores.csv (atomically); None while no run has finished. OUT/scores.png is
    `atari.plots.write_scores_figure`'s (`aps-teach atari sweep` draws it after the sweep)."""
    rows = read_rows(Path(out) / "scores.csv", SCORE_COLUMNS)
    summary = summary_rows(rows)
    if not summary:
        return None
    path = Path(out) / "summary.csv"
    write_csv_atomic(path, summary)
    return path
