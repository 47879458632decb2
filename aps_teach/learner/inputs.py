"""What the gridworld networks read: the observation minus a running mean, on the entries that vary.

Input normalisation. A one-hot board has about 100 of its 800 entries on in every state (walls, floor) and
only 2-8 that differ between states. Fed raw, the always-on entries make up most of every first-layer
activation and Adam moves their weights together: after 6.4k pretraining steps 92-109 of phi's 128 hidden
units are dead in every state (VISR and APS, every level; tests/learner/test_inputs.py); under the old
defaults (batch 32, 16k steps) phi ended as a constant on `open10`, 118-123 units dead. The networks read
x = obs - m instead, m the running mean of the observations the learner has trained on
(`ObservationNormaliser`): RND-style observation normalisation without the division by the standard
deviation, which would scale a rarely visited cell up by 1/std. The mean stops moving when fine-tuning starts
from a pretrained learner, since phi is frozen then.

Only the entries that vary between the level's states (`varying_columns`) are read: every other entry is
the same in every state, so once centred it is 0 and its first-layer weights would never move. Dropping
them changes nothing but the cost (108 of 800 entries on the hard level). The networks are built for all
800 and their first layers cut down to these columns, so they start from the same weights either way.

Observations by state index. The compiled engine hands out state indices into a table of the level's S
boards. The first layer W x + b of a batch of B >= S indices then runs once per state and is indexed
(`first_layer` with `TableInputs`), not once per observation of the batch.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn


class ObservationNormaliser:
    """m = (sum of the observations seen) / (how many), in float64, over the input columns; m = 0 before
    the first."""

    def __init__(self, dim: int, device: torch.device | str = "cpu") -> None:
        self.total = torch.zeros(dim, dtype=torch.float64, device=device)
        self.count = 0
        self.frozen = False
        """True once fine-tuning started from a pretrained learner: `update` then changes nothing."""
        self._mean: torch.Tensor | None = None

    def update(self, x: torch.Tensor) -> None:
        """Fold in a batch of inputs (N, dim), unless frozen."""
        if self.frozen or not len(x):
            return
        self.total += x.double().sum(0)
        self.count += len(x)
        self._mean = None

    @property
    def mean(self) -> torch.Tensor:
        """m as float32 (dim,); the same tensor until the next `update`."""
        if self._mean is None:
            self._mean = (self.total / max(self.count, 1)).float()
        return self._mean

    def to(self, device: torch.device) -> None:
        """Move the running sum to `device` (m follows)."""
        self.total, self._mean = self.total.to(device), None

    def state_dict(self) -> dict:
        return {"total": self.total.clone(), "count": self.count, "frozen": self.frozen}

    def load_state_dict(self, state: dict) -> None:
        self.total = state["total"].clone().to(self.total.device)
        self.count, self.frozen, self._mean = int(state["count"]), bool(state["frozen"]), None


class InputColumns(NamedTuple):
    """The board entries a level's networks read: those that vary between its states."""

    columns: torch.Tensor
    """Indices into the flattened board."""
    reference: torch.Tensor
    """A flattened board of the level (uint8): every board of the level equals it off `columns`."""

    @classmethod
    def of(cls, boards: torch.Tensor) -> InputColumns:
        """The columns that vary between the boards (S, ...) of every state of a level."""
        flat = boards.flatten(1)
        return cls((flat != flat[0]).any(0).nonzero()[:, 0], flat[0].clone())

    def check(self, boards: torch.Tensor) -> None:
        """Raise ValueError unless `boards` (S, ...) could be this level's (equal off the columns)."""
        flat = boards.flatten(1)
        off = torch.ones(flat.shape[1], dtype=torch.bool)
        off[self.columns] = False
        if not (flat[:, off] == self.reference[off]).all():
            raise ValueError("these boards are not of the level the learner was trained on: they differ from "
                             "its boards at entries that are the same in all of that level's states")


def narrow_input(linear: nn.Linear, columns: torch.Tensor) -> nn.Linear:
    """A copy of `linear` reading only the input `columns` (their weights copied)."""
    narrow = nn.Linear(len(columns), linear.out_features, device=linear.weight.device)
    with torch.no_grad():
        narrow.weight.copy_(linear.weight[:, columns])
        narrow.bias.copy_(linear.bias)
    return narrow


class StateTable:
    """The S boards of a compiled level as the networks' inputs: flattened, on the input columns."""

    def __init__(self, observations: torch.Tensor, columns: torch.Tensor | None,
                 device: torch.device | str = "cpu") -> None:
        boards = observations.flatten(1).float().to(device)
        self.source = observations
        """The table it was built from (to tell whether a learner already reads it)."""
        self.boards = boards if columns is None else boards[:, columns.to(device)]
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.boards)

    def inputs(self, index: torch.Tensor, mean: torch.Tensor) -> TableInputs:
        """x = board - m for the states `index` (any shape); the table part is recomputed only when m has."""
        if self._cache is None or self._cache[0] is not mean:
            self._cache = mean, self.boards - mean
        return TableInputs(self._cache[1], index)


class TableInputs(NamedTuple):
    """Network inputs x = board - m given by state index (see `StateTable.inputs`)."""

    table: torch.Tensor
    """(S, D): x of every state."""
    index: torch.Tensor
    """State indices, any shape: the layer's output has this shape plus its width."""


