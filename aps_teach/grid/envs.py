"""A batch of gridworld environments stepped in lockstep, on either engine, with coverage bookkeeping.

    envs = make_env_batch("easy", 32, engine="compiled", reward_free=True, absorbing_target=True)

Two engines play the same games (`gridworld`'s equivalence tests hold them equal step for step):
- `compiled` (the default): `gridworld.PassagewayVectorEnv` indexes tables compiled once per level; its
  observations are state indices into `observation_table`, which the learner reads through a state table.
- `pycolab`: the reference, one `gridworld.make` env per copy; observations are the boards.

Given the same reset seeds and actions both batches visit the same states, draw the same start cells
and pay the same rewards. An env factory (a zero-argument callable) runs on the pycolab engine only: the
compiled engine builds its envs from data (a level name, or a `LevelSpec` with a reward map or a task).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

import gridworld
from aps_teach.infra.checks import check_type
from gridworld.layout import State

ENGINES = ("compiled", "pycolab")


@dataclass(frozen=True, eq=False)
class LevelSpec:
    """A gridworld task as data, which either engine builds: a level, an optional reward map or task of the
    level's family, a step limit."""

    level: str | tuple[str, ...]
    """A built-in level or maze name, or ASCII art."""
    reward_map: np.ndarray | None = None
    """An H x W task instead of the key/target protocol (target-free mazes only)."""
    max_episode_steps: int = gridworld.MAX_EPISODE_STEPS
    task: gridworld.Task | None = None
    """A task of the level (`gridworld.task_family`) instead of its key/target protocol: a box task keeps the
    level's boards, its target absorbing and its episodes running to the step limit."""


EnvSource = str | LevelSpec | Callable[[], gym.Env]
"""A level name ("easy", "hard"), a `LevelSpec`, or (pycolab engine only) a zero-argument env factory."""


@functools.lru_cache(maxsize=16)
def state_boards(art: tuple[str, ...]) -> torch.Tensor:
    """The boards of every state of a level (`gridworld.compile_level(art).observations`) as one tensor,
    the same object for every batch of the level."""
    return torch.tensor(gridworld.compile_level(art).observations)


def make_env(source: EnvSource, absorbing_target: bool = False) -> gym.Env:
    """One pycolab env (`gridworld.make`) of a level name or a `LevelSpec`, or what an env factory makes."""
    if callable(source):
        return source()
    spec = as_spec(source)
    kwargs = {} if spec.reward_map is None else {"reward_map": spec.reward_map}
    return gridworld.make(spec.level, max_episode_steps=spec.max_episode_steps,
                          absorbing_target=absorbing_target, task=spec.task, **kwargs)


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINES)}")


def as_spec(source: str | LevelSpec) -> LevelSpec:
    """A level or maze name as its `LevelSpec`, a `LevelSpec` as it is; an `InputTypeError` naming env for
    anything else (ASCII art goes in a LevelSpec: `LevelSpec(tuple(art))`)."""
    if isinstance(source, str):
        return LevelSpec(source)
    return check_type("env", source, LevelSpec,
                      "a level or maze name (e.g. 'easy', 'open10'), a LevelSpec (ASCII art: "
                      "LevelSpec(tuple(art))) or, on engine 'pycolab', a zero-argument env factory")


def make_env_batch(source: EnvSource, num_envs: int, *, engine: str, reward_free: bool,
                   absorbing_target: bool = False) -> EnvBatch:
    """`num_envs` copies of `source` on `engine`. `reward_free` drops the reward inside `step` (pretraining);
    `absorbing_target` keeps the agent on the target until the step limit instead of ending the episode."""
    check_engine(engine)
    if engine == "compiled":
        if callable(source):
            raise ValueError("the compiled engine builds its envs from data: give a level name or a "
                             "LevelSpec (an env factory runs on engine 'pycolab' only)")
        return CompiledBatch(as_spec(source), num_envs, reward_free, absorbing_target)
    return PycolabBatch(source, num_envs, reward_free, absorbing_target)


