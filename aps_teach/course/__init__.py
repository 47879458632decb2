"""The course's helpers: what every notebook uses (here: the fast-mode banner and the committed results),
and one module per job.

    exercises  the checkers that coach: your function against the library's
    solutions  worked solutions, one function per exercise
    capstone   notebook 04d's capstone: APS trained on your reward and vMF loss, judged
    probe_sweep  notebooks 05 and 05b's set-up: the probes' results folder, worker processes, `probe`
    judge_calibration  the capstone judge's false-fail and false-pass rates, measured on fresh seeds
    widgets    the interactive reward heatmaps (a view)
    schematic  notebook 04's opening figure: what flows between the parts of VISR, APT and APS
    entropy    kNN entropy of a point cloud and closed forms to check it (notebook 03)
    build      `python -m aps_teach.course.build`: regenerate and execute the notebooks

`committed_result("gridworld/figure4.csv")` finds a file of the repository's `results/` folder both in a
checkout and from an installed wheel (Colab, no repository): the wheel ships `results/` as package data
`aps_teach/results/` (pyproject.toml maps the folder to that package), read with importlib.resources.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path, PurePosixPath

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this module runs from, when it does (it has pyproject.toml and results/)."""

FAST_MODE_TEXT = ("Fast mode (APS_TEACH_FAST=1): tiny sizes so that the notebook runs in seconds. The "
                  "numbers and figures below are not meaningful, and the text about them describes the full "
                  "run, not these. Unset APS_TEACH_FAST and run again for the real thing.")


class _Banner:
    """A notice shown as a coloured box in Jupyter and as plain text elsewhere."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return ('<div style="border:2px solid #d62728;background:#fde0dd;color:#000;padding:0.6em 1em;'
                f'font-weight:bold">&#9888; {html.escape(self.text)}</div>')

    def __repr__(self) -> str:
        return f"!! {self.text}"


def fast_mode_banner(fast: bool) -> None:
    """In fast mode, display a banner saying the numbers are not meaningful; nothing otherwise."""
    if not fast:
        return
    try:
        from IPython.display import display
    except ImportError:  # IPython is a dependency of ipywidgets, but a plain print will do without it
        print(repr(_Banner(FAST_MODE_TEXT)))
        return
    display(_Banner(FAST_MODE_TEXT))


def _results_roots() -> list[Path]:
    """Where committed results can be: the checkout's results/, then the installed package's copy (pip
    installs wheels unzipped, so package data is a plain folder)."""
    roots = []
    if (REPOSITORY_ROOT / "pyproject.toml").is_file() and (REPOSITORY_ROOT / "results").is_dir():
        roots.append(REPOSITORY_ROOT / "results")
    packaged = Path(str(resources.files("aps_teach") / "results"))
    if packaged.is_dir():
        roots.append(packaged)
    return roots


def committed_result(relpath: str) -> Path:
    """The path of `results/<relpath>` (a file or folder, e.g. "gridworld/figure4.csv", "transfer"), from
    the repository checkout when there is one, else from the installed package's data."""
    parts = PurePosixPath(relpath).parts
    if not parts or PurePosixPath(relpath).is_absolute() or ".." in parts:
        raise ValueError(f"committed_result needs a path inside results/, like 'gridworld/figure4.csv'; "
                         f"got {relpath!r}")
    roots = _results_roots()
    for root in roots:
        candidate = root.joinpath(*parts)
        if candidate.exists():
            return candidate
    available = sorted({path.relative_to(root).as_posix() for root in roots for path in root.rglob("*.*")})
    raise FileNotFoundError(f"no committed result {relpath!r}; available: {', '.join(available) or 'none'}")
