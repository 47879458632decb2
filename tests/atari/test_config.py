"""AtariConfig: the paper's defaults, a source for every field checked against the paper's LaTeX lines,
and a clear error for every bad value."""

import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from aps_teach.atari.agent import AtariLearner, agent_config
from aps_teach.atari.config import AtariConfig, field_docs, learner_fields, sources_table
from aps_teach.cli.main import main
from aps_teach.learner.config import AgentConfig

PAPER = [p / "shared/paper/aps_liu_abbeel_2021.tex" for p in Path(__file__).resolve().parents]


def test_defaults_are_the_papers_numbers():
    c = AtariConfig()
    assert (c.frame_size, c.frame_stack, c.action_repeat, c.max_frames_per_episode) == (84, 4, 4, 108_000)
    assert c.terminal_on_life_loss and c.reward_clip == 1.0 and c.repeat_action_probability == 0.0
    assert (c.n_step, c.gamma, c.batch_size, c.target_update_period, c.max_grad_norm) == (
        10, 0.99, 32, 100, 10)
    assert (c.lr, c.finetune_lr, c.adam_eps, c.adam_beta1, c.adam_beta2) == (
        1e-4, 1e-4, 1.5e-4, 0.9, 0.999)
    assert (c.conv_channels, c.conv_kernels, c.conv_strides) == ((32, 64, 64), (8, 4, 3), (4, 2, 1))
    assert (c.feature_dim, c.phi_hidden, c.psi_hidden, c.shift_pad) == (5, 1024, 512, 4)
    assert (c.pretrain_steps, c.task_id_steps, c.task_id_episodes, c.finetune_steps, c.eval_steps) == (
        5_000_000, 40_000, 10, 60_000, 125_000)
    assert (c.min_replay_size, c.replay_capacity, c.task_resample_every) == (1600, None, 10)
    assert (c.pretrain_update_period, c.finetune_update_period) == (1, 1)
    assert (c.epsilon_decay_steps, c.gpi_samples) == (2500, 10)


def test_conv_output_size_is_the_nature_dqn_7x7():
    # 84 -> (84-8)/4+1 = 20 -> (20-4)/2+1 = 9 -> 9-3+1 = 7
    assert AtariConfig().conv_output_size() == 7
    # the text's DrQ encoder: 84 -> 41 -> 39 -> 37 -> 35
    drq = AtariConfig(conv_channels=(32,) * 4, conv_kernels=(3,) * 4, conv_strides=(2, 1, 1, 1))
    assert drq.conv_output_size() == 35


def test_every_field_cites_the_paper_or_says_it_is_not_in_it():
    docs = field_docs()
    assert set(docs) == {f.name for f in fields(AtariConfig)}
    for name, doc in docs.items():
        assert "Paper:" in doc or "Not in the paper" in doc, name
    table = sources_table()
    assert table.count("\n") == len(docs) + 1 and "| `n_step` | `10` |" in table


def test_quoted_paper_rows_are_on_the_cited_lines():
    paper = next((p for p in PAPER if p.exists()), None)
    if paper is None:
        pytest.skip("the paper's LaTeX source is not beside this checkout")
    lines = paper.read_text().splitlines()
    checked = 0
    for name, doc in field_docs().items():
        for quote, numbers in re.findall(r'"([^"]+)" \(l\. ([\d, ]+)\)', doc):
            for n in numbers.split(","):
                assert quote in lines[int(n) - 1], (name, quote, n, lines[int(n) - 1])
                checked += 1
    assert checked >= 35


POSITIVE = "(0, 1.84467e+19] (its square must fit in float32)"
"""What a learning rate or reward clip may be."""
WEIGHT = "a finite number in [-1.84467e+19, 1.84467e+19] (its square must fit in float32)"
"""What a reward weight may be."""


