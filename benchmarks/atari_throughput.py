"""Atari pretraining throughput: env-steps/s and updates/s of APS against a plain DQN loop, same network.

    python benchmarks/atari_throughput.py [--game pong] [--device cuda] [--compile] [--steps 2000]
                                          [--warmup 1600] [--threads N] [--malloc-reuse]
    python benchmarks/atari_throughput.py --interleaved [--rounds 15] [--threads 2]
    python benchmarks/atari_throughput.py --finetune --threads 1
    python benchmarks/atari_throughput.py --parallel 2

The default mode runs three whole loops one after the other and ends with the Atari-26 cost in
device-hours: on a GPU (`--device cuda`, with `--compile` for the compiled update step replayed as CUDA
graphs) it is the one command to run. `--interleaved` is the CPU ratio: APS updates under each n-step
reward mode and plain DQN updates alternating in one process (below). `--finetune` is the same for
fine-tuning updates: APS's with phi(s'_i) encoded from the B x n augmented window stacks in every update (the
pipeline before phi was stored), with phi(s'_i) read from the replay, and dqn's. `--parallel K` runs the
pipeline's dqn fine-tuning as one single-threaded process alone, then K at once (as `aps-teach atari sweep`
runs them on the CPU), and prints the summed env-steps/s against one run's.

Three loops, each on `--num-envs` games of one ale-py vector env, one update of batch 32 per
`--update-period` env steps once `--warmup` transitions are stored, the paper's networks (or
`--small` ones), on the current device:
- aps: `aps_teach.atari.train.pretrain` (frame replay, 10-step windows, augmentation, vMF + kNN reward);
- dqn (pipeline): the same pipeline fine-tuning the dqn baseline (`finetune` from scratch on the reward);
- plain dqn: a minimal loop written here: a tensor replay of whole stacks (s, a, r, s', terminal),
  1-step double-Q TD on Q(s, a) = psi(s, a, e_1)^T e_1 of the same `AtariSuccessorFeatureNet`, no
  augmentation.
Rates count only the steps after the warm-up. The ratios pipeline / plain show what the pipeline's
generality costs (dqn pipeline / plain) and what APS costs on top (aps / plain): phi and the kNN on the
B = 32 last states of its windows (`nstep_reward='last'`, the default; 'sum' computes them on all
B x n = 320 window states) and phi's vMF update, work a 1-step DQN does not have.
The last line is what those rates make of the paper's budgets: hours of one APS run, and device-hours of
the Atari-26 x 5 seeds sweep (one run per device).

Two clocks: wall time (the metrics rows' env-steps/s) and this process's CPU time, measured as the CPU
seconds of a run of warm-up + steps minus those of a run of the warm-up alone. On a machine shared with
other jobs the wall-clock ratio moves with their load (the loops run one after the other); the CPU-time
ratio much less. `--malloc-reuse` (Linux, glibc) keeps freed memory in the process for reuse instead of
returning large blocks to the system, which on CPU saves the page faults of the update's fresh
multi-megabyte tensors (APS allocates 36 MB of float stacks per update); it applies to all three loops.

`--interleaved`: one replay of `--fill` env steps of the game (random play, 8 envs), then `--rounds`
rounds, each timing one update of every contestant in turn: APS under 'last' and under 'sum' (sample,
augment, update: the pipeline's `UpdateStep`) and the plain DQN update (sample, update). A job starting
elsewhere on the machine slows all of them alike, so the ratio of medians is steady where the loops' rates
are not. Each env step of a loop costs one update plus 1/8 of an 8-env act and step (measured too), so
APS / plain env-steps/s = (plain + act) / (aps + act).
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import os
import time
from dataclasses import replace

import numpy as np
import torch
from torch.nn import functional as F

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import make_vector_env
from aps_teach.atari.frame_replay import FrameReplay
from aps_teach.atari.networks import AtariSuccessorFeatureNet
from aps_teach.atari.scores import ATARI_26
from aps_teach.atari.train import finetune, new_learner, pretrain, window_use
from aps_teach.atari.update_step import UpdateStep
from aps_teach.learner.tasks import sample_tasks


def malloc_reuse() -> None:
    """glibc: serve every allocation from the heap (no mmap) and never trim it, so freed blocks are reused."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_max = -1, -4  # mallopt parameters of <malloc.h>
    if not (libc.mallopt(m_mmap_max, 0) and libc.mallopt(m_trim_threshold, 2**31 - 1)):
        raise OSError("mallopt failed")


