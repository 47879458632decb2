"""The pre-registered Atari study: its protocol block read and checked, the registered comparison against
hand-computed intervals, and the study and compare commands through the CLI at a tiny budget (every file
written, a second call rewriting the tables byte for byte, an edited pre-registration refused)."""

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from aps_teach.cli.main import main
from aps_teach.studies import atari_study
from aps_teach.studies.atari_study import compare_scores, read_protocol

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("arms.csv", "verdicts.csv", "aggregate.csv", "improvement.csv", "curves.png")

TINY_BLOCK = """{
  "seeds": [3, 4],
  "num_envs": 2,
  "atari": {"conv_channels": [8, 8, 8], "psi_hidden": 32, "phi_hidden": 32, "batch_size": 8, "n_step": 3,
            "k": 3, "min_replay_size": 64, "pretrain_steps": 200, "task_id_steps": 100, "finetune_steps": 100,
            "eval_steps": 400, "max_frames_per_episode": 800, "epsilon_decay_steps": 100},
  "parts": {"primary": {"games": ["pong"], "methods": ["dqn", "random"]}},
  "comparisons": [{"contender": "dqn", "baseline": "random", "games": ["pong"], "primary": true}]
}"""


def registration(path: Path, block: str = TINY_BLOCK) -> Path:
    path.write_text(f"# a tiny study\n\n<!-- protocol -->\n```json\n{block}\n```\n<!-- /protocol -->\n")
    return path


def test_the_committed_preregistration_registers_the_issues_protocol():
    protocol = read_protocol(ROOT / atari_study.PREREGISTRATION)
    assert protocol.seeds == (0, 1, 2) and protocol.num_envs == 8
    primary = protocol.part("primary")
    assert primary.games == ("boxing", "kung_fu_master", "freeway")
    assert primary.methods == ("aps", "dqn", "random")
    assert protocol.part("secondary").methods == ("apt", "visr")
    atari = protocol.atari
    assert (atari.pretrain_steps, atari.pretrain_update_period, atari.finetune_update_period) == (
        250_000, 4, 1)
    assert (atari.task_id_steps, atari.finetune_steps, atari.eval_steps) == (40_000, 60_000, 125_000)
    assert atari.lr == atari.finetune_lr == 1e-4
    [first] = [c for c in protocol.comparisons if c.primary]
    assert (first.contender, first.baseline, first.games) == ("aps", "dqn", primary.games)


def welch(x, y, confidence=0.95):
    """Welch's interval by its formula: d +- t_{df} sqrt(vx / nx + vy / ny), Welch-Satterthwaite df."""
    from scipy.stats import t

    vx, vy = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    half = t.ppf((1 + confidence) / 2, df) * math.sqrt(vx + vy)
    d = np.mean(x) - np.mean(y)
    return d - half, d + half


@pytest.mark.parametrize("x, y, reading, marginal", [
    ([3.0, 4.0, 5.0], [0.0, 1.0, 2.0], "above", "no"),  # every resample apart; Welch [0.73, 5.27]
    ([0.0, 1.0, 2.0], [3.0, 4.0, 5.0], "below", "no"),
    ([0.0, 0.1, 9.0], [0.0, 0.05, 0.1], "no difference found", "no"),
    ([1.0, 1.2, 1.4], [0.0, 0.1, 1.1], "above", "yes"),  # bootstrap [+0.17, +1.27]; Welch's [-0.55, +2.15]
])
def test_a_comparison_reads_its_bootstrap_interval_and_marks_where_welchs_disagrees(x, y, reading, marginal):
    got = compare_scores(x, y)
    assert got["difference"] == pytest.approx(np.mean(x) - np.mean(y))
    assert (got["reading"], got["marginal"]) == (reading, marginal)
    assert (got["welch_low"], got["welch_high"]) == pytest.approx(welch(x, y))
    # the bootstrap's interval lies within the range of the differences of resampled means
    assert min(x) - max(y) <= got["low"] <= got["difference"] <= got["high"] <= max(x) - min(y)


def test_one_seed_gives_no_interval_and_no_verdict():
    got = compare_scores([5.0], [1.0, 2.0])
    assert got["difference"] == 3.5 and got["low"] == "" and got["reading"] == "needs two seeds an arm"
    assert atari_study.score_interval(got) == "+3.5"


