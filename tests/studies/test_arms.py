"""Arm naming (`aps_teach.studies.arms`): a results row's arm read back from its method and overrides, under
the table of arms of the study that wrote it."""

import json

import pytest

from aps_teach.studies.aps_parts import ARMS, parts_specs
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.task_families import family_specs


def test_every_arm_is_named_back_from_its_row_under_its_studys_table():
    for specs, arms in ((parts_specs(["deep", "easy"], 2), ARMS),
                        (family_specs(["deep"], 2, tuple(FAMILY_ARMS)), FAMILY_ARMS)):
        for spec in specs:
            text = json.dumps(spec.overrides) if spec.overrides else ""  # as results rows hold it
            assert arms[arm_name(spec.method, text, arms)] == (spec.method, spec.overrides)
            assert arm_name(spec.method, spec.overrides, arms) == arm_name(spec.method, text, arms)  # pairs


def test_a_row_of_no_arm_is_refused_naming_the_studys_arms():
    with pytest.raises(ValueError, match="no arm of the study; arms: aps, aps, own encoder"):
        arm_name("aps", json.dumps([["agent.k", 3]]), ARMS)
    with pytest.raises(ValueError, match="no arm of the study; arms: visr, apt, aps, aps, kNN feature"):
        arm_name("aps", [("agent.knn_feature", False)], FAMILY_ARMS)
