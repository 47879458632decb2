"""The zero-shot diagnosis (`aps_teach.studies.zero_shot`): each exact tool against an independent computation
(a closed form, the tabular module's successor features, brute-force rollouts), and a run's rows."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid.blame import optimal_q
from aps_teach.grid.envs import LevelSpec
from aps_teach.grid.train import TrainConfig, adapt_to_task, pretrain, task_data
from aps_teach.infra.sweeps import RunSpec
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import fit_task
from aps_teach.studies import zero_shot

SMALL = TrainConfig(agent=AgentConfig(hidden=16, batch_size=32), num_envs=4, learning_starts=100,
                    progress=False)


def test_effective_rank_counts_equal_directions():
    assert zero_shot.effective_rank(np.eye(4)) == pytest.approx(4.0)
    assert zero_shot.effective_rank(np.outer(np.arange(1, 6), [1.0, 2.0, 3.0])) == pytest.approx(1.0)
    # two directions, singular values 3 and 1: p = (3/4, 1/4)
    expected = np.exp(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
    assert zero_shot.effective_rank(np.diag([3.0, 1.0])) == pytest.approx(expected)


def test_exact_successor_features_are_the_discounted_sum_along_the_policy():
    """On easy, under a fixed policy, psi(s, a) = sum_t gamma^t phi(s_{t+1}) summed along the deterministic
    path (the target loops to itself), computed here step by step for 2,000 steps."""
    compiled = gridworld.compile_level("easy")
    rng = np.random.default_rng(0)
    features = rng.normal(size=(len(compiled.states), 3))
    policy = rng.integers(4, size=len(compiled.states))
    gamma = 0.9
    psi = zero_shot.exact_successor_features(features, "easy", policy, gamma)
    for state, action in ((0, 1), (5, 3), (40, 0)):
        total, nxt, discount = np.zeros(3), compiled.successor[state, action], 1.0
        for _ in range(2000):
            total += discount * features[nxt]
            discount *= gamma
            nxt = compiled.successor[nxt, policy[nxt]]
        np.testing.assert_allclose(psi[state, action], total, atol=1e-9)


def test_greedy_return_is_one_for_the_optimal_values_and_the_planner_on_the_true_reward_finds_them():
    family = gridworld.task_family("easy")
    for name in ("start room box 1", "behind A box 2", "start room box 1 with green"):
        task = family[name]
        tables = gridworld.compile_level("easy", task=task)
        q = np.zeros(tables.reward.shape)
        for _ in range(gridworld.MAX_EPISODE_STEPS):  # finite-horizon optimal values: the references' DP
            q = tables.reward + q.max(1)[tables.successor]
        assert zero_shot.greedy_return("easy", task, q) == pytest.approx(1.0)
        # the exact planner, discounted, on the task's own reward: near the optimum
        assert zero_shot.greedy_return("easy", task, optimal_q("easy", tables.reward, 0.99)) > 0.95
        # constant values act "up" everywhere: the same return as that policy played through pycolab
        env, returns = gridworld.make("easy", task=task), []
        for start in env.unwrapped.layout.start_cells:
            env.reset(options={"position": start})
            returns.append(sum(env.step(0)[1] for _ in range(gridworld.MAX_EPISODE_STEPS)))
        expected = gridworld.normalised_score(np.mean(returns), *gridworld.task_references("easy", task))
        assert zero_shot.greedy_return("easy", task, np.zeros(q.shape)) == pytest.approx(expected)


def test_the_best_fit_is_exact_when_the_reward_is_linear_in_the_features():
    compiled = gridworld.compile_level("easy")
    task = gridworld.task_family("easy")["start room box 1"]
    on_box = np.array([position in task.cells for position, _ in compiled.states], dtype=float)
    rng = np.random.default_rng(1)
    features = np.column_stack([on_box, rng.normal(size=(len(on_box), 2))])  # the box's indicator is a column
    fit = zero_shot.best_fit(features, "easy", task)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.coefficients.numpy() == pytest.approx([1.0, 0.0, 0.0], abs=1e-9)
    assert zero_shot.planner_score(features, "easy", task, fit.coefficients, 0.99) > 0.95
    assert zero_shot.planner_score(features, "easy", task, None, 0.99) == 0.0


def test_losses_split_the_score_lost_along_the_chain():
    row = {"planner_best": 0.9, "planner_identified": 0.5, "zero_shot": 0.2}
    assert zero_shot.losses(row) == pytest.approx({"phi": 0.1, "identification": 0.4, "psi": 0.3})
    over = {"planner_best": 1.2, "planner_identified": 1.1, "zero_shot": -0.3}  # clipped to [0, 1]
    assert zero_shot.losses(over) == pytest.approx({"phi": 0.0, "identification": 0.0, "psi": 1.0})
    common = {"level": "easy", "method": "aps", "overrides": "", "task_class": "x", "zero_shot_no_gpi": 0,
              "best_case": 0, "r2": 0.5, "psi_error": 0.1, "psi_scale": 1, "psi_agreement": 1,
              "identified": 1}
    rows = [{**common, **row} for row in (row, over)]
    (summary,) = zero_shot.capping_links(rows)
    assert summary["capping_link"] == "psi" and summary["lost_to_psi"] == pytest.approx(0.65)



def test_the_figure_stacks_each_class_losses_in_the_chain_order():
    """One stacked bar per (arm, class): each link's segment as high as its mean loss, starting where the
    previous link's ended; an arm without a class has no bar for it."""
    from aps_teach.studies.plots import plot_capping_links

    links = [{"level": "easy", "arm": "aps", "task_class": "x", "zero_shot": 0.2, "lost_to_phi": 0.1,
              "lost_to_identification": 0.4, "lost_to_psi": 0.3, "capping_link": "identification"},
             {"level": "easy", "arm": "aps", "task_class": "y", "zero_shot": 1.0, "lost_to_phi": 0.0,
              "lost_to_identification": 0.0, "lost_to_psi": 0.0, "capping_link": "phi"},
             {"level": "easy", "arm": "visr", "task_class": "y", "zero_shot": 0.0, "lost_to_phi": 1.0,
              "lost_to_identification": 0.0, "lost_to_psi": 0.0, "capping_link": "phi"}]
    fig = plot_capping_links(links)
    bars = {patch.get_gid(): (patch.get_y(), patch.get_height()) for ax in fig.axes for patch in ax.patches
            if patch.get_gid()}
    assert bars["aps/x/phi"] == pytest.approx((0.0, 0.1))
    assert bars["aps/x/identification"] == pytest.approx((0.1, 0.4))
    assert bars["aps/x/psi"] == pytest.approx((0.5, 0.3))
    assert bars["visr/y/phi"] == pytest.approx((0.0, 1.0))
    assert not any(gid.startswith("visr/x") for gid in bars)

