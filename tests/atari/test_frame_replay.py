"""FrameReplay against a naive reference that stores every transition's full stacks: stacks and n-step
windows at episode boundaries (resets, life losses, truncations) and changes of w, ring wraparound, a
replay started mid-episode, autoreset steps never sampled, real Breakout frames, memory, and bad input."""

import numpy as np
import pytest
import torch

from aps_teach.atari.config import AtariConfig
from aps_teach.atari.envs import make_vector_env, rollout
from aps_teach.atari.frame_replay import FrameReplay

SHAPE = (3, 2)
D = 3
KEYS = ("obs", "action", "w", "reward", "next_obs", "terminated", "truncated", "valid")


def synthetic_steps(num_envs, steps, stack, seed, mid_episode):
    """What `AtariEnvs.step` yields, from a toy game: every step shows a new random frame; stacks are
    FIFO with zeros before an episode's first frame; the step after a game over or a truncation is an
    autoreset step; a life loss is terminal but the game (and its stack) goes on; each env's w is redrawn
    at random steps (pretraining's resampling)."""
    rng = np.random.default_rng(seed)

    def frame():
        return rng.integers(1, 256, size=SHAPE, dtype=np.uint8)

    def fresh():
        return np.stack([np.zeros(SHAPE, np.uint8)] * (stack - 1) + [frame()])

    current = [np.stack([frame() for _ in range(stack)]) if mid_episode else fresh()
               for _ in range(num_envs)]
    resetting = [False] * num_envs
    tasks = [rng.normal(size=D) for _ in range(num_envs)]
    out = []
    for _ in range(steps):
        row = {k: [] for k in KEYS}
        for e in range(num_envs):
            terminated = truncated = False
            if resetting[e]:
                nxt, valid, reward, resetting[e] = fresh(), False, 0.0, False
            else:
                event = rng.choice(["step", "life", "over", "cap"], p=[0.82, 0.08, 0.05, 0.05])
                terminated, truncated = event in ("life", "over"), event == "cap"
                resetting[e] = event in ("over", "cap")
                nxt, valid, reward = np.concatenate([current[e][1:], frame()[None]]), True, rng.normal()
            if rng.random() < 0.15:
                tasks[e] = rng.normal(size=D)
            for key, value in (("obs", current[e]), ("action", rng.integers(6)), ("w", tasks[e]),
                               ("reward", reward), ("next_obs", nxt), ("terminated", terminated),
                               ("truncated", truncated), ("valid", valid)):
                row[key].append(value)
            current[e] = nxt
        out.append({k: np.array(v) for k, v in row.items()})
    return out


def features(stacks):
    """A stand-in for a frozen phi: (N, S, H, W) stacks -> (N, D), distinct for distinct stacks here (the
    pixel sums of the newest frames, each frame's weighted by its place)."""
    x = torch.as_tensor(np.asarray(stacks), dtype=torch.float32).flatten(2)
    return torch.stack([(x[:, -1] * (j + 1)).sum(-1) + x[:, :-1].sum((1, 2)) * j for j in range(D)], -1)


def fill(steps, capacity, stack, store_rewards=True, device="cpu", store_phi=False):
    replay = FrameReplay(capacity, len(steps[0]["action"]), SHAPE, stack, D, store_rewards, device,
                         store_phi=store_phi)
    for s in steps:
        replay.add(s["obs"], s["action"], s["w"].astype(np.float32), s["terminated"], s["truncated"],
                   s["valid"], reward=s["reward"].astype(np.float32) if store_rewards else None,
                   phi=features(s["obs"]) if store_phi else None)
    return replay


def naive_window(steps, e, k, n):
    """Steps of the n-step window starting at step k of env e: valid steps, stopping after the first
    that ended the episode, before the first under another w than step k's, and before the newest step
    (whose next observation the replay lacks)."""
    taken = []
    for j in range(k, k + n):
        if j + 1 >= len(steps) or not steps[j]["valid"][e] or (steps[j]["w"][e] != steps[k]["w"][e]).any():
            break
        taken.append(j)
        if steps[j]["terminated"][e] or steps[j]["truncated"][e]:
            break
    return taken


