"""The checks at the API boundary, where configs, budgets, seeds, task vectors and learners enter: the command
line and the Python API share them. Each refuses with a ValueError naming the argument, what was given and
what is valid (a wrong type is an `InputTypeError`, a TypeError and a ValueError at once), and returns the
value as the package keeps it: a numpy or torch scalar becomes the Python number it holds (`plain_number`),
so notebooks may compute budgets with numpy and configs stay JSON-able with unchanged hashes.

NaN and infinities are never valid numbers: a learning rate of inf or a weight of nan would train for a while
and then fail deep inside torch. Finite values that overflow the networks' float32 (`MAX_MAGNITUDE`) or
whose work has no useful bound (`MAX_PHASE_STEPS`; a gridworld batch's `grid.config.MAX_NUM_ENVS`) are
refused too, before anything is written; what memory a setting needs is checked against free memory
(`aps_teach.infra.memory`)."""

from __future__ import annotations

import math
from typing import Any

MAX_SEED = 2**32 - 1
"""The largest seed: 32 bits, what every generator and environment of the package takes (a seed enters
torch.manual_seed, numpy's SeedSequence and, multiplied, the snapshot stream of `aps_teach.infra.seeds`)."""
MAX_MAGNITUDE = math.sqrt(3.4028234663852886e38)
"""The largest magnitude (about 1.8e19) of a learning rate, reward weight, reward clip or scale: the square
root of float32's largest number. The networks, losses and rewards are float32, and a squared TD error or an
Adam step of a larger value is inf at once, so training turns to NaN (task identification then failed inside
torch). Values below it may still diverge; training refuses to go on once its weights stop being finite."""
MAX_PHASE_STEPS = 10**9
"""The most env steps one gridworld phase may take (pretraining, fine-tuning, identification, or an
evaluation's episodes x the step limit, in whole rounds): 15,600 times the default pretraining budget. At
the rates measured on one CPU core (evaluation about 60,000 env steps/s, pretraining about 5,000) it is
five hours of evaluation or two days of pretraining, and a training phase's replay (every step kept) outgrows
memory long before; a number beyond it is a typo, and it would run silently until killed."""

class InputTypeError(TypeError, ValueError):
    """An argument of the wrong type: a TypeError, and a ValueError too, so that the command line reports it
    in one line like any bad value (a config.json field of the wrong type reaches the same checks)."""


def plain_number(value: Any) -> Any:
    """A numpy or torch scalar (a 0-d array or tensor included) as the Python bool, int or float it holds,
    anything else as it is: numpy.int64(3) -> 3, torch.tensor(0.5) -> 0.5."""
    if type(value) in (bool, int, float):
        return value
    library = type(value).__module__.split(".")[0]
    if library in ("numpy", "torch") and tuple(getattr(value, "shape", (0,))) == ():
        return value.item()
    return value


def check_field(config: Any, name: str, check, *args, **kwargs) -> None:
    """Run `check(name, <the field's value>, *args, **kwargs)` on a field of a dataclass (frozen or not) and
    store the value it returns, so a numpy or torch scalar is kept as a Python number."""
    object.__setattr__(config, name, check(name, getattr(config, name), *args, **kwargs))


def check_type(name: str, value: Any, kind: type | tuple[type, ...], valid: str) -> Any:
    """`value` if it is an instance of `kind`, else an `InputTypeError`: '<name> must be <valid>, got <the
    value's type> <value>'."""
    if not isinstance(value, kind):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InputTypeError(f"{name} must be {valid}, got {type(value).__name__} {shown}")
    return value


def check_int(name: str, value: Any, minimum: int = 1, *, maximum: int | None = None,
              default: str | None = None) -> Any:
    """`value` as an integer (not a bool; numpy and torch integers accepted) >= `minimum` (and <= `maximum`
    if given); with `default` (what not giving it means, e.g. 'one per core'), None is valid too."""
    if value is None and default is not None:
        return None
    value = plain_number(value)
    upper = f" and <= {maximum}" if maximum is not None else ""
    alternative = f" (or not given: {default})" if default is not None else ""
    message = f"{name} must be an integer >= {minimum}{upper}{alternative}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(message)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(message)
    return value


MAX_SEEDS = 10_000
"""The most seeds a study or sweep runs per cell: more is a typo (a run takes minutes), and a list of so many
runs is built before anything starts."""


