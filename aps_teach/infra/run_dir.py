"""A run directory, one object with one owner, for the gridworld and Atari pipelines alike.

    OUT/config.json        what the run is (method, level or game, seed, budgets, the training config);
                           written first, atomically, once every input has been checked
    OUT/pretrain/          metrics.csv, checkpoint.pt (and TensorBoard files)
    OUT/finetune/          the same for fine-tuning
    OUT/summary.json ...   the results (gridworld: summary.json; Atari: task.json, scores.csv)

One owner: `with RunDir(out) as run:` holds the directory's lock (`aps_teach.infra.locks.owning`) for the
block, so a second process writing the same directory is refused with the owner's pid and nothing changed.
`RunDir.claim`, inside that block, is the only way in: a directory holding another run's config is refused
(nothing changed) unless `force`, which replaces that run; `resume` continues the run whose config matches,
from whatever phase checkpoints exist; the same run again without `resume` is refused if it would delete a
finished phase or results (`--force` starts it over) and otherwise starts the unfinished run over. Stale
results never mix with a new config: a claim that starts over removes the run files it restarts *before*
writing config.json.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from aps_teach.infra.files import load_checkpoint, write_text_atomic
from aps_teach.infra.locks import holds, owning


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with a message saying where the work stands and how to continue it."""


def check_out(path: Path | None, option: str = "--out") -> None:
    """ValueError for an empty output path (`--out ""`, which would write into the current directory)."""
    if path is not None and str(path) in ("", "."):
        raise ValueError(f"{option} is empty; give a directory (for the current one, its full path)")

CONFIG = "config.json"
RUN_FILES = ("pretrain", "finetune", "summary.json", "task.json", "scores.csv", "overview.png")
"""What a run writes besides config.json; a claim that starts a run over removes these and nothing else."""
RESULTS = ("summary.json", "scores.csv")
"""The results files of a run (gridworld, Atari): a run holding one has something to lose."""
FINISHED_HINT = ("continue it with --resume (finished phases are loaded, not trained again), or start it "
                 "over with --force")
"""What a refusal to start a finished run over says to do instead (`RunDir.claim`)."""
WINGS = {"level": "gridworld", "game": "atari"}
"""The config.json field that marks a run of each wing, and the `aps-teach` command group that handles it."""
PHASE_NAMES = {"pretrain": "pretraining", "finetune": "fine-tuning"}
"""The phases with a directory and checkpoint in a run (all of `seeds.PHASES` but identify and evaluate),
as a status line names them."""


def say(message: str) -> None:
    """A status line for the person at the terminal (stderr, beside the progress bars)."""
    print(message, file=sys.stderr, flush=True)


def config_differences(saved: Mapping, ours: Mapping, prefix: str = "", *, ignore: Collection[str] = (),
                       shared_only: bool = False) -> list[tuple[str, Any, Any]]:
    """(dotted field, saved value, our value) for every field where two nested config dicts differ (run
    directories, checkpoints and sweep records all compare configs with it).

    `ignore`: dotted fields never compared; `shared_only`: top-level keys absent from either side are
    not differences (a later command adds what an earlier one did not decide, e.g. the fine-tuning budget).
    """
    keys = set(saved) & set(ours) if shared_only else set(saved) | set(ours)
    out = []
    for key in sorted(keys):
        name = f"{prefix}{key}"
        if name in ignore:
            continue
        a, b = saved.get(key), ours.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += config_differences(a, b, f"{name}.", ignore=ignore)
        elif a != b:
            out.append((name, a, b))
    return out


def describe_differences(diff: Sequence[tuple[str, object, object]], theirs: str, ours: str) -> str:
    """`differences` as text: 'name (theirs a, ours b), ...'."""
    return ", ".join(f"{name} ({theirs} {a!r}, {ours} {b!r})" for name, a, b in diff)


