"""Human-normalised Atari scores and their aggregates: mean, median, IQM and super-human count of the
per-game scores (`aggregates`, as the paper's table), and rliable's IQM over runs x games with its
stratified-bootstrap interval (`run_aggregates`).

normalised = (score - random) / (human - random): 0 plays like a uniformly random policy, 1 like the
professional human tester. The random and human scores of the 57 games are the ones the paper cites
from Hessel et al. (2018, Rainbow), taken from DeepMind's DQN Zoo (`dqn_zoo/atari_data.py`, Apache 2.0:
returns averaged over episodes that start with up to 30 no-ops and last at most 108k frames).
Cross-checked game by game against two further public copies (the baseline scores of the `xtils`
library's Atari domain, both columns; Google Research's `reincarnating_rl/atari_scores.py`, random
column): all values agree except Video Pinball's random score, 16,256.9 in DQN Zoo and xtils but 0.0
in reincarnating_rl (and in the APS paper's table); we keep DQN Zoo's.

The APS paper's own tables differ from these references in places, typos we do not copy: Asteroids'
random 7191 (719.1), Beam Rider's human 16826.5 (16926.5), Centipede's human 12017.1 (12017.0), Crazy
Climber's human 23829.4 (35829.4), Demon Attack's random 107805 and human 35829.4 (152.1 and 1971.0),
Video Pinball's random 0.0 (16256.9).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats

from aps_teach.atari.envs import check_game
from aps_teach.infra.stats import iqm_with_ci

# game (ale-py ROM id): (random score, human score)
REFERENCE_SCORES: dict[str, tuple[float, float]] = {
    "alien": (227.8, 7127.7),
    "amidar": (5.8, 1719.5),
    "assault": (222.4, 742.0),
    "asterix": (210.0, 8503.3),
    "asteroids": (719.1, 47388.7),
    "atlantis": (12850.0, 29028.1),
    "bank_heist": (14.2, 753.1),
    "battle_zone": (2360.0, 37187.5),
    "beam_rider": (363.9, 16926.5),
    "berzerk": (123.7, 2630.4),
    "bowling": (23.1, 160.7),
    "boxing": (0.1, 12.1),
    "breakout": (1.7, 30.5),
    "centipede": (2090.9, 12017.0),
    "chopper_command": (811.0, 7387.8),
    "crazy_climber": (10780.5, 35829.4),
    "defender": (2874.5, 18688.9),
    "demon_attack": (152.1, 1971.0),
    "double_dunk": (-18.6, -16.4),
    "enduro": (0.0, 860.5),
    "fishing_derby": (-91.7, -38.7),
    "freeway": (0.0, 29.6),
    "frostbite": (65.2, 4334.7),
    "gopher": (257.6, 2412.5),
    "gravitar": (173.0, 3351.4),
    "hero": (1027.0, 30826.4),
    "ice_hockey": (-11.2, 0.9),
    "jamesbond": (29.0, 302.8),
    "kangaroo": (52.0, 3035.0),
    "krull": (1598.0, 2665.5),
    "kung_fu_master": (258.5, 22736.3),
    "montezuma_revenge": (0.0, 4753.3),
    "ms_pacman": (307.3, 6951.6),
    "name_this_game": (2292.3, 8049.0),
    "phoenix": (761.4, 7242.6),
    "pitfall": (-229.4, 6463.7),
    "pong": (-20.7, 14.6),
    "private_eye": (24.9, 69571.3),
    "qbert": (163.9, 13455.0),
    "riverraid": (1338.5, 17118.0),
    "road_runner": (11.5, 7845.0),
    "robotank": (2.2, 11.9),
    "seaquest": (68.4, 42054.7),
    "skiing": (-17098.1, -4336.9),
    "solaris": (1236.3, 12326.7),
    "space_invaders": (148.0, 1668.7),
    "star_gunner": (664.0, 10250.0),
    "surround": (-10.0, 6.5),
    "tennis": (-23.8, -8.3),
    "time_pilot": (3568.0, 5229.2),
    "tutankham": (11.4, 167.6),
    "up_n_down": (533.4, 11693.2),
    "venture": (0.0, 1187.5),
    "video_pinball": (16256.9, 17667.9),
    "wizard_of_wor": (563.5, 4756.5),
    "yars_revenge": (3092.9, 54576.9),
    "zaxxon": (32.5, 9173.3),
}

ATARI_57: tuple[str, ...] = tuple(REFERENCE_SCORES)
"""The 57 games of Mnih et al. (2015) / Hessel et al. (2018)."""

ATARI_26: tuple[str, ...] = (
    "alien", "amidar", "assault", "asterix", "bank_heist", "battle_zone", "boxing", "breakout",
    "chopper_command", "crazy_climber", "demon_attack", "freeway", "frostbite", "gopher", "hero",
    "jamesbond", "kangaroo", "krull", "kung_fu_master", "ms_pacman", "pong", "private_eye", "qbert",
    "road_runner", "seaquest", "up_n_down",
)
"""The 26 games of the Atari 100k benchmark (Kaiser et al. 2019), the rows of the paper's Table 2."""


def reference_scores(game: str) -> tuple[float, float]:
    """(random, human) score of a game; ValueError for games outside the 57."""
    rom = check_game(game)
    if rom not in REFERENCE_SCORES:
        raise ValueError(f"no reference scores for {rom!r}; the 57 games with scores: {', '.join(ATARI_57)}")
    return REFERENCE_SCORES[rom]


def human_normalised(score: float, game: str) -> float:
    """(score - random) / (human - random) for `game`."""
    if not np.isfinite(score):
        raise ValueError(f"score must be a finite number, got {score!r}")
    random, human = reference_scores(game)
    return (float(score) - random) / (human - random)


def aggregates(normalised: Iterable[float]) -> dict[str, float]:
    """Mean, median, interquartile mean (mean of the middle 50%, 25% trimmed from each end as in rliable)
    and the number of super-human scores (normalised > 1) of human-normalised scores: one per game, the
    mean over its seeds, as the paper's table computes them."""
    x = np.asarray(list(normalised), dtype=np.float64)
    if x.ndim != 1 or len(x) == 0 or not np.isfinite(x).all():
        raise ValueError(f"need a non-empty list of finite normalised scores, got {x.tolist()!r}")
    return {"mean": float(x.mean()), "median": float(np.median(x)),
            "iqm": float(stats.trim_mean(x, 0.25)), "superhuman": int((x > 1.0).sum())}


def run_aggregates(runs_per_game: Sequence[Sequence[float]]) -> dict[str, float]:
    """rliable's IQM of human-normalised scores over runs x games (every seed's score on every game pooled,
    not the per-game means) with its 95% stratified-bootstrap interval, each game's seeds resampled on
    their own (`stats.iqm_with_ci`): runs (the scores pooled), iqm_runs, iqm_runs_low, iqm_runs_high.
    `runs_per_game[g]` holds game g's scores, one per seed. With one seed per game the interval collapses
    to the IQM: one run per game shows no run-to-run spread to resample."""
    iqm, low, high = iqm_with_ci(runs_per_game)
    return {"runs": sum(len(runs) for runs in runs_per_game), "iqm_runs": iqm, "iqm_runs_low": low,
            "iqm_runs_high": high}
