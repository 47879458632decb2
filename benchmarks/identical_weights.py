"""Bit-identical weights before and after a refactoring: a fixed set of seeded runs, fingerprinted.

    python benchmarks/identical_weights.py --before REV      # run the set at REV and here, compare
    python benchmarks/identical_weights.py --record FILE     # run the set here, write its fingerprints
    python benchmarks/identical_weights.py --compare FILE    # run the set here, compare with FILE

The set: a small gridworld pipeline (pretrain, identify, zero-shot, fine-tune with evaluations) on the easy
level for every method and for the options whose code paths differ (the exact n-step sum, the scalar SF
loss, APS without a shared encoder, APT on raw observations), and a short Atari pipeline on Pong for every
method. Each run writes its run directory; its fingerprint is the SHA-256 of every tensor in its
checkpoints (weights, target network, optimiser state, normalisers, replay) and of every score it reports.

`--before REV` checks REV out into a temporary git worktree and runs REV's own copy of this script there
(so each side describes the same runs in its own API), then runs this one and compares. Bitwise results
depend on the CPU and the PyTorch build (docs/reproducibility.md): compare on one machine, never against a
file recorded elsewhere. Exit status 1 if anything differs.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

GRIDWORLD_BUDGET = {"pretrain_steps": 8_000, "finetune_steps": 6_400, "identify_steps": 1_600,
                    "eval_episodes": 8}
GRIDWORLD_RUNS = {  # name: (method, AgentConfig changes)
    "visr": ("visr", {}),
    "apt": ("apt", {}),
    "aps": ("aps", {}),
    "dqn": ("dqn", {}),
    "aps-sum": ("aps", {"nstep_reward": "sum"}),
    "aps-scalar": ("aps", {"sf_loss": "scalar"}),
    "aps-separate": ("aps", {"shared_encoder": False}),
    "apt-observation": ("apt", {"representation": "observation"}),
    "visr-sum": ("visr", {"nstep_reward": "sum"}),
    "aps-knn-feature": ("aps", {"knn_feature": True}),
    "aps-explore-conditioned": ("aps", {"knn_feature": True, "explore_conditioned": True}),
}
ATARI_METHODS = ("visr", "apt", "aps", "dqn")


def digest(value) -> str:
    """SHA-256 of a tensor's bytes with its dtype and shape, or of a JSON-able value."""
    sha = hashlib.sha256()
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().contiguous()
        sha.update(f"{value.dtype}{tuple(value.shape)}".encode())
        sha.update(value.reshape(-1).view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    else:
        sha.update(json.dumps(value, sort_keys=True, default=str).encode())
    return sha.hexdigest()[:16]


def tensors(state, prefix: str = ""):
    """(path, tensor) for every tensor in a nested checkpoint."""
    if isinstance(state, torch.Tensor):
        yield prefix, state
    elif isinstance(state, dict):
        for key, value in state.items():
            yield from tensors(value, f"{prefix}/{key}")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            yield from tensors(value, f"{prefix}/{i}")


def checkpoint_fingerprints(run_dir: Path) -> dict[str, str]:
    prints = {}
    for ckpt in sorted(run_dir.rglob("checkpoint.pt")):
        state = torch.load(ckpt, weights_only=False)
        name = ckpt.parent.relative_to(run_dir).as_posix()
        prints.update({f"{name}{path}": digest(t) for path, t in tensors(state)})
    return prints


def gridworld_runs(out: Path) -> dict[str, dict[str, str]]:
    from dataclasses import replace

    from aps_teach.grid.experiments import Budget, run_gridworld
    from aps_teach.grid.train import TrainConfig
    from aps_teach.learner.config import AgentConfig

    prints = {}
    for name, (method, changes) in GRIDWORLD_RUNS.items():
        config = TrainConfig(agent=replace(AgentConfig(method=method), **changes), progress=False)
        result = run_gridworld(method, "easy", seed=3, budget=Budget(**GRIDWORLD_BUDGET), config=config,
                               run_dir=out / name)
        scores = {"zero_shot": result.zero_shot_success, "finetuned": result.finetuned_success,
                  "returns": [result.zero_shot_return, result.finetuned_return], "task_w": result.task_w,
                  "adaptation": result.adaptation, "coverage": result.state_coverage}
        prints[f"gridworld/{name}"] = {"scores": digest(scores), **checkpoint_fingerprints(out / name)}
        print(f"  gridworld {name}: zero-shot {result.zero_shot_success:.3f}, "
              f"fine-tuned {result.finetuned_success:.3f}", flush=True)
    return prints


def atari_runs(out: Path) -> dict[str, dict[str, str]]:
    from aps_teach.atari.config import AtariConfig, AtariTrainConfig
    from aps_teach.atari.experiments import run

    atari = AtariConfig(conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32, batch_size=8, n_step=3,
                        k=3, pretrain_steps=200, finetune_steps=100, min_replay_size=64,
                        pretrain_update_period=4, finetune_update_period=4,
                        task_id_steps=200, eval_steps=400, max_frames_per_episode=800,
                        epsilon_decay_steps=100)
    config = AtariTrainConfig(atari=atari, num_envs=2, log_every=50, checkpoint_every=100, progress=False,
                              threads=1)
    prints = {}
    for method in ATARI_METHODS:
        _, result = run(method, "Pong", seed=1, config=config, out=out / method)
        with open(out / method / "scores.csv", newline="") as file:
            kept = list(csv.DictReader(file))
        prints[f"atari/{method}"] = {"scores": digest(kept), **checkpoint_fingerprints(out / method)}
        print(f"  atari {method}: score {result.score:.2f}", flush=True)
    return prints


def record() -> dict[str, dict[str, str]]:
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="identical-weights-") as tmp:
        return {**gridworld_runs(Path(tmp) / "gridworld"), **atari_runs(Path(tmp) / "atari")}


