"""Issue 60's psi-side options on the gridworld pipeline: identification by ridge regression
(`AgentConfig.identify_ridge`) and psi adapted offline to the identified w (`AgentConfig.adapt_psi`), each
off by default; against independent computations, with tiny budgets."""

from dataclasses import replace

import pytest
import torch

from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.train import TrainConfig, identify_task, new_learner, task_data
from aps_teach.infra.sweeps import config_dict, config_hash
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import infer_task, ridge_solution


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
    assert not {"identify_ridge"} & set(recorded)
    assert config_hash(TrainConfig()) == config_hash(TrainConfig(agent=AgentConfig(identify_ridge=0.0)))
    assert config_dict(TrainConfig(agent=AgentConfig(identify_ridge=2.0)))["agent"]["identify_ridge"] == 2.0
