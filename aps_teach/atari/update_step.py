"""The Atari update as one function: sampled batch -> augment -> targets -> losses -> optimiser step.

`UpdateStep(learner, atari, windows, compile_mode)` is what the training loop calls per update. It draws
the augmentation's random numbers on the host from the caller's generator (`augmentation_draws`, a few
hundred numbers, sent to the device without a sync), then runs `step(batch, draws)`: the augmentation's
arithmetic (`augment.augment_with`) and `aps_teach.learner.update.gradient_step` (targets, losses, backward,
gradient clip, Adam). That function reads nothing back from the device and keeps every piece of state it
changes on the device at a fixed address (the kNN distance normaliser updated in place, Adam
`capturable` on CUDA), so `compile_mode` can hand the whole of it to `torch.compile` (`reduce-overhead`
replays it as CUDA graphs). What changes shape or needs the host stays outside: the random draws, the
update counter and the target network's copy (`aps_teach.learner.update.count_update`).

The draws are made in `augment_batch`'s order from the same generator, so an eager `UpdateStep` gives
the weights of `learner.update(augment_batch(...))` bit for bit; a compiled one gives them within float
tolerance (tests/atari/test_compile.py).
"""

from __future__ import annotations

import torch

from aps_teach.atari.augment import augment_with, draw
from aps_teach.atari.config import AtariConfig
from aps_teach.infra.devices import to_device
from aps_teach.infra.phases import check_compile_backend
from aps_teach.learner.batch import Batch
from aps_teach.learner.update import count_update, gradient_step

Draws = dict[str, tuple[torch.Tensor, torch.Tensor]]


def augmentation_draws(batch: Batch, atari: AtariConfig, generator: torch.Generator,
                       windows: bool = True) -> Draws:
    """Shift offsets and intensity eps (`augment.draw`) for obs, the window's s' (next_obs, if `windows`)
    and the bootstrap s', in that order, one per stack, on the batch's device."""
    keys = ("obs", "next_obs", "boot_obs") if windows else ("obs", "boot_obs")
    device = batch.obs.device
    draws = {}
    for key in keys:
        x = getattr(batch, key)
        count = x.shape[0] * x.shape[1] if key == "next_obs" else x.shape[0]
        draws[key] = tuple(to_device(v, device) for v in draw(count, atari.shift_pad, generator))
    return draws


def apply_augmentation(batch: Batch, atari: AtariConfig, draws: Draws) -> Batch:
    """The batch with the stacks named in `draws` augmented by them (`augment.augment_with`); the rest as
    it is. Built field by field: torch.compile 2.11 fails to trace `Batch._replace` (benchmarks/README.md)."""
    out = {}
    for key, (offsets, eps) in draws.items():
        x = getattr(batch, key)
        flat = x.flatten(0, 1) if key == "next_obs" else x
        y = augment_with(flat, atari.shift_pad, atari.intensity_scale, offsets, eps)
        out[key] = y.unflatten(0, x.shape[:2]) if key == "next_obs" else y
    return Batch(*(out.get(name, value) for name, value in zip(Batch._fields, batch, strict=True)))


class UpdateStep:
    """One update of `learner` on a sampled batch: draws on the host, then `step` (compiled by torch.compile
    with `compile_mode` and `backend` if `compile_mode` is given), then the counter and target copy.
    `windows`: augment the window's s' (see `aps_teach.atari.train.augment_batch`)."""

    def __init__(self, learner, atari: AtariConfig, windows: bool, compile_mode: str | None = None,
                 backend: str = "inductor"):
        self.learner, self.atari, self.windows = learner, atari, windows
        self.compiled, self.graphs = compile_mode is not None, compile_mode == "reduce-overhead"
        if self.compiled and backend == "inductor":
            check_compile_backend(learner.device)
        if self.compiled and learner.normaliser is not None:  # state updated in place, at fixed addresses
            for state in (learner.normaliser.mean, learner.normaliser.count):
                torch._dynamo.mark_static_address(state)
        self._step = self.step if not self.compiled else torch.compile(self.step, mode=compile_mode,
                                                                       backend=backend)

    def step(self, batch: Batch, draws: Draws) -> dict[str, torch.Tensor]:
        """Augment, targets, losses, backward, clip, Adam: no host sync, fixed shapes."""
        return gradient_step(self.learner, apply_augmentation(batch, self.atari, draws))

    def __call__(self, batch: Batch, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """One update; its statistics as device tensors of its own (a CUDA graph's outputs are overwritten
        by its next replay, so compiled statistics are copied)."""
        draws = augmentation_draws(batch, self.atari, generator, self.windows)
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()  # each call is a new training step
        stats = self._step(batch, draws)
        if self.compiled:
            stats = {key: value.clone() for key, value in stats.items()}
        count_update(self.learner)
        return stats
