"""Every random stream of `aps_teach.infra.seeds` against its derivation written out here from the table in
its docstring (numpy's SeedSequence over the stream's words): the committed numbers rest on these, so a
change to any derivation must fail here first. And the streams stay apart."""

import numpy as np
import torch

from aps_teach.infra import seeds


def words(entropy: list[int], n: int, dtype=np.uint32) -> np.ndarray:
    return np.random.SeedSequence(entropy).generate_state(n, dtype=dtype)


def same_stream(a: torch.Generator, b: torch.Generator) -> bool:
    return torch.equal(torch.rand(8, generator=a), torch.rand(8, generator=b))


def test_a_round_is_seed_phase_round_its_envs_the_words_after_the_generators_two():
    w = words([7, 0, 3], 4 + 2)  # pretrain is word 0
    resets, generator = seeds.round_seeds(7, "pretrain", 3, 4)
    assert resets == [int(x) for x in w[2:]]
    assert same_stream(generator, torch.Generator().manual_seed(int(w[0]) << 32 | int(w[1])))


def test_atari_phases_and_game_resets_derive_from_the_seed_the_phase_and_the_env_step():
    w = words([5, 1], 2)  # finetune is word 1
    assert same_stream(seeds.phase_generator(5, "finetune"), torch.Generator().manual_seed(int(w[0]) << 32
                                                                                           | int(w[1])))
    assert seeds.game_reset_seed(5, "evaluate", 1_000) == int(words([5, 3, 1_000], 1)[0] >> 2)
    assert seeds.game_reset_seed(5, "evaluate", 1_000) < 2**30  # room for + env index in 32 bits


def test_cross_training_snapshots_and_transfer_tasks_have_their_own_words():
    shadow = int(words([9, seeds.SHADOW], 1, np.uint64)[0])
    assert same_stream(seeds.shadow_generator(9), torch.Generator().manual_seed(shadow))
    assert same_stream(seeds.snapshot_generator(2, 4), torch.Generator().manual_seed(2 * 1_000_003 + 4))
    assert seeds.task_seed(3, 11) == int(words([3, 11], 1)[0])


def test_the_fb_arm_has_its_own_word_for_its_weights_and_its_draws():
    first, second = words([9, seeds.FB], 2, np.uint64)
    weights, generator = seeds.fb_generator(9)
    assert weights == int(first) >> 1 and 0 <= weights < 2**63
    assert same_stream(generator, torch.Generator().manual_seed(int(second)))
    assert seeds.FB not in {*seeds.PHASES.values(), seeds.SHADOW, seeds.ADAPT}


def test_the_streams_of_one_wing_are_apart():
    """Within a gridworld run (rounds of each phase, the shadow learner) and within an Atari run (each phase's
    generator): all different."""
    gridworld = [seeds.round_seeds(0, "pretrain", 0, 1)[1], seeds.round_seeds(0, "finetune", 0, 1)[1],
                 seeds.round_seeds(0, "pretrain", 1, 1)[1], seeds.shadow_generator(0)]
    atari = [seeds.phase_generator(0, phase) for phase in seeds.PHASES]
    for generators in (gridworld, atari):
        draws = [torch.rand(4, generator=g) for g in generators]
        assert all(not torch.equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])
    assert len(set(seeds.PHASES.values()) | {seeds.SHADOW}) == len(seeds.PHASES) + 1


def test_a_trailing_zero_word_changes_nothing_so_the_wings_share_some_words():
    """SeedSequence drops trailing zero words: [seed, 0, 0] is [seed, 0]. So the gridworld's round 0 of
    pretraining draws what the Atari wing's pretraining generator draws, and a transfer task 0's map seed is
    that generator's first word. No run uses two of these (each is one wing's or one study's), so nothing
    committed is correlated; a new stream must not rely on a zero word to tell it apart."""
    same = seeds.round_seeds(4, "pretrain", 0, 1)[1], seeds.phase_generator(4, "pretrain")
    assert same_stream(*same)
    assert seeds.task_seed(4, 0) == int(words([4, 0, 0], 1)[0])
