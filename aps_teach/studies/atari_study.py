"""A pre-registered Atari study: its protocol block, runs (an Atari sweep), verdicts, tables and figure.

The pre-registration (`docs/preregistration/atari_first.md`, or the learning check's) holds a protocol block,
JSON between `<!-- protocol -->` and `<!-- /protocol -->`: the parts (games x arms each, run in order), the
seeds, the comparisons and the budgets (`AtariConfig` fields; every other field the library's default, the
whole config recorded with the results). This module runs a part as an Atari sweep
(`aps_teach.atari.sweep.run_atari_sweep`) whose record holds the pre-registration's SHA-256, so results
started under one text of the file are never continued or rewritten under another (`check_unchanged`), and
computes what the file registers:

- an arm is a method at a checkpoint: `aps` (fine-tuned), `aps zero-shot` (the pretrained learner under the
  identified w, with GPI), `dqn`, `random`; a seed's score is its evaluation's mean raw score;
- a comparison (`compare_scores`) of two arms on one game: the difference of their seed means, its 95%
  interval from a bootstrap that resamples each arm's seeds on its own (`stats.difference_with_ci`), read
  'above' (wholly above 0), 'below' or 'no difference found', and Welch's 95% t-interval beside it: a reading
  the two intervals disagree on is marked marginal. Fewer than two seeds an arm: no interval, no reading;
- per arm, rliable's IQM of human-normalised scores over runs x games with its stratified-bootstrap interval;
  per comparison over its games, rliable's probability of improvement with its interval.

    OUT/scores.csv, OUT/runs/, OUT/summary.csv   the sweep's (`aps_teach.atari.sweep`)
    OUT/arms.csv        per game and arm: seeds, mean score [95% over seeds], human-normalised mean
    OUT/verdicts.csv    per comparison and game: difference [bootstrap 95%], Welch's [95%], reading
                        (`aps-teach atari compare` writes the same tables for any sweep and two arms)
    OUT/aggregate.csv   per arm: human-normalised IQM over runs x games [95%], and its mean
    OUT/improvement.csv per comparison over its games: probability of improvement [95%], reading
    OUT/curves.png      training score against reward steps per game and arm (seeds' mean, band over seeds),
                        the evaluation scores at the end (`atari.plots.write_study_curves`, drawn by the
                        command)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import check_game
from aps_teach.atari.experiments import ATARI_METHODS, SCORE_COLUMNS
from aps_teach.atari.scores import REFERENCE_SCORES, human_normalised, run_aggregates
from aps_teach.atari.sweep import run_atari_sweep
from aps_teach.infra.checks import check_seed
from aps_teach.infra.files import read_json, write_csv_atomic
from aps_teach.infra.stats import difference_with_ci, improvement_with_ci, mean_with_ci
from aps_teach.infra.sweeps import SweepReport, read_rows
from aps_teach.studies.protocol import Parts, check_digest, read_block
from aps_teach.studies.verdicts import CONFIDENCE

PREREGISTRATION = Path("docs/preregistration/atari_first.md")
"""The first Atari study's pre-registration, relative to the repository's root (the command's default)."""
RESULTS = "scores.csv"
CHECKPOINT_EVERY = AtariTrainConfig.checkpoint_every


@dataclass(frozen=True)
class Part:
    """Every arm of `methods` on every game of `games`, the protocol's seeds."""

    name: str
    games: tuple[str, ...]
    methods: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """Arm `contender` against arm `baseline` on each of `games` (arms: `row_arm`)."""

    contender: str
    baseline: str
    games: tuple[str, ...]
    primary: bool


@dataclass(frozen=True)
class Protocol(Parts):
    """What the protocol block fixes, and the file's digest."""

    path: Path
    sha256: str
    seeds: tuple[int, ...]
    parts: tuple[Part, ...]
    comparisons: tuple[Comparison, ...]
    atari: AtariConfig
    num_envs: int

    def config(self, threads: int = 1, checkpoint_every: int = CHECKPOINT_EVERY,
               save_replay: bool = False) -> AtariTrainConfig:
        """The runs' configuration: the registered budgets and envs, `threads` per run, no progress bars;
        how often a run checkpoints and whether its checkpoints hold the replay (what a resume restores; an
        uninterrupted run's scores do not depend on either)."""
        return AtariTrainConfig(atari=self.atari, num_envs=self.num_envs, threads=threads, progress=False,
                                tensorboard=False, checkpoint_every=checkpoint_every, save_replay=save_replay)


def row_arm(row: dict) -> str:
    """A scores.csv row's arm: its method, '<method> zero-shot' for a pretrained checkpoint's row."""
    return f"{row['method']} zero-shot" if row["checkpoint"] == "pretrain" else row["method"]


def read_protocol(path: str | Path = PREREGISTRATION) -> Protocol:
    """The protocol block of the pre-registration at `path`, checked; ValueError of one line naming the file
    when it is missing, has no block, or the block is not a valid protocol."""
    path = Path(path)
    found, sha256 = read_block(path, "a study", "an Atari study")
    try:
        block = json.loads(found)
        first, last = (check_seed(seed, "seeds") for seed in block["seeds"])
        if last < first:
            raise ValueError(f"seeds [{first}, {last}]: the last seed comes before the first")
        parts = tuple(Part(name, tuple(check_game(g) for g in spec["games"]), tuple(spec["methods"]))
                      for name, spec in block["parts"].items())
        comparisons = tuple(Comparison(c["contender"], c["baseline"],
                                       tuple(check_game(g) for g in c["games"]), bool(c["primary"]))
                            for c in block["comparisons"])
        atari = AtariConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in block["atari"].items()})
        num_envs = int(block["num_envs"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: its protocol block is not a valid protocol ({error})") from None
    for part in parts:
        unknown = [m for m in part.methods if m not in ATARI_METHODS]
        if unknown or not part.games or not part.methods:
            raise ValueError(f"{path}: part {part.name!r} needs games and methods of "
                             f"{', '.join(ATARI_METHODS)}; got methods {list(part.methods)}")
    arms = {(game, arm) for part in parts for game in part.games for method in part.methods
            for arm in (method, f"{method} zero-shot")}
    for c in comparisons:
        missing = [f"{arm} on {game}" for game in c.games for arm in (c.contender, c.baseline)
                   if (game, arm) not in arms]
        if missing:
            raise ValueError(f"{path}: comparison {c.contender} vs {c.baseline} needs arms no part runs: "
                             f"{', '.join(missing)}")
    return Protocol(path, sha256, tuple(range(first, last + 1)), parts, comparisons, atari, num_envs)


def check_unchanged(protocol: Protocol, out: str | Path) -> None:
    """ValueError of one line naming the pre-registration if results in `out` were started under another
    text of it (their sweep record holds its SHA-256)."""
    check_digest(Path(out) / RESULTS.replace(".csv", ".sweep.json"), protocol.path, protocol.sha256, out)


def run_part(protocol: Protocol, name: str, out: str | Path, *, games: Sequence[str] | None = None,
             runs_at_once: int | None = None, progress: bool = True, checkpoint_every: int = CHECKPOINT_EVERY,
             save_replay: bool = False) -> SweepReport:
    """Part `name` (its `games`, default all) as an Atari sweep into `out` (resumable), its record holding the
    pre-registration's SHA-256 (`check_unchanged` first); `checkpoint_every` and `save_replay` as in
    `Protocol.config`."""
    part = protocol.part(name)
    chosen = part.games if games is None else tuple(check_game(g) for g in games)
    outside = [game for game in chosen if game not in part.games]
    if outside:
        raise ValueError(f"part {name!r} of {protocol.path} has games {', '.join(part.games)}; not "
                         f"{', '.join(outside)}")
    check_unchanged(protocol, out)
    config = protocol.config(checkpoint_every=checkpoint_every, save_replay=save_replay)
    return run_atari_sweep(chosen, part.methods, len(protocol.seeds), config, out,
                           first_seed=protocol.seeds[0], runs_at_once=runs_at_once, progress=progress,
                           record={"preregistration": protocol.sha256})


def run_atari_study(protocol: Protocol, out: str | Path, parts: Sequence[str] | None = None, *,
                    games: Sequence[str] | None = None, runs_at_once: int | None = None,
                    checkpoint_every: int = CHECKPOINT_EVERY, save_replay: bool = False) -> list[SweepReport]:
    """The study as `aps-teach atari study` runs it: each of `parts` (default: all, in the file's order) as
    `run_part`, on those of `games` it has (default: all of its games; a part with none of them is passed
    over); each part's report."""
    reports = []
    for name in parts or [part.name for part in protocol.parts]:
        part = protocol.part(name)
        chosen = [game for game in (games or part.games) if check_game(game) in part.games]
        if chosen:
            reports.append(run_part(protocol, name, out, games=chosen, runs_at_once=runs_at_once,
                                    checkpoint_every=checkpoint_every, save_replay=save_replay))
    return reports


def game_scores(rows: Sequence[dict], game: str, arm: str) -> dict[int, float]:
    """seed -> the evaluation score of `arm` on `game`."""
    return {int(row["seed"]): float(row["score"]) for row in rows
            if row["game"] == game and row_arm(row) == arm}


def compare_scores(x: Sequence[float], y: Sequence[float]) -> dict:
    """Arm x against arm y from their seeds' scores: the difference of means, its 95% bootstrap interval
    (each arm's seeds resampled), Welch's 95% t-interval, the reading of the bootstrap interval ('above',
    'below', 'no difference found') and whether Welch's reads otherwise (marginal). Fewer than two seeds in
    either arm: the difference alone, reading 'needs two seeds an arm'."""
    if min(len(x), len(y)) < 2:
        difference = float(np.mean(x) - np.mean(y)) if len(x) and len(y) else float("nan")
        return {"difference": difference, "low": "", "high": "", "welch_low": "", "welch_high": "",
                "reading": "needs two seeds an arm", "marginal": ""}
    difference, low, high = difference_with_ci(x, y, CONFIDENCE)
    welch = scipy_stats.ttest_ind(x, y, equal_var=False).confidence_interval(CONFIDENCE)
    welch_low, welch_high = (float(v) if np.isfinite(v) else difference for v in (welch.low, welch.high))
    read = lambda lo, hi: "above" if lo > 0 else "below" if hi < 0 else "no difference found"  # noqa: E731
    reading = read(low, high)
    return {"difference": difference, "low": low, "high": high, "welch_low": welch_low,
            "welch_high": welch_high, "reading": reading,
            "marginal": "yes" if read(welch_low, welch_high) != reading else "no"}


def score_interval(row: dict, digits: int = 1) -> str:
    """A comparison as '+d [+low, +high]' (or '+d' alone without an interval)."""
    difference = float(row["difference"])
    if row["low"] in ("", None):
        return f"{difference:+.{digits}f}"
    low, high = float(row["low"]), float(row["high"])
    return f"{difference:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def verdict_rows(comparisons: Sequence[Comparison], rows: Sequence[dict]) -> list[dict]:
    """One row per comparison and game with results for both arms: seeds, means, `compare_scores`."""
    out = []
    for c in comparisons:
        for game in c.games:
            x, y = game_scores(rows, game, c.contender), game_scores(rows, game, c.baseline)
            if not x or not y:
                continue
            out.append({"comparison": f"{c.contender} vs {c.baseline}", "primary": c.primary, "game": game,
                        "contender": c.contender, "baseline": c.baseline,
                        "contender_seeds": len(x), "baseline_seeds": len(y),
                        "contender_mean": float(np.mean(list(x.values()))),
                        "baseline_mean": float(np.mean(list(y.values()))),
                        **compare_scores(list(x.values()), list(y.values()))})
    return out


def sweep_comparison(out: str | Path, contender: str, baseline: str) -> Comparison:
    """`contender` against `baseline` on every game of the sweep in `out` that has both arms; ValueError
    naming the arms it has otherwise, or if `out` is a pre-registered study."""
    record = Path(out) / RESULTS.replace(".csv", ".sweep.json")
    if record.is_file() and "preregistration" in read_json(record, "a sweep record", "restore it"):
        raise ValueError(f"{out} holds a pre-registered study, whose verdicts.csv are its registered "
                         "comparisons (`aps-teach atari study` writes them); compare arms of a plain sweep")
    rows = read_rows(Path(out) / RESULTS, SCORE_COLUMNS)
    have = {(row["game"], row_arm(row)) for row in rows}
    games = tuple(sorted({g for g, arm in have if arm == contender}
                         & {g for g, arm in have if arm == baseline}))
    if not games:
        arms = sorted({arm for _, arm in have})
        raise ValueError(f"no game of {Path(out) / RESULTS} has both {contender!r} and {baseline!r}; its "
                         f"arms: {', '.join(arms) or 'none yet'}")
    return Comparison(contender, baseline, games, primary=False)


def arm_rows(rows: Sequence[dict]) -> list[dict]:
    """Per game and arm: seeds, the mean score with its 95% interval over seeds, the mean human-normalised
    score, and each seed's score."""
    out = []
    for game, arm in sorted(dict.fromkeys((row["game"], row_arm(row)) for row in rows)):
        scores = game_scores(rows, game, arm)
        mean, low, high = mean_with_ci(list(scores.values()), CONFIDENCE)
        normalised = [float(row["human_normalised"]) for row in rows
                      if row["game"] == game and row_arm(row) == arm and row["human_normalised"] != ""]
        out.append({"game": game, "arm": arm, "seeds": len(scores), "mean": mean, "low": low, "high": high,
                    "human_normalised": float(np.mean(normalised)) if normalised else "",
                    "scores": " ".join(f"{scores[s]:g}" for s in sorted(scores))})
    return out


def aggregate_rows(rows: Sequence[dict]) -> list[dict]:
    """Per arm, over the games with reference scores where it has results: rliable's IQM of human-normalised
    scores over runs x games with its stratified-bootstrap interval, and the mean of per-game means."""
    out = []
    for arm in dict.fromkeys(row_arm(row) for row in rows):
        games = sorted({row["game"] for row in rows
                        if row_arm(row) == arm and row["game"] in REFERENCE_SCORES})
        runs = [[float(row["human_normalised"]) for row in rows if row["game"] == g and row_arm(row) == arm]
                for g in games]
        if runs:
            out.append({"arm": arm, "games": len(games), **run_aggregates(runs),
                        "mean_of_games": float(np.mean([np.mean(r) for r in runs]))})
    return out


def improvement_rows(comparisons: Sequence[Comparison], rows: Sequence[dict]) -> list[dict]:
    """Per comparison, over its games with reference scores where both arms have runs: rliable's probability
    of improvement P(contender > baseline) of human-normalised scores with its stratified-bootstrap interval,
    read 'above' (interval wholly above 1/2), 'below' or 'no difference found'."""
    out = []
    for c in comparisons:
        x, y, games = [], [], []
        for game in c.games:
            a, b = (game_scores(rows, game, arm) for arm in (c.contender, c.baseline))
            if a and b and game in REFERENCE_SCORES:
                x.append([human_normalised(v, game) for v in a.values()])
                y.append([human_normalised(v, game) for v in b.values()])
                games.append(game)
        if games:
            p, low, high = improvement_with_ci(x, y, CONFIDENCE)
            out.append({"comparison": f"{c.contender} vs {c.baseline}", "primary": c.primary,
                        "games": " ".join(games), "improvement": p, "low": low, "high": high,
                        "reading": ("above" if low > 0.5 else "below" if high < 0.5
                                    else "no difference found")})
    return out


def write_tables(out: str | Path, comparisons: Sequence[Comparison]) -> dict[str, Path]:
    """OUT/arms.csv, OUT/verdicts.csv (of `comparisons`), OUT/aggregate.csv and OUT/improvement.csv from a
    sweep's OUT/scores.csv (atomically); the paths written (none before a run has finished). The figure,
    OUT/curves.png, is the view's: `atari.plots.write_study_curves`."""
    out = Path(out)
    rows = read_rows(out / RESULTS, SCORE_COLUMNS)
    if not rows:
        return {}
    written = {}
    tables = {"arms": arm_rows(rows), "verdicts": verdict_rows(comparisons, rows),
              "aggregate": aggregate_rows(rows), "improvement": improvement_rows(comparisons, rows)}
    for name, table in tables.items():
        if table:
            write_csv_atomic(out / f"{name}.csv", table)
            written[name] = out / f"{name}.csv"
    return written
