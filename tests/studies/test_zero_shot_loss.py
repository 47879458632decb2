"""The zero-shot-loss experiment (aps_teach.studies.zero_shot_loss): its runs score each setting of a
learner's values, and its registered comparisons and decision follow hand-made results."""

import json

import pytest
import torch

from aps_teach.cli.gridworld import gridworld_main
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import Budget
from aps_teach.grid.train import evaluate, pretrain
from aps_teach.infra.checks import check_seeds
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.sweeps import RunSpec
from aps_teach.studies import zero_shot_loss as zsl

TINY = Budget(pretrain_steps=3_200, identify_steps=3_200, eval_episodes=8, finetune_steps=3_200)


def test_every_arm_runs_on_every_seed_in_order():
    specs = zsl.loss_specs([20, 21])
    assert [(spec.method, spec.seed) for spec in specs] == [
        (method, seed) for method, _ in zsl.ARMS.values() for seed in (20, 21)]
    assert {spec.env for spec in specs} == {"easy"}


@pytest.mark.parametrize("seeds, message", [([], r"give 1 to 10,000 seeds, got 0"),
                                            ([3, 3], r"repeat a seed: \[3, 3\]"),
                                            ([-1], r"each of seeds must be")])
def test_bad_seeds_are_refused(seeds, message):
    with pytest.raises(ValueError, match=message):
        check_seeds(seeds)


def test_the_command_refuses_bad_seeds_before_running(tmp_path, capsys):
    assert gridworld_main(["zero-shot-loss", "--out", str(tmp_path / "out"), "--seeds", "5", "5"]) == 2
    assert "--seeds repeat a seed" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("arm, values", [("aps, kNN feature", [zsl.WITHOUT_KNN, zsl.WITH_KNN]),
                                         ("aps", [zsl.WITH_KNN]), ("visr", [zsl.WITHOUT_KNN]),
                                         ("visr->aps, kNN feature", [zsl.WITHOUT_KNN, zsl.WITH_KNN])])
def test_a_run_scores_each_values_setting_its_learner_has(arm, values):
    method, overrides = zsl.ARMS[arm]
    rows = zsl.run_loss_rows(RunSpec(method, "easy", 0, overrides), TINY)
    assert [row["values"] for row in rows] == values
    assert all(zsl.successes(rows)[arm, value] for value in values)  # each readable by arm name
    assert {row["overrides"] for row in rows} == {json.dumps(overrides) if overrides else ""}


