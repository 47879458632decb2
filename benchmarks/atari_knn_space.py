"""Which space the APS kNN reward should measure on Atari: phi on the unit sphere, or g, phi's output
before its L2 normalisation (phi = g / ||g||; the authors' code uses g). The figures behind the default of
`knn_phi_normalised`.

    python benchmarks/atari_knn_space.py [--game breakout] [--steps 4000] [--seed 0]

Pretrains APS with the kNN on g (`knn_phi_normalised=False`, the authors' setting) for `--steps` env steps
with small networks (8-channel convs, 64 hidden units, n = 3), then on 32-state batches of stacks from
random play (the learner's particle sets: one state per sampled transition), before and after pretraining:
- the spread of ||g||: its coefficient of variation (std / mean) over the states;
- the radial share of the k nearest neighbours' squared distances in g:
  ||g_i - g_j||^2 = (||g_i|| - ||g_j||)^2 + 2 ||g_i|| ||g_j|| (1 - cos), the first term's share;
- how many of each state's k nearest neighbours in g are also among its k nearest on the sphere;
- the correlation, over the states, of the kNN reward log(1 + mean kNN distance / mean) in the two spaces.
No loss trains ||g||: the vMF loss and reward read g / ||g|| only. A large radial share means the kNN on g
rewards differences of norm, not of direction.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import torch

from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.train import new_learner, pretrain


def random_play_batches(game: str, atari: AtariConfig, seed: int, batches: int,
                        size: int = 32) -> torch.Tensor:
    """`batches` x `size` stacks of random play, every 7th step of 8 envs: (batches, size, S, H, W)."""
    envs = make_vector_env(game, 8, atari, seed, training=False)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    stacks = []
    while len(stacks) * 8 < batches * size:
        for _ in range(7):
            envs.step(rng.integers(envs.num_actions, size=8))
        stacks.append(torch.from_numpy(envs.obs.copy()))
    envs.close()
    return torch.cat(stacks)[: batches * size].unflatten(0, (batches, size))


@torch.no_grad()
def space_figures(learner, batches: torch.Tensor, k: int) -> dict[str, float]:
    """Mean and coefficient of variation of ||g||, radial share of the kNN squared distances in g (pairs at
    distance 0, duplicate states, left out), the mean overlap of the k nearest neighbours in g and on the
    sphere, and the correlation of the kNN rewards in the two spaces, over the batches (each its own
    particles)."""
    cvs, means, shares, overlaps, rewards = [], [], [], [], {"g": [], "unit": []}
    for batch in batches:
        g = learner.phi.unnormalised(batch).double()
        unit = g / g.norm(dim=1, keepdim=True)
        norms = g.norm(dim=1)
        cvs.append(float(norms.std() / norms.mean()))
        means.append(float(norms.mean()))
        near = {}
        for name, h in (("g", g), ("unit", unit)):
            dist = torch.cdist(h, h).fill_diagonal_(float("inf"))
            nearest = dist.topk(k, dim=1, largest=False)
            near[name] = nearest.indices
            terms = nearest.values.mean(1)
            rewards[name].append(torch.log1p(terms / terms.mean()))
        radial = (norms[:, None] - norms[near["g"]]) ** 2
        total = ((g[:, None] - g[near["g"]]) ** 2).sum(-1)
        apart = total > 0
        shares.append(float((radial[apart] / total[apart]).mean()))
        overlaps.append(np.mean([len(set(a.tolist()) & set(b.tolist())) / k
                                 for a, b in zip(near["g"], near["unit"], strict=True)]))
    correlation = np.corrcoef(torch.cat(rewards["g"]).numpy(), torch.cat(rewards["unit"]).numpy())[0, 1]
    return {"mean_norm": float(np.mean(means)), "cv_norm": float(np.mean(cvs)),
            "radial_share": float(np.mean(shares)), "knn_overlap": float(np.mean(overlaps)),
            "reward_correlation": float(correlation)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="breakout")
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    atari = replace(AtariConfig(), conv_channels=(8, 8, 8), psi_hidden=64, phi_hidden=64, n_step=3,
                    pretrain_update_period=4, min_replay_size=800, pretrain_steps=args.steps,
                    epsilon_decay_steps=args.steps // 2, knn_phi_normalised=False)
    config = AtariTrainConfig(atari=atari, num_envs=8, progress=False, threads=args.threads,
                              log_every=args.steps, tensorboard=False)
    batches = random_play_batches(args.game, atari, args.seed + 1, batches=16)
    before = space_figures(new_learner("aps", args.game, args.seed, config), batches, atari.k)
    learner, log = pretrain("aps", args.game, args.seed, config)
    after = space_figures(learner, batches, atari.k)
    print(f"{args.game}: APS pretrained {log.env_steps} env steps ({log.updates} updates), kNN on g; "
          f"16 batches of 32 random-play states, k = {atari.k}")
    print(f"{'':>8} {'mean ||g||':>11} {'CV of ||g||':>12} {'radial share':>13} {'kNN overlap':>12} "
          f"{'reward correlation':>19}")
    for name, f in (("before", before), ("after", after)):
        print(f"{name:>8} {f['mean_norm']:11.3f} {f['cv_norm']:12.4f} {f['radial_share']:13.4f} "
              f"{f['knn_overlap']:12.3f} {f['reward_correlation']:19.4f}")


if __name__ == "__main__":
    main()