def valid_cells(replay, steps):
    lo, hi = replay.sampleable_range()
    offset = replay.stack - 1  # logical row of step k is k + stack - 1
    return [(t, e) for t in range(lo, hi + 1) for e in range(replay.num_envs)
            if steps[t - offset]["valid"][e]]


def check_against_naive(replay, steps, n, store_rewards=True, store_phi=False):
    """Every valid cell's window equals the naive one; returns the number of cells, of windows cut by an
    episode end or a change of w, and of stacks holding zero padding (so the boundaries were exercised)."""
    cells = valid_cells(replay, steps)
    t = torch.tensor([c[0] for c in cells])
    e = torch.tensor([c[1] for c in cells])
    got = replay.gather(t, e, n)
    got = got._replace(**{k: v.cpu().numpy() for k, v in got._asdict().items() if v is not None})
    cut = padded = 0
    for b, (row, env) in enumerate(cells):
        k = row - (replay.stack - 1)
        taken = naive_window(steps, env, k, n)
        m = len(taken)
        np.testing.assert_array_equal(got.obs[b], steps[k]["obs"][env])
        assert got.action[b] == steps[k]["action"][env]
        np.testing.assert_allclose(got.w[b], steps[k]["w"][env], rtol=1e-6)
        np.testing.assert_array_equal(got.mask[b], np.arange(n) < m)
        assert got.boot_steps[b] == m
        for i, j in enumerate(taken):
            np.testing.assert_array_equal(got.next_obs[b, i], steps[j]["next_obs"][env])
            if store_rewards:
                np.testing.assert_allclose(got.reward[b, i], steps[j]["reward"][env], rtol=1e-6)
            if store_phi:  # phi(s'_i), stored with the row that acted on s'_i
                expected = features(steps[j]["next_obs"][env][None])[0]
                np.testing.assert_array_equal(got.next_phi[b, i], expected)
        np.testing.assert_array_equal(got.boot_obs[b], steps[taken[-1]]["next_obs"][env])
        assert got.boot_alive[b] == (not steps[taken[-1]]["terminated"][env])
        end, after = steps[taken[-1]], taken[-1] + 1
        new_w = m < n and after < len(steps) and (steps[after]["w"][env] != steps[k]["w"][env]).any()
        cut += bool(end["terminated"][env] or end["truncated"][env] or new_w)
        padded += bool((got.obs[b] == 0).all(axis=(1, 2)).any())
    assert (got.reward is not None) == store_rewards and (got.next_phi is not None) == store_phi
    return len(cells), cut, padded


@pytest.mark.parametrize("stack, capacity, n, mid_episode", [
    (4, 500, 10, False),  # no wraparound, starting at a reset
    (4, 11, 10, True),  # the ring wraps many times; started mid-episode
    (4, 23, 1, False),
    (1, 7, 3, True),
])
def test_windows_and_stacks_match_a_naive_reference(stack, capacity, n, mid_episode):
    steps = synthetic_steps(num_envs=3, steps=120, stack=stack, seed=capacity + n, mid_episode=mid_episode)
    replay = fill(steps, capacity, stack)
    cells, cut, padded = check_against_naive(replay, steps, n)
    assert replay.size == min(capacity, 120 + stack - 1)
    assert cells > 10 and cut > 0 and (padded > 0 or stack == 1 or capacity < 20)


def test_a_replay_started_mid_episode_rebuilds_the_first_stacks():
    steps = synthetic_steps(num_envs=2, steps=5, stack=4, seed=1, mid_episode=True)
    replay = fill(steps, 50, 4)
    assert (replay.gather(torch.tensor([3, 3]), torch.tensor([0, 1]), 1).obs.numpy() != 0).all()
    check_against_naive(replay, steps, 2)


def test_without_rewards_the_buffer_has_no_reward_column():
    steps = synthetic_steps(num_envs=2, steps=40, stack=4, seed=2, mid_episode=False)
    replay = fill(steps, 60, 4, store_rewards=False)
    check_against_naive(replay, steps, 5, store_rewards=False)


