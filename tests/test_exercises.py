"""The exercise checkers accept a correct answer and reject wrong ones with a useful message."""

import numpy as np
import pytest

from aps_teach.exercises import check_gpi


def test_check_gpi_accepts_a_correct_answer(capsys):
    check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w).max(axis=0))
    assert "correct: GPI action values" in capsys.readouterr().out


def test_check_gpi_rejects_wrong_answers():
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w).mean(axis=0))  # averages policies
    with pytest.raises(AssertionError, match="differs from the library"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w)[0])  # first policy only
    with pytest.raises(AssertionError, match="shape"):
        check_gpi(lambda psis, w: np.einsum("nsad,d->nsa", psis, w))  # forgot the max
