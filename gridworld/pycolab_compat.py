"""Make pycolab 1.2 (its only PyPI release, from 2017) work on current NumPy.

Two functions of `pycolab.ascii_art` break, and `ascii_art.ascii_art_to_game` needs both:

- `ascii_art_to_uint8_nparray` stacks a generator of `np.fromstring` rows: a TypeError since
  NumPy 1.24 (stacking needs a sequence) and a ValueError since NumPy 2.0 (binary `fromstring`).
- `ascii_art_to_game` places each sprite with `int(row)` on the one-element array that
  `np.where` returns: a TypeError since NumPy 2.4 (only 0-d arrays convert to scalars).

`apply()` replaces the first with a working version and gives `ascii_art` (only that module) a
`np.where` whose one-argument form returns tuples that convert with `int()`. Nothing else of
pycolab is patched: `.tostring()` (in `rendering.py` and `human_ui.py`) and `copy.deepcopy` of a
game (which recurses forever through `engine.Palette.__getattr__`) stay broken, so this package
uses neither. `import gridworld` calls `apply()`; calling it again is harmless.
"""

import types

import numpy as np
from pycolab import ascii_art


def ascii_art_to_uint8_nparray(art):
    """An ASCII-art diagram (list or tuple of equal-length strings) as a writable 2-D uint8 array.

    Same contract as pycolab's version: TypeError unless `art` is a list or tuple of strings,
    ValueError on ragged rows or non-ASCII characters.
    """
    if not isinstance(art, (list, tuple)) or not all(isinstance(row, str) for row in art):
        raise TypeError(f"ASCII art must be a list or tuple of strings, got {art!r}")
    try:
        rows = [np.frombuffer(row.encode("ascii"), dtype=np.uint8) for row in art]
    except UnicodeEncodeError as error:
        raise ValueError(f"ASCII art must contain only ASCII characters: {error}") from None
    if not rows or len({len(row) for row in rows}) != 1:
        raise ValueError("ASCII art rows must be non-empty and of equal length")
    return np.stack(rows)


class _ScalarConvertibleIndices(tuple):
    """The indices `np.where` found along one axis; `int()` works when there is exactly one."""

    def __int__(self):
        (index,) = self
        return int(index)


class _NumpyForAsciiArt(types.ModuleType):
    """NumPy as `pycolab.ascii_art` sees it: numpy itself, except the one-argument `where`."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def where(condition, *xy):
        if xy:
            return np.where(condition, *xy)
        return tuple(_ScalarConvertibleIndices(axis.tolist()) for axis in np.nonzero(condition))


def apply() -> None:
    """Patch `pycolab.ascii_art` in place (idempotent)."""
    ascii_art.ascii_art_to_uint8_nparray = ascii_art_to_uint8_nparray
    ascii_art.np = _NumpyForAsciiArt("numpy")

