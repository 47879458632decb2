"""Per-cell maps of what a learner computes on a gridworld level: the reachable states one set of keys
held gives each cell (`cell_states`), the intrinsic reward for reaching each cell (`reward_maps`), the value
and greedy action there (`value_map`). Arrays only, no drawing: `aps_teach.grid.plots` draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

import gridworld
from aps_teach.learner.agent import Learner
from aps_teach.learner.rewards import intrinsic_reward


def state_grid(layout: gridworld.Layout, states, values, keys_held=()) -> np.ndarray:
    """(H, W) array of `values` at the positions of the `states` holding `keys_held`; NaN elsewhere."""
    grid = np.full(layout.shape, np.nan)
    for (position, held), value in zip(states, values, strict=True):
        if held == tuple(keys_held):
            grid[position] = value
    return grid


@dataclass(frozen=True)
class CellStates:
    """The reachable states of a level that hold `keys_held`: one per cell, with the env's observation."""

    layout: gridworld.Layout
    keys_held: tuple[str, ...]
    positions: tuple[tuple[int, int], ...]
    observations: torch.Tensor
    """(N, C, H, W) uint8: row i is what the agent sees standing on positions[i]."""

    def grid(self, values) -> np.ndarray:
        """(H, W) array with values[i] on positions[i] and NaN on every other cell (walls included)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (len(self.positions),):
            raise ValueError(f"need one value per cell ({len(self.positions)},), got {values.shape}")
        grid = np.full(self.layout.shape, np.nan)
        rows, cols = zip(*self.positions, strict=True)
        grid[list(rows), list(cols)] = values
        return grid


def held_key_sets(layout: gridworld.Layout) -> list[tuple[str, ...]]:
    """The combinations of keys held that some reachable state has, e.g. [(), ('green',)]."""
    return sorted({held for _, held in layout.reachable_states()}, key=lambda held: (len(held), held))


def cell_states(layout: gridworld.Layout, keys_held: Sequence[str] = ()) -> CellStates:
    """Every reachable state holding exactly `keys_held`, with the env's observation there (the level's
    compiled tables, `gridworld.compile_level`).

    Cells that no such state occupies (walls, closed passageways, keys not yet held, the target) are
    absent, so maps built on them are NaN there.
    """
    keys_held = (keys_held,) if isinstance(keys_held, str) else tuple(keys_held)
    unknown = sorted(set(keys_held) - set(layout.key_names))
    if unknown:
        raise ValueError(f"keys_held names keys {unknown} this level lacks; its keys: {layout.key_names}")
    held = tuple(name for name in layout.key_names if name in keys_held)
    if held not in held_key_sets(layout):
        raise ValueError(f"no reachable state holds exactly the keys {held}; valid: {held_key_sets(layout)}")
    compiled = gridworld.compile_level(layout)
    chosen = [i for i, (_, keys) in enumerate(compiled.states[:compiled.num_nonterminal]) if keys == held]
    positions = tuple(compiled.states[i][0] for i in chosen)
    return CellStates(layout, held, positions, torch.from_numpy(compiled.observations[chosen]))


def _task_vector(learner: Learner, w) -> torch.Tensor | None:
    if w is None:
        if learner.config.task_conditioned:
            raise ValueError(f"method {learner.config.method!r} needs a task vector w")
        return None
    w = torch.as_tensor(w, dtype=torch.float32)
    if w.shape != (learner.config.feature_dim,):
        raise ValueError(f"w must have shape ({learner.config.feature_dim},), got {tuple(w.shape)}")
    return w


@torch.no_grad()
def reward_maps(learner: Learner, cells: CellStates, particles: torch.Tensor | None, w=None,
                k: int | None = None) -> dict[str, np.ndarray]:
    """The intrinsic reward for reaching each cell, per term, as (H, W) maps with NaN off `cells`: Eq. 6 as
    the learner computes it (`rewards.intrinsic_reward`), with the cells as states and `particles` as the
    particle set (a cell is not a particle, so nothing is excluded).

    explore (apt, aps) = particle_entropy_reward(h(s), h(particles), k), h = `Learner.knn_features`. With
    the learner's running normaliser its current mean m is a fixed scale (not updated): h / m^(1/exponent)
    turns each term into distance^exponent / m. exploit (visr, aps) = phi(s)^T w. total = exploit_weight *
    exploit + explore_weight * explore. `k` defaults to the learner's; w is ignored by apt. Distances are
    taken in float64: float32 `cdist` puts duplicates of a state ~1e-4 apart instead of 0.
    """
    cfg = learner.config
    k = cfg.k if k is None else k
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not (cfg.uses_knn or cfg.task_conditioned):
        raise ValueError(f"method {cfg.method!r} has no intrinsic reward to map")
    w = _task_vector(learner, w)
    h = target = None
    if cfg.uses_knn:
        if particles is None or particles.ndim != 4 or particles.shape[1:] != cells.observations.shape[1:]:
            shape = None if particles is None else tuple(particles.shape)
            raise ValueError(f"particles must be (N, *{tuple(cells.observations.shape[1:])}), got {shape}")
        if len(particles) == 0:
            raise ValueError("the kNN reward needs at least one particle")
        scale = 1.0
        if learner.normaliser is not None and learner.normaliser.count > 0:
            scale = float(learner.normaliser.mean) ** (1 / cfg.knn_exponent)
        h = learner.knn_features(cells.observations).double() / scale
        target = learner.knn_features(particles).double() / scale
    phi = learner.features(cells.observations) if cfg.task_conditioned else None
    reward = intrinsic_reward(phi, w, h, k, particles=target, exploit_weight=cfg.exploit_weight,
                              explore_weight=cfg.explore_weight, exponent=cfg.knn_exponent)
    maps = {name: cells.grid(term) for name, term in reversed(reward.terms())}  # explore, exploit
    maps["total"] = cells.grid(reward.total)
    return maps


@torch.no_grad()
def value_map(learner: Learner, cells: CellStates, w=None) -> dict[str, np.ndarray]:
    """Q(s, a) = psi(s, a, w)^T w at each cell: value = max_a Q and action = argmax_a Q (0 up, 1 down,
    2 left, 3 right), both (H, W) with NaN off `cells`. w=None: the fixed task of apt and dqn."""
    w = _task_vector(learner, w)
    w = learner.default_task(1)[0] if w is None else w
    q = learner.q_values(cells.observations, w.expand(len(cells.positions), -1))
    return {"value": cells.grid(q.amax(1)), "action": cells.grid(q.argmax(1))}


def overview_maps(learner: Learner, layout: gridworld.Layout, particles: torch.Tensor | None,
                  w) -> dict[tuple[str, ...], dict[str, np.ndarray]]:
    """Per set of keys held (`held_key_sets`), the `reward_maps` of `learner` (the kNN term against
    `particles`, apt and aps only) and its `value_map` under `w`, in one dict: explore, exploit, total,
    value, action (what `plots.plot_run_overview` draws)."""
    maps = {}
    for held in held_key_sets(layout):
        cells = cell_states(layout, held)
        rewards = reward_maps(learner, cells, particles if learner.config.uses_knn else None, w)
        maps[held] = {**rewards, **value_map(learner, cells, w)}
    return maps
