"""Host-to-device copies that do not make the host wait for the device.

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
