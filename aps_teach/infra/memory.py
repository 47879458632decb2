"""Will it fit? Free memory on a device, and a refusal, before anything is allocated or written, of what
would not fit in it (a replay sized for the whole phase, a minibatch's kNN distances)."""

from __future__ import annotations

import contextlib

import torch


def free_bytes(device: torch.device | str = "cpu") -> int | None:
    """Memory free for a new tensor on `device` (CUDA: the driver's count; CPU: Linux's MemAvailable; None
    where neither is known)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    with contextlib.suppress(OSError, StopIteration, ValueError):
        with open("/proc/meminfo") as file:
            line = next(line for line in file if line.startswith("MemAvailable:"))
        return int(line.split()[1]) * 1024
    return None


def check_fits(need: int, what: str, advice: str, device: torch.device | str = "cpu") -> None:
    """ValueError if `need` bytes exceed the memory free on `device`: '<what> needs X GB, more than the Y GB
    free on <device>; <advice>'."""
    free = free_bytes(device)
    if free is not None and need > free:
        raise ValueError(f"{what} needs {need / 1e9:.1f} GB, more than the {free / 1e9:.1f} GB free on "
                         f"{torch.device(device)}; {advice}")