@pytest.mark.parametrize("text, message", [
    ("no block here", "has no protocol block"),
    (TINY_BLOCK.replace('"seeds": [3, 4]', '"seeds": [4, 3]'), "the last seed comes before the first"),
    (TINY_BLOCK.replace('"seeds": [3, 4]', '"seeds": [-1, 3]'), "seeds must be an integer >= 0"),
    (TINY_BLOCK.replace('["dqn", "random"]', '["dqn", "ppo"]'), "needs games and methods of"),
    (TINY_BLOCK.replace('["pong"], "methods"', '["pongg"], "methods"'), "unknown Atari game"),
    (TINY_BLOCK.replace('"baseline": "random"', '"baseline": "aps"'), "needs arms no part runs: aps on pong"),
    (TINY_BLOCK.replace('"batch_size": 8', '"batch_size": 0'), "batch_size must be an integer >= 1"),
])
def test_a_bad_protocol_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "prereg.md"
    if text.startswith("{"):
        registration(path, text)
    else:
        path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        read_protocol(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_the_study_command_runs_its_protocol_to_the_end_and_refuses_an_edited_one(tmp_path, capsys):
    prereg, out = registration(tmp_path / "prereg.md"), tmp_path / "study"
    assert main(["atari", "study", "--out", str(out), "--preregistration", str(prereg),
                 "--runs-at-once", "1", "--checkpoint-every", "50", "--save-replay"]) == 0
    printed = capsys.readouterr().out
    config = json.loads((out / "runs" / "dqn-pong-seed3" / "config.json").read_text())["train"]
    assert (config["checkpoint_every"], config["save_replay"]) == (50, True)  # operational, not registered
    assert re.search(r"completed: 4\n", printed) and "pong, dqn vs random: " in printed
    for name in TABLES:
        assert (out / name).is_file(), name
    rows = atari_study.read_rows(out / "scores.csv", atari_study.SCORE_COLUMNS)
    assert sorted((r["method"], r["seed"]) for r in rows) == [("dqn", "3"), ("dqn", "4"), ("random", "3"),
                                                              ("random", "4")]
    dqn = [r for r in rows if r["method"] == "dqn"]
    assert all(r["reward_steps"] == "200" for r in dqn)  # identification's budget + fine-tuning's
    [verdict] = atari_study.read_rows(out / "verdicts.csv")
    scores = {m: [float(r["score"]) for r in rows if r["method"] == m] for m in ("dqn", "random")}
    assert float(verdict["difference"]) == pytest.approx(np.mean(scores["dqn"]) - np.mean(scores["random"]))
    assert f"{atari_study.score_interval(verdict)}, {verdict['reading']}" in printed

    before = {name: (out / name).read_bytes() for name in TABLES if name.endswith(".csv")}
    assert main(["atari", "study", "--out", str(out), "--preregistration", str(prereg)]) == 0
    assert "skipped: 4" in capsys.readouterr().out
    assert {name: (out / name).read_bytes() for name in before} == before

    registration(prereg, TINY_BLOCK.replace('"eval_steps": 400', '"eval_steps": 800'))
    shutil.rmtree(out / "runs" / "random-pong-seed3")
    listing = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert main(["atari", "study", "--out", str(out), "--preregistration", str(prereg)]) == 2
    error = capsys.readouterr().err
    assert str(prereg) in error and "is not the text the results" in error and error.count("\n") == 1
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == listing

    assert main(["atari", "compare", "--out", str(out)]) == 2  # a study's verdicts are its registered ones
    assert "holds a pre-registered study" in capsys.readouterr().err

    sweep = tmp_path / "sweep"  # the same runs as a plain sweep
    shutil.copytree(out, sweep, ignore=shutil.ignore_patterns(*TABLES, "scores.sweep.json"))
    assert main(["atari", "compare", "--out", str(sweep), "--contender", "dqn", "--baseline", "random"]) == 0
    [again] = atari_study.read_rows(sweep / "verdicts.csv")
    assert {**again, "primary": verdict["primary"]} == verdict
    assert main(["atari", "compare", "--out", str(sweep), "--contender", "aps", "--baseline", "random"]) == 2
    assert "has both 'aps' and 'random'; its arms: dqn, random" in capsys.readouterr().err


def test_a_checkpoint_interval_below_one_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["atari", "study", "--out", str(out), "--checkpoint-every", "0",
                 "--preregistration", str(ROOT / atari_study.PREREGISTRATION)]) == 2
    error = capsys.readouterr().err
    assert "checkpoint_every must be an integer >= 1, got 0" in error and error.count("\n") == 1
    assert not out.exists()