class EnvBatch:
    """What both engines share: sizes, and coverage of the (position, keys held) states (which were visited,
    how often: the visitation entropy), keys ever picked up, whether the target was ever reached, and how
    often it was entered since `successes` was reset."""

    engine: str
    obs_shape: tuple[int, ...]
    """Shape of one board (C, H, W)."""
    observation_table: torch.Tensor | None
    """(S, C, H, W) uint8 boards of the states the observations index (compiled), or None (boards)."""
    state_boards: torch.Tensor
    """(S, C, H, W) uint8 boards of every state of the level (the compiled level's observations)."""
    num_actions: int
    horizon: int
    art: tuple[str, ...]
    num_reachable: int

    def _init_coverage(self) -> None:
        self.visited: set[State] = set()
        self.visits: dict[State, int] = {}
        """How often each non-terminal state was occupied: after every reset and every step."""
        self.keys: set[str] = set()
        self.target_reached = False
        self.successes = 0

    @property
    def replay_obs(self) -> tuple[tuple[int, ...], torch.dtype]:
        """Shape and dtype of one observation as the replay stores it."""
        return ((), torch.int64) if self.observation_table is not None else (self.obs_shape, torch.uint8)

    def coverage(self) -> dict:
        return {"states_visited": len(self.visited), "states_reachable": self.num_reachable,
                "state_coverage": len(self.visited) / self.num_reachable,
                "visitation_entropy": visitation_entropy(self._visit_counts(), self.num_reachable),
                "keys_picked": len(self.keys), "target_reached": self.target_reached}

    def _visit_counts(self) -> np.ndarray:
        return np.fromiter(self.visits.values(), dtype=np.int64, count=len(self.visits))

    def coverage_state(self) -> dict:
        return {"visited": sorted(self.visited), "keys": sorted(self.keys), "target": self.target_reached,
                "visits": sorted(self.visits.items())}

    def load_coverage_state(self, state: dict) -> None:
        self.visited = {(tuple(p), tuple(k)) for p, k in state["visited"]}
        self.visits = {(tuple(p), tuple(k)): int(n) for (p, k), n in state.get("visits", [])}
        self.keys, self.target_reached = set(state["keys"]), bool(state["target"])

    def reset(self, seeds: Sequence[int]) -> torch.Tensor:
        """Reset every env from its seed; the observations to act on."""
        raise NotImplementedError

    def step(self, actions: torch.Tensor, last: bool) -> dict[str, torch.Tensor]:
        """Step every env; an ended episode restarts (unless `last`). Keys: next_obs (s'), obs (the
        observation to act on next), terminated, ended, and reward unless the batch is reward-free."""
        raise NotImplementedError


def visitation_entropy(counts, num_states: int) -> float:
    """H(p) / log(num_states), p the visit frequencies `counts` of the states: 1 when every one of
    `num_states` states was occupied equally often, 0 when one state took every visit."""
    counts = np.sort(np.asarray(counts, dtype=float))  # sorted: the same sum in any order of the states
    counts = counts[counts > 0]
    if num_states < 2 or not len(counts):
        return 0.0
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum() / np.log(num_states))


class PycolabBatch(EnvBatch):
    """One pycolab env per copy: the reference engine."""

    engine = "pycolab"
    observation_table = None

    def __init__(self, source: EnvSource, num_envs: int, reward_free: bool, absorbing_target: bool):
        self.envs = [make_env(source, absorbing_target) for _ in range(num_envs)]
        self.reward_free = reward_free
        base = self.envs[0].unwrapped
        forced = getattr(base, "task", None) is not None and base.task.kind != gridworld.families.TARGET
        if bool(getattr(base, "absorbing_target", False)) != (absorbing_target or forced):
            raise ValueError(f"this run needs envs with absorbing_target={absorbing_target}, the env "
                             f"factory makes them with {not absorbing_target} "
                             "(gridworld.make(..., absorbing_target=...))")
        self.art = tuple(base.layout.art)
        self.num_reachable = len(base.reachable_states())
        spec = self.envs[0].spec
        if spec is None or spec.max_episode_steps is None:
            raise ValueError("the env needs a time limit (gymnasium.make with max_episode_steps)")
        self.horizon = spec.max_episode_steps
        self.obs_shape = base.observation_space.shape
        self.num_actions = int(base.action_space.n)
        self.state_boards = state_boards(self.art)
        self._init_coverage()

    def _note(self, info: dict) -> None:
        if info["success"]:
            self.target_reached = True
        else:
            state = (tuple(info["position"]), tuple(info["keys_held"]))
            self.visited.add(state)
            self.visits[state] = self.visits.get(state, 0) + 1
        self.keys.update(info["keys_held"])

    def reset(self, seeds: Sequence[int]) -> torch.Tensor:
        observations = []
        for env, s in zip(self.envs, seeds, strict=True):
            obs, info = env.reset(seed=int(s))
            self._note(info)
            observations.append(obs)
        self._on_target = [False] * len(self.envs)
        return torch.as_tensor(np.stack(observations))

    def step(self, actions: torch.Tensor, last: bool) -> dict[str, torch.Tensor]:
        next_obs, obs, terminated, ended, rewards = [], [], [], [], []
        for i, (env, action) in enumerate(zip(self.envs, actions.tolist(), strict=True)):
            o, r, term, trunc, info = env.step(action)
            self._note(info)
            self.successes += info["success"] and not self._on_target[i]
            self._on_target[i] = info["success"]
            next_obs.append(o)
            terminated.append(term)
            ended.append(term or trunc or last)
            rewards.append(r)
            if (term or trunc) and not last:
                o, info = env.reset()
                self._note(info)
                self._on_target[i] = False
            obs.append(o)
        out = {"next_obs": torch.as_tensor(np.stack(next_obs)), "obs": torch.as_tensor(np.stack(obs)),
               "terminated": torch.tensor(terminated), "ended": torch.tensor(ended)}
        if not self.reward_free:
            out["reward"] = torch.tensor(rewards, dtype=torch.float32)
        return out


