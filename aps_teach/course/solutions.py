"""Worked solutions to the notebooks' exercises, one function per exercise, named after it.

Written as a learner would write them, in plain torch or NumPy from the formula in the exercise's text,
not by calling the library's own function: `check_<name>` judges them exactly as it judges yours. Look
at one only after trying: `exercises.solution("infer_task")` shows its source and returns it, so
`my_infer_task = exercises.solution("infer_task")` solves the exercise.
"""

import torch

__all__ = ["gpi", "infer_task", "knn_reward", "sf_td_target", "aps_reward", "vmf_loss", "knn_feature_q",
           "shift"]
"""The exercises that have a solution, in course order (`exercises.solution` accepts these names)."""


def gpi(psis, w, zs):
    # psis (n, S, A, d) @ w (d,) -> (n, S, A): every policy's Q-values for the task w at hand.
    # zs, the tasks the policies were trained for, play no part: each policy is scored under w.
    q = psis @ w
    return q.max(axis=0)  # the best policy for each (s, a): Q_GPI, shape (S, A)


def infer_task(features, rewards):
    # Least squares with the features as the design matrix: rewards ~ features @ v.
    v = torch.linalg.lstsq(features, rewards[:, None]).solution[:, 0]
    return v / v.norm()  # only the direction matters, and the skills were trained on unit w


def knn_reward(particles, k):
    # All pairwise distances, (N, N).
    distances = (particles[:, None, :] - particles[None, :, :]).norm(dim=-1)
    # p_i is not its own neighbour; a copy of p_i at another index is, at distance 0.
    distances.fill_diagonal_(float("inf"))
    nearest = distances.topk(k, dim=1, largest=False).values  # (N, k)
    return torch.log1p(nearest.mean(dim=1))


def sf_td_target(base, reward, w, mask, gamma, boot_psi, boot_steps, alive):
    n = base.shape[1]
    w_steps = w[:, None, :]  # (B, 1, d): the same w for every step of a window
    # c_i = base_i + (r_i - base_i^T w) w, so that c_i^T w = r_i.
    cumulant = base + (reward - (base * w_steps).sum(dim=-1))[..., None] * w_steps  # (B, n, d)
    discount = gamma ** torch.arange(n, dtype=base.dtype)  # gamma^i, (n,)
    weights = discount[None, :] * mask  # steps past the window's end count 0, (B, n)
    discounted_sum = (weights[..., None] * cumulant).sum(dim=1)  # (B, d)
    bootstrap = gamma ** boot_steps.to(base.dtype) * alive  # gamma^m, and 0 after a terminal state, (B,)
    return discounted_sum + bootstrap[:, None] * boot_psi


def aps_reward(phi, w, h, k):
    # Exploitation, the vMF log-likelihood up to a constant: phi(s')^T w, one number per state.
    exploit = (phi * w).sum(dim=1)
    # Exploration, APT's particle reward on h: the states of the batch are the particles.
    distances = (h[:, None, :] - h[None, :, :]).norm(dim=-1)  # (B, B)
    distances.fill_diagonal_(float("inf"))  # a state is not its own neighbour
    nearest = distances.topk(k, dim=1, largest=False).values  # (B, k)
    explore = torch.log1p(nearest.mean(dim=1))
    return exploit + explore  # Eq. 6 with both weights 1


def vmf_loss(phi, w):
    # The negative log-likelihood of the vMF discriminator, up to a constant: minimising it pulls
    # phi(s') towards the w whose skill reached s'. A mean, so its size does not grow with the batch.
    return -(phi * w).sum(dim=1).mean()


def knn_feature_q(psi, w, beta, exploit_weight, explore_weight):
    # The weights psi is scored with: w for its first d columns, beta * explore_weight for the last one,
    # the kNN reward's own successor feature (beta = 0 on a task: only the skills' features count).
    weights = torch.cat([exploit_weight * w, (beta * explore_weight)[:, None]], dim=1)  # (B, d + 1)
    return (psi * weights[:, None, :]).sum(dim=-1)  # (B, A, d + 1) against (B, 1, d + 1): Q (B, A)


def shift(x, dy, dx, pad):
    height, width = x.shape[-2:]
    # pad copies of the border pixels on every side: (B, S, H + 2 pad, W + 2 pad)
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad), mode="replicate")
    crops = []
    for b in range(len(x)):  # each stack has its own offsets
        top, left = int(dy[b]), int(dx[b])
        crops.append(padded[b, :, top:top + height, left:left + width])
    return torch.stack(crops)