def cpu_seconds(run) -> float:
    """Process CPU seconds (all threads) that `run()` takes."""
    start = time.process_time()
    run()
    return time.process_time() - start


def steady_rates(metrics: list[dict], warmup: int) -> tuple[float, float]:
    """env-steps/s and updates/s over the metrics rows after the first `warmup` env steps."""
    rows = [r for r in metrics if r["env_steps"] > warmup]
    before = max([r for r in metrics if r["env_steps"] <= warmup], key=lambda r: r["env_steps"])
    seconds = sum((r["env_steps"] - p["env_steps"]) / r["env_steps_per_s"]
                  for p, r in zip([before, *rows], rows, strict=False))
    steps, updates = rows[-1]["env_steps"] - before["env_steps"], rows[-1]["updates"] - before["updates"]
    return steps / seconds, updates / seconds


def plain_dqn_update(q, target, optimizer, store: dict, size: int, atari: AtariConfig,
                     e1: torch.Tensor) -> None:
    """One plain DQN update: a uniform batch of stored (s, a, r, s', terminal), 1-step double-Q TD on
    Q(s, a) = psi(s, a, e_1)^T e_1, Adam with the gradient clip."""
    i = torch.randint(size, (atari.batch_size,), device=e1.device)
    obs, nxt = store["obs"][i], store["next_obs"][i]
    with torch.no_grad():
        best = q(nxt, e1)[..., 0].argmax(1)
        boot = target(nxt, e1)[..., 0].gather(1, best[:, None])[:, 0]
        y = store["reward"][i] + atari.gamma * (1 - store["terminated"][i]) * boot
    loss = F.mse_loss(q(obs, e1)[..., 0].gather(1, store["action"][i][:, None])[:, 0], y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(q.parameters(), atari.max_grad_norm)
    optimizer.step()


def plain_dqn(game: str, atari: AtariConfig, num_envs: int, device: torch.device,
              seed: int) -> tuple[float, float]:
    """A minimal DQN loop with the pipeline's schedule for `atari.finetune_steps` env steps; returns steady
    env-steps/s and updates/s (0, 0 if the run ends at the warm-up)."""
    torch.manual_seed(seed)
    envs = make_vector_env(game, num_envs, atari, seed, training=True)
    envs.reset()
    q = AtariSuccessorFeatureNet(atari, envs.num_actions).to(device)
    target = copy.deepcopy(q).requires_grad_(False)
    optimizer = torch.optim.Adam(q.parameters(), lr=atari.finetune_lr, eps=atari.adam_eps)
    total = atari.finetune_steps
    stack = (atari.frame_stack, atari.frame_size, atari.frame_size)
    store = {"obs": torch.zeros(total, *stack, dtype=torch.uint8, device=device),
             "next_obs": torch.zeros(total, *stack, dtype=torch.uint8, device=device),
             "action": torch.zeros(total, dtype=torch.int64, device=device),
             "reward": torch.zeros(total, device=device), "terminated": torch.zeros(total, device=device)}
    e1 = torch.zeros(atari.batch_size, atari.feature_dim, device=device)
    e1[:, 0] = 1.0
    size = env_steps = updates = credit = 0
    start = None
    while env_steps < total:
        with torch.no_grad():
            greedy = q(torch.from_numpy(envs.obs).to(device), e1[:num_envs])[..., 0].argmax(1).cpu().numpy()
        explore = np.random.random(num_envs) < atari.epsilon_end
        tr = envs.step(np.where(explore, np.random.randint(envs.num_actions, size=num_envs), greedy))
        real = tr.valid_only()
        k = min(len(real.action), total - size)
        for key in store:
            store[key][size:size + k] = torch.as_tensor(np.asarray(getattr(real, key))[:k]).to(device)
        size += k
        env_steps += num_envs
        if size < atari.min_replay_size:
            continue
        credit += num_envs
        while credit >= atari.finetune_update_period:
            plain_dqn_update(q, target, optimizer, store, size, atari, e1)
            updates += 1
            credit -= atari.finetune_update_period
            if updates % atari.target_update_period == 0:
                target.load_state_dict(q.state_dict())
        if start is None:  # the clock starts after the first updates, as `steady_rates`
            start, start_steps, start_updates = time.perf_counter(), env_steps, updates
    if device.type == "cuda":
        torch.cuda.synchronize()
    envs.close()
    if start is None or env_steps == start_steps:
        return 0.0, 0.0
    seconds = time.perf_counter() - start
    return (env_steps - start_steps) / seconds, (updates - start_updates) / seconds


def interleaved(game: str, atari: AtariConfig, device: torch.device, rounds: int, fill: int, seed: int,
                compile_mode: str | None) -> dict[str, dict[str, float]]:
    """Median seconds, by wall clock and by this process's CPU time ({"wall": ..., "cpu": ...}), of one
    update of APS ('last'), APS ('sum') and plain DQN, timed in turn over `rounds` rounds (after one warm-up
    round) on a replay of `fill` random-play steps of 8 envs, and of one act + step of the 8 envs."""
    num_envs, gen = 8, torch.Generator().manual_seed(seed)
    envs = make_vector_env(game, num_envs, atari, seed, training=True)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    replay = FrameReplay(fill // num_envs + atari.frame_stack + 1, num_envs, (atari.frame_size,) * 2,
                         atari.frame_stack, atari.feature_dim, store_rewards=False, device=device)
    kept: dict[str, list] = {"obs": [], "next_obs": [], "action": [], "reward": [], "terminated": []}
    for k in range(fill // num_envs):
        if k % atari.task_resample_every == 0:
            w = sample_tasks(num_envs, atari.feature_dim, gen)
        tr = envs.step(rng.integers(envs.num_actions, size=num_envs))
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid)
        real = tr.valid_only()
        for key in kept:
            kept[key].append(np.asarray(getattr(real, key)))
    store = {key: torch.as_tensor(np.concatenate(v)).to(device) for key, v in kept.items()}
    store["terminated"] = store["terminated"].float()
    store["reward"] = store["reward"].float()
    contestants = {}
    for mode in ("last", "sum"):
        learner = AtariLearner(replace(atari, nstep_reward=mode), "aps", envs.num_actions, seed, device)
        every, windows = window_use(learner, "pretrain")
        step = UpdateStep(learner, learner.atari, windows, compile_mode)
        contestants[f"aps ({mode})"] = lambda step=step, every=every: step(
            replay.sample(atari.batch_size, atari.n_step, gen, every), gen)
    torch.manual_seed(seed)
    q = AtariSuccessorFeatureNet(atari, envs.num_actions).to(device)
    target = copy.deepcopy(q).requires_grad_(False)
    optimizer = torch.optim.Adam(q.parameters(), lr=atari.finetune_lr, eps=atari.adam_eps)
    e1 = torch.zeros(atari.batch_size, atari.feature_dim, device=device)
    e1[:, 0] = 1.0
    size = len(store["action"])
    contestants["plain dqn"] = lambda: plain_dqn_update(q, target, optimizer, store, size, atari, e1)
    w = w.to(device)
    def act_and_step():
        obs = torch.from_numpy(envs.obs).to(device)
        envs.step(learner.act(obs, w, atari.epsilon_end, gen, gpi=False).cpu().numpy())

    contestants["act + step"] = act_and_step
    return time_in_turn(contestants, rounds, device, envs)


def finetune_interleaved(game: str, atari: AtariConfig, device: torch.device, rounds: int, fill: int,
                         seed: int) -> dict[str, dict[str, float]]:
    """Median seconds (wall and CPU) of one fine-tuning update of APS with phi(s'_i) encoded from the B x n
    augmented window stacks in every update (the pipeline before phi was stored), with phi(s'_i) read from
    the replay (stored once per transition, `FrameReplay(store_phi=True)`), and of dqn's, timed in turn on a
    replay of `fill` random-play steps of 8 envs; and of one act + store (phi included) of the 8 envs."""
    num_envs, gen = 8, torch.Generator().manual_seed(seed)
    envs = make_vector_env(game, num_envs, atari, seed, training=True)
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    learner = AtariLearner(atari, "aps", envs.num_actions, seed, device)
    learner.start_finetune()
    replay = FrameReplay(fill // num_envs + atari.frame_stack + 1, num_envs, (atari.frame_size,) * 2,
                         atari.frame_stack, atari.feature_dim, store_rewards=True, device=device,
                         store_phi=True)
    w = sample_tasks(1, atari.feature_dim, gen).expand(num_envs, -1).to(device)
    for _ in range(fill // num_envs):
        obs = torch.from_numpy(envs.obs).to(device)
        tr = envs.step(rng.integers(envs.num_actions, size=num_envs))
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid,
                   reward=np.clip(tr.reward, -1, 1), phi=learner.features(obs))
    encoded, stored = UpdateStep(learner, atari, windows=True), UpdateStep(learner, atari, windows=False)
    dqn = AtariLearner(atari, "dqn", envs.num_actions, seed, device)
    dqn.start_finetune()
    plain = UpdateStep(dqn, atari, windows=False)

    def act_and_store():
        obs = torch.from_numpy(envs.obs).to(device)
        tr = envs.step(learner.act(obs, w, atari.epsilon_end, gen, gpi=False).cpu().numpy())
        replay.add(tr.obs, tr.action, w, tr.terminated, tr.truncated, tr.valid,
                   reward=np.clip(tr.reward, -1, 1), phi=learner.features(obs))

    contestants = {
        "aps, phi encoded": lambda: encoded(
            replay.sample(atari.batch_size, atari.n_step, gen, True)._replace(next_phi=None), gen),
        "aps, phi stored": lambda: stored(replay.sample(atari.batch_size, atari.n_step, gen, False), gen),
        "dqn": lambda: plain(replay.sample(atari.batch_size, atari.n_step, gen, False), gen),
        "act + store": act_and_store,
    }
    return time_in_turn(contestants, rounds, device, envs)


def time_in_turn(contestants: dict, rounds: int, device: torch.device, envs) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of each contestant, timed in turn over `rounds` rounds after one warm-up
    round (which also compiles); closes `envs`."""
    times: dict[str, dict[str, list[float]]] = {"wall": {n: [] for n in contestants},
                                                "cpu": {n: [] for n in contestants}}
    for r in range(rounds + 1):
        for name, run in contestants.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start, cpu_start = time.perf_counter(), time.process_time()
            run()
            if device.type == "cuda":
                torch.cuda.synchronize()
            if r:
                times["wall"][name].append(time.perf_counter() - start)
                times["cpu"][name].append(time.process_time() - cpu_start)
    envs.close()
    return {clock: {name: float(np.median(t)) for name, t in per.items()} for clock, per in times.items()}


def print_finetune(medians: dict[str, dict[str, float]], num_envs: int = 8) -> None:
    """Per clock: ms per fine-tuning update, the speed-up of a stored phi, and env steps per second of a
    fine-tuning loop with one update per env step ((update + act) per env step, act = 1/8 of an 8-env act)."""
    for clock, per in medians.items():
        act = per["act + store"] / num_envs
        for name, seconds in per.items():
            print(f"{clock:>4} {name:>16}: {1e3 * seconds:8.1f} ms" + (
                "" if name == "act + store" else f"   {1e3 * (seconds + act):8.1f} ms per env step"))
        print(f"{clock:>4} fine-tuning update, phi stored / phi encoded: "
              f"{per['aps, phi encoded'] / per['aps, phi stored']:.2f}x faster; per env step "
              f"{(per['aps, phi encoded'] + act) / (per['aps, phi stored'] + act):.2f}x")


def _dqn_rate(game: str, config: AtariTrainConfig, seed: int, warmup: int) -> float:
    """Worker: a dqn fine-tuning run of the pipeline on one thread; its steady env-steps/s after `warmup`."""
    metrics = finetune(new_learner("dqn", game, seed, config), game, None, seed, config).metrics
    return steady_rates(metrics, warmup)[0]


def parallel_throughput(game: str, config: AtariTrainConfig, runs: int, seed: int, warmup: int
                        ) -> tuple[float, list[float]]:
    """Env-steps/s of one single-threaded dqn run alone, and of each of `runs` such runs at once (separate
    spawned processes, as `aps-teach atari sweep` runs them)."""
    import multiprocessing

    config = replace(config, threads=1)
    alone = _dqn_rate(game, config, seed, warmup)
    with multiprocessing.get_context("spawn").Pool(runs) as pool:
        together = pool.starmap(_dqn_rate, [(game, config, seed + i, warmup) for i in range(runs)])
    return alone, together


def print_interleaved(medians: dict[str, dict[str, float]], num_envs: int = 8) -> None:
    """Per clock: ms per update and per env step, and APS / plain DQN env-steps/s = (plain + act) / (aps +
    act), act = 1/8 of an 8-env act and step."""
    for clock, per in medians.items():
        act = per["act + step"] / num_envs
        for name, seconds in per.items():
            print(f"{clock:>4} {name:>12}: {1e3 * seconds:8.1f} ms" + (
                "" if name == "act + step" else f"   {1e3 * (seconds + act):8.1f} ms per env step"))
        for mode in ("last", "sum"):
            ratio = (per["plain dqn"] + act) / (per[f"aps ({mode})"] + act)
            print(f"{clock:>4} APS ({mode}) / plain DQN env-steps/s, interleaved: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=2000, help="env steps measured after the warm-up")
    parser.add_argument("--warmup", type=int, default=1600, help="transitions stored before updates start")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--update-period", type=int, default=1, help="env steps per update (paper: 1)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--small", action="store_true", help="small networks (8-channel convs, 32 units)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--malloc-reuse", action="store_true",
                        help="glibc: keep freed memory for reuse (no mmap, no trim); all loops")
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the update step (on CUDA: mode reduce-overhead, CUDA graphs)")
    parser.add_argument("--interleaved", action="store_true",
                        help="the CPU ratio: APS and plain DQN updates alternating in one process")
    parser.add_argument("--parallel", type=int, default=0, metavar="RUNS",
                        help="single-threaded dqn runs at once against one alone (summed env-steps/s)")
    parser.add_argument("--finetune", action="store_true",
                        help="the CPU ratio of fine-tuning updates: phi encoded per update or stored once")
    parser.add_argument("--rounds", type=int, default=15, help="--interleaved: timed rounds (medians)")
    parser.add_argument("--fill", type=int, default=1200, help="--interleaved: env steps in the replay")
    args = parser.parse_args()
    compile_mode = None
    if args.compile:
        compile_mode = "reduce-overhead" if args.device.startswith("cuda") else "default"
    if args.malloc_reuse:
        malloc_reuse()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    # dqn fine-tunes for task_id_steps + finetune_steps (the reward steps APS gets): 1 + warmup + steps here
    atari = AtariConfig(min_replay_size=args.warmup, pretrain_update_period=args.update_period,
                        finetune_update_period=args.update_period, task_id_steps=1,
                        pretrain_steps=args.warmup + args.steps, finetune_steps=args.warmup + args.steps)
    if args.small:
        atari = replace(atari, conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32)
    warm = replace(atari, pretrain_steps=args.warmup, finetune_steps=args.warmup)
    config = AtariTrainConfig(atari=atari, device=args.device, num_envs=args.num_envs, progress=False,
                              log_every=args.warmup, threads=args.threads or torch.get_num_threads(),
                              compile=args.compile,
                              compile_mode=compile_mode or "default")
    device = torch.device(args.device)
    if args.parallel:
        print(f"{args.game} on the CPU: dqn fine-tuning runs of the pipeline, one thread each, "
              f"{args.num_envs} envs, {args.steps} env steps measured after {args.warmup}; one alone, then "
              f"{args.parallel} at once (os.cpu_count() = {os.cpu_count()})")
        alone, together = parallel_throughput(args.game, replace(config, device="cpu"), args.parallel,
                                              args.seed, args.warmup)
        print(f"one run alone: {alone:.1f} env-steps/s; {args.parallel} at once: "
              f"{', '.join(f'{rate:.1f}' for rate in together)} env-steps/s, together {sum(together):.1f}: "
              f"{sum(together) / alone:.2f}x one run's throughput")
        return
    if args.finetune:
        print(f"{args.game} on {device} ({torch.get_num_threads()} CPU threads), fine-tuning updates, "
              f"batch {atari.batch_size}, n {atari.n_step}, {'small' if args.small else 'paper'} networks, "
              f"replay of {args.fill} steps, medians of {args.rounds} interleaved rounds")
        print_finetune(finetune_interleaved(args.game, atari, device, args.rounds, args.fill, args.seed))
        return
    if args.interleaved:
        print(f"{args.game} on {device} ({torch.get_num_threads()} CPU threads), batch {atari.batch_size}, "
              f"n {atari.n_step}, {'small' if args.small else 'paper'} networks, replay of {args.fill} "
              f"steps, medians of {args.rounds} interleaved rounds{', compiled' if args.compile else ''}")
        medians = interleaved(args.game, atari, device, args.rounds, args.fill, args.seed, compile_mode)
        print_interleaved(medians)
        return
    print(f"{args.game} on {device} ({torch.get_num_threads()} CPU threads), {args.num_envs} envs, "
          f"batch {atari.batch_size}, 1 update / {args.update_period} env steps, {args.steps} env steps "
          f"measured after {args.warmup}, {'small' if args.small else 'paper'} networks"
          f"{', malloc reuse' if args.malloc_reuse else ''}"
          f"{', compiled update step' if args.compile else ''}")

    def loops(atari: AtariConfig) -> dict:
        """name -> a run of that loop on `atari`'s budget, returning its metrics rows (plain: its rates)."""
        cfg = replace(config, atari=atari)
        return {
            "aps (pipeline)": lambda: pretrain("aps", args.game, args.seed, cfg)[1].metrics,
            "dqn (pipeline)": lambda: finetune(new_learner("dqn", args.game, args.seed, cfg), args.game, None,
                                               args.seed, cfg).metrics,
            "plain dqn": lambda: plain_dqn(args.game, atari, args.num_envs, device, args.seed),
        }

    wall, cpu, out = {}, {}, {}
    for (name, full), warmup_only in zip(loops(atari).items(), loops(warm).values(), strict=True):
        seconds = cpu_seconds(lambda full=full, name=name: out.__setitem__(name, full()))
        cpu[name] = args.steps / (seconds - cpu_seconds(warmup_only))
        wall[name] = out[name] if name == "plain dqn" else steady_rates(out[name], args.warmup)
    for name, (steps, updates) in wall.items():
        print(f"{name:>15}: {steps:8.1f} env-steps/s {updates:8.2f} updates/s (wall), "
              f"{cpu[name]:8.1f} env-steps per CPU second")
    for name in ("aps (pipeline)", "dqn (pipeline)"):
        print(f"{name} / plain dqn env-steps/s: {wall[name][0] / wall['plain dqn'][0]:.2f} (wall), "
              f"{cpu[name] / cpu['plain dqn']:.2f} (CPU time)")
    print_sweep_cost(wall["aps (pipeline)"][0], wall["dqn (pipeline)"][0], args.device)


PAPER = AtariConfig()


def run_hours(pretrain_rate: float, finetune_rate: float) -> float:
    """Hours of one APS run at the paper's budgets: pretrain_steps / pretraining env-steps/s +
    finetune_steps / fine-tuning env-steps/s (task identification and evaluation only act: not counted)."""
    return (PAPER.pretrain_steps / pretrain_rate + PAPER.finetune_steps / finetune_rate) / 3600


def print_sweep_cost(pretrain_rate: float, finetune_rate: float, device: str) -> None:
    """What the Atari-26 x 5 seeds APS sweep costs at the measured rates (one run per device)."""
    hours = run_hours(pretrain_rate, finetune_rate)
    runs = len(ATARI_26) * 5
    print(f"at these rates one APS run at the paper's budgets ({PAPER.pretrain_steps:,} + "
          f"{PAPER.finetune_steps:,} env steps) takes {hours:,.1f} h on {device}; Atari-26 x 5 seeds "
          f"= {runs} runs: {runs * hours:,.0f} {'GPU' if device.startswith('cuda') else device}-hours")


if __name__ == "__main__":
    main()