def test_evaluate_acts_on_the_values_it_is_asked_for(monkeypatch):
    """evaluate(explore=) reaches Learner.act: with the kNN return (pretraining's whole reward) or not."""
    config = with_overrides(TrainConfig(progress=False, learning_starts=400), zsl.KNN_FEATURE)
    learner, _ = pretrain("aps", "easy", 800, 0, config)
    asked = []
    act = learner.act
    monkeypatch.setattr(learner, "act", lambda *args, **kwargs: asked.append(kwargs["explore"]) or act(
        *args, **kwargs))
    w = torch.nn.functional.normalize(torch.ones(learner.config.feature_dim), dim=0)
    evaluate(learner, "easy", w, 2, 0, config, explore=True)
    evaluate(learner, "easy", w, 2, 0, config)
    assert set(asked[:len(asked) // 2]) == {True} and set(asked[len(asked) // 2:]) == {False}


def _rows(table: dict[tuple[str, str], list[float]]) -> list[dict]:
    """Result rows of hand-made successes: (arm, values) -> one success per seed (seeds 20, 21, ...)."""
    rows = []
    for (arm, values), scores in table.items():
        method, overrides = zsl.ARMS[arm]
        rows += [{"method": method, "overrides": json.dumps(overrides) if overrides else "", "values": values,
                  "seed": 20 + i, "success_rate": score, "visitation_entropy": 0.9}
                 for i, score in enumerate(scores)]
    return rows


BASE_WITH, BASE_WITHOUT = [0.2, 0.3, 0.1], [0.8, 0.9, 0.7]
BASE = {(zsl.BASE, zsl.WITH_KNN): BASE_WITH, (zsl.BASE, zsl.WITHOUT_KNN): BASE_WITHOUT}


def test_a_normaliser_acting_through_the_values_is_named_so():
    """The values raise success by 0.6 on every seed; without the normaliser success rises by 0.3 with the
    kNN return and not at all without it; VISR's data change nothing."""
    rows = _rows({**BASE, (zsl.NO_NORMALISER_ARM, zsl.WITH_KNN): [0.5, 0.6, 0.4],
                  (zsl.NO_NORMALISER_ARM, zsl.WITHOUT_KNN): BASE_WITHOUT,
                  (zsl.VISR_DATA_ARM, zsl.WITH_KNN): BASE_WITH,
                  (zsl.VISR_DATA_ARM, zsl.WITHOUT_KNN): BASE_WITHOUT})
    found = {effect.name: effect for effect in zsl.effects(rows)}
    values = found["values: without the kNN return"]
    assert (values.mean, values.low, values.high, values.seeds) == pytest.approx((0.6, 0.6, 0.6, 3))
    assert values.verdict == "raises it" and found["data: VISR's"].verdict == "no effect shown"
    assert found["normaliser: without it"].mean == pytest.approx(0.3)
    lines = zsl.explanation(rows)
    assert lines[0] == "values: raises it (+0.60 [+0.60, +0.60], 3 seeds)"
    assert lines[1].startswith("normaliser: raises it (+0.30 [+0.30, +0.30], 3 seeds); through the kNN")
    assert lines[2] == "data: no effect shown (+0.00 [+0.00, +0.00], 3 seeds)"
    assert lines[3] == "explanation: psi's values hold the kNN term's return; the normaliser acts through it"


def test_data_that_act_beside_the_values_are_named_as_found():
    rows = _rows({**BASE, (zsl.VISR_DATA_ARM, zsl.WITH_KNN): [0.6, 0.7, 0.5],
                  (zsl.VISR_DATA_ARM, zsl.WITHOUT_KNN): [1.0, 1.0, 1.0]})
    lines = zsl.explanation(rows)
    assert lines[1] == "normaliser: not measured"
    assert "data: raises it" in lines[2] and "; not only through the kNN return" in lines[2]
    assert lines[3] == "explanation: the factors that move it, each as found: values, data"


def test_nothing_moving_is_said():
    rows = _rows({("aps, kNN feature", zsl.WITH_KNN): [0.2, 0.9, 0.1],
                  ("aps, kNN feature", zsl.WITHOUT_KNN): [0.9, 0.1, 0.2]})
    assert zsl.explanation(rows)[-1] == "explanation: no factor moves it at this budget"
    assert "| [-0.80, +0.70] | 3 | no effect shown |" in zsl.effects_table(rows)


@pytest.mark.parametrize("inner, through", [((0.05, -0.1, 0.2), True), ((0.2, -0.1, 0.5), False),
                                             ((0.1, 0.05, 0.15), False)])
def test_a_factor_acts_through_the_values_when_its_effect_without_them_is_gone(inner, through):
    """Gone: an interval containing 0 and a mean at most half the factor's (0.3 here)."""
    factor = zsl.Effect("f", 0.3, 0.1, 0.5, 10)
    assert zsl.through_values(factor, zsl.Effect("g", *inner, 10)) is through


def test_the_arms_table_has_one_row_per_arm_and_values():
    rows = _rows({("aps", zsl.WITH_KNN): [1.0, 0.0], ("aps, kNN feature", zsl.WITHOUT_KNN): [0.5, 0.5]})
    table = zsl.arms_table(rows).splitlines()
    assert table[2] == "| aps | task + kNN return | 0.50 [0.00, 1.00] | 0.900 |"
    assert table[3] == "| aps, kNN feature | task | 0.50 [0.50, 0.50] | 0.900 |"


def test_the_figure_has_one_bar_per_arm_and_values(tmp_path):
    """Bars at the mean of each (arm, values) the rows hold; none for a setting an arm does not have."""
    from aps_teach.studies.plots import plot_zero_shot_loss

    fig = plot_zero_shot_loss(_rows({**BASE, ("visr", zsl.WITHOUT_KNN): [1.0, 0.5, 1.0]}))
    heights = {patch.get_gid(): patch.get_height() for patch in fig.axes[0].patches if patch.get_gid()}
    assert heights == pytest.approx({f"{zsl.BASE}/{zsl.WITH_KNN}": 0.2, f"{zsl.BASE}/{zsl.WITHOUT_KNN}": 0.8,
                                     f"visr/{zsl.WITHOUT_KNN}": 2.5 / 3})
