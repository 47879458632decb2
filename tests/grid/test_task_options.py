"""Issue 60's psi-side options on the gridworld pipeline: identification by ridge regression
(`AgentConfig.identify_ridge`) and psi adapted offline to the identified w (`AgentConfig.adapt_psi`), each
off by default; against independent computations, with tiny budgets."""

import json
from dataclasses import replace

import pytest
import torch

from aps_teach.grid import experiments
from aps_teach.grid.experiments import Budget, check_run, run_gridworld, run_pipeline
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.train import (
    SuccessResult,
    TrainConfig,
    adapt_to_task,
    evaluate,
    identify_task,
    new_learner,
    pretrain,
    task_data,
)
from aps_teach.infra.sweeps import config_dict, config_hash
from aps_teach.learner import tasks
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import infer_task, ridge_solution
from tests.grid.conftest import tiny_config


def test_identify_task_fits_by_ridge_with_the_learners_identify_ridge():
    learner = new_learner("visr", "easy", seed=0, config=TrainConfig(agent=AgentConfig(identify_ridge=50.0)))
    config = TrainConfig(agent=learner.config, epsilon_end=1.0, num_envs=4, progress=False)
    features, rewards = task_data(learner, "easy", 400, seed=2, config=config)
    assert rewards.sum() > 0
    identified = identify_task(learner, "easy", 400, seed=2, config=config)
    x, r = features.double(), rewards.double()
    closed = torch.linalg.solve(x.T @ x + 50.0 * torch.eye(x.shape[1], dtype=x.dtype), x.T @ r)
    torch.testing.assert_close(identified.double(), closed / closed.norm(), rtol=0, atol=1e-6)
    torch.testing.assert_close(ridge_solution(x, r, 50.0), closed, rtol=1e-9, atol=1e-12)
    assert not torch.allclose(identified, infer_task(features, rewards), atol=1e-3)  # the ridge did shrink


@pytest.mark.parametrize("method", ["apt", "dqn"])
def test_an_option_on_the_identified_w_is_refused_for_a_method_without_one(method):
    config = TrainConfig(agent=AgentConfig(identify_ridge=1.0), progress=False)
    message = (r"^identify_ridge=1.0 acts on an identified task vector w, which method '.*' has none of; "
               r"valid for: visr, aps$")
    with pytest.raises(ValueError, match=message):
        check_run("easy", Budget(pretrain_steps=200), config, method=method)
    with pytest.raises(ValueError, match=message):
        new_learner(method, "easy", 0, config)
    check_run("easy", Budget(pretrain_steps=200), config, method="visr")  # visr and aps identify a w
    check_run("easy", Budget(pretrain_steps=200), replace(config, agent=AgentConfig()), method=method)


def test_the_options_are_left_out_of_configuration_records_and_hashes_while_off():
    """Committed results' records and fingerprints (`sweeps.config_hash`) stay those they ran with."""
    recorded = config_dict(TrainConfig())["agent"]
    assert not {"identify_ridge", "adapt_psi", "adapt_updates", "adapt_n_step"} & set(recorded)
    assert config_hash(TrainConfig()) == config_hash(TrainConfig(agent=AgentConfig(identify_ridge=0.0)))
    assert config_dict(TrainConfig(agent=AgentConfig(identify_ridge=2.0)))["agent"]["identify_ridge"] == 2.0


# psi adapted offline to the identified w (AgentConfig.adapt_psi)

ROUND = 200  # 2 envs x 100-step episode limit
BUDGET = Budget(pretrain_steps=ROUND, finetune_steps=ROUND, identify_steps=ROUND, eval_episodes=2)


def tiny(method="visr", **agent) -> TrainConfig:
    return tiny_config(method, **agent)


def _weights(learner):
    return {f"{name}.{key}": value.clone() for name, module in learner._modules().items()
            for key, value in module.state_dict().items()}


def test_adaptation_takes_no_env_step_and_makes_its_updates_on_the_pretraining_replay(env_steps):
    config = tiny(adapt_psi=True, adapt_updates=6)
    learner, log = pretrain("visr", "easy", ROUND, seed=1, config=config)
    assert log.replay is not None and log.replay.size == ROUND // 2
    w = torch.nn.functional.normalize(torch.arange(1.0, 17.0), dim=0)
    before, updates, phi = sum(env_steps), learner.updates, _weights(learner)
    losses = adapt_to_task(learner, log.replay, w, seed=1)
    assert sum(env_steps) == before  # not one env step
    assert len(losses) == 6 and learner.updates == updates + 6 and learner.phase == "finetune"
    assert all(torch.equal(value, _weights(learner)[name]) for name, value in phi.items()
               if name.startswith("phi."))
    again, _ = pretrain("visr", "easy", ROUND, seed=1, config=config)
    assert torch.equal(torch.tensor(adapt_to_task(again, log.replay, w, seed=1)), torch.tensor(losses))
    assert all(torch.equal(value, _weights(again)[name]) for name, value in _weights(learner).items())


