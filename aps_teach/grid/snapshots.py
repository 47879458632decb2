"""Snapshots of a pretraining run for the reward-heatmap widgets: weights, particles, visits per checkpoint.

`pretrain_with_snapshots` is `pretrain` with an `on_round` hook that copies, every few rounds, what the
heatmaps need: the learner's networks (frozen), a seeded sample of the replay's next states (the kNN
particles) and how often the agent reached each cell. On the gridworlds a snapshot holds about 1.5 MB
of weights (psi, its target, phi or f) plus 0.8 kB per particle (1.6 MB for the default 2000).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.rounds import RoundEnd
from aps_teach.grid.train import EnvSource, pretrain
from aps_teach.infra.phases import PhaseLog
from aps_teach.infra.seeds import snapshot_generator
from aps_teach.learner.agent import Learner
from gridworld.layout import KEYS

_KEY_PLANES = {name: gridworld.layer_names(len(KEYS)).index(f"{name}_key") for name in KEYS}
"""A key's plane index, the same in every level."""
_AGENT_PLANE = gridworld.LAYER_NAMES.index("agent")


@dataclass(frozen=True)
class Snapshot:
    """One pretraining checkpoint of one method on one level."""

    method: str
    level: str
    """The level's name ("easy", "hard"), or "custom" when pretraining was given an env factory."""
    art: tuple[str, ...]
    """The level's ASCII art (rebuild it with `gridworld.Layout.parse`)."""
    round: int
    env_steps: int
    learner: Learner
    """A frozen copy of the learner's networks (psi, phi, f) and kNN normaliser; no optimiser state."""
    particles: torch.Tensor
    """(N, C, H, W) uint8: a uniform sample without replacement of the replay's next states, seeded by
    (seed, round), in random order (so the first n rows are a uniform sample of n)."""
    visits: dict[tuple[str, ...], np.ndarray]
    """keys held -> (H, W) count of the replay's next states with the agent on each cell (all of them)."""


def keys_held_in(observations: torch.Tensor, key_names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The keys held in each observation (N, C, H, W): a key is held once its plane is empty."""
    present = {name: observations[:, _KEY_PLANES[name]].flatten(1).any(1).tolist() for name in key_names}
    return [tuple(name for name in key_names if not present[name][i]) for i in range(len(observations))]


def visit_counts(observations: torch.Tensor, key_names: tuple[str, ...],
                 times: torch.Tensor | None = None) -> dict[tuple[str, ...], np.ndarray]:
    """keys held -> (H, W) number of `observations` (N, C, H, W) with the agent on each cell, each counted
    `times[i]` times (default once).

    The observation of reaching the target shows the target drawn over the agent: it counts nowhere.
    """
    agent = observations[:, _AGENT_PLANE].long()
    if times is not None:
        agent = agent * times.long()[:, None, None]
    held = keys_held_in(observations, key_names)
    counts = {}
    for keys in sorted(set(held), key=lambda k: (len(k), k)):
        rows = torch.tensor([h == keys for h in held])
        counts[keys] = agent[rows].sum(0, dtype=torch.int64).numpy()
    return counts


def frozen_copy(learner: Learner) -> Learner:
    """A new `Learner` holding copies of `learner`'s network weights and normalisers, gradients off."""
    copy = Learner(learner.config, learner.obs_shape, learner.num_actions, seed=0,
                   input_columns=learner.board_inputs.columns)
    table = learner.board_inputs.table
    copy.set_observation_table(None if table is None else table.source)
    for name in ("psi", "phi", "rep"):
        module = getattr(learner, name)
        if module is not None:
            getattr(copy, name).load_state_dict(module.state_dict())
            getattr(copy, name).requires_grad_(False)
    copy.psi_target.load_state_dict(learner.psi_target.state_dict())
    if learner.normaliser is not None:
        copy.normaliser.load_state_dict(learner.normaliser.state_dict())
    copy.board_inputs.load_state_dict(learner.board_inputs.state_dict())
    copy.phase, copy.updates = learner.phase, learner.updates
    return copy


def take_snapshot(end: RoundEnd, level: str, max_particles: int, seed: int) -> Snapshot:
    """Copy what the heatmaps need out of the live objects of a `RoundEnd` (boards, whichever engine)."""
    reached = end.replay.data["next_obs"][: end.replay.size].flatten(0, 1)
    generator = snapshot_generator(seed, end.round)
    chosen = torch.randperm(len(reached), generator=generator)[:max_particles]
    key_names = gridworld.Layout.parse(end.envs.art).key_names
    table = end.envs.observation_table
    if table is None:
        particles, visits = reached[chosen].clone(), visit_counts(reached, key_names)
    else:  # state indices: count each state once, weighted by its visits
        states, times = reached.unique(return_counts=True)
        particles, visits = table[reached[chosen]], visit_counts(table[states], key_names, times)
    return Snapshot(method=end.learner.config.method, level=level, art=tuple(end.envs.art), round=end.round,
                    env_steps=end.env_steps, learner=frozen_copy(end.learner), particles=particles,
                    visits=visits)


def pretrain_with_snapshots(method: str, level: EnvSource, steps: int, seed: int, every_rounds: int = 2,
                            config: TrainConfig | None = None, max_particles: int = 2000
                            ) -> tuple[Learner, PhaseLog, list[Snapshot]]:
    """`pretrain`, keeping a `Snapshot` after every `every_rounds`-th round and after the last one."""
    if every_rounds < 1:
        raise ValueError(f"every_rounds must be >= 1, got {every_rounds}")
    if max_particles < 1:
        raise ValueError(f"max_particles must be >= 1, got {max_particles}")
    snapshots: list[Snapshot] = []

    def keep(end: RoundEnd) -> None:
        if end.round % every_rounds == 0 or end.round == end.rounds:
            snapshots.append(take_snapshot(end, level if isinstance(level, str) else "custom", max_particles,
                                           seed))

    learner, log = pretrain(method, level, steps, seed, config, on_round=keep)
    return learner, log, snapshots
