"""Issue 57's cause, as a regression test: at the paper's fine-tuning learning rate (1e-3) a learner trained
from scratch on Atari lost every unit of psi's torso (Q constant over states, one action played always), so
nothing learned. At the default rate, 1000 updates of the paper's networks on Kung Fu Master frames leave
psi's torso as alive as it started; at 1e-3 most of its still-live units are dead by then (measured over
seeds 0-2 on random-play frames: 0.71-0.76 of the units dead at 1e-4, 0.93-0.95 at 1e-3; about half are dead
at initialisation on these look-alike frames)."""

import numpy as np
import torch

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.networks import dead_units
from aps_teach.atari.update_step import UpdateStep
from aps_teach.infra.phases import single_thread


def test_the_default_fine_tuning_rate_keeps_a_from_scratch_learners_torso_alive():
    config = AtariConfig()  # the paper's networks and the default fine-tuning rate
    envs = make_vector_env("kung_fu_master", 8, config, seed=0, training=True)
    envs.reset(seed=0)
    replay = FrameReplay(400, 8, (84, 84), 4, config.feature_dim, store_rewards=True)
    learner = AtariLearner(config, "dqn", envs.num_actions, seed=0)
    learner.start_finetune()
    w, rng, gen = learner.default_task(8), np.random.default_rng(0), torch.Generator().manual_seed(0)
    for _ in range(300):
        tr = envs.step(rng.integers(envs.num_actions, size=8))
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid,
                   reward=np.clip(tr.reward, -1, 1))
    envs.close()
    probe = torch.cat([replay.sample(64, 1, gen).obs for _ in range(2)])
    update = UpdateStep(learner, config, windows=False)
    with single_thread():
        for _ in range(1000):
            update(replay.sample(config.batch_size, config.n_step, gen, False), gen)
    dead = dead_units(learner.psi, probe)
    hidden = learner.psi.torso(probe.float() / 255)  # the function against its definition, by hand
    assert dead == float(((hidden > 0).sum(0) == 0).float().mean())
    assert dead < 0.85, f"{dead:.2f} of psi's torso units are dead after 1000 updates"
