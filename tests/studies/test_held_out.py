"""The pre-registered held-out study (`aps_teach.studies.held_out`): the protocol read from its file and held
to it, the arms and protocols it adds to the task-family runner, its hypotheses and committed tables (the
registered statistics themselves: `tests/studies/test_verdicts.py`). Runs use the course's `easy` level at
tiny budgets: the held-out levels stay unseen by the tests."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import gridworld
from aps_teach.grid.train import TrainConfig
from aps_teach.infra.sweeps import RunSpec, read_rows
from aps_teach.learner.config import AgentConfig
from aps_teach.studies import held_out, task_families
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.held_out import (
    check_unchanged,
    hypotheses,
    read_protocol,
    run_part,
    write_part_tables,
)
from aps_teach.studies.task_families import FamilyBudget, class_representatives, run_family_rows
from aps_teach.studies.verdicts import PRIMARY_VARIANTS, welch_readings
from tests.studies.test_verdicts import rows_of

SMALL = (("num_envs", 4), ("learning_starts", 100), ("agent.batch_size", 32), ("agent.hidden", 16))
TRAIN = TrainConfig(agent=AgentConfig(hidden=16, batch_size=8, k=3), num_envs=2, learning_starts=100,
                    updates_per_step=1, finetune_updates_per_step=1, progress=False)
"""A tiny run: one round of 2 envs x 100 steps per phase, one update per step."""
PROTOCOL = {
    "seeds": [10, 11],
    "budget": {"identify_steps": 200, "finetune_steps": 200, "eval_episodes": 2,
               "protocols": ["finetuned", "finetuned_relabelled"]},
    "parts": {"easy-tiny": {"level": "easy", "pretrain_steps": 200,
                            "arms": ["visr", "apt", "aps, explore-conditioned", "dqn, equal budget"]}},
    "primary_parts": ["easy-tiny"],
}


def write_preregistration(path: Path, protocol: dict = PROTOCOL, words: str = "A test protocol.") -> Path:
    block = f"<!-- protocol -->\n```json\n{json.dumps(protocol)}\n```\n<!-- /protocol -->\n"
    path.write_text(f"# Pre-registration\n\n{words}\n\n{block}")
    return path


def test_the_committed_preregistration_is_a_valid_protocol_of_fresh_seeds_on_the_held_out_levels():
    protocol = read_protocol(Path(__file__).parents[2] / "docs" / "preregistration" / "held_out.md")
    assert (protocol.first_seed, protocol.num_seeds) == (10, 10)  # the exploratory study used 0-9
    assert {part.level for part in protocol.parts} == set(gridworld.HELD_OUT)
    assert protocol.primary_parts == ("detour-256k", "fork-256k")
    for part in protocol.parts:
        assert {"visr", "apt", *PRIMARY_VARIANTS, "aps, kNN feature, explore weight 0.5"} <= set(part.arms)
    assert protocol.budget.protocols == ("finetuned", "finetuned_relabelled")


@pytest.mark.parametrize(("text", "message"), [
    (None, "the pre-registration .* is missing"),
    ("# no block here\n", "has no protocol block"),
    ("<!-- protocol -->\n```json\n{not json}\n```\n<!-- /protocol -->", "its protocol block is not a valid"),
    ("<!-- protocol -->\n```json\n{\"seeds\": [10, 11]}\n```\n<!-- /protocol -->", "not a valid protocol"),
])
def test_a_missing_or_malformed_preregistration_is_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "prereg.md"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        read_protocol(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_unknown_arms_levels_and_parts_are_refused_naming_the_valid_ones(tmp_path):
    bad = json.loads(json.dumps(PROTOCOL))
    bad["parts"]["easy-tiny"]["arms"] = ["visr", "ppo"]
    with pytest.raises(ValueError, match="arms \\['ppo'\\] that the study does not have; levels: easy, hard, "
                                         "deep, detour, fork; arms: visr, apt"):
        read_protocol(write_preregistration(tmp_path / "a.md", bad))
    protocol = read_protocol(write_preregistration(tmp_path / "b.md"))
    with pytest.raises(ValueError, match="no part 'nope'; its parts: easy-tiny"):
        protocol.part("nope")


def test_a_part_runs_its_arms_on_the_registered_seeds_and_refuses_a_changed_protocol(tmp_path, capsys):
    from concurrent.futures import ThreadPoolExecutor

    from aps_teach.cli.main import main

    prereg = write_preregistration(tmp_path / "prereg.md")
    protocol = read_protocol(prereg)
    with ThreadPoolExecutor(1) as pool:
        report = run_part(protocol, "easy-tiny", tmp_path / "out", executor=pool, progress=False, train=TRAIN)
    assert len(report.completed) == 8 and not report.failures  # 4 arms x seeds 10, 11
    rows = held_out.read_part(tmp_path / "out", protocol.part("easy-tiny"))
    assert {int(row["seed"]) for row in rows} == {10, 11}
    record = json.loads((tmp_path / "out" / "easy-tiny" / "task_families.sweep.json").read_text())
    assert record["preregistration"] == protocol.sha256
    # the equal-budget dqn: one task per class, and only its fine-tuned phases
    equal = [row for row in rows if arm_name(row["method"], row["overrides"], FAMILY_ARMS)
             == "dqn, equal budget"]
    representatives = [task.name for task in class_representatives(gridworld.task_family("easy"))]
    assert sorted({row["task"] for row in equal}) == sorted(representatives)
    assert {row["phase"] for row in equal} == {"finetuned"}
    # apt fine-tunes from its own policy: no relabelled w to fine-tune from
    apt = {row["phase"] for row in rows if row["method"] == "apt"}
    assert apt == {"zero_shot", "finetuned"}
    paths = write_part_tables(tmp_path / "out", protocol.part("easy-tiny"))
    assert [path.name for path in paths] == ["verdicts.csv", "summary.csv", "pairs.csv"]

    # the text changes after the results: nothing more is written, by the API or the command
    before = sorted(p.name for p in (tmp_path / "out" / "easy-tiny").iterdir())
    changed = read_protocol(write_preregistration(prereg, words="An edited protocol."))
    with pytest.raises(ValueError, match="is not the text the results in .* were started under"):
        run_part(changed, "easy-tiny", tmp_path / "out", progress=False, train=TRAIN)
    argv = ["gridworld", "held-out", "--out", str(tmp_path / "out"), "--preregistration", str(prereg)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(prereg) in err and err.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "out" / "easy-tiny").iterdir()) == before
    # and without the file, nothing starts
    prereg.unlink()
    assert main(argv) == 2 and "is missing" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "out")
    assert main(argv) == 2 and not (tmp_path / "out").exists()


def test_the_equal_budget_dqn_fine_tunes_for_pretraining_plus_fine_tuning_steps(monkeypatch):
    seen = []
    real = task_families.finetune_seeds

    def spy(learners, env, ws, steps, *args, **kwargs):
        seen.append(steps)
        return real(learners, env, ws, steps, *args, **kwargs)

    monkeypatch.setattr(task_families, "finetune_seeds", spy)
    budget = FamilyBudget(pretrain_steps=800, identify_steps=400, finetune_steps=400, eval_episodes=2,
                          protocols=("finetuned",))
    rows = run_family_rows(RunSpec("dqn", "easy", 0, (*SMALL, *FAMILY_ARMS["dqn, equal budget"][1])), budget)
    assert seen == [1200] * 4 and len(rows) == 4  # easy's classes: target, start room (+ green), behind A
    seen.clear()
    run_family_rows(RunSpec("dqn", "easy", 0, SMALL), budget)
    assert seen == [400] * len(gridworld.task_family("easy"))


def test_fine_tuning_from_the_relabelled_replay_uses_its_w(monkeypatch):
    ws = []
    real = task_families.finetune_seeds

    def spy(learners, env, w, steps, *args, **kwargs):
        ws.append([x.clone() for x in w])
        return real(learners, env, w, steps, *args, **kwargs)

    monkeypatch.setattr(task_families, "finetune_seeds", spy)
    budget = FamilyBudget(pretrain_steps=800, identify_steps=400, finetune_steps=400, eval_episodes=2,
                          protocols=("finetuned", "finetuned_relabelled"))
    monkeypatch.setattr(gridworld, "task_family", lambda level: gridworld.families.task_family(level))
    rows = run_family_rows(RunSpec("aps", "easy", 0, SMALL), budget)
    target = [row for row in rows if row["task"] == "target"]
    assert [row["phase"] for row in target] == ["zero_shot", "zero_shot_relabelled", "finetuned",
                                                "finetuned_relabelled"]
    # per task: the identification's w, then the relabelled replay's; they differ
    assert len(ws) == 2 * len(gridworld.task_family("easy"))
    assert not np.allclose(ws[0][0].numpy(), ws[1][0].numpy())


def test_the_ablation_arm_is_the_knn_feature_variant_at_half_the_exploration_weight():
    method, overrides = FAMILY_ARMS["aps, kNN feature, explore weight 0.5"]
    budget, config = task_families.split_overrides(overrides, FamilyBudget(), TrainConfig())
    assert method == "aps" and config.agent.knn_feature and not config.agent.explore_conditioned
    assert config.agent.explore_weight == 0.5 == np.mean([0.0, 1.0])  # beta ~ U[0, 1] has mean 1/2
    assert budget == FamilyBudget()
    budget, config = task_families.split_overrides(FAMILY_ARMS["dqn, equal budget"][1], FamilyBudget(),
                                                   TrainConfig())
    assert (budget.tasks, budget.finetune_adds_pretraining, config) == ("one per class", True, TrainConfig())
    assert budget.scratch_steps == 64_000 + 8_000


def test_seeds_start_where_asked():
    specs = task_families.family_specs(["easy"], 3, ["visr"], first_seed=10)
    assert [spec.seed for spec in specs] == [10, 11, 12]


def test_hypotheses_hold_only_where_every_primary_part_says_so(tmp_path):
    family = gridworld.task_family("easy")
    noise = [-0.01, 0.0, 0.01, 0.02, -0.02]

    def arm(value: float) -> dict:
        return {s: {t.name: value + n for t in family} for s, n in enumerate(noise)}

    def part_rows(win: bool) -> list[dict]:
        return rows_of({"aps, explore-conditioned": arm(0.8 if win else 0.2), "aps, kNN feature": arm(0.2),
                        "visr": arm(0.2), "apt": arm(0.1)})

    protocol = held_out.Protocol(tmp_path / "p.md", "0" * 64, 0, 5, FamilyBudget(), (
        held_out.Part("a", "easy", 800, ("visr", "apt", *PRIMARY_VARIANTS)),
        held_out.Part("b", "easy", 800, ("visr", "apt", *PRIMARY_VARIANTS))), ("a", "b"))
    from aps_teach.infra.files import write_csv_atomic

    for name, win in (("a", True), ("b", False)):
        (tmp_path / name).mkdir()
        rows = [{**row, "run_key": f"{row['method']}-{row['overrides']}-{row['seed']}", "keys_needed": "0",
                 "kind": "box",
                 "room": "x", "state_coverage": "", "visitation_entropy": ""} for row in part_rows(win)]
        write_csv_atomic(tmp_path / name / task_families.RESULTS, rows)
    found = {row["hypothesis"]: row["outcome"] for row in hypotheses(tmp_path, protocol)
             if row["hypothesis"] in ("H1", "H2")}
    assert found == {"H1": "holds on a only", "H2": "does not hold"}


def test_check_unchanged_passes_fresh_and_matching_directories(tmp_path):
    protocol = read_protocol(write_preregistration(tmp_path / "p.md"))
    check_unchanged(protocol, tmp_path / "nothing-yet")
    (tmp_path / "part").mkdir()
    record = tmp_path / "part" / "task_families.sweep.json"
    record.write_text(json.dumps({"preregistration": protocol.sha256}))
    check_unchanged(protocol, tmp_path / "part")
    record.write_text("not json")
    with pytest.raises(ValueError, match="is not a sweep record of this study"):
        check_unchanged(protocol, tmp_path / "part")


def test_the_committed_held_out_tables_are_what_the_pages_state():
    """That they are current, every table rewritten byte for byte from the committed rows, is
    tests/cli/test_documented_commands.py's: it runs the printed held-out command on a copy of them."""
    root = Path(__file__).resolve().parents[2]
    committed = root / "results" / "held_out"
    protocol = read_protocol(root / held_out.PREREGISTRATION)
    page = " ".join((root / "docs" / "studies.md").read_text().split())
    readme = (root / "README.md").read_text()
    landed = [part for part in protocol.parts if (committed / part.name / task_families.RESULTS).exists()]
    assert {part.name for part in landed} >= set(protocol.primary_parts)
    for part in landed:
        for row in read_rows(committed / part.name / "verdicts.csv"):
            said = (f"{float(row['visr_difference']):+.3f} [{float(row['visr_low']):+.3f}, "
                    f"{float(row['visr_high']):+.3f}]")  # against VISR, as the page and README state it
            assert said in page and said in readme, (part.name, row["contender"])
    outcome = {(row["hypothesis"], row["about"]): row["outcome"]
               for row in read_rows(committed / "hypotheses.csv") if row["hypothesis"] in ("H1", "H2", "H3")}
    robust = "beats both parents, robust to leaving out any one class"
    assert outcome == {("H1", "aps, explore-conditioned beats both parents"): "does not hold",
                       ("H2", "aps, kNN feature beats both parents"): "holds on fork-256k only",
                       ("H3", "aps, explore-conditioned beats both parents"): robust,
                       ("H3", "aps, kNN feature beats both parents"): robust}
    assert "**H1 does not hold; H2 holds on `fork-256k` only**" in page
    assert "**H3 (secondary): on `detour` at 1M both variants beat both parents, robustly" in page


