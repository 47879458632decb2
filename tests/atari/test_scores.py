"""Human-normalised scores for hand-computed values, the reference table's coverage and sources, the
paper's Atari-26 list, aggregates (per-game means, and rliable's IQM over runs) worked by hand, and errors
on bad input."""

import math
import re
from pathlib import Path

import pytest

from aps_teach.atari.envs import check_game
from aps_teach.atari.scores import (
    ATARI_26,
    ATARI_57,
    REFERENCE_SCORES,
    aggregates,
    human_normalised,
    reference_scores,
    run_aggregates,
)

PAPER = [p / "shared/paper/aps_liu_abbeel_2021.tex" for p in Path(__file__).resolve().parents]


def test_57_games_each_an_ale_py_rom_with_random_below_human():
    assert len(ATARI_57) == len(set(ATARI_57)) == 57
    for game in ATARI_57:
        assert check_game(game) == game
        random, human = REFERENCE_SCORES[game]
        assert random < human, game


@pytest.mark.parametrize("game, score, expected", [
    ("pong", -20.7, 0.0), ("Pong", 14.6, 1.0),
    ("breakout", 16.1, 0.5),  # (16.1 - 1.7) / (30.5 - 1.7) = 14.4 / 28.8
    ("ALE/DemonAttack-v5", 1061.55, 0.5),  # (1061.55 - 152.1) / (1971.0 - 152.1) = 909.45 / 1818.9
    ("video_pinball", 16962.4, 0.5),  # (16962.4 - 16256.9) / 1411.0
    ("skiing", -4336.9, 1.0), ("montezuma_revenge", 0.0, 0.0),
    ("freeway", 59.2, 2.0),  # 59.2 / 29.6
    ("boxing", -5.9, -0.5),  # (-5.9 - 0.1) / 12.0
])
def test_human_normalised_known_values(game, score, expected):
    assert human_normalised(score, game) == pytest.approx(expected, abs=1e-12)


def test_the_papers_typos_are_not_copied():
    assert reference_scores("demon_attack") == (152.1, 1971.0)  # the paper: 107805 and 35829.4
    assert reference_scores("crazy_climber") == (10780.5, 35829.4)  # the paper: human 23829.4
    assert reference_scores("asteroids")[0] == 719.1  # the paper: 7191


def test_atari_26_are_the_rows_of_the_papers_table():
    assert len(set(ATARI_26)) == 26 and set(ATARI_26) <= set(ATARI_57)
    paper = next((p for p in PAPER if p.exists()), None)
    if paper is None:
        pytest.skip("the paper's LaTeX source is not beside this checkout")
    table = paper.read_text().split(r"\label{tab:atari26_result}")[1].split("Mean Human-Norm")[0]
    rows = re.findall(r"^([A-Z][A-Za-z ]+?)\s*&\s*[-\d.]", table, flags=re.M)
    assert {check_game(name.replace(" ", "")) for name in rows} == set(ATARI_26)


def test_aggregates_worked_by_hand():
    scores = [0.0, 0.5, 1.5, 2.0, 3.0, -1.0, 0.25, 10.0]
    # sorted: -1, 0, 0.25, 0.5, 1.5, 2, 3, 10; the IQM drops two from each end
    assert aggregates(scores) == {"mean": 16.25 / 8, "median": 1.0, "iqm": 4.25 / 4, "superhuman": 4}
    assert aggregates([1, 2, 3, 4, 100])["iqm"] == 3.0  # one trimmed from each end of five
    assert aggregates([1.0])["superhuman"] == 0  # equal to human is not above it
    assert aggregates(iter([0.2, 0.4]))["median"] == pytest.approx(0.3)


def test_run_aggregates_worked_by_hand():
    # two games of two seeds: pong 0, 4 and breakout 1, 3; the IQM of the four scores is (1 + 3) / 2; each
    # game's seeds resampled on their own give IQMs from 0.5 (3/16) to 3.5 (3/16): the 95% interval
    assert run_aggregates([[0.0, 4.0], [1.0, 3.0]]) == {"runs": 4, "iqm_runs": 2.0, "iqm_runs_low": 0.5,
                                                        "iqm_runs_high": 3.5}
    # the IQM over runs is not the IQM of the per-game means: games 0, 1, 2, 10 and 5, 5, 5, 5 have means
    # 3.25 and 5 (IQM of two: their mean 4.125); the eight scores pooled drop two from each end: 2, 5, 5, 5
    games = [[0.0, 1.0, 2.0, 10.0], [5.0, 5.0, 5.0, 5.0]]
    assert aggregates(sum(runs) / 4 for runs in games)["iqm"] == 4.125
    assert run_aggregates(games)["iqm_runs"] == 4.25
    # one seed per game: the IQM of four scores (drop one from each end), and no spread to resample
    assert run_aggregates([[0.5], [1.5], [-1.0], [3.0]]) == {"runs": 4, "iqm_runs": 1.0, "iqm_runs_low": 1.0,
                                                            "iqm_runs_high": 1.0}


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="no reference scores for 'tetris'; the 57 games"):
        reference_scores("tetris")
    with pytest.raises(ValueError, match="unknown Atari game 'pongg'"):
        human_normalised(0.0, "pongg")
    with pytest.raises(ValueError, match="score must be a finite number"):
        human_normalised(math.nan, "pong")
    with pytest.raises(ValueError, match="non-empty list of finite"):
        aggregates([])
    with pytest.raises(ValueError, match="non-empty list of finite"):
        aggregates([0.5, math.inf])
    with pytest.raises(ValueError, match="iqm_with_ci needs at least one task"):
        run_aggregates([])
    with pytest.raises(ValueError, match=r"task 1's run scores must be a non-empty list of finite numbers"):
        run_aggregates([[0.5], [math.nan]])