class CompiledBatch(EnvBatch):
    """`gridworld.PassagewayVectorEnv` with state-index observations, autoreset in the same step."""

    engine = "compiled"

    def __init__(self, spec: LevelSpec, num_envs: int, reward_free: bool, absorbing_target: bool):
        self.env = gridworld.make_vector(
            spec.level, num_envs, reward_map=spec.reward_map, task=spec.task,
            max_episode_steps=spec.max_episode_steps, absorbing_target=absorbing_target, observation="state",
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        level = self.env.compiled
        self.reward_free = reward_free
        self.art = tuple(level.layout.art)
        self.num_reachable = level.num_nonterminal
        self.horizon = spec.max_episode_steps
        self.state_boards = self.observation_table = state_boards(self.art)
        self.obs_shape = tuple(level.observations.shape[1:])
        self.num_actions = int(level.successor.shape[1])
        self._states = level.states
        self._terminal = level.terminal
        self._seen = np.zeros(len(level.states), dtype=bool)
        self._counts = np.zeros(len(level.states), dtype=np.int64)
        self._init_coverage()

    def _note(self, states: np.ndarray) -> None:
        new = np.unique(states[~self._seen[states]])
        if len(new):
            self._seen[new] = True
            for index in new:
                position, held = self._states[index]
                if self._terminal[index]:
                    self.target_reached = True
                else:
                    self.visited.add((position, held))
                self.keys.update(held)

    @property
    def visits(self) -> dict[State, int]:
        """How often each non-terminal state was occupied (from the counts kept per state index)."""
        occupied = np.flatnonzero(self._counts[:self.num_reachable])
        return {self._states[i]: int(self._counts[i]) for i in occupied}

    @visits.setter
    def visits(self, visits: dict[State, int]) -> None:
        self._counts[:] = 0
        index = {s: i for i, s in enumerate(self._states)}
        for state, count in visits.items():
            self._counts[index[state]] = count

    def _visit_counts(self) -> np.ndarray:
        return self._counts[:self.num_reachable]

    def load_coverage_state(self, state: dict) -> None:
        super().load_coverage_state(state)
        index = {s: i for i, s in enumerate(self._states)}
        self._seen[:] = False
        self._seen[[index[s] for s in self.visited]] = True

    def reset(self, seeds: Sequence[int]) -> torch.Tensor:
        self._current, _ = self.env.reset(seed=[int(s) for s in seeds])
        self._note(self._current)
        np.add.at(self._counts, self._current, 1)
        return torch.as_tensor(self._current)

    def step(self, actions: torch.Tensor, last: bool) -> dict[str, torch.Tensor]:
        states, rewards, terminated, truncated, info = self.env.step(actions.numpy())
        ended = terminated | truncated
        reached = states.copy()
        if ended.any():
            reached[ended] = np.asarray(info["final_obs"][ended], dtype=np.int64)
        self._note(reached)
        np.add.at(self._counts, reached, 1)
        if not last:  # the round's last step ends every episode: the autoreset starts nothing
            self._note(states)
            np.add.at(self._counts, states[ended], 1)
        self.successes += int((self._terminal[reached] & ~self._terminal[self._current]).sum())
        self._current = states
        out = {"next_obs": torch.as_tensor(reached), "obs": torch.as_tensor(states),
               "terminated": torch.as_tensor(terminated), "ended": torch.as_tensor(ended | last)}
        if not self.reward_free:
            out["reward"] = torch.as_tensor(rewards, dtype=torch.float32)
        return out
