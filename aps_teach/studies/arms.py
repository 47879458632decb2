"""Arm naming, shared by the studies: the arms of the task-family studies (`FAMILY_ARMS`, run by
`task_families`, `held_out` and `zero_shot`), and `arm_name`, which reads a results row's arm back from its
method and overrides under any study's table of arms. It imports no study."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

FAMILY_ARMS: dict[str, tuple[str, tuple[tuple[str, object], ...]]] = {
    "visr": ("visr", ()),
    "apt": ("apt", ()),
    "aps": ("aps", ()),
    "aps, kNN feature": ("aps", (("agent.knn_feature", True),)),
    "aps, explore-conditioned": ("aps", (("agent.knn_feature", True), ("agent.explore_conditioned", True))),
    "aps, kNN feature, explore weight 0.5": ("aps", (("agent.knn_feature", True),
                                                     ("agent.explore_weight", 0.5))),
    "dqn": ("dqn", ()),
    "dqn, equal budget": ("dqn", (("budget.finetune_adds_pretraining", True),
                                  ("budget.tasks", "one per class"))),
    "random": ("random", ()),
}
"""Arm -> (method, overrides of the default `TrainConfig`, and of the run's `task_families.FamilyBudget` for
names that start "budget."): the paper's three methods; APS with the kNN reward as a successor feature of its
own (`AgentConfig.knn_feature`), and that variant with psi conditioned on the exploration weight as well
(`AgentConfig.explore_conditioned`, used at weight 0 on every task), this repository's variants, labelled as
such; the ablation of that conditioning, the kNN-feature variant pretrained unconditioned at the weight the
conditioned one explores with on average (beta ~ U[0, 1]: 0.5); the DQN baseline from scratch on each task
with the same fine-tuning budget, and, on one task of each class (`FamilyBudget.tasks`), with the pretrained
arms' whole budget, pretraining's env steps included (`FamilyBudget.finetune_adds_pretraining`); a uniformly
random walk, the reference for coverage."""


@functools.lru_cache(maxsize=1024)
def _pairs(overrides: str) -> tuple:
    """A row's overrides (its JSON text) as pairs: parsed once per text (a study's tables ask millions of
    times)."""
    return tuple(tuple(pair) for pair in json.loads(overrides)) if overrides else ()


def arm_name(method: str, overrides: str | Sequence, arms: dict) -> str:
    """The arm of `arms` (a study's table: name -> (method, overrides)) a results row belongs to (`overrides`
    as the row's JSON text or as pairs)."""
    key = (method, _pairs(overrides) if isinstance(overrides, str) else
           tuple(tuple(pair) for pair in overrides or ()))
    for name, arm in arms.items():
        if arm == key:
            return name
    raise ValueError(f"{key} is no arm of the study; arms: {', '.join(arms)}")
