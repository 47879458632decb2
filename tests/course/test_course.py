"""The course helpers: the fast-mode banner and the committed results (from a checkout;
tests/course/test_colab.py checks them from an installed wheel)."""

import pytest

from aps_teach.course import FAST_MODE_TEXT, committed_result, fast_mode_banner
from aps_teach.course.build import NOTEBOOK_DIR


def test_banner_only_in_fast_mode(capsys):
    fast_mode_banner(False)
    assert capsys.readouterr().out == ""
    fast_mode_banner(True)  # outside Jupyter, IPython's display prints the plain-text form
    out = capsys.readouterr().out
    assert "not meaningful" in FAST_MODE_TEXT and FAST_MODE_TEXT in out


def test_committed_result_finds_the_checkouts_files():
    path = committed_result("gridworld/figure4.csv")
    assert path == NOTEBOOK_DIR.parent / "results" / "gridworld" / "figure4.csv"
    assert committed_result("transfer").is_dir()


def test_committed_result_refuses_bad_paths():
    with pytest.raises(FileNotFoundError, match=r"no committed result 'gridworld/nope.csv'; available: .*"
                                                r"gridworld/figure4.csv"):
        committed_result("gridworld/nope.csv")
    for bad in ("../pyproject.toml", "/etc/passwd", ""):
        with pytest.raises(ValueError, match="a path inside results/"):
            committed_result(bad)
