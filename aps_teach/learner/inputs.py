"""What the gridworld networks read: the observation minus a running mean, on the entries that vary.

Input normalisation. A one-hot board has about 100 of its 800 entries on in every state (walls, floor)
and only 2-8 that differ between states. Fed raw, the always-on entries make up most of every first-layer
activation and Adam moves their weights together: after 6.4k pretraining steps 92-109 of phi's 128 hidden
units are dead in every state (VISR and APS, every level; tests/test_inputs.py); under the old defaults
(batch 32, 16k steps) phi ended as a constant on `open10`, 118-123 units dead. The networks read x = obs - m
instead, m the running mean of the observations the learner has trained on (`ObservationNormaliser`):
RND-style observation normalisation without the division by the standard deviation, which would scale a
rarely visited cell up by 1/std. The mean stops moving when fine-tuning starts from a pretrained learner,
since phi is frozen then.

Only the entries that vary between the level's states (`varying_columns`) are read: every other entry is
the same in every state, so once centred it is 0 and its first-layer weights would never move. Dropping
them changes nothing but the cost (108 of 800 entries on the hard level). The networks are built for all
800 and their first layers cut down to these columns, so they start from the same weights either way.

Observations by state index. The compiled engine hands out state indices into a table of the level's S
boards. The first layer W x + b of a batch of B >= S indices then runs once per state and is indexed
(`first_layer` with `TableInputs`), not once per observation of the batch.
"""

from __future__ import annotations

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
    indexed rows, if there are fewer of them than states)."""
    if not isinstance(x, TableInputs):
        return linear(x)
    if x.index.numel() < len(x.table):
        return linear(x.table[x.index])
    return linear(x.table)[x.index]
