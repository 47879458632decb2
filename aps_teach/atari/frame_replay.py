"""Replay of uint8 single frames per env column; frame stacks and n-step windows rebuilt by index.

Row k of env column e holds the newest frame of the observation s_k, the action a_k taken there, the
w it was taken under, and what the step did: r_k, terminated_k, ended_k (terminated or truncated) and
valid_k (False for an autoreset step, whose "transition" from the ended episode's last observation to
a new episode's first is not one). Every env step adds a row, autoreset steps included: their row keeps
the last frame of the ended episode, the next observation of the row before. A fine-tuning replay of a
learner with frozen features also holds phi(s_k), computed once as the step is stored: a window then reads
phi(s'_i) = phi of row t + i + 1 (`next_phi`) instead of rebuilding and encoding n stacks in every update.

Stack rule: the stack of row k is the frames of rows k-S+1..k, with zeros for rows before the
episode's first observation (a row after an invalid one). This is what ale-py's vector env and
gymnasium's `FrameStackObservation(padding_type="zero")` show the agent, life-loss terminals included
(the game, and its stack, go on). The first `add` also writes the S-1 older frames of its observations
as rows, so a replay can start at any step, not only after a reset.

Window rule: an n-step window from row t runs while its steps are valid and under row t's w, and stops after
the first step that ended the episode (terminated: game over or, while training, a lost life; or
truncated). Pretraining redraws w every few steps: a window never mixes two tasks' returns.

Memory: frames + action + w + flags (+ reward) (+ phi). For 84x84 frames, d = 5 and rewards, one
transition takes 7,056 + 8 + 20 + 4 + 4 = 7,092 bytes (20 more with phi): 1M transitions fit in 7.09 GB
(6.6 GiB), against 28 GB for one 4-frame stack per transition and 56 GB for obs and next obs.
`FrameReplay.bytes_per_transition` computes it for other shapes.

Sampling never waits on the device: the valid flags that rejection sampling and the checks of `gather`
read have a copy on the host (the same tensor on a CPU replay), and the window starts go to the device
through pinned memory.
"""

from __future__ import annotations

import numpy as np
import torch

from aps_teach.infra.devices import to_device
from aps_teach.learner.batch import Batch


