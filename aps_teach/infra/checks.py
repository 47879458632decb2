"""Value checks of configs and entry points: each raises ValueError naming the field and the valid range.
NaN and infinities are never valid numbers: a learning rate of inf or a weight of nan would train for a while
and then fail deep inside torch."""

from __future__ import annotations

import math
from typing import Any

MAX_SEED = 2**32 - 1
"""The largest seed: 32 bits, what every generator and environment of the package takes (a seed enters
torch.manual_seed, numpy's SeedSequence and, multiplied, the snapshot stream of `aps_teach.infra.seeds`)."""


def check_int(name: str, value: Any, minimum: int = 1, *, maximum: int | None = None,
              default: str | None = None) -> None:
    """`value` is an integer (not a bool) >= `minimum` (and <= `maximum` if given); with `default` (what not
    giving it means, e.g. 'one per core'), None is valid too."""
    if value is None and default is not None:
        return
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        upper = f" and <= {maximum}" if maximum is not None else ""
        alternative = f" (or not given: {default})" if default is not None else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}{alternative}, got {value!r}")


def check_seed(seed: Any, name: str = "seed") -> None:
    """A seed is an integer in [0, MAX_SEED] (numpy's SeedSequence takes no negative numbers)."""
    check_int(name, seed, 0, maximum=MAX_SEED)


def check_finite(name: str, value: Any) -> None:
    """`value` is a finite number (any sign): weights, scales."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_range(name: str, value: Any, low: float, high: float = math.inf, *, low_open: bool = False,
                high_open: bool = False) -> None:
    """`value` is a finite number in the interval from `low` to `high` (open at an end when asked; NaN and
    infinities never are)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        if high == math.inf:
            valid = f"{'>' if low_open else '>='} {low:g} and finite"
        else:
            valid = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be {valid}, got {value!r}")


def check_shapes(where: str, shapes: dict[str, tuple[Any, tuple[int, ...]]], context: str = "") -> None:
    """Each named array (value, expected shape) has that shape; else a ValueError naming the first that has
    not, from `where`, with `context` appended (e.g. the shape the others were derived from)."""
    for name, (value, shape) in shapes.items():
        if tuple(value.shape) != shape:
            raise ValueError(f"{where}: {name} has shape {tuple(value.shape)}, expected {shape}{context}")