def test_the_committed_readings_welch_turns_over_are_the_three_the_pages_call_marginal():
    """Read under Welch's interval, three of the twelve registered readings of the committed parts turn over
    (the explore-conditioned variant's robustness on detour-1m, H4 on detour-256k, H5 on detour-1m), none
    that H1 or H2 is decided from, and none of the exploratory studies' readings; the studies page, the
    README and notebook 07 (tests/course/test_notebooks.py) say so where they state those readings."""
    root = Path(__file__).resolve().parents[2]
    protocol = read_protocol(root / held_out.PREREGISTRATION)
    found = [row for part in protocol.parts
             for row in welch_readings(held_out.read_part(root / "results" / "held_out", part),
                                                part.level, part.name)]
    assert len(found) == 12
    assert [(row["part"], row["reading"]) for row in found if row["marginal"] == "yes"] == [
        ("detour-256k", "H4, aps, explore-conditioned against aps, kNN feature, explore weight 0.5"),
        ("detour-1m", "aps, explore-conditioned against both parents"),
        ("detour-1m", "H5, aps against visr")]
    (robustness,) = [row for row in found if row["part"] == "detour-1m" and row["marginal"] == "yes"
                     and row["reading"].endswith("both parents")]
    assert robustness["welch"] == "beats both parents, not robust (overturned without: behind B)"
    page = " ".join((root / "docs" / "studies.md").read_text().split())
    readme = " ".join((root / "README.md").read_text().split())
    for said in ("no difference found (90% [-0.051, +0.052])", "no difference found (90% [-0.054, +0.048])",
                 "beats both parents, not robust (without `behind B`: [-0.000, +0.155], beats APT only)"):
        assert said in page
    for said in ("Welch's 90% interval [-0.051, +0.052] passes it",
                 "the explore-conditioned one's robustness marginal",
                 "marginal (Welch's 90% interval [-0.054, +0.048]: no difference found)"):
        assert said in readme
    studies = task_families.read_family_studies(
        [root / "results" / folder for folder in ("task_families", "task_families_budget/pretrain_256000",
                                                  "task_families_budget/pretrain_1000000")])
    for steps, rows in studies.items():
        for level in dict.fromkeys(row["level"] for row in rows):
            mine = [row for row in rows if row["level"] == level]
            readings = welch_readings(mine, level)
            assert all(row["marginal"] == "no" for row in readings), (steps, level)


