"""The fb arm on the gridworld wing (issue 60, item 3): F and B trained offline on the pretraining replay
(`grid.train.fb_from_replay`), no env step, seeds reproduce; its rollouts, identification and evaluation
through the phases every arm goes through; its bad input refused in one line. Tiny budgets."""

import math

import pytest
import torch

from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.train import (
    TrainConfig,
    evaluate,
    fb_from_replay,
    new_learner,
    pretrain,
    task_data,
)
from aps_teach.infra.sweeps import config_dict, config_hash
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.fb import FBLearner, fit_z, infer_z, on_sphere
from tests.grid.conftest import tiny_config

ROUND = 200  # 2 envs x 100-step episode limit


def tiny(method="aps", **agent) -> TrainConfig:
    return tiny_config(method, **agent)


def _weights(*modules) -> list[torch.Tensor]:
    return [p.detach().clone() for module in modules for p in module.state_dict().values()]


@pytest.fixture(scope="module")
def pretrained():
    """A tiny APS pretraining with the fb arm on: its learner and log (the replay kept)."""
    return pretrain("aps", "easy", ROUND, seed=1, config=tiny(fb=True))


def test_f_and_b_train_on_the_pretraining_replay_with_no_env_step_and_repeat_by_seed(pretrained, env_steps):
    learner, log = pretrained
    assert log.replay is not None and log.replay.size == ROUND // 2
    psi_phi = _weights(learner.psi, learner.phi)
    fb, losses = fb_from_replay(learner, log.replay, seed=1, updates=6)
    assert sum(env_steps) == 0  # not one env step
    assert len(losses) == 6 and fb.updates == 6 and all(math.isfinite(x) for x in losses)
    assert all(torch.equal(a, b) for a, b in zip(psi_phi, _weights(learner.psi, learner.phi), strict=True))
    again, repeat = fb_from_replay(learner, log.replay, seed=1, updates=6)
    assert repeat == losses
    trained = _weights(fb.forward_net, fb.backward_net)
    assert all(torch.equal(a, b) for a, b in zip(trained, _weights(again.forward_net, again.backward_net),
                                                 strict=True))
    other, _ = fb_from_replay(learner, log.replay, seed=2, updates=1)
    assert not torch.equal(other.forward_net.input.weight, again.forward_net.input.weight)
    # F and B start from weights of their own, not psi's and phi's
    fresh = FBLearner(learner.config, learner.obs_shape, learner.num_actions, 1,
                      input_columns=learner.board_inputs.columns)
    assert not torch.equal(fresh.forward_net.input.weight, learner.psi.input.weight)


def test_by_default_f_and_b_make_as_many_updates_as_the_pretraining_made(pretrained):
    learner, log = pretrained
    fb, losses = fb_from_replay(learner, log.replay, seed=0)
    assert len(losses) == learner.updates == fb.updates > 0
    # centred by the mean of the replay's observations, frozen
    boards = learner.board_inputs.table.boards[log.replay.data["obs"][:log.replay.size].flatten()]
    torch.testing.assert_close(fb.board_inputs.observation_mean.mean, boards.mean(0))
    assert fb.board_inputs.observation_mean.frozen


def test_the_fb_arm_rolls_out_identifies_and_is_evaluated_as_every_arm_is(pretrained, env_steps):
    learner, log = pretrained
    fb, _ = fb_from_replay(learner, log.replay, seed=1, updates=4)
    config = tiny(fb=True)
    features, rewards = task_data(fb, "easy", ROUND, seed=2, config=config)
    assert sum(env_steps) == ROUND and features.shape == (ROUND, 16) and rewards.shape == (ROUND,)
    assert torch.allclose(features.norm(dim=1), torch.full((ROUND,), 4.0))  # B(s') on the sphere of radius 4
    z, identified = fit_z(features, rewards, seed=2)
    assert z.norm().item() == pytest.approx(4.0)
    if identified:
        assert torch.allclose(z, infer_z(features, rewards))
    result = evaluate(fb, "easy", z, 2, seed=3, config=config)
    assert result.episodes == 2 and 0.0 <= result.success_rate <= 1.0
    with pytest.raises(ValueError, match="the fb arm acts on a task vector w"):
        evaluate(fb, "easy", None, 2, seed=3, config=config)
    with pytest.raises(ValueError, match="no GPI"):
        evaluate(fb, "easy", z, 2, seed=3, config=config, gpi=True)


def test_with_no_reward_seen_the_arm_acts_on_a_z_drawn_from_the_seed():
    z, identified = fit_z(torch.randn(5, 4), torch.zeros(5), seed=7)
    again, _ = fit_z(torch.randn(5, 4), torch.zeros(5), seed=7)
    assert not identified and torch.equal(z, again) and z.norm().item() == pytest.approx(2.0)
    assert torch.allclose(z, on_sphere(z))