@pytest.mark.parametrize("capacity", [500, 13])  # and through the ring's wraparound
def test_stored_features_are_those_of_each_windows_next_states(capacity):
    """A fine-tuning replay stores phi(s_k) as each step comes in; a window reads phi(s'_i) back for every
    step, across resets, life losses, truncations and changes of w (the frozen phi computed once)."""
    steps = synthetic_steps(num_envs=3, steps=120, stack=4, seed=7, mid_episode=False)
    replay = fill(steps, capacity, 4, store_phi=True)
    cells, cut, padded = check_against_naive(replay, steps, 10, store_phi=True)
    assert cells > 10 and cut > 0
    assert FrameReplay.bytes_per_transition((84, 84), 5, True, store_phi=True) == 7092 + 20


def test_sample_draws_only_valid_transitions_uniformly_and_reproducibly():
    steps = synthetic_steps(num_envs=2, steps=150, stack=4, seed=3, mid_episode=False)
    replay = fill(steps, 64, 4)
    real = {(s["obs"][e].tobytes(), s["next_obs"][e].tobytes())
            for s in steps for e in range(2) if s["valid"][e]}
    autoreset = {(s["obs"][e].tobytes(), s["next_obs"][e].tobytes())
                 for s in steps for e in range(2) if not s["valid"][e]}
    batch = replay.sample(2000, 3, torch.Generator().manual_seed(0))
    firsts = batch.next_obs[:, 0].numpy()
    pairs = {(o.tobytes(), n.tobytes()) for o, n in zip(batch.obs.numpy(), firsts, strict=True)}
    assert pairs <= real and not pairs & autoreset
    # 2000 draws over the ~120 valid cells reach (nearly) all of them
    assert len(pairs) >= 0.95 * len(valid_cells(replay, steps))
    again = replay.sample(2000, 3, torch.Generator().manual_seed(0))
    for value, repeated in zip(batch, again, strict=True):
        assert (value is None) == (repeated is None)
        if value is not None:
            torch.testing.assert_close(value, repeated)


def test_real_breakout_stacks_and_windows_are_rebuilt_exactly():
    """Life-loss terminals (training), truncations (a 400-frame cap) and game resets of real frames."""
    envs = make_vector_env("breakout", 2, AtariConfig(max_frames_per_episode=400), seed=5, training=True)
    rng = np.random.default_rng(5)
    replay = FrameReplay(70, 2, (84, 84), 4, D, True)
    steps = []
    for tr in rollout(envs, lambda obs: rng.integers(envs.num_actions, size=2), 220):
        w = rng.normal(size=(2, D)).astype(np.float32)
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid, reward=tr.reward)
        steps.append({"obs": tr.obs, "action": tr.action, "w": w, "reward": tr.reward,
                      "next_obs": tr.next_obs, "terminated": tr.terminated, "truncated": tr.truncated,
                      "valid": tr.valid})
    envs.close()
    assert sum((~s["valid"]).sum() for s in steps) >= 2  # resets happened
    assert sum((s["terminated"] & s["valid"]).sum() for s in steps) >= 4  # lives were lost
    cells, cut, padded = check_against_naive(replay, steps, 10)
    assert cells > 100 and cut > 0 and padded > 0


def test_memory_per_transition_and_the_1m_figure():
    replay = FrameReplay(8, 2, (84, 84), 4, 5, True)
    per_cell = sum(v[0, 0].numel() * v.element_size() for v in replay.data.values())
    assert per_cell == FrameReplay.bytes_per_transition((84, 84), 5, True) == 7092
    assert FrameReplay.bytes_per_transition((84, 84), 5, False) == 7088
    assert 1_000_000 * 7092 / 1e9 == pytest.approx(7.09, abs=0.005)  # the module docstring's figure


