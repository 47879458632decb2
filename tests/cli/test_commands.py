"""Every study command's success path, through `main` at a tiny budget to its end: exit status 0, the files
its summary says it wrote, holding what they should; a second call skips every run and rewrites its tables
byte for byte. Runs are tiny (`conftest.tiny_learners`: 2 envs, a 16-unit learner) on the course's `easy`
level (the held-out levels stay unseen by the tests)."""

import json
from pathlib import Path

from aps_teach.cli.main import main
from aps_teach.infra.sweeps import read_rows
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
    assert hypotheses[1]["outcome"] in ("holds", "does not hold")
    assert (out / "held_out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    written = tables(out)
    assert main(argv) == 0
    said = summary(capsys.readouterr().out)
    assert (said["completed"], said["skipped"], said["failed"]) == ("0", "14", "0")
    assert tables(out) == written
