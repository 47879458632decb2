"""Seed groups: S learners of one configuration updated as one, every layer a batched matrix product.

An update at batch 256 is far from the core's arithmetic limit (benchmarks/README.md): most of its time is
the fixed cost of its ~800 small operations. A group stacks the S learners' weights, W (S, out, in), and
runs Algorithm 1 once on the S minibatches stacked, (S, B, ...): each layer is one `torch.baddbmm` over the
seeds instead of S `addmm`s, each operation's fixed cost is paid once per group.

Nothing is shared between the seeds but the arithmetic. Each learner keeps its own networks, whose
weights become views into the stacks (so acting, evaluation and checkpoints read them as before), its own
Adam, gradient clipping, kNN distance normaliser, observation mean, target network and update count;
whatever sums over a batch (the losses, the reward means) is computed per seed as one learner computes it
(`update.each_seed`). On the CPU build this was written on, `baddbmm` and `addmm` share their kernel, so
every seed's weights, losses and rewards equal those of its own run bit for bit
(`benchmarks/seed_groups.py` checks it); on another machine or torch build, check before relying on it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict

import torch
from torch import nn
from torch.optim.adam import adam

from aps_teach.learner.agent import Learner
from aps_teach.learner.batch import Batch
from aps_teach.learner.inputs import TableInputs
from aps_teach.learner.rewards import Objective, SeedNormalisers
from aps_teach.learner.update import count_update, each_seed, gradient_step


class StackedLinear(nn.Module):
    """S linear layers as one: y_s = x_s W_s^T + b_s for inputs x (S, ..., in), one `baddbmm`. Each
    layer's weight and bias become views into the stacks (S, out, in) and (S, out), so they see every
    update made here, and this layer sees theirs."""

    def __init__(self, layers: list[nn.Linear]) -> None:
        super().__init__()
        trained = layers[0].weight.requires_grad
        self.weight = nn.Parameter(torch.stack([layer.weight.detach() for layer in layers]), trained)
        self.bias = nn.Parameter(torch.stack([layer.bias.detach() for layer in layers]), trained)
        for i, layer in enumerate(layers):
            layer.weight.data, layer.bias.data = self.weight.data[i], self.bias.data[i]
        self.layers = layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.flatten(1, -2) if x.ndim > 3 else x
        y = _BatchedLinear.apply(flat, self.weight, self.bias)
        return y.view(*x.shape[:-1], y.shape[-1])


class _BatchedLinear(torch.autograd.Function):
    """y = x W^T + b for each of S layers, with the gradients `F.linear`'s backward computes, in its order:
    dW = dy^T x (not bmm's own (x^T dy)^T, whose sums run in another order for narrow layers), dx = dy W,
    db = the sum of dy over the batch."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        dx, dw, db = ctx.needs_input_grad
        return (torch.bmm(grad, weight) if dx else None, torch.bmm(grad.transpose(1, 2), x) if dw else None,
                grad.sum(1) if db else None)


def stack_modules(modules: list[nn.Module]) -> nn.Module:
    """One module computing all of `modules` (same architecture, linear layers only) on inputs with a
    leading dim S: a copy of the first with each `nn.Linear` replaced by the `StackedLinear` of the S."""
    stacked = copy.deepcopy(modules[0])
    for name, layer in modules[0].named_modules():
        if isinstance(layer, nn.Linear):
            parent, _, attr = name.rpartition(".")
            layers = [m.get_submodule(name) for m in modules]
            stacked.get_submodule(parent)._modules[attr] = StackedLinear(layers)
        elif next(layer.parameters(recurse=False), None) is not None:
            raise ValueError(f"a seed group stacks linear layers only; {type(layer).__name__} has weights of "
                             "its own (the Atari learner's networks cannot be grouped)")
    return stacked


class LearnerGroup:
    """S `Learner`s of one configuration, level and phase, updated together (`update`): what
    `update.gradient_step` reads of a learner (`update.Trainable`), with a leading seed dim S."""

    _separate_knn_space = Learner._separate_knn_space
    _phi_and_knn = Learner._phi_and_knn
    embed = Learner.embed
    task_weights = Learner.task_weights
    psi_task = Learner.psi_task

    def __init__(self, learners: list[Learner]) -> None:
        if not learners:
            raise ValueError("a seed group needs at least one learner")
        first = learners[0]

        def shared(learner: Learner) -> tuple:
            return (asdict(learner.config), learner.obs_shape, learner.num_actions, learner.phase,
                    learner.device, learner.objective)

        for learner in learners:
            if type(learner) is not Learner or learner.fixed_shapes:
                raise ValueError("a seed group takes gridworld learners (`Learner`, fixed_shapes=False); got "
                                 f"{type(learner).__name__}")
            if shared(learner) != shared(first):
                raise ValueError("a seed group's learners must share their config, observations, actions, "
                                 "phase and objective: only their seeds may differ")
        self.learners, self.config, self.fixed_shapes = learners, first.config, False
        self.psi = stack_modules([learner.psi for learner in learners])
        self.psi_target = stack_modules([learner.psi_target for learner in learners])
        self.phi = None if first.phi is None else stack_modules([learner.phi for learner in learners])
        self.rep = None if first.rep is None else stack_modules([learner.rep for learner in learners])
        self.normaliser = None if first.normaliser is None else \
            SeedNormalisers([learner.normaliser for learner in learners])
        stacks = [m for m in (self.psi, self.phi, self.rep) if m is not None]
        self._layers = [layer for m in stacks for layer in m.modules() if isinstance(layer, StackedLinear)]
        self._owner = {getattr(one, name): (getattr(layer, name), i) for layer in self._layers
                       for i, one in enumerate(layer.layers) for name in ("weight", "bias")}
        """Each learner's parameter -> (the stacked parameter, its seed's index in it)."""
        self._tables: tuple[list[torch.Tensor], torch.Tensor] | None = None

    @property
    def phase(self) -> str:
        return self.learners[0].phase

    @property
    def objective(self) -> Objective | None:
        """The learners' objective of your own, if any, applied to each seed's slice of the batch (it is
        written for one learner's batch)."""
        own = self.learners[0].objective
        if own is None:
            return None
        return Objective(lambda phi, w, h, k: each_seed(lambda *one: own.reward(*one, k), 2, phi, w, h),
                         lambda phi, w: each_seed(own.vmf_loss, 2, phi, w))

    @property
    def explore_bonus(self) -> float:
        return self.learners[0].explore_bonus

    def inputs(self, obs: torch.Tensor) -> torch.Tensor | TableInputs:
        """Each learner's inputs of its observations obs[s], stacked: (S, B, D), or `TableInputs` of the
        tables (S, states, D) and the indices obs (S, ...)."""
        each = [learner.inputs(o) for learner, o in zip(self.learners, obs, strict=True)]
        if not isinstance(each[0], TableInputs):
            return torch.stack(each)
        tables = [x.table for x in each]
        if self._tables is None or any(a is not b for a, b in zip(self._tables[0], tables, strict=True)):
            self._tables = tables, torch.stack(tables)  # the tables change when the observation mean does
        return TableInputs(self._tables[1], obs)

    def boards(self, obs: torch.Tensor) -> torch.Tensor:
        """Each learner's flattened boards of obs[s], stacked (S, B, D)."""
        return torch.stack([learner.boards(o) for learner, o in zip(self.learners, obs, strict=True)])

    def step(self, loss: torch.Tensor) -> None:
        """Backward the seeds' losses (S,) (each reaches its own weights only), then each learner's
        gradient (views into the stacked one) clipped to max_grad_norm and its own Adam step, as
        `torch.nn.utils.clip_grad_norm_` and fused Adam compute them for one learner, in one call over all
        the seeds' tensors (each tensor is processed on its own). At their first step, when their Adam has
        no state yet, the learners step one by one."""
        for layer in self._layers:
            layer.zero_grad(set_to_none=True)
        loss.sum().backward()
        params, grads, states = [], [], []
        for learner in self.learners:
            for p in (p for group in learner.optimizer.param_groups for p in group["params"]):
                stacked, seed = self._owner[p]
                if stacked.grad is not None:
                    params.append(p)
                    grads.append(stacked.grad[seed])
                    states.append(learner.optimizer.state.get(p))
        if None in states:
            self._step_each(params, grads)
            return
        norms = torch.stack(torch._foreach_norm(grads)).view(len(self.learners), -1)  # (S, tensors)
        total = torch.linalg.vector_norm(norms, dim=1)
        scale = torch.clamp(self.config.max_grad_norm / (total + 1e-6), max=1.0)
        for layer in self._layers:
            for stacked in (layer.weight, layer.bias):
                if stacked.grad is not None:
                    stacked.grad.mul_(scale.view(-1, *[1] * (stacked.ndim - 1)))
        hyper = self.learners[0].optimizer.param_groups[0]
        with torch.no_grad():
            adam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], [],
                 [s["step"] for s in states], fused=True, amsgrad=False, beta1=hyper["betas"][0],
                 beta2=hyper["betas"][1], lr=hyper["lr"], weight_decay=hyper["weight_decay"],
                 eps=hyper["eps"], maximize=False)

    def _step_each(self, params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        """Each learner's own clip and Adam step, its parameters' gradients set to `grads`."""
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        for learner in self.learners:
            each = [p for group in learner.optimizer.param_groups for p in group["params"]]
            torch.nn.utils.clip_grad_norm_(each, self.config.max_grad_norm)
            learner.optimizer.step()
            learner.optimizer.zero_grad(set_to_none=True)

    def update(self, batches: list[Batch], step: Callable[..., dict] = gradient_step
               ) -> list[dict[str, torch.Tensor]]:
        """One update of each learner, learner s on minibatch s: Algorithm 1 on the stacked batches
        (`gradient_step`, or `step` in its place), then each learner's update count and target copy;
        returns each learner's losses and reward means, as `Learner.update` does."""
        if len(batches) != len(self.learners):
            raise ValueError(f"a group of {len(self.learners)} learners updates on as many minibatches, got "
                             f"{len(batches)}")
        fields = zip(*batches, strict=True)
        stacked = Batch(*(None if field[0] is None else torch.stack(field) for field in fields))
        stats = step(self, stacked)
        for learner in self.learners:
            count_update(learner)
        return [{name: value[i] for name, value in stats.items()} for i in range(len(self.learners))]