class FrameReplay:
    """Ring buffer of `capacity` rows x `num_envs` columns of single frames and per-step data.

    `device` may be a GPU: frames go there once in `add`, stacks are gathered there in `sample`.
    """

    _FLAGS = ("terminated", "ended", "valid", "first")

    def __init__(self, capacity: int, num_envs: int, frame_shape: tuple[int, int], stack: int,
                 task_dim: int, store_rewards: bool, device: str | torch.device = "cpu",
                 store_phi: bool = False):
        for name, value in (("capacity", capacity), ("num_envs", num_envs), ("stack", stack),
                            ("task_dim", task_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if capacity < stack + 1:
            raise ValueError(f"capacity ({capacity}) must exceed stack ({stack})")
        self.capacity, self.num_envs, self.stack = capacity, num_envs, stack
        self.frame_shape = tuple(frame_shape)
        self.device = torch.device(device)
        self.count = 0  # rows written so far (logical index of the next row)
        zeros = lambda *shape, dtype: torch.zeros((capacity, num_envs, *shape), dtype=dtype,  # noqa: E731
                                                  device=self.device)
        self.data: dict[str, torch.Tensor] = {
            "frame": zeros(*self.frame_shape, dtype=torch.uint8),
            "action": zeros(dtype=torch.int64),
            "w": zeros(task_dim, dtype=torch.float32),
            **{flag: zeros(dtype=torch.bool) for flag in self._FLAGS},
        }
        if store_rewards:
            self.data["reward"] = zeros(dtype=torch.float32)
        if store_phi:
            self.data["phi"] = zeros(task_dim, dtype=torch.float32)
        self._prev_valid = torch.ones(num_envs, dtype=torch.bool, device=self.device)  # row before the next
        self._valid_host = (self.data["valid"] if self.device.type == "cpu"  # valid flags read by sample()
                            else torch.zeros((capacity, num_envs), dtype=torch.bool))

    @staticmethod
    def bytes_per_transition(frame_shape: tuple[int, int], task_dim: int, store_rewards: bool,
                             store_phi: bool = False) -> int:
        """Bytes one (row, env) cell takes: uint8 frame, int64 action, float32 w, 4 bool flags, reward,
        phi."""
        return (int(np.prod(frame_shape)) + 8 + 4 * task_dim + 4 + (4 if store_rewards else 0)
                + (4 * task_dim if store_phi else 0))

    @property
    def size(self) -> int:
        """Rows held (at most `capacity`)."""
        return min(self.count, self.capacity)

    def add(self, obs: np.ndarray | torch.Tensor, action: np.ndarray | torch.Tensor,
            w: np.ndarray | torch.Tensor, terminated: np.ndarray | torch.Tensor,
            truncated: np.ndarray | torch.Tensor, valid: np.ndarray | torch.Tensor,
            reward: np.ndarray | torch.Tensor | None = None, phi: torch.Tensor | None = None) -> None:
        """Append one env step: obs (N, S, H, W) the stacks acted on, and what the step did (an
        `envs.Transition`'s fields; w (N, d) the tasks acted under; reward iff the buffer stores them;
        phi (N, d) = phi(obs) iff it stores features)."""
        for name, value, flag in (("reward", reward, "store_rewards"), ("phi", phi, "store_phi")):
            if (value is None) == (name in self.data):
                raise ValueError(f"this buffer stores {name}: pass {name}" if value is None else
                                 f"this buffer was built with {flag}=False: it takes no {name}")
        obs = to_device(torch.as_tensor(obs), self.device)
        expected = (self.num_envs, self.stack, *self.frame_shape)
        if tuple(obs.shape) != expected or obs.dtype != torch.uint8:
            raise ValueError(f"obs must be uint8 of shape {expected}, got {obs.dtype} {tuple(obs.shape)}")
        no = torch.zeros(self.num_envs, dtype=torch.bool)
        if self.count == 0:  # older frames of the first stacks, as rows that are never sampled
            for k in range(self.stack - 1):
                self._write(obs[:, k], valid=no, first=no)
        valid = torch.as_tensor(valid).cpu()  # a host copy for `_valid_host`
        terminated = torch.as_tensor(terminated, device=self.device)
        row = {"action": torch.as_tensor(action), "w": torch.as_tensor(w), "terminated": terminated,
               "ended": terminated | torch.as_tensor(truncated, device=self.device)}
        if reward is not None:
            row["reward"] = torch.as_tensor(reward)
        if phi is not None:
            row["phi"] = phi
        first = ~self._prev_valid if self.count > self.stack - 1 else no
        self._write(obs[:, -1], valid=valid, first=first, **row)
        self._prev_valid = to_device(valid.to(torch.bool, copy=True), self.device)

    def _write(self, frame: torch.Tensor, valid: torch.Tensor, first: torch.Tensor,
               **columns: torch.Tensor) -> None:
        i = self.count % self.capacity
        for key, value in self.data.items():
            if key not in ("frame", "valid", "first"):
                value[i] = 0
        for key, value in columns.items():
            if tuple(value.shape) != tuple(self.data[key].shape[1:]):
                raise ValueError(f"{key} must have shape {tuple(self.data[key].shape[1:])}, "
                                 f"got {tuple(value.shape)}")
            self.data[key][i] = value.to(self.device)
        self.data["frame"][i] = frame
        self.data["valid"][i] = to_device(valid, self.device)
        if self._valid_host is not self.data["valid"]:
            self._valid_host[i] = valid.cpu()
        self.data["first"][i] = first
        self.count += 1

    def state_dict(self) -> dict:
        """The rows written so far (all of them once the ring is full) and the counters, for checkpoints."""
        rows = self.size
        return {"count": self.count, "prev_valid": self._prev_valid.clone(),
                "shape": [self.capacity, self.num_envs, *self.frame_shape, self.stack],
                **{key: value[:rows].clone() for key, value in self.data.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore `state_dict()` into a replay of the same capacity, envs, frame shape, stack and columns."""
        shape = [self.capacity, self.num_envs, *self.frame_shape, self.stack]
        if list(state.get("shape", [])) != shape:
            raise ValueError(f"replay state is for (capacity, envs, height, width, stack) = "
                             f"{state.get('shape')}, this replay is {shape}")
        columns = set(state) - {"count", "prev_valid", "shape"}
        if columns != set(self.data):
            raise ValueError(f"replay state has columns {sorted(columns)}; expected {sorted(self.data)}")
        self.count = int(state["count"])
        self._prev_valid = state["prev_valid"].to(self.device).clone()
        for key, value in self.data.items():
            value[: self.size] = state[key].to(self.device)
        if self._valid_host is not self.data["valid"]:
            self._valid_host[: self.size] = state["valid"].cpu()

    def sampleable_range(self) -> tuple[int, int]:
        """Logical rows [lo, hi] that may start a window: stack frames and one next row in the buffer."""
        lo = max(0, self.count - self.capacity) + self.stack - 1
        return lo, self.count - 2

    def sample(self, batch_size: int, n_step: int, generator: torch.Generator,
               window_obs: bool = True) -> Batch:
        """`batch_size` n-step windows from uniform valid (row, env) cells (see `gather`)."""
        lo, hi = self.sampleable_range()
        valid = self._valid_host
        empty = ValueError(f"no valid transition to sample yet ({self.count} rows written)")
        if hi < lo:
            raise empty
        t = torch.empty(batch_size, dtype=torch.int64)
        e = torch.empty(batch_size, dtype=torch.int64)
        todo = torch.ones(batch_size, dtype=torch.bool)
        rounds = 0
        while todo.any():  # rejection: uniform over valid cells (autoreset rows are rare)
            if rounds == 50 and not valid[torch.arange(lo, hi + 1) % self.capacity].any():
                raise empty
            rounds += 1
            k = int(todo.sum())
            t[todo] = torch.randint(lo, hi + 1, (k,), generator=generator, device=generator.device).cpu()
            e[todo] = torch.randint(self.num_envs, (k,), generator=generator, device=generator.device).cpu()
            todo = ~valid[t % self.capacity, e]
        return self.gather(t, e, n_step, window_obs)

    def _stacks(self, rows: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """Stacks (..., S, H, W) of logical `rows` (any shape) in env columns `e` (broadcast to rows)."""
        s = self.stack
        start = rows - (s - 1)  # oldest row of each stack still in its episode
        for j in range(s - 2, -1, -1):  # smaller j (a later first row) overrides
            start = torch.where(self.data["first"][(rows - j) % self.capacity, e], rows - j, start)
        idx = rows[..., None] + torch.arange(-(s - 1), 1, device=self.device)
        frames = self.data["frame"][idx % self.capacity, e[..., None]]
        keep = (idx >= start[..., None]).to(torch.uint8)
        return frames.mul_(keep[..., None, None])

    def gather(self, t: torch.Tensor, e: torch.Tensor, n_step: int,
               window_obs: bool = True) -> Batch:
        """The n-step windows starting at logical rows `t` (B,) of env columns `e` (B,), valid cells in
        `sampleable_range()`, as a `Batch` (obs (B, S, H, W) uint8; reward and next_phi if stored).

        A window's steps are valid up to and including the first that ended the episode (terminal, life
        loss or truncation; or the newest complete one), while the step ran under the window's first w.
        `window_obs=False` gathers only the first step's s' (next_obs (B, 1, S, H, W)): a learner whose
        targets read s'_m alone (`nstep_reward='last'`) or the stored phi(s'_i) skips rebuilding the other
        n - 1 stacks.
        """
        lo, hi = self.sampleable_range()
        t, e = t.cpu(), e.cpu()  # checked on the host (no copy for `sample`'s CPU draws)
        if len(t) and (int(t.min()) < lo or int(t.max()) > hi):
            raise ValueError(f"window starts must be logical rows in [{lo}, {hi}], got {int(t.min())}.."
                             f"{int(t.max())}")
        if isinstance(n_step, bool) or not isinstance(n_step, int) or n_step < 1:
            raise ValueError(f"n_step must be an integer >= 1, got {n_step!r}")
        d, cap, b = self.data, self.capacity, len(t)
        if len(t) and not bool(self._valid_host[t % cap, e].all()):
            raise ValueError("every window must start at a valid row (not an autoreset step)")
        t, e = to_device(t, self.device), to_device(e, self.device)
        rows = t[:, None] + torch.arange(n_step, device=self.device)  # step i of the window: row t + i
        in_buffer = rows + 1 <= self.count - 1  # its next observation is written
        rows_c = torch.minimum(rows, torch.full_like(rows, self.count - 2))
        ended = d["ended"][rows_c % cap, e[:, None]]
        same_w = (d["w"][rows_c % cap, e[:, None]] == d["w"][t % cap, e][:, None]).all(-1)
        ok = in_buffer & d["valid"][rows_c % cap, e[:, None]] & same_w
        ended_before = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=self.device), ended[:, :-1]], 1)
        mask = (ok & ~ended_before).long().cumprod(1).bool()
        steps = mask.sum(1)
        last = t + steps - 1
        return Batch(obs=self._stacks(t, e), action=d["action"][t % cap, e], w=d["w"][t % cap, e],
                     next_obs=self._stacks(rows_c + 1, e[:, None].expand_as(rows_c)) if window_obs
                     else self._stacks(rows_c[:, :1] + 1, e[:, None]),
                     mask=mask, boot_obs=self._stacks(last + 1, e), boot_steps=steps,
                     boot_alive=~d["terminated"][last % cap, e],
                     reward=d["reward"][rows_c % cap, e[:, None]] if "reward" in d else None,
                     next_phi=d["phi"][(rows_c + 1) % cap, e[:, None]] if "phi" in d else None)
