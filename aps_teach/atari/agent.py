"""The gridworld learner on pixels: `Learner` with the Atari conv networks and the paper's Atari settings.

Nothing of the update changes: TD targets, the vMF and kNN rewards, GPI and the fine-tuning switch are
`aps_teach.agents.Learner`'s. `agent_config` maps `AtariConfig` onto `AgentConfig` field by field, by name
(the two share their names), except the observation mean, which the conv networks do without (they read
the frames, scaled to [0, 1]); `AgentConfig.hidden` and `representation` keep the learner's defaults, unused
here (the conv networks have their own sizes, the kNN space is phi or the conv f).

What does change is how: an update here never waits on the device. Its statistics stay tensors (the
training loop reads them when it writes a metrics row), and with `nstep_reward="sum"` the kNN reward runs
over all B x n next states with the invalid ones masked (`masked_particle_entropy`) instead of selecting
the valid ones,
whose number the host would have to read (`_knn_reward`, `_masked_mean`). The rewards are `Learner`'s
up to float rounding (tests/test_atari_agent.py compares the two).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from aps_teach.agents import AgentConfig, Learner, Method
from aps_teach.atari.config import AtariConfig, learner_fields
from aps_teach.atari.networks import AtariFeatureNet, AtariSuccessorFeatureNet
from aps_teach.rewards import RunningMean


class MaskedRunningMean(RunningMean):
    """`RunningMean` with its mean and count tensors on the learner's device, updated in place (no host
    sync, fixed addresses for a CUDA graph), also folding in only the values where a mask is True. The mean
    has shape (1,), not (): torch.compile (2.13) loses in-place updates of a 0-d float64 CPU tensor."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.mean = torch.zeros(1, dtype=torch.float64, device=device)
        self.count = torch.zeros((), dtype=torch.int64, device=device)

    def update(self, values: torch.Tensor) -> torch.Tensor:
        """Fold all of `values` in (`RunningMean.update`'s arithmetic, in place); return the new mean."""
        n = values.numel()
        if n:
            batch_mean = values.detach().double().mean()
            self.mean.add_((batch_mean - self.mean) * n / (self.count + n))
            self.count.add_(n)
        return self.mean

    def update_masked(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Fold `values[mask]` in (mean += (batch mean - mean) n / (count + n), n = mask.sum()) and return
        the new mean (a float64 scalar tensor)."""
        n = mask.sum()
        batch_mean = (values.detach().double() * mask).sum() / n.clamp_min(1)
        self.mean.add_((batch_mean - self.mean) * n / (self.count + n).clamp_min(1))
        self.count.add_(n)
        return self.mean

    def state_dict(self) -> dict:
        return {"mean": self.mean.reshape(()).clone(), "count": int(self.count)}

    def load_state_dict(self, state: dict) -> None:
        self.mean.copy_(state["mean"].reshape(1))
        self.count.fill_(int(state["count"]))


def masked_particle_entropy(h: torch.Tensor, valid: torch.Tensor, k: int, exponent: float,
                            normaliser: MaskedRunningMean | None) -> torch.Tensor:
    """`particle_entropy_reward(h[valid], h[valid], k, exclude_self=True, ...)` on the valid rows of h (N, d),
    0 on the others, with tensors of fixed shape: r_i = log(1 + mean_{j in N_k(i)} ||h_i - h_j|| ** exponent
    / m), N_k(i) the min(k, V - 1) valid rows nearest to row i (V valid rows, i itself excluded), m the
    normaliser's running mean of all neighbour terms (1 without one)."""
    inf = float("inf")
    dist = torch.cdist(h, h).masked_fill(~valid[None, :], inf).fill_diagonal_(inf)
    near = dist.topk(min(k, len(h) - 1), dim=1, largest=False).values  # valid neighbours first, then inf
    found = torch.isfinite(near) & valid[:, None]
    terms = near.masked_fill(~found, 0.0) ** exponent
    if normaliser is not None:
        terms = terms / normaliser.update_masked(terms, found).to(terms.dtype).clamp_min(1e-8)
    return torch.log1p((terms * found).sum(1) / found.sum(1).clamp_min(1))


def agent_config(atari: AtariConfig, method: Method) -> AgentConfig:
    """The learner's settings: every `AgentConfig` field the Atari config has, by name (`learner_fields`),
    `method`, and no observation mean (the conv networks read the frames)."""
    return AgentConfig(method=method, normalise_observations=False, **learner_fields(atari))


class AtariLearner(Learner):
    """`Learner` with psi = `AtariSuccessorFeatureNet`, phi and APT's f = `AtariFeatureNet`, Adam's betas
    from the config. Observations are uint8 stacks (B, S, H, W) or their augmented float copies."""

    def __init__(self, atari: AtariConfig, method: Method, num_actions: int, seed: int,
                 device: str | torch.device = "cpu"):
        self.atari = atari
        super().__init__(agent_config(atari, method), (atari.frame_stack, atari.frame_size, atari.frame_size),
                         num_actions, seed, device)
        if self.normaliser is not None:
            self.normaliser = MaskedRunningMean(self.device)

    def build_networks(self) -> tuple[torch.nn.Module, torch.nn.Module | None, torch.nn.Module | None]:
        psi = AtariSuccessorFeatureNet(self.atari, self.num_actions)
        phi = AtariFeatureNet(self.atari) if self.config.task_conditioned else None
        rep = AtariFeatureNet(self.atari) if self._separate_knn_space == "contrastive" else None
        return psi, phi, rep

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """The conv networks read the frame stacks themselves (uint8, or augmented floats)."""
        return obs

    def _phi_and_knn(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """phi(s) and APS's kNN space: phi on the unit sphere, or with `knn_phi_normalised=False` (the
        authors' code) g(s), phi's output before its normalisation (phi = g / ||g||, one forward pass)."""
        if self.atari.knn_phi_normalised:
            return super()._phi_and_knn(x)
        g = self.phi.unnormalised(x)
        return F.normalize(g, dim=-1), g

    def _statistic(self, value: torch.Tensor) -> torch.Tensor:
        return value.detach()

    def _knn_reward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`Learner._knn_reward` over all B x n states with the invalid ones masked: no host sync."""
        cfg = self.config
        return masked_particle_entropy(h.flatten(0, 1), mask.flatten(), cfg.k, cfg.knn_exponent,
                                       self.normaliser).unflatten(0, mask.shape)

    def _masked_mean(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The mean over the valid steps without selecting them (a tensor: no host sync)."""
        return (values * mask).sum() / mask.sum()

    def _adam(self, lr: float) -> torch.optim.Adam:
        """Adam with the config's betas; on CUDA `capturable` (its step count on the GPU), so that an
        update step with it can be captured in a CUDA graph."""
        optimizer = super()._adam(lr)
        for group in optimizer.param_groups:
            group["betas"] = (self.atari.adam_beta1, self.atari.adam_beta2)
            group["capturable"] = self.device.type == "cuda"
        return optimizer
