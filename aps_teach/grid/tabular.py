"""Exact, tabular successor features on a gridworld: the ground truth notebook 01 builds on.

A gridworld's reachable (position, keys held) states are few, so everything is computed exactly.
The features are the level's events, phi(s, a, s') = [picked up key 1, ..., reached target], so
the evaluation reward is linear in them: r = phi^T w with w = (1, ..., 1, 10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import gridworld
from gridworld.layout import ACTIONS, State


@dataclass(frozen=True)
class TabularGridworld:
    """A level as arrays over its S non-terminal states and A = 4 actions (deterministic moves)."""

    layout: gridworld.Layout
    states: list[State]
    next_state: np.ndarray
    """(S, A) index of the state a move leads to; -1 when it reaches the target (terminal)."""
    events: np.ndarray
    """(S, A, d) the features phi(s, a, s'): which keys the move picks up, and whether it ends."""
    rewards: np.ndarray
    """(S, A) the environment's own reward for each move (+1 per new key, +10 at the target)."""
    event_names: tuple[str, ...]

    @classmethod
    def from_level(cls, level) -> TabularGridworld:
        """`level` (a name or ASCII art) from its compiled tables (`gridworld.compile_level`): the
        non-terminal states, with every move into a terminal state as -1."""
        compiled = gridworld.compile_level(level)
        n = compiled.num_nonterminal
        successor = compiled.successor[:n]
        ends = compiled.terminal[successor]
        picked = compiled.held[successor] & ~compiled.held[:n, None]
        events = np.concatenate([picked, ends[..., None]], axis=2).astype(float)
        return cls(compiled.layout, list(compiled.states[:n]), np.where(ends, -1, successor), events,
                   compiled.reward[:n].copy(), tuple(f"{name} key" for name in compiled.layout.key_names)
                   + ("target",))

    def state_index(self, position, keys_held=()) -> int:
        return self.states.index((tuple(position), tuple(keys_held)))

    def _expected_next(self, table: np.ndarray, policy: np.ndarray) -> np.ndarray:
        """E_{a' ~ pi(s')} table[s', a'] for every (s, a); zero past the terminal step."""
        on_policy = np.einsum("sa,sa...->s...", policy, table)
        values = on_policy[self.next_state]
        values[self.next_state < 0] = 0.0
        return values


def uniform_policy(mdp: TabularGridworld) -> np.ndarray:
    """pi(a | s) = 1/4 everywhere, as an (S, A) matrix."""
    return np.full(mdp.next_state.shape, 1 / len(ACTIONS))


def greedy_policy(q: np.ndarray) -> np.ndarray:
    """The deterministic policy argmax_a q(s, a) (first maximum on ties), as an (S, A) matrix."""
    return np.eye(q.shape[1])[q.argmax(axis=1)]


def successor_features(mdp: TabularGridworld, policy: np.ndarray, gamma: float) -> np.ndarray:
    """Exact psi^pi(s, a) = E[sum_t gamma^t phi_t], solving psi = phi + gamma P^pi psi. Shape (S, A, d)."""
    num_states, num_actions, dim = mdp.events.shape
    flat = num_states * num_actions
    transition = np.zeros((flat, flat))
    rows = np.flatnonzero(mdp.next_state.reshape(-1) >= 0)
    successors = mdp.next_state.reshape(-1)[rows]
    for a in range(num_actions):
        transition[rows, successors * num_actions + a] = policy[successors, a]
    psi = np.linalg.solve(np.eye(flat) - gamma * transition, mdp.events.reshape(flat, dim))
    return psi.reshape(num_states, num_actions, dim)


def successor_features_td(
    mdp: TabularGridworld, policy: np.ndarray, gamma: float, sweeps: int, lr: float = 0.5, seed: int = 0
) -> np.ndarray:
    """psi^pi by TD(0): psi(s,a) += lr (phi(s,a,s') + gamma E_{a'~pi} psi(s',a') - psi(s,a)).

    Each sweep updates every (s, a) once, in a random order, from the current estimate.
    """
    rng = np.random.default_rng(seed)
    psi = np.zeros(mdp.events.shape)
    pairs = np.array([(s, a) for s in range(len(mdp.states)) for a in range(len(ACTIONS))])
    for _ in range(sweeps):
        for s, a in pairs[rng.permutation(len(pairs))]:
            nxt = mdp.next_state[s, a]
            bootstrap = 0.0 if nxt < 0 else policy[nxt] @ psi[nxt]
            psi[s, a] += lr * (mdp.events[s, a] + gamma * bootstrap - psi[s, a])
    return psi


def policy_evaluation(
    mdp: TabularGridworld, policy: np.ndarray, gamma: float, rewards: np.ndarray | None = None,
    tol: float = 1e-10,
) -> np.ndarray:
    """Q^pi by repeated Bellman backups, Q <- r + gamma E_{a'~pi} Q(s', a'), for a reward (S, A).

    Defaults to the environment's own reward, never to the features: an independent check of psi.
    """
    rewards = mdp.rewards if rewards is None else rewards
    q = np.zeros_like(rewards)
    while True:
        updated = rewards + gamma * mdp._expected_next(q, policy)
        if np.abs(updated - q).max() < tol:
            return updated
        q = updated


def optimal_q(mdp: TabularGridworld, rewards: np.ndarray, gamma: float, tol: float = 1e-10) -> np.ndarray:
    """Q* by value iteration, Q <- r + gamma max_a' Q(s', a'), for a reward (S, A)."""
    q = np.zeros_like(rewards)
    while True:
        best_next = q.max(axis=1)[mdp.next_state]
        best_next[mdp.next_state < 0] = 0.0
        updated = rewards + gamma * best_next
        if np.abs(updated - q).max() < tol:
            return updated
        q = updated


def gpi(psis: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Generalised policy improvement over policies with successor features `psis` (n, S, A, d).

    Q_GPI(s, a) = max_i psi_i(s, a)^T w, every policy scored under the task w at hand. Returns
    Q_GPI (S, A) and, per state, the policy i whose value backs GPI's greedy action.
    """
    q = np.einsum("isad,d->isa", psis, w)
    best = q.max(axis=0)
    action = best.argmax(axis=1)
    chosen = q[:, np.arange(q.shape[1]), action].argmax(axis=0)
    return best, chosen
