"""`gridworld.pycolab_compat`: pycolab 1.2 fails on current NumPy without it and works with it."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from pycolab import ascii_art

import gridworld  # noqa: F401  (applies the compatibility patch)
from gridworld import pycolab_compat

GAME_WITH_A_SPRITE = textwrap.dedent(
    """
    from pycolab import ascii_art, things

    class Still(things.Sprite):
        def update(self, actions, board, layers, backdrop, things, the_plot):
            pass

    game = ascii_art.ascii_art_to_game(["#####", "#..P#", "#####"], " ", sprites={"P": Still})
    observation, _, _ = game.its_showtime()
    print(tuple(game.things["P"].position), observation.board[1].tobytes().decode())
    """
)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_pycolab_fails_on_this_numpy_without_the_patch():
    result = run_python(GAME_WITH_A_SPRITE)
    assert result.returncode != 0
    assert "TypeError" in result.stderr or "ValueError" in result.stderr


def test_pycolab_builds_and_places_sprites_with_the_patch():
    result = run_python("import gridworld\n" + GAME_WITH_A_SPRITE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["(1,", "3)", "#..P#"]


def test_fixed_ascii_art_to_uint8_nparray_keeps_pycolab_contract():
    array = ascii_art.ascii_art_to_uint8_nparray(["#a", "T."])
    np.testing.assert_array_equal(array, [[ord("#"), ord("a")], [ord("T"), ord(".")]])
    assert array.dtype == np.uint8 and array.flags.writeable
    with pytest.raises(ValueError, match="equal length"):
        ascii_art.ascii_art_to_uint8_nparray(["##", "#"])
    with pytest.raises(ValueError, match="ASCII"):
        ascii_art.ascii_art_to_uint8_nparray(["#é"])
    with pytest.raises(TypeError):
        ascii_art.ascii_art_to_uint8_nparray([["#", "#"]])


def test_patched_where_converts_one_index_and_still_selects():
    rows, cols = ascii_art.np.where(np.array([[False, True], [False, False]]))
    assert (int(rows), int(cols)) == (0, 1)
    np.testing.assert_array_equal(ascii_art.np.where([True, False], 1, 2), [1, 2])
    assert ascii_art.np.unique is np.unique
    pycolab_compat.apply()  # idempotent
    assert int(ascii_art.np.where(np.array([True]))[0]) == 0