def test_a_run_diagnoses_every_task_of_the_family_and_its_psi_error_is_measured():
    (row, *rest) = zero_shot.run_diagnosis_rows(RunSpec("aps", "easy", 0, ()), 800, 400, 2, SMALL)
    rows = [row, *rest]
    assert [r["task"] for r in rows] == list(gridworld.task_family("easy").names)
    for r in rows:
        assert 1 <= r["effective_rank"] <= 16 and r["identified"] in (0, 1)
        assert 0 <= r["psi_error"] <= 1 and r["psi_scale"] > 0 and 0 <= r["psi_agreement"] <= 1
        assert r["task_class"] == gridworld.task_family("easy")[r["task"]].task_class


def test_psi_error_is_zero_for_a_learner_whose_psi_is_the_exact_successor_features(monkeypatch):
    """psi set to the exact successor features of the optimal policy for phi(s')^T w: greedy on them is that
    policy again (Q^pi* = Q*), so psi is the exact successor features of the policy it induces."""
    learner, _ = pretrain("visr", "easy", 800, 0, SMALL)
    features = zero_shot.state_features(learner, "easy")
    w = torch.nn.functional.normalize(torch.arange(1.0, 17.0), dim=0)
    compiled = gridworld.compile_level("easy")
    reward = (features @ w.double().numpy())[compiled.successor]
    best = optimal_q("easy", reward, learner.config.gamma).argmax(1)
    exact = zero_shot.exact_successor_features(features, "easy", best, learner.config.gamma)
    monkeypatch.setattr(zero_shot, "agent_psi", lambda *args: exact)
    found = zero_shot.psi_quality(learner, features, "easy", w)
    assert found == pytest.approx({"psi_error": 0.0, "psi_scale": 1.0, "psi_agreement": 1.0}, abs=1e-6)
    monkeypatch.setattr(zero_shot, "agent_psi", lambda *args: 1.5 * exact)  # 50% too large, same policy
    found = zero_shot.psi_quality(learner, features, "easy", w)
    assert found == pytest.approx({"psi_error": 0.0, "psi_scale": 1.5, "psi_agreement": 1.0}, abs=1e-6)
    flipped = exact.copy()
    flipped[:, [0, 1]] = exact[:, [1, 0]]  # up and down swapped: another policy, and its values wrong
    monkeypatch.setattr(zero_shot, "agent_psi", lambda *args: flipped)
    found = zero_shot.psi_quality(learner, features, "easy", w)
    assert found["psi_error"] > 0.05 and found["psi_agreement"] < 0.9


