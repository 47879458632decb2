"""What every figure of the package shares, below both wings' views: the methods' colours and writing a
figure to a file (atomically, in the format its suffix names). A view, like the modules that use it
(`grid.plots`, `studies.plots`, `atari.plots`, `course.schematic`): the computing layers never import it.
"""

from __future__ import annotations

import os
from pathlib import Path

from aps_teach.infra.files import atomic_path

METHOD_COLOURS = {"visr": "#1f77b4", "apt": "#2ca02c", "aps": "#d62728", "dqn": "#7f7f7f"}
OTHER_COLOURS = ("#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
"""Colours of other names (variants, X->Y pairs), none of them a method's."""


def method_colour(method: str, index: int) -> str:
    """A method's own colour, or else the `index`-th of `OTHER_COLOURS` (cycling)."""
    return METHOD_COLOURS.get(method, OTHER_COLOURS[index % len(OTHER_COLOURS)])


def check_figure_path(path: str | os.PathLike, name: str = "out") -> None:
    """ValueError naming `name` unless `path` ends in a file name with a format matplotlib writes."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        got = f"{str(path)!r}" + (" (no extension)" if not suffix else "")
        raise ValueError(f"{name} must be a file name ending in a figure format ({', '.join(formats)}), "
                         f"got {got}")


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> None:
    """Write `fig` to `path` atomically (the format comes from the suffix; `check_figure_path`)."""
    check_figure_path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