def check_num_seeds(num_seeds: Any, name: str = "num_seeds") -> int:
    """A number of seeds, an integer from 1 to `MAX_SEEDS`; a ValueError naming `name` (e.g. --seeds)."""
    return check_int(name, num_seeds, maximum=MAX_SEEDS)


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed is an integer in [0, MAX_SEED] (numpy's SeedSequence takes no negative numbers)."""
    return check_int(name, seed, 0, maximum=MAX_SEED)


def check_seeds(seeds: Any, name: str = "seeds") -> list[int]:
    """Seeds to run: one or more, at most `MAX_SEEDS`, distinct, each `check_seed`."""
    seeds = [check_seed(seed, f"each of {name}") for seed in seeds]
    if not seeds or len(seeds) > MAX_SEEDS:
        raise ValueError(f"{name}: give 1 to {MAX_SEEDS:,} seeds, got {len(seeds)}")
    if len(set(seeds)) < len(seeds):
        raise ValueError(f"{name} repeat a seed: {sorted(seeds)}")
    return seeds


def _real(name: str, value: Any, valid: str) -> float | int:
    """`value` as a Python int or float (numpy and torch scalars accepted), else an `InputTypeError`."""
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputTypeError(f"{name} must be {valid}, got {value!r}")
    return value


def check_finite(name: str, value: Any) -> float | int:
    """`value` is a finite number (any sign) of magnitude at most `MAX_MAGNITUDE`: weights, scales."""
    valid = f"a finite number in [-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}] (its square must fit in float32)"
    value = _real(name, value, valid)
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    return value


def check_range(name: str, value: Any, low: float, high: float = math.inf, *, low_open: bool = False,
                high_open: bool = False) -> float | int:
    """`value` is a finite number in the interval from `low` to `high` (open at an end when asked; NaN and
    infinities never are). With `high=MAX_MAGNITUDE` the message says why."""
    if high == math.inf:
        valid = f"{'>' if low_open else '>='} {low:g} and finite"
    else:
        valid = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        valid += " (its square must fit in float32)" if high == MAX_MAGNITUDE else ""
    value = _real(name, value, valid)
    ok = math.isfinite(value) and (value > low if low_open else value >= low)
    if not ok or not (value < high if high_open else value <= high):
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    return value


def check_steps(name: str, steps: int) -> None:
    """ValueError if a phase of `steps` env steps (as it runs them: whole rounds, or episodes x the step
    limit) is more than `MAX_PHASE_STEPS`."""
    if steps > MAX_PHASE_STEPS:
        raise ValueError(f"{name} makes {steps:,} env steps, more than the {MAX_PHASE_STEPS:,} one phase may "
                         "take (about 5 hours of evaluation or 2 days of training on one core); lower it")


def check_task_vector(name: str, w: Any, dim: int):
    """A task vector for a learner with `dim` features: a torch tensor, numpy array or sequence of `dim`
    finite numbers, not all zero; returned as a float32 tensor (a float32 tensor as it is)."""
    import numpy as np
    import torch

    valid = f"a vector of {dim} finite numbers, not all zero (a torch tensor, numpy array or list)"
    if isinstance(w, torch.Tensor):
        tensor = w
    elif isinstance(w, np.ndarray | list | tuple):
        try:
            tensor = torch.as_tensor(np.asarray(w, dtype=np.float32))
        except (TypeError, ValueError):
            raise InputTypeError(f"{name} must be {valid}, got {type(w).__name__} {w!r:.60}") from None
    else:
        check_type(name, w, torch.Tensor, valid)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise InputTypeError(f"{name} must be {valid}, got a tensor of {tensor.dtype}")
    if tuple(tensor.shape) != (dim,):
        raise ValueError(f"{name} must be {valid}: shape ({dim},), got shape {tuple(tensor.shape)}")
    tensor = tensor if tensor.dtype == torch.float32 else tensor.float()
    if not torch.isfinite(tensor).all() or not tensor.any():
        raise ValueError(f"{name} must be {valid}, got {[round(x, 4) for x in tensor.tolist()]}")
    return tensor


def check_shapes(where: str, shapes: dict[str, tuple[Any, tuple[int, ...]]], context: str = "") -> None:
    """Each named array (value, expected shape) has that shape; else a ValueError naming the first that has
    not, from `where`, with `context` appended (e.g. the shape the others were derived from)."""
    for name, (value, shape) in shapes.items():
        if tuple(value.shape) != shape:
            raise ValueError(f"{where}: {name} has shape {tuple(value.shape)}, expected {shape}{context}")
