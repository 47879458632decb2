"""Image augmentation of sampled batches (DrQ on Atari): random shift, then intensity, then pixels / 255.

random shift: pad each side by `pad` replicated border pixels, crop a uniformly placed window of the
original size; a shift (dy, dx) in [0, 2 pad]^2 gives out[i, j] = x[clip(i + dy - pad), clip(j + dx - pad)].
intensity: x * (1 + scale * clip(eps, -2, 2)), eps ~ N(0, 1), one eps per image.
One shift and one eps per leading index: a (B, S, H, W) stack moves as one image.
`augment` ends with the networks' scaling to [0, 1] (`networks.pixels`), done in place on its own
output so that the batch of float stacks is allocated once, not twice. `draw` and `augment_with` split it
into its random draws (from a CPU generator) and the arithmetic on them, which a compiled update step
runs without a generator (`aps_teach.atari.update_step`).
"""

from __future__ import annotations

import torch

from aps_teach.infra.devices import to_device


def shift(x: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, pad: int) -> torch.Tensor:
    """x (B, ..., H, W) cropped at offsets dy, dx (B,) in [0, 2 pad] from its replicate-padded copy."""
    h, w = x.shape[-2:]
    rows = (dy[:, None] - pad + torch.arange(h, device=x.device)).clamp(0, h - 1)  # (B, H)
    cols = (dx[:, None] - pad + torch.arange(w, device=x.device)).clamp(0, w - 1)  # (B, W)
    flat = x.reshape(len(x), -1, h * w)  # (B, C, H W)
    pixel = (rows[:, :, None] * w + cols[:, None, :]).reshape(len(x), 1, h * w)  # source of each pixel
    return flat.gather(2, pixel.expand(-1, flat.shape[1], -1)).reshape(x.shape)  # one gather: 4x faster


def random_shift(x: torch.Tensor, pad: int, generator: torch.Generator) -> torch.Tensor:
    """`shift` by offsets drawn uniformly in [0, 2 pad] per image (leading index) from `generator`."""
    if pad < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    offsets = torch.randint(2 * pad + 1, (2, len(x)), generator=generator, device=generator.device)
    offsets = to_device(offsets, x.device)
    return shift(x, offsets[0], offsets[1], pad)


def intensity(x: torch.Tensor, scale: float, generator: torch.Generator) -> torch.Tensor:
    """x * (1 + scale * clip(eps, -2, 2)) with one eps ~ N(0, 1) per image; float output."""
    eps = to_device(torch.randn(len(x), generator=generator, device=generator.device), x.device)
    factor = 1.0 + scale * eps.clamp(-2.0, 2.0)
    return x.to(torch.float32, copy=True).mul_(factor.reshape(-1, *([1] * (x.ndim - 1))))  # x untouched


def augment(x: torch.Tensor, pad: int, scale: float, generator: torch.Generator) -> torch.Tensor:
    """Random shift, intensity, then / 255: uint8 frames x in, network-ready float pixels out (the
    networks take float input as already scaled); applied to every sampled batch."""
    return intensity(random_shift(x, pad, generator), scale, generator).div_(255.0)


def draw(count: int, pad: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The random draws of `augment` on `count` images, in its order: offsets (2, count) in [0, 2 pad]
    (dy, dx), then eps (count,) ~ N(0, 1)."""
    if pad < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    offsets = torch.randint(2 * pad + 1, (2, count), generator=generator, device=generator.device)
    return offsets, torch.randn(count, generator=generator, device=generator.device)


def augment_with(x: torch.Tensor, pad: int, scale: float, offsets: torch.Tensor, eps: torch.Tensor
                 ) -> torch.Tensor:
    """`augment` with its draws given (`draw`, on x's device): shift by offsets, x (1 + scale clip(eps,
    -2, 2)), / 255. No generator, no host sync: a compiled or CUDA-graph-captured step can run it."""
    shifted = shift(x, offsets[0], offsets[1], pad)
    factor = 1.0 + scale * eps.clamp(-2.0, 2.0)
    return shifted.to(torch.float32).mul(factor.reshape(-1, *([1] * (x.ndim - 1)))).div_(255.0)
