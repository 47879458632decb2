"""Replay for N parallel environments with n-step sampling.

Transitions are stored as a (time, env) grid so that an n-step window is a run of rows in one env's
column, cut at the first episode end and where the env's task vector w changes (a window runs under one w).
Observations are boards (uint8) or, with the compiled engine, state indices (int64, `obs_shape=()`).
The reward column exists only if the buffer is built with `store_rewards=True`: reward-free pretraining
builds it without, so it has nowhere to put a reward. Fine-tuning, where the feature map phi is frozen,
also stores phi(s') (`store_features=True`): each transition is sampled many times, and its phi(s')
never changes.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from aps_teach.learner.batch import Batch


class NStepReplay:
    """Fixed-capacity store of `capacity` rows x `num_envs` columns of
    (s, a, w, s', terminated, ended), with r and phi(s') where the phase stores them.

    `ended` marks the last transition of an episode (terminated, truncated, or cut by the collector);
    `terminated` marks true terminal states (no bootstrap).
    """

    def __init__(self, capacity: int, num_envs: int, obs_shape: tuple[int, ...], task_dim: int,
                 store_rewards: bool, store_features: bool = False, obs_dtype: torch.dtype = torch.uint8):
        self.capacity, self.num_envs, self.size = capacity, num_envs, 0
        self.data: dict[str, torch.Tensor] = {
            "obs": torch.zeros((capacity, num_envs, *obs_shape), dtype=obs_dtype),
            "next_obs": torch.zeros((capacity, num_envs, *obs_shape), dtype=obs_dtype),
            "action": torch.zeros((capacity, num_envs), dtype=torch.int64),
            "w": torch.zeros((capacity, num_envs, task_dim), dtype=torch.float32),
            "terminated": torch.zeros((capacity, num_envs), dtype=torch.bool),
            "ended": torch.zeros((capacity, num_envs), dtype=torch.bool),
        }
        if store_rewards:
            self.data["reward"] = torch.zeros((capacity, num_envs), dtype=torch.float32)
        if store_features:
            self.data["next_phi"] = torch.zeros((capacity, num_envs, task_dim), dtype=torch.float32)
        self._flat = {key: value.flatten(0, 1) for key, value in self.data.items()}
        """The same storage viewed as (capacity * num_envs, ...): cell row * num_envs + env."""

    @staticmethod
    def bytes_per_cell(obs_shape: tuple[int, ...], task_dim: int, store_rewards: bool,
                       store_features: bool = False, obs_dtype: torch.dtype = torch.uint8) -> int:
        """Bytes of one (row, env) cell: s and s', the action (int64), w, the two flags, and r and phi(s')
        when stored."""
        obs = math.prod(obs_shape) * torch.empty((), dtype=obs_dtype).element_size()
        return 2 * obs + 8 + 4 * task_dim + 2 + 4 * store_rewards + 4 * task_dim * store_features

    def add(self, **row: np.ndarray | torch.Tensor) -> None:
        """Append one row (one step of every env); keys must be exactly the stored columns."""
        if set(row) != set(self.data):
            raise ValueError(f"replay row has columns {sorted(row)}; this buffer stores {sorted(self.data)}")
        if self.size == self.capacity:
            raise RuntimeError(f"replay is full ({self.capacity} rows); size it for the whole run")
        for key, value in row.items():
            self.data[key][self.size] = torch.as_tensor(value)
        self.size += 1

    def sample(self, batch_size: int, n_step: int, generator: torch.Generator) -> Batch:
        """`batch_size` n-step windows starting at uniform (row, env) cells (`Batch` gives the fields).

        Step i of a window is valid until and including the episode's last step, while the env's w is
        the window's first, and up to the newest row; reward and next_phi are given if stored.
        """
        t = torch.randint(self.size, (batch_size,), generator=generator)
        e = torch.randint(self.num_envs, (batch_size,), generator=generator)
        rows = t[:, None] + torch.arange(n_step)
        in_buffer = rows < self.size
        cells = rows.clamp(max=self.size - 1) * self.num_envs + e[:, None]  # (B, n) indices into `_flat`
        ended = self._at("ended", cells)
        w = self._at("w", cells)
        # step i is valid if it is in the buffer, no earlier step of the window ended the episode and every
        # step up to i ran under the window's first w
        ended_before = torch.cat([torch.zeros(batch_size, 1, dtype=torch.int64), ended[:, :-1].long()], 1)
        other_task = (w != w[:, :1]).any(-1).long()
        mask = in_buffer & ((ended_before + other_task).cumsum(1) == 0)
        steps = mask.sum(1)
        start, last = cells[:, 0], cells[torch.arange(batch_size), steps - 1]
        return Batch(obs=self._at("obs", start), action=self._at("action", start), w=w[:, 0],
                     next_obs=self._at("next_obs", cells), mask=mask, boot_obs=self._at("next_obs", last),
                     boot_steps=steps, boot_alive=~self._at("terminated", last),
                     reward=self._at("reward", cells) if "reward" in self.data else None,
                     next_phi=self._at("next_phi", cells) if "next_phi" in self.data else None)

    def _at(self, key: str, cells: torch.Tensor) -> torch.Tensor:
        """The stored `key` at flat cells (row * num_envs + env), shaped like `cells`: one `index_select`
        of whole cells, many times faster than indexing `data[key]` with a row and an env tensor."""
        flat = self._flat[key]
        return flat.index_select(0, cells.flatten()).view(*cells.shape, *flat.shape[1:])

    def state_dict(self) -> dict:
        return {"size": self.size, **{k: v[: self.size].clone() for k, v in self.data.items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> NStepReplay:
        """A replay of exactly the rows `state` holds (`state_dict`'s, e.g. a checkpoint's): its columns'
        shapes and dtypes give the number of envs, observation shape, task dim and what it stores."""
        try:
            obs, w = state["obs"], state["w"]
            replay = cls(max(int(state["size"]), 1), obs.shape[1], tuple(obs.shape[2:]), w.shape[2],
                         store_rewards="reward" in state, store_features="next_phi" in state,
                         obs_dtype=obs.dtype)
        except (KeyError, AttributeError, IndexError) as error:
            raise ValueError(f"not a replay's state: {error!r}") from None
        replay.load_state_dict(state)
        return replay

    def load_state_dict(self, state: dict) -> None:
        if set(state) - {"size"} != set(self.data):
            raise ValueError(f"replay state has columns {sorted(set(state) - {'size'})}; "
                             f"expected {sorted(self.data)}")
        self.size = int(state["size"])
        for key, value in self.data.items():
            value[: self.size] = state[key]
