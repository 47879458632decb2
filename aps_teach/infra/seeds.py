"""Every random stream of the package, named: what each one seeds and how it derives from the run's seed.

A run takes one integer seed. Each stream below turns it into the seeds or generator of one job, mixing in
words that keep the streams apart (numpy's `SeedSequence` hashes the word list, so [seed, 0] and
[seed, 1] are unrelated); a stream's numbers never depend on how many draws another stream made, so a
phase, a round or a task can be rerun alone. Changing any derivation here changes every committed number.

| stream               | seeds                                                | words                      |
|----------------------|------------------------------------------------------|----------------------------|
| `round_seeds`        | gridworld: a round's env resets and its draws        | seed, phase, round         |
| `phase_generator`    | Atari: a phase's draws (w, epsilon, batches, shifts) | seed, phase                |
| `game_reset_seed`    | Atari: the games a phase (re)starts                  | seed, phase, env step      |
| `shadow_generator`   | cross-training: learner Y's minibatches and w        | seed, SHADOW               |
| `adapt_generator`    | psi's offline adaptation: its replay minibatches     | seed, ADAPT                |
| `fb_generator`       | the fb arm: F, B's initial weights, minibatches, z   | seed, FB                   |
| `snapshot_generator` | heatmap snapshots: which particles are kept          | (seed * 1_000_003 + round) |
| `task_seed`          | transfer: task t's random reward map                 | seed, t                    |
"""

from __future__ import annotations

import numpy as np
import torch

PHASES = {"pretrain": 0, "finetune": 1, "identify": 2, "evaluate": 3}
"""The phases of a run (both wings), each with the word that keeps its streams apart from the others'."""
SHADOW = 5
"""The word of cross-training's learner Y, apart from every phase's."""
ADAPT = 6
"""The word of psi's offline adaptation to an identified w (`AgentConfig.adapt_psi`), apart from the
others'."""
FB = 7
"""The word of the fb arm's F and B, trained offline on the pretraining replay (`AgentConfig.fb`), apart from
the others'."""


def _generator(words: np.ndarray) -> torch.Generator:
    """A torch generator seeded by two 32-bit words: (words[0] << 32) | words[1]."""
    return torch.Generator().manual_seed(int(words[0]) << 32 | int(words[1]))


def _stream_generator(seed: int, word: int) -> torch.Generator:
    """A torch generator seeded by the first 64-bit word of SeedSequence([seed, word]): a stream apart."""
    first = np.random.SeedSequence([seed, word]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(first))


def round_seeds(seed: int, phase: str, index: int, n: int) -> tuple[list[int], torch.Generator]:
    """Gridworld: reset seeds of the n envs of round `index` of `phase`, and the round's generator (w,
    epsilon-greedy actions, minibatches); the n + 2 words of SeedSequence([seed, PHASES[phase], index])."""
    words = np.random.SeedSequence([seed, PHASES[phase], index]).generate_state(n + 2, dtype=np.uint32)
    return [int(x) for x in words[2:]], _generator(words)


def phase_generator(seed: int, phase: str) -> torch.Generator:
    """Atari: the generator of a whole phase (w, epsilon-greedy actions, minibatches, augmentation), from the
    first two words of SeedSequence([seed, PHASES[phase]])."""
    return _generator(np.random.SeedSequence([seed, PHASES[phase]]).generate_state(2, dtype=np.uint32))


def game_reset_seed(seed: int, phase: str, env_steps: int) -> int:
    """Atari: the reset seed of a phase's games (re)started at `env_steps` (env i gets this + i): the first
    word of SeedSequence([seed, PHASES[phase], env_steps]), shifted right by 2 (room for + i)."""
    return int(np.random.SeedSequence([seed, PHASES[phase], env_steps]).generate_state(1)[0] >> 2)


def shadow_generator(seed: int) -> torch.Generator:
    """Cross-training: learner Y's generator (its minibatches and fresh w), apart from X's streams; the first
    64-bit word of SeedSequence([seed, SHADOW])."""
    return _stream_generator(seed, SHADOW)


def adapt_generator(seed: int) -> torch.Generator:
    """psi's offline adaptation (`grid.train.adapt_to_task`): the generator of its replay minibatches, apart
    from every phase's streams; the first 64-bit word of SeedSequence([seed, ADAPT])."""
    return _stream_generator(seed, ADAPT)


def fb_generator(seed: int) -> tuple[int, torch.Generator]:
    """The fb arm (`grid.train.fb_from_replay`): the seed of F's and B's initial weights and the generator of
    their replay minibatches and z, apart from every phase's streams (so F and B do not start from psi's and
    phi's weights); the first two 64-bit words of SeedSequence([seed, FB]), the first cut to 63 bits."""
    words = np.random.SeedSequence([seed, FB]).generate_state(2, dtype=np.uint64)
    return int(words[0]) >> 1, torch.Generator().manual_seed(int(words[1]))


def snapshot_generator(seed: int, round: int) -> torch.Generator:
    """Heatmap snapshots: which replay states a snapshot after `round` keeps as particles (seed * 1_000_003
    + round: distinct for every round below 1_000_003)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + round)


def task_seed(seed: int, task: int) -> int:
    """Transfer: the seed of task `task`'s random reward map under run seed `seed`, the first word of
    SeedSequence([seed, task]) (the same tasks for every method)."""
    return int(np.random.SeedSequence([seed, task]).generate_state(1)[0])
