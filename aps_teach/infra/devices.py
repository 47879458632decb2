"""Devices: a device name checked (`parse_device`, `resolve_device`), and host-to-device copies that do not
make the host wait for the device (`to_device`).

`tensor.to("cuda")` from ordinary (pageable) host memory blocks the host until the work already queued
on the GPU has finished: a hidden sync in a loop that copies random draws or observations every step.
Staging the tensor in pinned memory and copying with `non_blocking=True` lets the host run ahead; torch's
caching host allocator keeps the pinned block alive until the copy is done.
"""

from __future__ import annotations

import torch


def to_device(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`x` on `device`; a CPU tensor goes to a CUDA device through pinned memory without a host sync."""
    if x.device.type == "cpu" and device.type == "cuda":
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def parse_device(name: str) -> torch.device:
    """The torch device called `name` (cpu, cuda, cuda:N, mps), whether or not this machine has it."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"unknown device {name!r} ({error}); valid: cpu, cuda, cuda:N, mps") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unsupported device {name!r}; valid: cpu, cuda, cuda:N, mps")
    return device


def resolve_device(name: str, flag: str = "--device") -> torch.device:
    """The torch device called `name`, or ValueError if this machine does not have it (naming the option
    `flag` that chose it)."""
    device = parse_device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch is built without CUDA" if torch.version.cuda is None
                   else "no CUDA GPU is visible")
            raise ValueError(f"device {name!r} asked for but CUDA is not available ({why}, torch "
                             f"{torch.__version__}); use {flag} cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {name!r} asked for but MPS is not available; use {flag} cpu")
    return device