def test_the_fb_arm_on_apts_exploration_rolls_out_though_apt_has_no_w():
    learner = new_learner("apt", "easy", 0, tiny("apt", fb=True))
    replay = NStepReplay(4, 2, (), 16, store_rewards=False, obs_dtype=torch.int64)
    for _ in range(4):
        replay.add(obs=torch.tensor([0, 1]), next_obs=torch.tensor([1, 2]), action=torch.tensor([0, 1]),
                   w=torch.zeros(2, 16), terminated=torch.zeros(2, dtype=torch.bool),
                   ended=torch.zeros(2, dtype=torch.bool))
    fb, losses = fb_from_replay(learner, replay, seed=0, updates=2)
    assert len(losses) == 2
    features, _ = task_data(fb, "easy", ROUND, seed=0, config=tiny("apt", fb=True))
    assert features.shape == (ROUND, 16)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: (new_learner("aps", "easy", 0, tiny()), NStepReplay(4, 2, (), 16, store_rewards=False)),
     r"^fb_from_replay trains the fb arm, and this aps learner is not one: set --train.agent.fb"),
    (lambda: (new_learner("aps", "easy", 0, tiny(fb=True)), None),
     r"^the fb arm trains F and B on the pretraining replay, and none was given"),
    (lambda: (new_learner("aps", "easy", 0, tiny(fb=True)), NStepReplay(4, 2, (), 16, store_rewards=True)),
     r"^the fb arm trains on the reward-free pretraining replay; this replay stores task rewards"),
    (lambda: (new_learner("aps", "easy", 0, tiny(fb=True)), NStepReplay(4, 2, (), 16, store_rewards=False)),
     r"^fb updates must be an integer >= 1, got 0"),  # an untrained learner made no update to match
])
def test_training_f_and_b_without_what_they_need_is_one_clear_line(make, message):
    learner, replay = make()
    if replay is not None:
        replay.size = 1
    with pytest.raises(ValueError, match=message) as error:
        fb_from_replay(learner, replay, seed=0)
    assert "\n" not in str(error.value)


def test_bad_fb_arms_are_refused_in_one_line_before_anything_runs():
    with pytest.raises(ValueError, match=r"^adapt_psi=True acts on psi, and the fb arm acts on"):
        new_learner("aps", "easy", 0, tiny(fb=True, adapt_psi=True))
    with pytest.raises(ValueError, match=r"^fb_updates=10 sets the fb arm's F and B, and this learner is no"):
        check_run("easy", Budget(pretrain_steps=ROUND), tiny(fb_updates=10))
    with pytest.raises(ValueError, match=r"^fb=True: no pipeline or study makes the fb arm's zero-shot yet"):
        check_run("easy", Budget(pretrain_steps=ROUND), tiny(fb=True))


def test_transfer_and_the_studies_refuse_the_fb_arm_before_any_work():
    from aps_teach.grid.transfer import run_transfer
    from aps_teach.studies.task_families import FamilyBudget, check_family_plan

    message = r"^fb=True: no pipeline or study makes the fb arm's zero-shot yet"
    with pytest.raises(ValueError, match=message):
        run_transfer("aps", "open10", config=tiny(fb=True))
    with pytest.raises(ValueError, match=message):
        check_family_plan(["easy"], 1, ["aps"], FamilyBudget(pretrain_steps=ROUND), tiny(fb=True))


def test_the_fb_options_are_left_out_of_configuration_records_and_hashes_while_off():
    recorded = config_dict(TrainConfig())["agent"]
    assert not {"fb", "fb_updates", "fb_ortho_coef", "fb_mix_ratio", "fb_target_tau"} & set(recorded)
    assert config_hash(TrainConfig()) == config_hash(TrainConfig(agent=AgentConfig(fb=False)))
    assert config_dict(TrainConfig(agent=AgentConfig(fb=True, fb_updates=5)))["agent"]["fb_updates"] == 5


def test_the_command_line_refuses_a_bad_fb_arm_in_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    out = tmp_path / "run"
    for flags, error in [
        (["--train.agent.fb", "--train.agent.adapt-psi"],
         "adapt_psi=True acts on psi, and the fb arm acts on F(s, a, z)^T z instead: drop it from the fb "
         "arm, or set fb=False"),
        (["--train.agent.fb-updates", "10"],
         "fb_updates=10 sets the fb arm's F and B, and this learner is no fb arm: set fb=True, or drop it"),
        (["--train.agent.fb"],
         "fb=True: no pipeline or study makes the fb arm's zero-shot yet (its scores would be psi's); set "
         "fb=False, or train F and B with grid.train.fb_from_replay"),
        (["--method", "dqn", "--train.agent.fb"],
         "fb trains F and B on the replay of a reward-free exploration, which method 'dqn' has none of; "
         "valid for: visr, apt, aps"),
    ]:
        assert gridworld_main(["run", "--out", str(out), *flags]) == 2
        assert capsys.readouterr().err == f"aps-teach gridworld: error: {error}\n"
    assert not out.exists()


def test_evaluating_a_checkpoint_made_with_the_fb_arm_is_one_line_exit_2(tmp_path, capsys):
    """Only library calls make an fb=True checkpoint; `gridworld evaluate` would score its psi as the
    arm's."""
    import json

    from aps_teach.cli.gridworld import gridworld_main
    from tests.cli.conftest import TINY_FLAGS

    out = tmp_path / "run"
    assert gridworld_main(["pretrain", "--out", str(out), "--steps", "200", *TINY_FLAGS]) == 0
    checkpoint = out / "pretrain" / "checkpoint.pt"
    state = torch.load(checkpoint, weights_only=False)
    state["config"]["agent"]["fb"] = True
    torch.save(state, checkpoint)
    record = json.loads((out / "config.json").read_text())
    record["train"]["agent"]["fb"] = True  # the run's record, as the checkpoint's
    (out / "config.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert gridworld_main(["evaluate", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "aps-teach gridworld: error: fb=True: no pipeline or study makes the fb arm's zero-shot yet (its "
        "scores would be psi's); set fb=False, or train F and B with grid.train.fb_from_replay\n")
