"""Every study command's success path, through `main` at a tiny budget to its end: exit status 0, the files
its summary says it wrote, holding what they should; a second call skips every run and rewrites its tables
byte for byte. Runs are tiny (`conftest.tiny_learners`: 2 envs, a 16-unit learner) on the course's `easy`
level (the held-out levels stay unseen by the tests)."""

import json
from pathlib import Path

import gridworld
from aps_teach.cli.main import main
from aps_teach.infra.sweeps import read_rows
from aps_teach.studies.verdicts import interval_text, verdict_text
from aps_teach.studies.zero_shot import COLUMNS as ZERO_SHOT_COLUMNS
from tests.cli.conftest import files

ROOT = Path(__file__).resolve().parents[2]


def summary(out: str) -> dict[str, str]:
    """A command's printed summary ('key: value' lines) as a dict."""
    pairs = (line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return {key.strip(): value for key, value in pairs}


def tables(root: Path) -> dict[str, bytes]:
    """The CSV tables under root (the figures' bytes may differ between matplotlib versions)."""
    return {name: data for name, data in files(root).items() if name.endswith(".csv")}


HELD_OUT_PROTOCOL = {
    "seeds": [10, 11],
    "budget": {"identify_steps": 200, "finetune_steps": 200, "eval_episodes": 2, "protocols": ["finetuned"],
               "tasks": "one per class"},
    "parts": {"easy-small": {"level": "easy", "pretrain_steps": 200,
                             "arms": ["visr", "apt", "aps", "aps, kNN feature"]},
              "easy-large": {"level": "easy", "pretrain_steps": 400,
                             "arms": ["visr", "apt", "aps, kNN feature"]}},
    "primary_parts": ["easy-small"],
}
"""A tiny registered protocol of two parts: a primary one and a larger budget (H3)."""


def write_preregistration(path: Path, protocol: dict = HELD_OUT_PROTOCOL) -> Path:
    block = f"<!-- protocol -->\n```json\n{json.dumps(protocol)}\n```\n<!-- /protocol -->\n"
    path.write_text(f"# A tiny pre-registration\n\n{block}")
    return path


def test_held_out_runs_a_registered_protocol_to_its_end_and_again_skipping_every_run(tmp_path, capsys,
                                                                                      tiny_learners):
    """Through real worker processes: the tiny learner is in the configuration the parent sends them."""
    prereg = write_preregistration(tmp_path / "prereg.md")
    out = tmp_path / "out"
    argv = ["gridworld", "held-out", "--out", str(out), "--preregistration", str(prereg), "--workers", "1"]
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == ("14", "0", "0")  # 4 x 2 + 3 x 2 runs
    assert said["hypotheses"] == str(out / "hypotheses.csv") and said["figure"] == str(out / "held_out.png")
    for part, arms in (("easy-small", 4), ("easy-large", 3)):
        record = json.loads((out / part / "task_families.sweep.json").read_text())
        assert record["train"]["num_envs"] == 2 and record["budget"]["tasks"] == "one per class"
        rows = read_rows(out / part / "task_families.csv")
        assert {row["seed"] for row in rows} == {"10", "11"}
        assert len({row["run_key"] for row in rows}) == arms * 2
        verdicts = read_rows(out / part / "verdicts.csv")
        assert [row["contender"] for row in verdicts] == ["aps, kNN feature"]
        assert verdicts[0]["verdict"] in ("beats both parents", "beats visr only", "beats apt only",
                                          "beats neither")
        summaries = read_rows(out / part / "summary.csv")
        assert len({row["arm"] for row in summaries}) == arms
        assert {row["seeds"] for row in summaries if row["phase"] == "finetuned"} == {"2"}
    pairs = read_rows(out / "easy-small" / "pairs.csv")
    assert [(row["x"], row["y"], row["tasks"]) for row in pairs] == [("aps", "visr", "all")]
    assert not read_rows(out / "easy-large" / "pairs.csv")  # no registered pair among its arms
    hypotheses = read_rows(out / "hypotheses.csv")
    assert [(row["hypothesis"], row["parts"]) for row in hypotheses] == [
        ("H1", "easy-small"), ("H2", "easy-small"), ("H3", "easy-large"), ("H3", "easy-large"),
        ("H5", "easy-small")]
    assert hypotheses[0]["outcome"] == "pending"  # no explore-conditioned arm registered
    small, large = (read_rows(out / part / "verdicts.csv")[0] for part in ("easy-small", "easy-large"))
    won = small["verdict"] == "beats both parents" and small["robust"] == "yes"
    assert hypotheses[1]["outcome"] == ("holds" if won else "does not hold")
    assert hypotheses[1]["details"] == f"easy-small: {verdict_text(small)}"
    assert hypotheses[3]["outcome"] == verdict_text(large)  # the larger budget's verdict, H3
    assert (hypotheses[4]["outcome"], hypotheses[4]["details"]) == (pairs[0]["reading"],
                                                                    interval_text(pairs[0], digits=2))
    assert (out / "held_out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    written = tables(out)
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == ("0", "14", "0")
    assert tables(out) == written


TINY_BUDGET = ["--pretrain-steps", "200", "--identify-steps", "200", "--eval-episodes", "2"]
"""One round of 2 envs x 100 steps per phase, two greedy episodes per evaluation."""


def test_zero_shot_diagnoses_every_task_of_the_family_and_names_its_capping_links(tmp_path, capsys,
                                                                                  in_process):
    out = tmp_path / "diagnosis"
    argv = ["gridworld", "zero-shot", "--out", str(out), "--level", "easy", "--seeds", "3", "--arms", "visr",
            *TINY_BUDGET]
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == ("1", "0", "0")
    assert [said[key] for key in ("results", "capping links", "figure")] == \
        [str(out / name) for name in ("zero_shot.csv", "capping_links.csv", "zero_shot.png")]
    record = json.loads((out / "zero_shot.sweep.json").read_text())
    assert (record["identify_steps"], record["eval_episodes"], record["train"]["num_envs"]) == (200, 2, 2)
    rows = read_rows(out / "zero_shot.csv", ZERO_SHOT_COLUMNS)
    family = gridworld.task_family("easy")
    assert len(rows) == len(family) and {row["seed"] for row in rows} == {"3"}
    assert {row["task"] for row in rows} == {task.name for task in family}
    links = read_rows(out / "capping_links.csv")
    classes = {task.task_class for task in family}
    assert {(row["arm"], row["task_class"]) for row in links} == {("visr", c) for c in classes}
    assert {row["capping_link"] for row in links} <= {"phi", "identification", "psi"}
    assert all(row["pairs"] == str(sum(task.task_class == row["task_class"] for task in family))
               for row in links)
    assert (out / "zero_shot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = tables(out)
    assert main(argv) == 0 and summary(capsys.readouterr().out)["skipped"] == "1"
    assert tables(out) == written


def test_zero_shot_loss_runs_every_arm_and_decides_each_factor(tmp_path, capsys, in_process):
    from aps_teach.studies.zero_shot_loss import ARMS as LOSS_ARMS
    from aps_teach.studies.zero_shot_loss import FACTORS

    out = tmp_path / "loss"
    argv = ["gridworld", "zero-shot-loss", "--out", str(out), "--seeds", "20", "21", *TINY_BUDGET,
            "--identify-steps", "1000"]  # enough to see a reward on easy: a run that sees none stops there
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == (str(2 * len(LOSS_ARMS)), "0", "0")
    assert said["effects"] == str(out / "effects.csv") and said["figure"] == str(out / "zero_shot_loss.png")
    decision = said["decision"].split("; ")
    assert [line.split(":")[0] for line in decision[:3]] == list(FACTORS)
    assert all("2 seeds" in line for line in decision[:3]) and decision[-1].startswith("explanation: ")
    effects = read_rows(out / "effects.csv")
    assert {row["seeds"] for row in effects} == {"2"} and len(effects) == 8
    assert all(float(row["low"]) <= float(row["mean"]) <= float(row["high"]) for row in effects)
    record = json.loads((out / "zero_shot_loss.sweep.json").read_text())
    assert record["budget"]["pretrain_steps"] == 200 and record["train"]["num_envs"] == 2
    written = tables(out)
    assert main(argv) == 0 and summary(capsys.readouterr().out)["skipped"] == str(2 * len(LOSS_ARMS))
    assert tables(out) == written


def test_parts_runs_every_arm_through_the_whole_pipeline(tmp_path, capsys, in_process):
    from aps_teach.studies.aps_parts import ARMS as PART_ARMS

    out = tmp_path / "parts"
    argv = ["gridworld", "parts", "--out", str(out), "--levels", "easy", "--seeds", "1", *TINY_BUDGET,
            "--finetune-steps", "200"]
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["failed"]) == (str(len(PART_ARMS)), "0")
    assert said["figure"] == str(out / "aps_parts.png") and (out / "aps_parts.png").stat().st_size > 1000
    rows = read_rows(out / "aps_parts.csv")
    assert {row["phase"] for row in rows if row["method"] != "random"} >= {"zero_shot", "finetuned"}
    assert len({row["run_key"] for row in rows}) == len(PART_ARMS)
    record = json.loads((out / "aps_parts.sweep.json").read_text())
    assert record["budget"]["pretrain_steps"] == 200 and record["train"]["num_envs"] == 2


ATARI_TINY = ["--num-envs", "2", "--log-every", "50", "--checkpoint-every", "100", "--no-progress",
              "--threads", "1", "--atari.conv-channels", "8", "8", "8", "--atari.psi-hidden", "32",
              "--atari.phi-hidden", "32", "--atari.batch-size", "8", "--atari.n-step", "3", "--atari.k", "3",
              "--atari.pretrain-steps", "200", "--atari.finetune-steps", "100",
              "--atari.min-replay-size", "64", "--atari.pretrain-update-period", "4",
              "--atari.finetune-update-period", "4", "--atari.task-id-steps", "200",
              "--atari.eval-steps", "400", "--atari.max-frames-per-episode", "800",
              "--atari.epsilon-decay-steps", "100"]
"""tests/atari/test_train.py's tiny Atari run as flags: small networks, 800-frame games."""


def test_atari_sweep_runs_to_its_end_and_again_skipping_every_run(tmp_path, capsys, in_process):
    out = tmp_path / "atari"
    argv = ["atari", "sweep", "--out", str(out), "--games", "pong", "--methods", "dqn", "--seeds", "1",
            *ATARI_TINY]
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == ("1", "0", "0")
    assert [said[key] for key in ("scores", "summary", "figure")] == \
        [str(out / name) for name in ("scores.csv", "summary.csv", "scores.png")]
    (row,) = read_rows(out / "scores.csv")
    assert (row["game"], row["method"], row["seed"], row["checkpoint"]) == ("pong", "dqn", "0", "finetune")
    (aggregate,) = read_rows(out / "summary.csv")
    assert aggregate["method"] == "dqn" and (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = tables(out)
    assert main(argv) == 0
    assert summary(capsys.readouterr().out)["skipped"] == "1" and tables(out) == written