def first_layer(linear: nn.Linear, x: torch.Tensor | TableInputs) -> torch.Tensor:
    """W x + b for inputs x (B, D), or for `TableInputs` on the table's rows, then indexed (or on the
    indexed rows, if there are fewer of them than states). A seed group's tables (S, states, D) are
    indexed per seed by index (S, ...)."""
    if not isinstance(x, TableInputs):
        return linear(x)
    rows, where = x.index.numel(), x.index
    if x.table.ndim == 3:  # a seed group: table s for the indices index[s]
        rows //= len(x.table)
        seed = torch.arange(len(x.table), device=x.index.device)
        where = (seed.view(-1, *[1] * (x.index.ndim - 1)), x.index)
    if rows < x.table.shape[-2]:
        return linear(x.table[where])
    return linear(x.table)[where]


class BoardInputs:
    """What the gridworld networks read of observations given as boards (B, *obs_shape) or, once
    `set_table` has given it a compiled level's boards, as state indices into them (any shape):
    x = board - m on the input `columns` (all entries without), m the running observation mean
    (`ObservationNormaliser`; none, m = 0, when `normalise` is False)."""

    def __init__(self, obs_shape: tuple[int, ...], columns: InputColumns | None, normalise: bool,
                 device: torch.device | str = "cpu") -> None:
        self.obs_shape, self.device = tuple(obs_shape), torch.device(device)
        self.columns = columns if normalise else None
        """The entries read (`InputColumns`), or None: all of them."""
        width = math.prod(self.obs_shape) if self.columns is None else len(self.columns.columns)
        self.observation_mean = ObservationNormaliser(width, self.device) if normalise else None
        """The running observation mean m (`ObservationNormaliser`), or None (m = 0)."""
        self._zeros = torch.zeros(width, device=self.device)
        self.table: StateTable | None = None

    @property
    def _indices(self) -> torch.Tensor | None:
        return None if self.columns is None else self.columns.columns

    def narrow(self, module: nn.Module) -> None:
        """Cut `module`'s first layer (`module.input`) down to the input columns, if any."""
        if self.columns is not None:
            module.input = narrow_input(module.input, self.columns.columns)

    def set_table(self, observations: torch.Tensor | None) -> None:
        """Read observations given as state indices into `observations` (S, *obs_shape), the boards of a
        compiled level (`env_batch.EnvBatch.observation_table`); None: boards only."""
        if observations is None or (self.table is not None and self.table.source is observations):
            return
        if tuple(observations.shape[1:]) != self.obs_shape:
            raise ValueError(f"observation table of boards {tuple(observations.shape[1:])}, but the learner "
                             f"reads boards {self.obs_shape}")
        if self.columns is not None:
            self.columns.check(observations)
        self.table = StateTable(observations, self._indices, self.device)

    def is_index(self, obs: torch.Tensor) -> bool:
        """Whether `obs` holds state indices into the table rather than boards."""
        if tuple(obs.shape[obs.ndim - len(self.obs_shape):]) == self.obs_shape:
            return False
        if self.table is None:
            raise ValueError(f"observations of shape {tuple(obs.shape)} are not boards {self.obs_shape}, and "
                             "state indices need an observation table (set_observation_table)")
        return True

    def boards(self, obs: torch.Tensor) -> torch.Tensor:
        """Flattened boards (B, D) float of observations given as boards (B, *obs_shape) or indices (B,)."""
        boards = self.table.source[obs.cpu()].to(obs.device) if self.is_index(obs) else obs
        return boards.flatten(1).float()

    def _read(self, obs: torch.Tensor) -> torch.Tensor:
        """The input columns of boards (B, *obs_shape), as floats (B, D)."""
        x = obs.flatten(1).float()
        return x if self.columns is None else x[:, self._indices]

    def __call__(self, obs: torch.Tensor) -> torch.Tensor | TableInputs:
        """x = board - m (B, D) on the input columns, or the same as `TableInputs` for state indices."""
        mean = self.observation_mean.mean if self.observation_mean is not None else self._zeros
        if self.is_index(obs):
            return self.table.inputs(obs, mean)
        return self._read(obs) - mean

    def observe(self, obs: torch.Tensor) -> None:
        """Fold observations the learner will train on into the running mean m."""
        if self.observation_mean is not None:
            self.observation_mean.update(self.table.boards[obs] if self.is_index(obs) else self._read(obs))

    def to(self, device: torch.device) -> None:
        """Move m, the state table and the zeros of m = 0 to `device`."""
        self.device = device
        if self.observation_mean is not None:
            self.observation_mean.to(device)
        self._zeros = self._zeros.to(device)
        if self.table is not None:
            self.table = StateTable(self.table.source, self._indices, device)

    def freeze(self) -> None:
        """Stop m moving (fine-tuning from a pretrained learner: phi's input must not move)."""
        if self.observation_mean is not None:
            self.observation_mean.frozen = True

    def state_dict(self) -> dict:
        mean = None if self.observation_mean is None else self.observation_mean.state_dict()
        columns = None if self.columns is None else self.columns._asdict()
        return {"observation_mean": mean, "input_columns": columns}

    def load_state_dict(self, state: dict) -> None:
        """Load m from a learner's checkpoint (`state_dict`'s two entries), refusing one that read other
        board entries."""
        columns = state.get("input_columns")
        if (columns is None) != (self.columns is None) or (
                columns is not None and not torch.equal(columns["columns"], self._indices)):
            raise ValueError("checkpoint reads other board entries than this learner: it was trained on "
                             "another level (or without observation normalisation)")
        if self.observation_mean is not None:
            self.observation_mean.load_state_dict(state["observation_mean"])
