"""Value checks of configs and entry points: each raises ValueError naming the field and the valid range."""

from __future__ import annotations

import math
from typing import Any


def check_int(name: str, value: Any, minimum: int = 1, *, default: str | None = None) -> None:
    """`value` is an integer (not a bool) >= `minimum`; with `default` (what not giving it means, e.g. 'one
    per core'), None is valid too."""
    if value is None and default is not None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        alternative = f" (or not given: {default})" if default is not None else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{alternative}, got {value!r}")


def check_seed(seed: Any, name: str = "seed") -> None:
    """A seed is an integer >= 0 (numpy's SeedSequence takes no negative numbers)."""
    check_int(name, seed, 0)


def check_range(name: str, value: Any, low: float, high: float = math.inf, *, low_open: bool = False,
                high_open: bool = False) -> None:
    """`value` is a number in the interval from `low` to `high` (open at an end when asked; NaN never is)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    ok = ok and (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        if high == math.inf:
            valid = f"{'>' if low_open else '>='} {low:g}"
        else:
            valid = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be {valid}, got {value!r}")


def check_shapes(where: str, shapes: dict[str, tuple[Any, tuple[int, ...]]], context: str = "") -> None:
    """Each named array (value, expected shape) has that shape; else a ValueError naming the first that has
    not, from `where`, with `context` appended (e.g. the shape the others were derived from)."""
    for name, (value, shape) in shapes.items():
        if tuple(value.shape) != shape:
            raise ValueError(f"{where}: {name} has shape {tuple(value.shape)}, expected {shape}{context}")
