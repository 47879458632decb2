"""The replay -> learner contract: a minibatch of n-step windows, as both replays sample it.

`aps_teach.grid.replay.NStepReplay.sample` (gridworlds) and `aps_teach.atari.frame_replay.FrameReplay.sample`
(Atari) return a `Batch`; `aps_teach.learner.update` reads it. A NamedTuple, so torch.compile takes it as an
input like a tuple of tensors.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from aps_teach.infra.devices import to_device


class Batch(NamedTuple):
    """B windows of up to n steps from (s_t, a_t, w); s'_i is the state reached by step i of the window.

    Shapes: obs (B, *O) the observations s_t (boards or state indices on gridworlds, uint8 or augmented
    float stacks on Atari), action (B,) int64 a_t, w (B, d) the task the window ran under,
    next_obs (B, n, *O) s'_1..s'_n (an Atari replay may gather only s'_1: (B, 1, *O)),
    mask (B, n) bool, True on the window's m valid steps (up to and including the first that ended the
    episode, while the env's w was the window's, up to the newest stored step), boot_obs (B, *O) s'_m,
    boot_steps (B,) int64 m >= 1, boot_alive (B,) bool False if s'_m is a terminal state,
    reward (B, n) float32 r_i if the replay stores rewards (else None), next_phi (B, n, d) float32
    phi(s'_i) if the replay stores features (fine-tuning, where phi is frozen; else None).
    """

    obs: torch.Tensor
    action: torch.Tensor
    w: torch.Tensor
    next_obs: torch.Tensor
    mask: torch.Tensor
    boot_obs: torch.Tensor
    boot_steps: torch.Tensor
    boot_alive: torch.Tensor
    reward: torch.Tensor | None = None
    next_phi: torch.Tensor | None = None


def batch_to(batch: Batch, device: torch.device) -> Batch:
    """The same windows with every tensor on `device` (the gridworld replay samples on the CPU; a learner on a
    GPU updates there), copied by `infra.devices.to_device` (no host sync)."""
    return Batch(*(None if t is None else to_device(t, device) for t in batch))