def test_the_pipeline_adapts_psi_between_identification_and_zero_shot_without_a_step_more(env_steps,
                                                                                          monkeypatch):
    # evaluations stop early once every episode ended, so their steps depend on the policy: left out
    monkeypatch.setattr(experiments, "evaluate", lambda *args, **kwargs: SuccessResult(0.0, 0.0, 2))
    off_learner, off = run_pipeline("visr", "easy", 2, BUDGET, tiny())
    off_steps = sum(env_steps)
    on_learner, on = run_pipeline("visr", "easy", 2, BUDGET, tiny(adapt_psi=True, adapt_updates=5))
    assert sum(env_steps) - off_steps == off_steps  # the same env steps, adaptation adds none
    assert on_learner.updates == off_learner.updates + 5
    assert on.task_w == off.task_w  # identified before the adaptation, from the same pretraining


def test_with_the_options_off_the_pipeline_never_enters_their_code(monkeypatch):
    def entered(*args, **kwargs):
        raise AssertionError("an option that is off ran its code")

    monkeypatch.setattr(experiments, "adapt_to_task", entered)
    monkeypatch.setattr(tasks, "ridge_solution", entered)
    learner, result = run_pipeline("visr", "easy", 2, BUDGET, tiny())
    _, log = pretrain("visr", "easy", ROUND, seed=2, config=tiny())
    assert log.replay is None  # no replay kept alive that nothing reads


def test_a_finished_pretraining_loaded_again_keeps_its_replay_for_the_adaptation(tmp_path):
    config = tiny(adapt_psi=True)
    _, first = pretrain("visr", "easy", ROUND, seed=3, config=config, run_dir=tmp_path)
    _, loaded = pretrain("visr", "easy", ROUND, seed=3, config=config, run_dir=tmp_path, resume=True)
    assert loaded.replay.size == first.replay.size
    assert all(torch.equal(loaded.replay.data[k], first.replay.data[k]) for k in first.replay.data)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: (new_learner("visr", "easy", 0, tiny(adapt_psi=True)), None),
     r"^adapt_psi trains psi on the pretraining replay, and none was given: .*or set adapt_psi=False$"),
    (lambda: (new_learner("visr", "easy", 0), NStepReplay(4, 2, (), 16, store_rewards=False)),
     r"^adapt_psi trains psi on the pretraining replay, and none was given"),
    (lambda: (new_learner("visr", "easy", 0), NStepReplay(4, 2, (), 16, store_rewards=True)),
     r"^adapt_psi trains on the reward-free pretraining replay; this replay stores task rewards"),
])
def test_an_adaptation_without_a_pretraining_replay_is_one_clear_line(make, message):
    learner, replay = make()
    if replay is not None and replay.data.get("reward") is not None:
        replay.size = 1
    with pytest.raises(ValueError, match=message):
        adapt_to_task(learner, replay, torch.ones(16) / 4, seed=0)