def test_a_row_under_a_fix_is_named_by_its_arm_and_the_fix_added_to_it():
    assert zero_shot.diagnosed_arm("aps", "") == ("aps", "")
    fixed = json.dumps([["agent.knn_feature", True], ["agent.explore_conditioned", True],
                        ["agent.feature_dim", 64]])
    d64 = '[["agent.feature_dim", 64]]'
    assert zero_shot.diagnosed_arm("aps", fixed) == ("aps, explore-conditioned", d64)
    assert zero_shot.diagnosed_arm("visr", d64) == ("visr", d64)
    with pytest.raises(ValueError, match="begins no arm of the study"):
        zero_shot.diagnosed_arm("diayn", "")


def test_a_diagnosis_mixing_fixes_of_one_arm_is_refused():
    row = {"level": "easy", "task_class": "behind A", "zero_shot": 0.5, "zero_shot_no_gpi": 0.4,
           "best_case": 0.5, "r2": 0.3, "planner_best": 0.9, "planner_identified": 0.8, "psi_error": 0.1,
           "psi_scale": 1.0, "psi_agreement": 0.5, "identified": 1, "method": "visr"}
    (link,) = zero_shot.capping_links([{**row, "overrides": '[["agent.feature_dim", 64]]'}])
    assert (link["arm"], link["capping_link"]) == ("visr", "psi")  # lost 0.1, 0.1 and 0.3
    with pytest.raises(ValueError, match="one fix per arm"):
        zero_shot.capping_links([{**row, "overrides": ""},
                                 {**row, "overrides": '[["agent.feature_dim", 64]]'}])


def _state(learner):
    return {f"{name}.{key}": value.clone() for name, module in learner._modules().items()
            for key, value in module.state_dict().items()}


def test_under_adapt_psi_each_task_is_measured_on_a_copy_adapted_to_its_identified_w():
    """Issue 60's item 2a in the diagnosis: psi adapted to the task's identified w on the pretraining replay,
    the pretrained learner left as it was for the next task."""
    config = TrainConfig(agent=AgentConfig(method="visr", hidden=16, batch_size=32, adapt_psi=True,
                                           adapt_updates=5), num_envs=4, learning_starts=100, progress=False)
    learner, log = pretrain("visr", "easy", 800, 0, config)
    features = zero_shot.state_features(learner, "easy")
    task = gridworld.task_family("easy")["start room box 1"]
    pretrained = _state(learner)
    row = zero_shot.diagnose_task(learner, features, "easy", task, 7, config, 400, 2, log.replay)
    assert all(torch.equal(value, _state(learner)[name]) for name, value in pretrained.items())
    assert learner.phase == "pretrain" and learner.updates == log.updates
    adapted = copy.deepcopy(learner)
    env = LevelSpec("easy", task=task)
    fit = fit_task(*task_data(adapted, env, 400, 7, config), seed=7)
    adapt_to_task(adapted, log.replay, fit.w, 7)
    assert row["psi_agreement"] == zero_shot.psi_quality(adapted, features, "easy", fit.w)["psi_agreement"]
    assert row["psi_error"] == zero_shot.psi_quality(adapted, features, "easy", fit.w)["psi_error"]
    plain = zero_shot.psi_quality(learner, features, "easy", fit.w)
    assert (row["psi_error"], row["psi_scale"]) != (plain["psi_error"], plain["psi_scale"])
    with pytest.raises(ValueError, match="^adapt_psi trains psi on the pretraining replay, and none was"):
        zero_shot.diagnose_task(learner, features, "easy", task, 7, config, 400, 2)


@pytest.mark.parametrize(("flags", "message"), [
    (["--adapt-updates", "5"], "--adapt-updates sets psi's offline adaptation: it goes with --adapt-psi"),
    (["--identify-ridge", "-1"], "identify_ridge must be >= 0 and finite, got -1.0"),
    (["--adapt-psi", "--adapt-n-step", "0"], "adapt_n_step must be an integer >= 1, got 0"),
])
def test_the_zero_shot_commands_psi_options_refuse_a_bad_value_in_one_line(flags, message, tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    assert gridworld_main(["zero-shot", "--out", str(tmp_path / "out"), "--level", "easy", *flags]) == 2
    assert capsys.readouterr().err == f"aps-teach gridworld: error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_the_zero_shot_commands_psi_options_are_the_fix_its_rows_are_named_by():
    from aps_teach.cli.studies import ZeroShot

    command = ZeroShot(out=Path("out"), level="easy", identify_ridge=2.0, adapt_psi=True, adapt_updates=9)
    assert command.overrides() == (("agent.identify_ridge", 2.0), ("agent.adapt_psi", True),
                                   ("agent.adapt_updates", 9))
    fix = json.dumps([list(pair) for pair in command.overrides()])
    assert zero_shot.diagnosed_arm("visr", fix) == ("visr", fix)
    assert ZeroShot(out=Path("out"), level="easy").overrides() == ()
