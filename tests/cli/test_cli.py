"""The `aps-teach` command line: help lists every command, a typo gets the nearest one, and bad input is
one error line (exit status 2, no traceback) that names what was wrong, unless --debug asks for it."""

import re

import pytest

from aps_teach.cli.common import run_cli
from aps_teach.cli.main import COMMANDS, main
from aps_teach.infra.run_dir import Interrupted


def test_help_lists_every_command_on_a_line_of_its_own(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for name in ("demo", "gridworld", "atari"):
        assert sum(line.strip().startswith(f"aps-teach {name} ") for line in lines) == 1, name
    assert set(COMMANDS) == {"demo", "gridworld", "atari"}


@pytest.mark.parametrize("group", ["gridworld", "atari"])
def test_help_lists_every_subcommand_of_each_group(group, capsys):
    """The main help's list is kept beside it (no torch import for --help): it must be the group's own."""
    import importlib

    from aps_teach.cli.main import SUBCOMMANDS

    module = importlib.import_module(f"aps_teach.cli.{group}")
    assert SUBCOMMANDS[group] == tuple(module.COMMANDS)
    listed = re.match(rf"`aps-teach {group} {{([^}}]*)}}`", module.__doc__)
    assert listed, f"aps_teach/cli/{group}.py's docstring does not open with its command list"
    assert tuple("".join(listed.group(1).split()).split(",")) == tuple(module.COMMANDS)
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if line.strip().startswith(f"aps-teach {group}")]
    assert line.split(": ", 1)[1].split(", ") == list(module.COMMANDS)
    with pytest.raises(SystemExit):
        main([group, "--help"])
    shown = capsys.readouterr().out
    assert all(name in shown for name in module.COMMANDS)


def group_commands(group: str) -> tuple[str, ...]:
    """The commands the group's parser is built from (`run_subcommands` over its COMMANDS)."""
    import importlib

    return tuple(importlib.import_module(f"aps_teach.cli.{group}").COMMANDS)


@pytest.mark.parametrize("group", ["gridworld", "atari"])
def test_the_main_docstring_and_the_command_line_page_list_each_groups_commands(group):
    """Three hand-written lists (the main module's docstring, docs/command-line.md's table, the study
    module's docstring) held to the parser's commands, in its order."""
    from pathlib import Path

    from aps_teach.cli import main as main_module

    listed = re.search(rf"aps-teach {group} \.\.\. +((?:[\w-]+ \|\s+)*[\w-]+)", main_module.__doc__)
    assert listed, f"aps_teach/cli/main.py's docstring has no line for aps-teach {group}"
    assert tuple(listed.group(1).replace("|", " ").split()) == group_commands(group)
    page = (Path(__file__).parents[2] / "docs" / "command-line.md").read_text()
    (row,) = re.findall(rf"^\| `aps-teach {group}` \| (.*) \|$", page, re.MULTILINE)
    assert tuple(name.strip("` ") for name in row.split(",")) == group_commands(group)


def test_the_study_commands_docstring_lists_its_commands():
    from aps_teach.cli import studies

    listed = re.match(r"`aps-teach gridworld {([^}]*)}`", studies.__doc__)
    assert listed and tuple("".join(listed.group(1).split()).split(",")) == tuple(studies.COMMANDS)
    assert set(studies.COMMANDS) <= set(group_commands("gridworld"))


@pytest.mark.parametrize("typo, command", [
    (["gridwrld"], "gridworld"), (["atri"], "atari"), (["dmeo"], "demo"),
    (["gridworld", "rnu"], "gridworld run"), (["atari", "swep", "--out", "x"], "atari sweep")])
def test_a_mistyped_command_suggests_the_nearest(typo, command, capsys):
    assert main(typo) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"did you mean `aps-teach {command}`?" in err


