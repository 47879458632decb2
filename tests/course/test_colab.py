"""Every notebook runs as on Colab: fast mode, every exercise unsolved, from a folder outside the
repository, against aps-teach installed from a wheel built here (its dependencies are this environment's).
This is the suite's only run of the notebooks; `check_printed_output` checks what each one printed.
The notebooks with exercises run a second time, each exercise solved by `exercises.solution`."""

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aps_teach.course import FAST_MODE_TEXT
from aps_teach.course.build import EXERCISE_STARTER, execute
from tests.course.test_notebooks import SOURCES, check_printed_output, exercise_names

ROOT = Path(__file__).resolve().parents[2]
BUILD_INPUTS = ["aps_teach", "gridworld", "results", "pyproject.toml", "README.md"]
WHERE = "import aps_teach, gridworld; print('imported from', aps_teach.__file__, gridworld.__file__)"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A folder holding aps-teach installed from a freshly built wheel (no repository on any path)."""
    tmp = tmp_path_factory.mktemp("colab")
    source = tmp / "source"
    source.mkdir()
    for name in BUILD_INPUTS:  # a clean copy: no stale build/ folder from an earlier build
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(source)],
                   check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("aps_teach-*.whl")
    subprocess.run(pip + ["install", "--no-deps", "--target", str(tmp / "site"), str(wheel)], check=True,
                   capture_output=True)
    return tmp / "site"


def test_the_wheel_ships_the_committed_results(installed):
    shipped = {p.relative_to(installed / "aps_teach" / "results") for p in (installed / "aps_teach" /
                                                                             "results").rglob("*.*")}
    committed = {p.relative_to(ROOT / "results") for p in (ROOT / "results").rglob("*")
                 if p.suffix in {".csv", ".json", ".png"}}
    assert committed and shipped == committed


def run_from_the_wheel(source: Path, installed: Path, folder: Path):
    """`source` executed in fast mode in `folder` with only the installed wheel importable; asserts that no
    cell raised and that aps_teach and gridworld came from the wheel. The executed notebook."""
    notebook = execute(source, fast=True, timeout=300, cwd=folder, env={"PYTHONPATH": str(installed)},
                       epilogue=WHERE)
    errors = [f"{o.ename}: {o.evalue}" for c in notebook.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    # one print may reach the notebook as several stream outputs (the kernel flushes as it likes under load)
    where = "".join(o["text"] for o in notebook.cells[-1].outputs if o.output_type == "stream").split()
    assert [Path(p).is_relative_to(installed) for p in where[2:]] == [True, True], where
    return notebook


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.stem)
def test_notebook_runs_as_on_colab(source, installed, tmp_path):
    notebook = run_from_the_wheel(source, installed, tmp_path)
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    banner = [o for o in outputs if FAST_MODE_TEXT in o.get("data", {}).get("text/plain", "")]
    assert banner, "the notebook shows no fast-mode banner"
    check_printed_output(source, notebook)


def test_committed_results_come_from_the_wheel_outside_the_repository(installed, tmp_path):
    code = "from aps_teach.course import committed_result; print(committed_result('gridworld/figure4.csv'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(installed)},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).is_relative_to(installed)
    assert Path(out).read_bytes() == (ROOT / "results" / "gridworld" / "figure4.csv").read_bytes()


def _solved(source: Path, folder: Path) -> Path:
    """A copy of `source` in `folder` with each exercise's starter replaced by its worked solution."""
    solved = folder / source.name
    solved.write_text(EXERCISE_STARTER.sub(lambda m: f'my_{m[1]} = exercises.solution("{m[1]}")\n',
                                           source.read_text()))
    return solved


def _verdicts_as_unsolved(notebook):
    """A copy of `notebook` in which each checker's "correct" line reads as the starter's does: what the
    unsolved run prints, so `check_printed_output` can judge every other line of the solved run."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = re.sub(r"^(\w+): correct \(matches the library on \d+ random cases\)$",
                                        r"\1: not attempted yet: using the library's answer", output["text"],
                                        flags=re.MULTILINE)
    return notebook


@pytest.mark.parametrize("source", [s for s in SOURCES if exercise_names(s)], ids=lambda path: path.stem)
def test_notebook_runs_with_every_exercise_solved(source, installed, tmp_path):
    """Top to bottom with each starter `def my_x(...): raise NotImplementedError` replaced by
    `my_x = exercises.solution("x")`: each solution is shown, passes its checker, and the rest of the
    notebook runs on it and prints what the unsolved run prints (the library's answers and the solutions
    agree)."""
    names = exercise_names(source)
    notebook = run_from_the_wheel(_solved(source, tmp_path), installed, tmp_path)
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    printed = "".join(o.get("text", "") for o in outputs)
    shown = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    for name in names:
        assert f"A solution to the exercise {name} (from aps_teach/course/solutions.py):\n\n" \
               f"```python\ndef {name}(" \
            in shown
        assert re.search(rf"^{name}: correct \(matches the library on \d+ random cases\)$", printed,
                         re.MULTILINE), name
    assert "not attempted yet" not in printed
    check_printed_output(source, _verdicts_as_unsolved(notebook))
