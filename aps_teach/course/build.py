"""Build the course notebooks: `notebooks/NN_title.py` (py:percent, the source) -> executed `.ipynb`.

    python -m aps_teach.course.build                 # regenerate and execute every notebook
    python -m aps_teach.course.build 00_gridworlds   # just one
    python -m aps_teach.course.build --times         # study time and compute per section, committed notebooks
    python -m aps_teach.course.build --write-times   # write those times where the course states them

The `.ipynb` is written from the `.py` and executed in full mode with its outputs kept, so
readers see every figure on GitHub or Colab. Never `jupytext --sync`: it picks the newer file
by timestamp and can overwrite edits. `out_of_sync` compares a pair without writing anything.
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jupytext
import nbformat

from aps_teach.course.exercises import EXERCISES

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
FAST_ENV = "APS_TEACH_FAST"
"""Set to "1" to run a notebook with its fast-mode sizes (what the test suite does)."""
REPOSITORY = "https://github.com/aps-teach/aps-teach"
"""Where the notebooks' Colab install cell fetches this project from: change it here, then regenerate."""


def release_tag() -> str:
    """The git tag the install cell pins, v<pyproject.toml's version> (tag each release so)."""
    project = tomllib.loads((NOTEBOOK_DIR.parent / "pyproject.toml").read_text())["project"]
    return f"v{project['version']}"


def install_requirement() -> str:
    """What the notebooks and the docs install on Colab: this repository at the pinned release tag."""
    return f"aps-teach @ git+{REPOSITORY}@{release_tag()}"


def install_cell(requirement: str | None = None) -> str:
    """The source of every notebook's first code cell: on Colab, pip-install `requirement` (default: the
    pinned release, `install_requirement`); if pip fails, stop the notebook with one line naming what could
    not be installed and pip's own last error (an exception whose `_render_traceback_`, IPython's hook, is
    that line, so Run All stops there instead of failing later on `import aps_teach`); then ask for a
    restart if the install upgraded a package Colab had preinstalled. Outside Colab the cell does nothing."""
    return f"""# On Colab, this installs the course's library at the release these notebooks were run with.
# Elsewhere it does nothing: install once from the repository instead (pip install -e .).
import sys

if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import distributions

    class InstallFailed(Exception):
        def _render_traceback_(self):  # IPython shows this one line instead of a traceback
            return [str(self)]

    def versions():
        return {{d.metadata["Name"].lower(): d.version for d in distributions()}}

    before = versions()
    requirement = "{requirement or install_requirement()}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-color", requirement],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        said = [line for line in pip.stderr.splitlines() if line.strip()] or ["pip printed no error"]
        errors = [line for line in said if line.startswith("ERROR")] or said
        raise InstallFailed(f"aps-teach could not be installed from {{requirement}}: {{errors[-1]}}")
    upgraded = [f"{{name}} {{before[name]}} -> {{new}}" for name, new in versions().items()
                if before.get(name, new) != new]
    if upgraded:
        print("Upgraded preinstalled packages:", ", ".join(upgraded))
        print("Restart the runtime now (Runtime > Restart session), then run the notebook from the top.")"""


def sources(folder: Path = NOTEBOOK_DIR) -> list[Path]:
    """The notebook sources in course order: `notebooks/NN_title.py` and continuations `NNb_title.py`
    (a letter after the number; "02_visr" sorts before "02c_visr_transfer")."""
    return sorted([*folder.glob("[0-9][0-9]_*.py"), *folder.glob("[0-9][0-9][a-z]_*.py")])


def _cells(notebook) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in notebook.cells]


def out_of_sync(source: Path) -> str | None:
    """Why `source`'s paired .ipynb does not match it (None when cell types, sources and tags agree)."""
    paired = source.with_suffix(".ipynb")
    if not paired.exists():
        return f"{paired.name} is missing"
    expected, actual = _cells(jupytext.read(source)), _cells(nbformat.read(paired, as_version=4))
    if expected == actual:
        return None
    for index, (want, have) in enumerate(zip(expected, actual, strict=False)):
        if want != have:
            return f"{paired.name} cell {index} differs from {source.name}: regenerate it"
    return f"{paired.name} has {len(actual)} cells, {source.name} has {len(expected)}: regenerate it"