class RunDir:
    """A run's directory: its config.json, its phases' checkpoints, its results (see the module docstring)."""

    def __init__(self, path: str | Path, resume: bool = False):
        check_out(path)
        self.path = Path(path)
        self.resume = resume
        """Whether the claim was a --resume: `resumes(phase)` continues a phase from its checkpoint."""
        self._owners: list[AbstractContextManager] = []

    def __enter__(self) -> RunDir:
        """Own the directory (created if missing) until the block ends: `locks.owning`."""
        owner = owning(self.path)
        owner.__enter__()
        self._owners.append(owner)
        return self

    def __exit__(self, *exc) -> None:
        self._owners.pop().__exit__(*exc)

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    def checkpoint(self, phase: str) -> Path:
        return self.path / phase / "checkpoint.pt"

    def resumes(self, phase: str) -> bool:
        """Whether `phase` continues from a checkpoint: a resumed run whose phase has one."""
        return self.resume and self.checkpoint(phase).exists()

    def saved_config(self) -> dict | None:
        """config.json, or None if there is none; ValueError naming the file and the reason if it is not a
        config this package wrote."""
        path = self.config_path
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"{self.path} is a file, not a run directory; give another --out")
        if not path.exists():
            return None
        text = path.read_text(errors="replace")
        if not text.strip():
            raise ValueError(f"corrupt run config {path}: the file is empty; delete it (or give --force) to "
                             "start the run over")
        try:
            saved = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"corrupt run config {path}: not valid JSON ({error}); delete it (or give "
                             "--force) to start the run over") from None
        if not isinstance(saved, dict):
            raise ValueError(f"corrupt run config {path}: a JSON {type(saved).__name__}, not an object of "
                             "config fields")
        return saved

    def read_config(self, required: Sequence[str] = (), hint: str = "") -> dict:
        """config.json with at least the `required` fields: FileNotFoundError if there is none (with `hint`,
        e.g. the command that writes it), ValueError naming the file and what is wrong if it is corrupt, or
        naming the wing (`WINGS`) whose commands handle it if it is a run of the other wing."""
        saved = self.saved_config()
        if saved is None:
            raise FileNotFoundError(f"{self.config_path} not found" + (f": {hint}" if hint else ""))
        missing = [key for key in required if key not in saved]
        other = [key for key in WINGS if key in saved and key not in required]
        if missing and other and any(key in required for key in WINGS):  # a run of the other wing
            key, wing = other[0], WINGS[other[0]]
            article = "an" if wing[0] in "aeiou" else "a"
            raise ValueError(f"{self.path} holds {article} {wing} run ({key} {saved[key]!r}), not one this "
                             f"command handles: the `aps-teach {wing}` commands do (e.g. `aps-teach {wing} "
                             f"evaluate --out {self.path}`)")
        if missing:
            raise ValueError(f"corrupt run config {self.config_path}: no {', '.join(missing)} field")
        return saved

    def claim(self, config: dict, *, resume: bool = False, force: bool = False, ignore: Collection[str] = (),
              restart: Sequence[str] = RUN_FILES, finished_hint: str = FINISHED_HINT) -> dict:
        """Make this directory hold the run `config` (a JSON-able dict) and return the config it holds.

        Call it inside `with RunDir(...)` (the directory's owner) after every input is checked: it is the
        first write. Against a config.json already there (fields in both compared, `ignore` excepted):
        another run is refused, naming the differing fields, unless `force`; the same run is continued with
        `resume` (fields it lacks are added), refused if starting it over would delete a finished phase or
        results among `restart` (`finished`; the message ends with `finished_hint`, what to do instead),
        else started over. Forced or started over, the `restart` files go first; a claim restarting every
        run file then writes `config` alone, one restarting a phase (finetune) updates the saved config with
        it. Without config.json, a directory holding run files is refused unless `force`.
        """
        if not holds(self.path):
            raise RuntimeError(f"claim {self.path} inside `with RunDir(...)`, which owns it")
        if resume and force:
            raise ValueError("--resume continues the run in --out, --force replaces it: give one of them")
        self.resume = resume
        try:
            saved = self.saved_config()
        except ValueError as error:
            if not force or not self.config_path.is_file():
                raise
            say(f"replacing the run in {self.path} (--force): its {CONFIG} is unreadable ({error})")
            self._remove(RUN_FILES)
            return self._write(config)
        if saved is None:
            stray = self._present(RUN_FILES)
            if stray and not force:
                raise ValueError(f"{self.path} holds run files ({', '.join(stray)}) but no {CONFIG}: not a "
                                 "run this command can continue; give another --out, or --force to replace "
                                 "them")
            if resume:
                say(f"nothing to resume in {self.path} (no {CONFIG}): starting the run")
            self._remove(RUN_FILES if force else ())
            return self._write(config)
        diff = config_differences(saved, config, ignore=ignore, shared_only=True)
        if diff and not force:
            action = "cannot resume it" if resume else "refusing to mix two runs in one directory"
            raise ValueError(f"{self.config_path} holds another run ({action}): "
                             f"{describe_differences(diff, 'saved', 'this run')}; give another --out, or "
                             "--force to replace that run")
        whole = set(RUN_FILES) <= set(restart)  # a new run: config.json is ours alone
        if diff:
            say(f"replacing the run in {self.path} (--force): "
                f"{describe_differences(diff, 'was', 'now')}")
            self._remove(restart)
            return self._write(config if whole else {**saved, **config})
        if resume:
            say(f"resuming {self.path}: {self.standing()}")
            merged = {**config, **saved}
        else:
            finished = self.finished(restart)
            if finished and not force:
                raise ValueError(f"{self.path} holds this run, {'; '.join(finished)}, which this command "
                                 f"would start over: nothing was changed; {finished_hint}")
            removed = self._remove(restart)
            if removed:
                why = "--force" if force else "--resume would have continued from them"
                say(f"starting over in {self.path}: removed {', '.join(removed)} ({why})")
            merged = config if whole else {**config, **saved}
        self._check_phase_paths()
        return self._write(merged) if merged != saved else saved

    def finished(self, names: Sequence[str] = RUN_FILES) -> list[str]:
        """What of `names` holds finished work: phases whose checkpoint reached the phase's end, results files
        present (a corrupt checkpoint counts as unfinished: there is nothing in it to keep)."""
        done = []
        for phase in PHASE_NAMES:
            if phase in names:
                try:
                    progress = self.phase_progress(phase)
                except ValueError:
                    continue
                if progress is not None and None not in progress and progress[0] >= progress[1]:
                    done.append(self.phase_standing(phase))
        present = [name for name in RESULTS if name in names and (self.path / name).exists()]
        return done + ([f"results in {', '.join(present)}"] if present else [])

    def _present(self, names: Sequence[str]) -> list[str]:
        """Those of `names` in the directory, a link to nothing included."""
        return [name for name in names if os.path.lexists(self.path / name)]

    def _check_phase_paths(self) -> None:
        """ValueError, before config.json is written, if a phase's directory is taken by something else: a
        file, or a link to nothing (a run could not write its checkpoints there)."""
        for phase in PHASE_NAMES:
            path = self.path / phase
            if path.is_dir() or not os.path.lexists(path):
                continue
            what = f"a link to {os.readlink(path)}, which does not exist" if path.is_symlink() and \
                not path.exists() else "not a directory"
            raise ValueError(f"{path} is {what}, where the run keeps its {PHASE_NAMES[phase]} checkpoints: "
                             "remove it, or give --force to start the run over")

    def _remove(self, names: Sequence[str]) -> list[str]:
        removed = self._present(names)
        for name in removed:
            path = self.path / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        return removed

    def _write(self, config: dict) -> dict:
        self._check_phase_paths()
        self.path.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.config_path, json.dumps(config, indent=2))
        return config

    def phase_progress(self, phase: str) -> tuple[int | None, int | None] | None:
        """(env steps done, env steps of the whole phase) of `phase`'s checkpoint (None where it does not
        say), or None without a checkpoint. Reads the counters only: the tensors stay on disk."""
        path = self.checkpoint(phase)
        if not path.exists():
            return None
        state = load_checkpoint(path, "cpu", mmap=True)  # "cpu": a GPU run's checkpoint reads anywhere
        return state.get("env_steps"), state.get("total_env_steps")

    def phase_standing(self, phase: str) -> str:
        """Where a phase stands on disk: not started, checkpointed at env step N of M, or finished."""
        name = PHASE_NAMES.get(phase, phase)
        try:
            progress = self.phase_progress(phase)
        except ValueError as error:
            return f"{name}: {error}"
        if progress is None:
            return f"{name} not started"
        done, total = progress
        if done is None:
            return f"{name} checkpointed"
        if total is not None and done >= total:
            return f"{name} finished ({done:,} env steps)"
        return f"{name} checkpointed at env step {done:,}" + (f" of {total:,}" if total else "")

    def standing(self) -> str:
        """Where the run stands: each phase's checkpoint, and whether its results are written."""
        done = [name for name in RESULTS if (self.path / name).exists()]
        phases = "; ".join(self.phase_standing(phase) for phase in PHASE_NAMES)
        return phases + (f"; results in {', '.join(done)}" if done else "")


def resume_command(prog: Sequence[str], argv: Sequence[str]) -> str:
    """The shell command that continues a run started by `prog argv`: --force dropped, --resume added."""
    args = [arg for arg in argv if arg not in ("--force", "--resume")]
    return shlex.join([*prog, *args, "--resume"])


@contextmanager
def resume_hint_on_interrupt(out: str | Path | None, command: str) -> Iterator[None]:
    """On Ctrl-C inside, with a run directory `out`: raise `Interrupted` saying where that run stands and the
    command that continues it (the CLI prints it as one line, exit status 130)."""
    try:
        yield
    except KeyboardInterrupt as stop:
        if out is None or isinstance(stop, Interrupted):
            raise
        raise Interrupted(f"{RunDir(out).standing()}; continue with: {command}") from None
