"""The `aps-teach` command line: help lists every command, a typo gets the nearest one, and bad input is
one error line (exit status 2, no traceback) that names what was wrong, unless --debug asks for it."""

import pytest

from aps_teach.cli import COMMANDS, main


def test_help_lists_every_command_on_a_line_of_its_own(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for name in ("demo", "gridworld", "atari"):
        assert sum(line.strip().startswith(f"aps-teach {name} ") for line in lines) == 1, name
    assert set(COMMANDS) == {"demo", "gridworld", "atari"}


@pytest.mark.parametrize("typo, command", [("gridwrld", "gridworld"), ("atri", "atari"), ("dmeo", "demo")])
def test_a_mistyped_command_suggests_the_nearest(typo, command, capsys):
    assert main([typo]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"did you mean `aps-teach {command}`?" in err


def test_gridworld_bad_value_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["gridworld", "run", "--out", str(out), "--pretrain-steps", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "aps-teach gridworld: error: pretrain_steps must be a positive integer, got 0\n"
    with pytest.raises(ValueError, match="pretrain_steps"):
        main([*argv, "--debug"])