@pytest.mark.parametrize("cut", [30, 100])  # before and after the ring (capacity 40) wraps
def test_a_restored_replay_continues_like_the_original(cut):
    steps = synthetic_steps(num_envs=2, steps=130, stack=4, seed=6, mid_episode=False)
    whole = fill(steps, 40, 4)
    restored = FrameReplay(40, 2, SHAPE, 4, D, True)
    restored.load_state_dict(fill(steps[:cut], 40, 4).state_dict())
    for s in steps[cut:]:
        restored.add(s["obs"], s["action"], s["w"].astype(np.float32), s["terminated"], s["truncated"],
                     s["valid"], reward=s["reward"].astype(np.float32))
    assert restored.count == whole.count
    for key in whole.data:
        torch.testing.assert_close(restored.data[key], whole.data[key])
    a, b = (r.sample(64, 5, torch.Generator().manual_seed(1)) for r in (whole, restored))
    for x, y in zip(a, b, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(x, y)
    with pytest.raises(ValueError, match="capacity, envs"):
        FrameReplay(41, 2, SHAPE, 4, D, True).load_state_dict(whole.state_dict())
    with pytest.raises(ValueError, match="columns"):
        FrameReplay(40, 2, SHAPE, 4, D, False).load_state_dict(whole.state_dict())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_the_gpu_too():
    steps = synthetic_steps(num_envs=2, steps=60, stack=4, seed=4, mid_episode=False)
    replay = fill(steps, 30, 4, device="cuda")
    check_against_naive(replay, steps, 10)
    assert replay.sample(32, 10, torch.Generator().manual_seed(0)).obs.device.type == "cuda"


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="capacity must be an integer >= 1"):
        FrameReplay(0, 1, SHAPE, 4, D, True)
    with pytest.raises(ValueError, match=r"capacity \(4\) must exceed stack \(4\)"):
        FrameReplay(4, 1, SHAPE, 4, D, True)
    replay = FrameReplay(20, 2, SHAPE, 4, D, store_rewards=False)
    obs = np.zeros((2, 4, *SHAPE), np.uint8)
    flags = np.zeros(2, bool)
    with pytest.raises(ValueError, match="no valid transition to sample yet"):
        replay.sample(4, 3, torch.Generator())
    with pytest.raises(ValueError, match="store_rewards=False: it takes no reward"):
        replay.add(obs, [0, 0], np.zeros((2, D)), flags, flags, ~flags, reward=np.zeros(2))
    with pytest.raises(ValueError, match=r"obs must be uint8 of shape \(2, 4, 3, 2\)"):
        replay.add(obs[:, :3], [0, 0], np.zeros((2, D)), flags, flags, ~flags)
    with pytest.raises(ValueError, match="obs must be uint8"):
        replay.add(obs.astype(np.float32), [0, 0], np.zeros((2, D)), flags, flags, ~flags)
    with pytest.raises(ValueError, match=r"w must have shape \(2, 3\)"):
        replay.add(obs, [0, 0], np.zeros((2, 5)), flags, flags, ~flags)
    for _ in range(3):
        replay.add(obs, [0, 0], np.zeros((2, D)), flags, flags, np.array([True, False]))
    with pytest.raises(ValueError, match="must start at a valid row"):
        replay.gather(torch.tensor([3]), torch.tensor([1]), 2)
    with pytest.raises(ValueError, match=r"logical rows in \[3, 4\]"):
        replay.gather(torch.tensor([2]), torch.tensor([0]), 2)
    with pytest.raises(ValueError, match="n_step must be an integer >= 1"):
        replay.gather(torch.tensor([3]), torch.tensor([0]), 0)
    rewarded = FrameReplay(20, 2, SHAPE, 4, D, store_rewards=True)
    with pytest.raises(ValueError, match="stores reward: pass reward"):
        rewarded.add(obs, [0, 0], np.zeros((2, D)), flags, flags, ~flags)
    with pytest.raises(ValueError, match="store_phi=False: it takes no phi"):
        rewarded.add(obs, [0, 0], np.zeros((2, D)), flags, flags, ~flags, reward=np.zeros(2),
                     phi=torch.zeros(2, D))
    with pytest.raises(ValueError, match="stores phi: pass phi"):
        FrameReplay(20, 2, SHAPE, 4, D, True, store_phi=True).add(obs, [0, 0], np.zeros((2, D)), flags,
                                                                  flags, ~flags, reward=np.zeros(2))