def compare(before: dict, after: dict) -> int:
    """Print each run's verdict; return the number of runs that differ."""
    differing = 0
    for run in sorted(before.keys() | after.keys()):
        old, new = before.get(run), after.get(run)
        if old is None or new is None:
            print(f"DIFFERENT {run}: only {'after' if old is None else 'before'} has it")
            differing += 1
            continue
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if changed:
            differing += 1
            print(f"DIFFERENT {run}: {len(changed)} of {len(old.keys() | new.keys())} entries, e.g. "
                  + ", ".join(changed[:4]))
        else:
            print(f"identical {run}: {len(old)} tensors and scores")
    return differing


def record_at(rev: str, out: Path) -> None:
    """Run REV's own copy of this script (with REV's library) in a temporary worktree, recording to `out`."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="identical-weights-rev-") as tmp:
        tree = Path(tmp) / "tree"
        git = ["git", "-C", str(repo), "worktree"]
        subprocess.run([*git, "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            script = tree / "benchmarks" / "identical_weights.py"
            if not script.exists():
                raise SystemExit(f"{rev} has no benchmarks/identical_weights.py to describe its runs")
            env = {**os.environ, "PYTHONPATH": str(tree)}
            subprocess.run([sys.executable, str(script), "--record", str(out)], check=True, env=env, cwd=tmp)
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--before", metavar="REV", help="git revision to run the same set at and compare with")
    group.add_argument("--record", metavar="FILE", type=Path, help="write this tree's fingerprints to FILE")
    group.add_argument("--compare", metavar="FILE", type=Path, help="compare this tree with a --record FILE")
    args = parser.parse_args()
    if args.record:
        start = time.perf_counter()
        prints = record()
        args.record.write_text(json.dumps(prints, indent=1, sort_keys=True))
        print(f"recorded {len(prints)} runs to {args.record} in {time.perf_counter() - start:.0f} s")
        return
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "before.json"
            print(f"before: {args.before}")
            record_at(args.before, path)
            before = json.loads(path.read_text())
    else:
        before = json.loads(args.compare.read_text())
    print("after: this tree")
    after = record()
    differing = compare(before, after)
    total = len(before.keys() | after.keys())
    verdict = "" if differing else ": every weight and score unchanged"
    print(f"{total - differing} of {total} runs bit-identical{verdict}")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