def test_an_adaptation_for_a_method_without_a_w_is_refused_before_anything_runs(tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    with pytest.raises(ValueError, match=r"^adapt_psi=True acts on an identified task vector w, which method "
                                         r"'apt' has none of; valid for: visr, aps$"):
        run_gridworld("apt", "easy", seed=0, budget=BUDGET, config=tiny(adapt_psi=True))
    out = tmp_path / "run"
    assert gridworld_main(["run", "--out", str(out), "--method", "dqn", "--train.agent.adapt-psi"]) == 2
    assert capsys.readouterr().err == ("aps-teach gridworld: error: adapt_psi=True acts on an identified "
                                       "task vector w, which method 'dqn' has none of; valid for: visr, "
                                       "aps\n")
    assert gridworld_main(["run", "--out", str(out), "--train.agent.identify-ridge", "-1"]) == 2
    assert capsys.readouterr().err == ("aps-teach gridworld: error: identify_ridge must be >= 0 and finite, "
                                       "got -1.0\n")
    assert not out.exists()


def test_the_command_line_takes_the_options_and_gives_the_library_numbers(tmp_path):
    from aps_teach.cli.gridworld import gridworld_main

    argv = ["run", "--out", str(tmp_path), "--method", "visr", "--seed", "4", "--pretrain-steps", "200",
            "--finetune-steps", "200", "--identify-steps", "200", "--eval-episodes", "2",
            "--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
            "--train.agent.hidden", "16", "--train.agent.batch-size", "8", "--train.agent.n-step", "3",
            "--train.agent.k", "3", "--train.agent.target-update-period", "20",
            "--train.checkpoint-every", "1",
            "--train.agent.adapt-psi", "--train.agent.adapt-updates", "4", "--train.agent.adapt-n-step", "2",
            "--train.agent.identify-ridge", "30"]
    assert gridworld_main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    saved = json.loads((tmp_path / "config.json").read_text())["train"]["agent"]
    assert (saved["adapt_psi"], saved["adapt_updates"], saved["adapt_n_step"], saved["identify_ridge"]) == \
        (True, 4, 2, 30.0)
    config = tiny(adapt_psi=True, adapt_updates=4, adapt_n_step=2, identify_ridge=30.0)
    result = run_gridworld("visr", "easy", seed=4, budget=Budget(pretrain_steps=200, finetune_steps=200,
                                                                 identify_steps=200, eval_episodes=2),
                           config=config)
    for key in ("zero_shot_return", "finetuned_return", "task_w"):
        assert summary[key] == getattr(result, key)


def test_a_replay_rebuilt_from_its_state_is_the_same_replay(tmp_path):
    config = tiny(adapt_psi=True)
    _, log = pretrain("visr", "easy", 2 * ROUND, seed=5, config=config)
    rebuilt = NStepReplay.from_state_dict(log.replay.state_dict())
    assert rebuilt.size == rebuilt.capacity == log.replay.size and rebuilt.num_envs == log.replay.num_envs
    assert all(torch.equal(rebuilt.data[key], log.replay.data[key]) for key in log.replay.data)
    one, two = (replay.sample(16, 3, torch.Generator().manual_seed(0)) for replay in (log.replay, rebuilt))
    assert all(a is b or torch.equal(a, b) for a, b in zip(one, two, strict=True))
    with pytest.raises(ValueError, match="^not a replay's state"):
        NStepReplay.from_state_dict({"size": 3})


def test_evaluating_a_pretrained_run_adapts_psi_as_the_run_would(tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    flags = ["--seed", "6", "--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
             "--train.agent.hidden", "16", "--train.agent.batch-size", "8", "--train.agent.n-step", "3",
             "--train.agent.k", "3", "--train.agent.target-update-period", "20", "--train.checkpoint-every",
             "1", "--train.agent.adapt-psi", "--train.agent.adapt-updates", "3"]
    out = ["--out", str(tmp_path)]
    assert gridworld_main(["pretrain", *out, "--method", "visr", "--steps", "200", *flags]) == 0
    capsys.readouterr()
    assert gridworld_main(["evaluate", *out, "--identify-steps", "200", "--episodes", "2"]) == 0
    printed = dict(line.strip().split(": ", 1) for line in capsys.readouterr().out.splitlines())
    config = tiny(adapt_psi=True, adapt_updates=3)
    learner, log = pretrain("visr", "easy", ROUND, seed=6, config=config)
    w = identify_task(learner, "easy", ROUND, 6, config)
    adapt_to_task(learner, log.replay, w, 6)
    result = evaluate(learner, "easy", w, 2, 6, config)
    assert float(printed["mean_return"]) == result.mean_return and printed["checkpoint"] == "pretrain"


def test_transfer_refuses_an_adaptation_it_would_not_make_before_any_work():
    from aps_teach.grid.transfer import run_transfer

    with pytest.raises(ValueError, match=r"^adapt_psi=True: transfer does not adapt psi to the identified w"):
        run_transfer("visr", "open10", config=tiny(adapt_psi=True))


@pytest.mark.parametrize("where", ["the task-family study", "the budget study"])
def test_the_studies_that_do_not_adapt_refuse_an_adaptation_before_any_work(where):
    from aps_teach.studies.budget import StudyGrid
    from aps_teach.studies.task_families import FamilyBudget, check_family_plan

    train = tiny(adapt_psi=True)
    with pytest.raises(ValueError, match=rf"^adapt_psi=True: {where} does not adapt psi to the identified w"):
        if where == "the budget study":
            StudyGrid(methods=("visr",), levels=("easy",), pretrain_steps=(200,), identify_steps=(200,),
                      train=train).check_plan()
        else:
            check_family_plan(["easy"], 1, ["visr"], FamilyBudget(200, 200), train)