def test_gridworld_bad_value_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["gridworld", "run", "--out", str(out), "--pretrain-steps", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "aps-teach gridworld: error: pretrain_steps must be an integer >= 1, got 0\n"
    with pytest.raises(ValueError, match="pretrain_steps"):
        main([*argv, "--debug"])


POSITIVE = "(0, 1.84467e+19] (its square must fit in float32)"
"""What a learning rate or reward clip may be."""
WEIGHT = "a finite number in [-1.84467e+19, 1.84467e+19] (its square must fit in float32)"
"""What a reward weight may be."""


BAD_VALUES = [
    (["gridworld", "run", "--out", "OUT", "--seed", "-1"], "gridworld",
     "seed must be an integer >= 0 and <= 4294967295, got -1"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.gamma", "2"], "gridworld",
     "gamma must be in (0, 1], got 2.0"),
    (["gridworld", "run", "--out", "OUT", "--train.epsilon-start", "5"], "gridworld",
     "epsilon_start must be in [0, 1], got 5.0"),
    (["gridworld", "run", "--out", "OUT", "--train.epsilon-decay-fraction", "0"], "gridworld",
     "epsilon_decay_fraction must be in (0, 1], got 0.0"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.lr", "0"], "gridworld",
     f"lr must be in {POSITIVE}, got 0.0"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.lr", "inf"], "gridworld",
     f"lr must be in {POSITIVE}, got inf"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.finetune-lr", "nan"], "gridworld",
     f"finetune_lr must be in {POSITIVE}, got nan"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.explore-weight", "nan"], "gridworld",
     f"explore_weight must be {WEIGHT}, got nan"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.exploit-weight", "inf"], "gridworld",
     f"exploit_weight must be {WEIGHT}, got inf"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.exploit-weight", "-inf"], "gridworld",
     f"exploit_weight must be {WEIGHT}, got -inf"),
    (["gridworld", "run", "--out", "OUT", "--seed", "99999999999999999999"], "gridworld",
     "seed must be an integer >= 0 and <= 4294967295, got 99999999999999999999"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.k", "300"], "gridworld",
     "k must be less than the kNN particle set of a minibatch, 256 states (batch_size 256)"),
    (["gridworld", "run", "--out", "OUT", "--pretrain-steps", "1000000000000"], "gridworld",
     "pretrain_steps makes 1,000,000,000,000 env steps, more than the 1,000,000,000 one phase may take"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.batch-size", "10000000"], "gridworld",
     "an update of a batch of 10000000 ("),
    (["gridworld", "run", "--out", "OUT", "--train.agent.n-step", "100000000"], "gridworld",
     "an update's working memory grows with)"),
    (["gridworld", "sweep", "--out", "OUT", "--workers", "0"], "gridworld",
     "workers must be an integer >= 1 (or not given: one per core), got 0"),
    (["gridworld", "sweep", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "sweep", "--out", "OUT", "--seeds", "1", "--pretrain-steps", "0"], "gridworld",
     "pretrain_steps must be an integer >= 1, got 0"),
    (["gridworld", "study", "--out", "OUT", "--workers", "0"], "gridworld",
     "workers must be an integer >= 1"),
    (["gridworld", "transfer", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "run", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "sweep", "--out", "OUT", "--methods"], "gridworld",
     "a sweep needs at least one method and one level, got methods [], levels ['easy', 'hard', 'deep']"),
    (["gridworld", "sweep", "--out", "OUT", "--levels"], "gridworld",
     "a sweep needs at least one method and one level"),
    (["gridworld", "run", "--out", "OUT", "--pretrain-steps", "3.5"], "gridworld",
     "--pretrain-steps must be an integer, got '3.5'"),
    (["gridworld", "run", "--out", "OUT", "--train.agent.lr", "fast"], "gridworld",
     "--train.agent.lr must be a number, got 'fast'"),
    (["gridworld", "run", "--out", "OUT", "--method", "ppo"], "gridworld",
     "--method 'ppo' is not valid; valid: visr, apt, aps, dqn"),
    (["gridworld", "run", "--out", "OUT", "--seed"], "gridworld", "--seed needs a value"),
    (["gridworld", "run", "--out", "OUT", "--bogus", "3"], "gridworld", "unrecognised arguments: --bogus 3"),
    (["gridworld", "run"], "gridworld", "missing --out"),
    (["gridworld"], "gridworld", "a command is missing; commands: run, pretrain, finetune, evaluate, sweep"),
    (["atari", "run", "--out", "OUT", "--atari.lr", "x"], "atari", "--atari.lr must be a number, got 'x'"),
    (["--seed", "3.5"], "", "--seed must be an integer, got '3.5'"),
    (["gridworld", "pretrain", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "finetune", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "evaluate", "--out", ""], "gridworld", "--out is empty"),
    (["gridworld", "study", "--out", ""], "gridworld", "--out is empty"),
    (["--out", ""], "", "--out is empty"),
    (["atari", "run", "--out", ""], "atari", "--out is empty"),
    (["atari", "finetune", "--out", ""], "atari", "--out is empty"),
    (["--seed", "-1", "--out", "OUT"], "", "seed must be an integer >= 0 and <= 4294967295, got -1"),
    (["demo", "--out", "OUT"], "demo", "--out must be a file name ending in a figure format ("),
    (["demo", "--seed", "-2", "--out", "OUT.png"], "demo",
     "seed must be an integer >= 0 and <= 4294967295, got -2"),
    (["atari", "sweep", "--out", ""], "atari", "--out is empty"),
    (["atari", "run", "--out", "OUT", "--atari.gamma", "2"], "atari", "gamma must be in (0, 1], got 2.0"),
    (["atari", "run", "--out", "OUT", "--seed", "-1"], "atari",
     "seed must be an integer >= 0 and <= 4294967295, got -1"),
    (["atari", "run", "--out", "OUT", "--seed", str(2**32)], "atari",
     "seed must be an integer >= 0 and <= 4294967295, got 4294967296"),
    (["atari", "run", "--out", "OUT", "--atari.lr", "inf"], "atari", f"lr must be in {POSITIVE}, got inf"),
    (["atari", "run", "--out", "OUT", "--atari.explore-weight", "nan"], "atari",
     f"explore_weight must be {WEIGHT}, got nan"),
    (["atari", "pretrain", "--out", "OUT", "--atari.batch-size", "8"], "atari",
     "k must be less than the kNN particle set of a minibatch, 8 states (batch_size 8), each excluding "
     "itself; got k=10 for aps"),
]


@pytest.mark.parametrize("argv, command, message", BAD_VALUES,
                         ids=[" ".join(argv[:2] + argv[3:]) for argv, *_ in BAD_VALUES])
def test_each_bad_value_is_one_error_line_naming_it_and_nothing_is_written(argv, command, message, tmp_path,
                                                                           monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an empty --out would write here
    argv = [arg.replace("OUT", str(tmp_path / "out")) for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    prog = f"aps-teach {command}".strip()
    assert err.startswith(f"{prog}: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_interrupted_is_one_line_with_where_the_work_stands(capsys):
    def stopped() -> int:
        raise Interrupted("sweep stopped; its finished runs are kept in X")

    assert run_cli("aps-teach gridworld", stopped) == 130
    expected = "aps-teach gridworld: interrupted: sweep stopped; its finished runs are kept in X\n"
    assert capsys.readouterr().err == expected
    with pytest.raises(KeyboardInterrupt):
        run_cli("aps-teach gridworld", stopped, debug=True)


def test_transfer_writes_under_runs_by_default_one_directory_per_configuration():
    from pathlib import Path

    from aps_teach.cli.gridworld import Transfer

    default, other = Transfer().results_dir(), Transfer(pretrain_steps=1600).results_dir()
    assert default.parent == other.parent == Path("runs/transfer") and default != other
    assert Transfer(tasks=3).results_dir() != default and Transfer(method="visr").results_dir() == default
    assert Transfer(out=Path("results/transfer")).results_dir() == Path("results/transfer")


@pytest.mark.parametrize("argv", [["--help"], ["gridworld", "run", "--help"],
                                  ["gridworld", "study", "--help"], ["atari", "run", "--help"]])
def test_help_spells_the_device_flag_as_the_commands_take_it(argv, capsys):
    """`aps-teach --help` listed --train.device while its text called --device the spelling to use."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    assert "--device STR" in shown and "train.device" not in shown


@pytest.mark.parametrize("flag", ["--device", "--train.device", "--grid.device", "--grid.train.device"])
def test_the_main_job_and_the_study_take_the_device_flag(flag, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for argv in (["--out", str(tmp_path / "out")], ["gridworld", "study", "--out", str(tmp_path / "out")]):
        if flag.startswith("--grid") and argv[0] != "gridworld":
            continue
        assert main([*argv, flag, "cuda"]) == 2
        lines = capsys.readouterr().err.splitlines()
        said = [] if flag == "--device" else [f"{flag} is the old spelling of --device (as aps-teach atari "
                                              "spells it); both work"]
        assert lines[:-1] == said and lines[-1].endswith("use --device cpu")
    assert not (tmp_path / "out").exists()