def execute(source: Path, fast: bool, timeout: int = 1200, cwd: Path | None = None,
            env: dict[str, str] | None = None, epilogue: str | None = None):
    """Execute the notebook built from `source` (exercises unsolved: their checkers fall back to the
    library's answers) in `cwd`, by default the notebook's own folder, with the extra environment
    variables `env`; `epilogue` is code run after the last cell, as a cell of its own. Return the executed
    notebook."""
    from nbclient import NotebookClient

    notebook = jupytext.read(source)
    notebook.metadata.pop("jupytext", None)
    if epilogue:
        notebook.cells.append(nbformat.v4.new_code_cell(epilogue))
    settings = {**(env or {}), FAST_ENV: "1" if fast else "0",
                "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd or source.parent)}}).execute()
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook


def _drop_widget_outputs(notebook) -> None:
    """Remove live-widget outputs (tqdm bars): saved, they show only a stale first frame."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})]


def regenerate(source: Path) -> Path:
    """Write `source`'s .ipynb, executed in full mode (widget outputs dropped), atomically."""
    from aps_teach.infra.files import atomic_path

    notebook = execute(source, fast=False)
    _drop_widget_outputs(notebook)
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    target = source.with_suffix(".ipynb")
    with atomic_path(target) as tmp:
        nbformat.write(notebook, tmp)
    return target


def _seconds(cell) -> float:
    """How long a code cell ran when its notebook was executed: shell.execute_reply - iopub.execute_input
    of the timing metadata nbclient records (0 when there is none)."""
    execution = cell.get("metadata", {}).get("execution", {})
    if "iopub.execute_input" not in execution or "shell.execute_reply" not in execution:
        return 0.0
    start, end = (datetime.fromisoformat(execution[key].replace("Z", "+00:00"))
                  for key in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


WORDS_PER_MINUTE = 100
"""Reading speed for the course's prose and code (the words of its markdown and code cells), dense with
equations and code excerpts. Source: the first model's rate, which the one timed read of the course (a
learner's read of all 22 notebooks, recorded in issue 58) left standing: what it found slower was printed
output (`PRINTED_WORDS_PER_MINUTE`) and the exercises (`exercises.MINUTES`). Code is counted at this rate
too: nothing timed says otherwise."""
PRINTED_WORDS_PER_MINUTE = 55
"""Reading speed for what the cells print (verdicts, tables of numbers). Source: the learner's timed read
recorded in issue 58, "dense verdict output reads at 50-60 words a minute, not 100"; 55 is its middle."""
MINUTES_PER_EXPERIMENT = 5
"""Time to do one exercise that is an experiment (a section headed "Exercise ..." with no function to write:
set up a run and decide from it), beyond its reading, predictions and explanations, counted apart. An exercise
that is a function to write costs its kind's minutes (`exercises.MINUTES`)."""
MINUTES_PER_EQUATION = 2
"""Time to read one display equation ($$...$$) symbol by symbol and tie it to the prose, beyond its words."""
MINUTES_PER_STEP = 1
"""Time for each further relation (=, <=, >=, approx) in one display equation: a derivation's step."""
RELATION = re.compile(r"\\[gl]eq?(?![a-z])|\\approx|=")
"""A relation in LaTeX: =, \\ge, \\geq, \\le, \\leq, \\approx."""
MINUTES_PER_FIGURE = 1
"""Time to read one figure a cell draws."""
MINUTES_PER_PREDICTION = 1
"""Time to commit to one prediction ("**Predict" in the markdown) before running the cell below it."""
MINUTES_PER_EXPLANATION = 2
"""Time to answer one "**Explain it**" question before opening its answer."""
EXERCISE_STARTER = re.compile(r"^def my_(\w+)\(.*\):\n    raise NotImplementedError.*\n", re.MULTILINE)
"""An exercise's starter in a notebook: `def my_<name>(...):` whose body raises NotImplementedError."""
SECTION_TIME = re.compile(r"^\*About \d+ minutes?\.\*$", re.MULTILINE)
"""The line under a `## ` heading that states its section's study time (`write_times` writes it there)."""
CORE_PATH = ("00_gridworlds", "01_successor_features", "02_visr", "02a_task_inference",
             "02b_visr_adaptation", "03_apt", "03b_apt_gridworlds", "04_aps", "04a_aps_algorithm",
             "04b_aps_gridworlds", "04d_capstone", "07_synthesis")
"""The notebooks of the course's core path, VISR → APT → APS → capstone → synthesis: the levels and the
successor features the methods stand on (00, 01); each method derived (02 and 02a, 03, 04 and 04a) and run on
the gridworlds (02b, 03b, 04b); the capstone (04d); the synthesis (07). About two working days of study under
the time model (`write_times` writes its total into the course tables). Every other notebook is a deep dive,
marked so in its opening (`DEEP_DIVE`), as Neuromatch marks its bonus sections: VISR's transfer to painted
tasks (02c), where zero-shot success gets lost (04c), the variants beyond the paper (04e), the ablations (05,
05b, 05c), Atari (06, 06b), the paper's claims decided (07b) and the engineering appendix (08)."""
DEEP_DIVE = ("**Deep dive.** Off the core path (VISR → APT → APS → capstone → synthesis): skip it on a first "
             "pass.")
"""The paragraph before a deep dive's "**How long.**" (`write_times` writes it into the opening of every
notebook not on `CORE_PATH`, and takes it out of one that is)."""


@dataclass(frozen=True)
class Section:
    """One `## ` section of an executed notebook: what it asks of a learner."""

    name: str
    words: int
    """Words of its markdown and code cells (the install cell left out)."""
    exercises: int
    """Its exercises: the starters in its code (`EXERCISE_STARTER`) or, where there are fewer, its headings
    (any level) starting "Exercise" or "Capstone"."""
    exercise_minutes: float
    """A learner's time on them: each starter's kind (`exercises.MINUTES`), each heading beyond the starters
    `MINUTES_PER_EXPERIMENT`."""
    seconds: float
    """Compute of its code cells, as recorded when the notebook was executed (`_seconds`)."""
    printed: int = 0
    """Words its code cells printed (streams and results shown as text; widgets' outputs are not kept)."""
    figures: int = 0
    """Figures its code cells drew (image outputs)."""
    predictions: int = 0
    """Predictions it asks for ("**Predict" in its markdown)."""
    explanations: int = 0
    """"**Explain it**" questions in its markdown."""
    equations: int = 0
    """Display equations in its markdown."""
    steps: int = 0
    """Their relations beyond each one's first (`derivation_steps`)."""
    reruns: float = 0.0
    """Compute of its exercises' cells run again: once per further attempt at each exercise in the cell
    (`exercises.ATTEMPTS` - 1), at the compute the cell recorded; in the capstone each attempt pretrains
    again."""

    @property
    def minutes(self) -> float:
        """Study time: words / WORDS_PER_MINUTE + printed / PRINTED_WORDS_PER_MINUTE + exercise_minutes
        + figures * MINUTES_PER_FIGURE + predictions * MINUTES_PER_PREDICTION + explanations *
        MINUTES_PER_EXPLANATION + equations * MINUTES_PER_EQUATION + steps * MINUTES_PER_STEP
        + (seconds + reruns) / 60."""
        return (self.words / WORDS_PER_MINUTE + self.printed / PRINTED_WORDS_PER_MINUTE
                + self.exercise_minutes + self.figures * MINUTES_PER_FIGURE
                + self.predictions * MINUTES_PER_PREDICTION
                + self.explanations * MINUTES_PER_EXPLANATION + self.equations * MINUTES_PER_EQUATION
                + self.steps * MINUTES_PER_STEP + (self.seconds + self.reruns) / 60)


def derivation_steps(equation: str) -> int:
    """The relations of a LaTeX display equation outside braces (`RELATION`; those in sub- and
    superscripts, as in \\sum_{i=1}, are not steps), less its first: `a = b = c \\ge d` takes 2."""
    depth, outside = 0, []
    for character in equation:
        depth += {"{": 1, "}": -1}.get(character, 0)
        outside.append(character if depth == 0 else " ")
    return max(0, len(RELATION.findall("".join(outside))) - 1)


def uncounted(markdown: str) -> str:
    """`markdown` without the lines `write_times` writes (`SECTION_TIME`, `DEEP_DIVE`), so that writing them
    changes no count."""
    return SECTION_TIME.sub("", markdown.replace(DEEP_DIVE, ""))


def _split(executed: Path) -> list[tuple[str, list]]:
    """The cells of an executed notebook under each `## ` heading, in order, "opening" first (those before the
    first heading, perhaps none); a markdown cell holding a heading is cut at it, its lines above it left to
    the section before. The install cell is left out; markdown is `uncounted`."""
    found: list[tuple[str, list]] = [("opening", [])]
    boilerplate = install_cell().strip()
    for cell in nbformat.read(executed, as_version=4).cells:
        if cell.source.strip() == boilerplate:
            continue
        if cell.cell_type != "markdown":
            found[-1][1].append(cell)
            continue
        piece: list[str] = []
        for line in uncounted(cell.source).split("\n"):
            if line.startswith("## "):
                if "\n".join(piece).strip():
                    found[-1][1].append(nbformat.v4.new_markdown_cell("\n".join(piece)))
                found.append((line[3:].strip(), []))
                piece = []
            piece.append(line)
        if "\n".join(piece).strip():
            found[-1][1].append(nbformat.v4.new_markdown_cell("\n".join(piece)))
    return found


def sections(executed: Path) -> list[Section]:
    """The sections of an executed notebook, in order: what lies under each `## ` heading (`_split`), what
    lies before the first under "opening", dropped if it holds nothing."""
    return [_section(name, cells) for index, (name, cells) in enumerate(_split(executed)) if index or cells]


def exercise_minutes(cell) -> float:
    """A learner's time on the exercises whose starters a code cell holds (`EXERCISE_STARTER`; 0 for none):
    each one's `exercises.MINUTES` (its attempts times minutes per attempt) and the cell's recorded compute
    (`_seconds`) once per run: one run, then one more per further attempt at each exercise in it. The
    capstone's cell pretrains on every run, so its retraining is counted."""
    found = [EXERCISES[name] for name in EXERCISE_STARTER.findall(cell.source + "\n")]
    if not found:
        return 0.0
    runs = 1 + sum(exercise.attempts - 1 for exercise in found)
    return sum(exercise.minutes for exercise in found) + runs * _seconds(cell) / 60


def _section(name: str, cells: list) -> Section:
    code = "\n".join(cell.source + "\n" for cell in cells if cell.cell_type == "code")
    markdown = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
    titles = [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]
    headed = sum(title.startswith(("Exercise", "Capstone")) for title in titles)
    starters = EXERCISE_STARTER.findall(code)
    equations = re.findall(r"\$\$(.+?)\$\$", markdown, re.DOTALL)
    outputs = [output for cell in cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    printed = [output.get("text", "") if output.get("output_type") == "stream"
               else output.get("data", {}).get("text/plain", "") if "image/png" not in output.get("data", {})
               else "" for output in outputs]
    reruns = sum(_seconds(cell) * sum(EXERCISES[starter].attempts - 1
                                      for starter in EXERCISE_STARTER.findall(cell.source + "\n"))
                 for cell in cells if cell.cell_type == "code")
    return Section(name, sum(len(cell.source.split()) for cell in cells), max(headed, len(starters)),
                   sum(EXERCISES[starter].minutes for starter in starters)
                   + max(0, headed - len(starters)) * MINUTES_PER_EXPERIMENT,
                   sum(_seconds(cell) for cell in cells if cell.cell_type == "code"), reruns=reruns,
                   printed=sum(len(text.split()) for text in printed),
                   figures=sum("image/png" in output.get("data", {}) for output in outputs),
                   predictions=markdown.count("**Predict"), explanations=markdown.count("**Explain it"),
                   equations=len(equations), steps=sum(derivation_steps(equation) for equation in equations))


def study_minutes(executed: Path) -> float:
    """A notebook's study time: its sections' `Section.minutes` summed."""
    return sum(section.minutes for section in sections(executed))


def times_table(names: list[str]) -> str:
    """Each notebook's study time per section (reading, exercises and compute as its committed .ipynb
    recorded it), and in all."""
    lines = []
    for name in names:
        found = sections(NOTEBOOK_DIR / f"{name}.ipynb")
        minutes = sum(section.minutes for section in found)
        compute = sum(section.seconds for section in found)
        lines.append(f"{name}: {minutes:.0f} min, {compute:.0f} s of compute")
        lines += [f"  {section.minutes:5.1f} min  {section.words:5,} words  {section.printed:5,} printed  "
                  f"{section.figures} figures  {section.predictions} predictions  {section.explanations} "
                  f"explain-its  {section.equations} equations ({section.steps} steps)  "
                  f"{section.exercises} exercises ({section.exercise_minutes:.0f} min, reruns "
                  f"{section.reruns:.0f} s)  "
                  f"{section.seconds:6.1f} s  {section.name}"
                  for section in found]
    return "\n".join(lines)


STATED_TIME = re.compile(r"(\*\*How[\s#]+long\.\*\*[\s#]+About[\s#]+)(\d+|MINUTES)"
                         r"([\s#]+minutes[\s#]+of[\s#]+study)")
"""Where a notebook's opening states its study time ("MINUTES" before it was first measured), in its
markdown or in its .py, where a line break inside it continues after "# "."""
TABLE_ROW = re.compile(r"^(\| \[`(\w+)`\]\([^)]+\) \| )(core|deep dive)( \|.*\| )(\d+)( min \|)$",
                       re.MULTILINE)
"""A row of a course table: the notebook's name, "core" or "deep dive" (`CORE_PATH`), what it teaches, its
study time."""
TOTAL = re.compile(r"In\s+all,\s+\d+\s+minutes,\s+about\s+[\d.]+\s+hours\.")
"""A course table's total."""
CORE_TOTAL = re.compile(r"The\s+core\s+path\s+takes\s+\d+\s+minutes,\s+about\s+[\d.]+\s+hours;\s+the\s+deep"
                        r"\s+dives\s+\d+\s+minutes,\s+about\s+[\d.]+\s+hours\.")
"""A course table's split of its total between `CORE_PATH` and the deep dives."""


def core_total(minutes: dict[str, int], core: tuple[str, ...] = CORE_PATH) -> str:
    """The sentence `CORE_TOTAL` matches, from each notebook's rounded minutes."""
    on = sum(value for name, value in minutes.items() if name in core)
    off = sum(minutes.values()) - on
    return (f"The core path takes {on} minutes, about {on / 60:.1f} hours; the deep dives {off} minutes, "
            f"about {off / 60:.1f} hours.")


def with_deep_dive(text: str, deep: bool, comment: str = "") -> str:
    """`text` (a notebook's markdown, or its .py with `comment` "# ") with the paragraph `DEEP_DIVE` before
    its first "**How long.**" when `deep`, without it otherwise."""
    blank = comment.rstrip()
    text = text.replace(f"{comment}{DEEP_DIVE}\n{blank}\n", "")
    if not deep:
        return text
    paragraph = f"{comment}{DEEP_DIVE}\n{blank}\n"
    return re.sub(rf"^{re.escape(comment)}\*\*How long\.\*\*", lambda match: paragraph + match[0], text,
                  count=1, flags=re.MULTILINE)


def section_time(minutes: float) -> str:
    """The line `write_times` writes under a section's heading: its study time, rounded, at least a minute."""
    whole = max(1, round(minutes))
    return f"*About {whole} minute{'' if whole == 1 else 's'}.*"


def _with_section_times(lines: list[str], times: list[str], comment: str) -> list[str]:
    """`lines` of markdown (each after `comment`, "# " in a .py) with `times.pop(0)` written under each `## `
    heading, a blank line between, in place of the one written before."""
    blank, heading = comment.rstrip(), f"{comment}## "
    edited: list[str] = []
    index = 0
    while index < len(lines):
        edited.append(lines[index])
        index += 1
        if edited[-1].startswith(heading):
            if not times:
                raise ValueError(f"more `## ` headings than sections, at {edited[-1]!r}")
            if index + 1 < len(lines) and lines[index] == blank and SECTION_TIME.match(
                    lines[index + 1].removeprefix(comment)):
                index += 2
            edited += [blank, comment + times.pop(0)]
    return edited


def _py_with_section_times(text: str, times: list[str]) -> str:
    """A py:percent source with `_with_section_times` applied to its markdown cells only."""
    edited: list[str] = []
    markdown: list[str] | None = None  # the lines of the markdown cell being read
    for line in text.split("\n"):
        if line.startswith("# %%") and markdown is not None:
            edited += _with_section_times(markdown, times, "# ")
            markdown = None
        if markdown is not None:
            markdown.append(line)
        else:
            edited.append(line)
            if line.startswith("# %% [markdown]"):
                markdown = []
    return "\n".join(edited + _with_section_times(markdown or [], times, "# "))


def write_times(root: Path = NOTEBOOK_DIR.parent, tables: tuple[str, ...] = ("README.md", "docs/course.md"),
                core: tuple[str, ...] = CORE_PATH) -> list[Path]:
    """Write each notebook's study time (`study_minutes` of its committed .ipynb, rounded) where the
    course states it: its opening (`STATED_TIME`, one number for another, so the words counted do not
    change) and under each `## ` heading its section's (`section_time`, a line not counted: `uncounted`), in
    the .py and the .ipynb alike, with the paragraph `DEEP_DIVE` in the opening of each notebook not on `core`
    (not counted either); and in the course tables under `root`, each row (`TABLE_ROW`: its path, core or
    deep dive, and its minutes), the total (`TOTAL`, the rows' sum) and its split between the core path and
    the deep dives (`CORE_TOTAL`). Returns the files changed."""
    found = {path.stem: [_section(*part) for part in _split(path.with_suffix(".ipynb"))]
             for path in sources(root / "notebooks")}
    minutes = {name: round(sum(section.minutes for section in parts)) for name, parts in found.items()}
    changed = []

    def stated(text: str, name: str, comment: str = "") -> str:
        text = with_deep_dive(text, name not in core, comment)
        return STATED_TIME.sub(lambda match: f"{match[1]}{minutes[name]}{match[3]}", text)

    for name, parts in found.items():
        times = [section_time(section.minutes) for section in parts[1:]]  # parts[0]: the opening
        source = root / "notebooks" / f"{name}.py"
        paired = source.with_suffix(".ipynb")
        notebook = nbformat.read(paired, as_version=4)
        left, right = list(times), list(times)  # each heading takes the next
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                cell.source = "\n".join(_with_section_times(stated(cell.source, name).split("\n"), left, ""))
        text = _py_with_section_times(stated(source.read_text(), name, "# "), right)
        if left or right:
            raise ValueError(f"{source.name} has fewer `## ` headings in markdown cells than {paired.name}")
        if notebook != nbformat.read(paired, as_version=4):
            nbformat.write(notebook, paired)
            changed.append(paired)
        if text != source.read_text():
            source.write_text(text)
            changed.append(source)
    total = sum(minutes.values())
    for table in tables:
        path = root / table
        text = TABLE_ROW.sub(lambda match: f"{match[1]}{'core' if match[2] in core else 'deep dive'}"
                             f"{match[4]}{minutes[match[2]]}{match[6]}", path.read_text())
        text = TOTAL.sub(f"In all, {total} minutes, about {total / 60:.1f} hours.", text)
        text = CORE_TOTAL.sub(core_total(minutes, core), text)
        if text != path.read_text():
            path.write_text(text)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate and execute the course notebooks.")
    parser.add_argument("names", nargs="*", help="notebook names, e.g. 00_gridworlds (default: all)")
    parser.add_argument("--times", action="store_true",
                        help="print each committed notebook's study time and compute per section instead "
                             "(no run)")
    parser.add_argument("--write-times", action="store_true",
                        help="write each committed notebook's study time into its opening and the course "
                             "tables (README.md, docs/course.md) instead (no run)")
    args = parser.parse_args(argv)
    known = {path.stem: path for path in sources()}
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        parser.error(f"unknown notebooks {unknown}; valid: {', '.join(known)}")
    if args.times:
        print(times_table(args.names or list(known)))
        return 0
    if args.write_times:
        for path in write_times():
            print(f"wrote {path.relative_to(NOTEBOOK_DIR.parent)}")
        return 0
    for name in args.names or known:
        print(f"wrote {regenerate(known[name]).relative_to(NOTEBOOK_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