@pytest.mark.parametrize("change, message", [
    ({"frame_size": 0}, "frame_size must be an integer >= 1"),
    ({"n_step": 2.5}, "n_step must be an integer >= 1"),
    ({"batch_size": True}, "batch_size must be an integer >= 1"),
    ({"noop_max": -1}, "noop_max must be an integer >= 0"),
    ({"lr": 0.0}, f"lr must be in {POSITIVE}, got 0.0"),
    ({"gamma": 1.5}, "gamma must be in"),
    ({"gamma": 0.0}, "gamma must be in"),
    ({"repeat_action_probability": 1.2}, "repeat_action_probability must be in"),
    ({"adam_beta2": 1.0}, "adam_beta2 must be in"),
    ({"epsilon_start": 0.05, "epsilon_end": 0.1}, "epsilon_end"),
    ({"reward_clip": 0.0}, f"reward_clip must be in {POSITIVE}, got 0.0 (or None: raw rewards)"),
    ({"reward_clip": float("inf")}, f"reward_clip must be in {POSITIVE}, got inf"),
    ({"lr": float("inf")}, f"lr must be in {POSITIVE}, got inf"),
    ({"lr": 1e308}, f"lr must be in {POSITIVE}, got 1e+308"),
    ({"exploit_weight": float("nan")}, f"exploit_weight must be {WEIGHT}, got nan"),
    ({"explore_weight": float("inf")}, f"explore_weight must be {WEIGHT}, got inf"),
    ({"intensity_scale": -0.1}, "intensity_scale"),
    ({"max_frames_per_episode": 3}, "max_frames_per_episode (3) must be at least action_repeat"),
    ({"replay_capacity": 8}, "replay_capacity must be None"),
    ({"conv_kernels": (8, 4)}, "one entry per conv layer"),
    ({"conv_channels": (), "conv_kernels": (), "conv_strides": ()}, "one entry per conv layer"),
    ({"conv_strides": (4, 0, 1)}, "conv_strides must hold integers >= 1"),
    ({"frame_size": 20}, "shrink a 20x20 frame to nothing"),
])
def test_bad_values_are_rejected_with_a_clear_error(change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        AtariConfig(**change)


def test_none_clip_and_unbounded_replay_are_valid():
    c = AtariConfig(reward_clip=None, replay_capacity=None)
    assert c.reward_clip is None and c.replay_capacity is None


LEARNER_FIELDS = {"feature_dim", "k", "knn_exponent", "knn_normalise", "shared_encoder", "nstep_reward",
                  "exploit_weight", "explore_weight", "sf_loss", "gpi", "gpi_samples", "gamma",
                  "bootstrap_through_termination", "n_step", "batch_size", "lr", "finetune_lr", "adam_eps",
                  "max_grad_norm", "target_update_period", "contrastive_temperature", "knn_phi_normalised"}
"""The `AgentConfig` fields `AtariConfig` names too: all but the method (a command's choice), the MLP width
and kNN representation (the conv networks have their own) and the observation mean (frames need none)."""


def test_the_learner_gets_every_field_the_atari_config_shares_with_it_by_name():
    assert set(learner_fields(AtariConfig())) == LEARNER_FIELDS
    changed = AtariConfig(feature_dim=7, k=4, knn_exponent=2.0, knn_normalise=False, shared_encoder=False,
                          nstep_reward="sum", exploit_weight=0.5, explore_weight=2.0, sf_loss="scalar",
                          gpi=False, gpi_samples=3, gamma=0.9, bootstrap_through_termination=False, n_step=5,
                          batch_size=16, lr=3e-4, finetune_lr=2e-3, adam_eps=1e-5, max_grad_norm=5.0,
                          target_update_period=50, contrastive_temperature=0.2, knn_phi_normalised=False)
    default, agent = AtariConfig(), agent_config(changed, "apt")
    assert all(getattr(changed, name) != getattr(default, name) for name in LEARNER_FIELDS)
    assert {name: getattr(agent, name) for name in LEARNER_FIELDS} == \
        {name: getattr(changed, name) for name in LEARNER_FIELDS}
    assert agent.method == "apt" and not agent.normalise_observations
    assert AgentConfig().hidden == agent.hidden and AgentConfig().representation == agent.representation


def test_the_atari_command_line_offers_the_learners_ablations(capsys):
    with pytest.raises(SystemExit):
        main(["atari", "run", "--help"])
    shown = capsys.readouterr().out
    for flag in ("--atari.k", "--atari.lr", "--atari.finetune-lr", "--atari.gpi-samples",
                 "--atari.task-resample-every", "--atari.sf-loss", "--atari.shared-encoder",
                 "--atari.exploit-weight", "--atari.explore-weight", "--atari.knn-normalise",
                 "--atari.knn-exponent", "--atari.bootstrap-through-termination",
                 "--atari.contrastive-temperature"):
        assert f"{flag} " in shown or f"{flag}\n" in shown or f"{flag}," in shown, flag


def test_an_atari_ablation_reaches_the_learners_networks():
    small = AtariConfig(conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32, batch_size=8, k=3)
    assert AtariLearner(small, "aps", 6, seed=0).rep is None  # Eq. 6: the kNN on phi
    separate = AtariLearner(replace(small, shared_encoder=False), "aps", 6, seed=0)
    assert type(separate.rep).__name__ == "AtariFeatureNet" and separate.phi is not None
    assert AtariLearner(replace(small, knn_normalise=False), "aps", 6, seed=0).normaliser is None
