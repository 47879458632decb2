"""Executors: the ray executor writes the same results file as the local one; a killed worker's run is
retried by Ray, a raising run is reported at once, the others finish; clear errors for bad choices.

The Ray tests share one local Ray instance (2 CPUs, loopback only) and skip where Ray is not installed.
"""

import os
import signal
import socket
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from aps_teach.grid.experiments import Budget
from aps_teach.grid.sweep import run_gridworld_rows
from aps_teach.infra.executors import make_executor
from aps_teach.infra.sweeps import grid, read_rows, run_sweep

TIMING = ("run_seconds", "wall_seconds")
BUDGET = Budget(pretrain_steps=800, finetune_steps=800, identify_steps=800, eval_episodes=4)


def test_unknown_executor_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown executor 'slurm'; executors: local, ray"):
        make_executor("slurm")


def test_ray_without_the_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "aps-teach\[cluster\]"'):
        make_executor("ray")


def test_sweep_command_without_ray_exits_with_the_extra_to_install(monkeypatch, tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    monkeypatch.setitem(sys.modules, "ray", None)
    assert gridworld_main(["sweep", "--executor", "ray", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert 'gridworld: error: the ray executor needs Ray: pip install "aps-teach[cluster]"' in \
        capsys.readouterr().err
    assert not (tmp_path / "figure4.csv").exists()


def test_options_of_the_other_executor_are_refused():
    with pytest.raises(ValueError, match="for the ray executor"):
        make_executor("local", address="auto")
    with pytest.raises(ValueError, match="one whole GPU"):
        make_executor("local", num_gpus=1, workers=2)
    with pytest.raises(ValueError, match="gpus is for runs on local GPUs"):
        make_executor("local", gpus=[0])
    with pytest.raises(ValueError, match="Ray places each run on a GPU itself"):
        make_executor("ray", gpus=[0])
    with pytest.raises(ValueError, match="workers is for the local executor"):
        make_executor("ray", workers=2)
    with pytest.raises(ValueError, match="max_retries >= 0"):
        make_executor("ray", max_retries=-1)


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("wing", ["gridworld", "atari"])
def test_an_unreachable_ray_head_is_one_line_after_the_timeout_and_nothing_is_written(wing, tmp_path, capsys,
                                                                                     monkeypatch):
    """`--executor ray` with an address nobody answers used to retry forever, logging as it went (these run
    before `local_ray` starts Ray in this process: a connected process would not look for a head)."""
    from aps_teach.cli.main import main

    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # as `local_ray`: Ray reads it on import
    pytest.importorskip("ray")
    address, out = f"127.0.0.1:{free_port()}", tmp_path / "out"
    start = time.monotonic()
    assert main([wing, "sweep", "--executor", "ray", "--ray-address", address, "--ray-timeout", "2",
                 "--out", str(out)]) == 2
    assert 1 <= time.monotonic() - start < 15
    assert capsys.readouterr().err == (f"aps-teach {wing}: error: no Ray head answered at {address} within "
                                       "2 s (Connection refused); check the address and `ray status` on the "
                                       "head, or wait longer with --ray-timeout\n")
    assert not out.exists()


def test_waiting_for_a_ray_head_returns_once_it_answers_and_refuses_a_malformed_address():
    from aps_teach.infra.executors import wait_for_head

    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        wait_for_head(f"127.0.0.1:{head.getsockname()[1]}", 1)
        wait_for_head(f"ray://127.0.0.1:{head.getsockname()[1]}", 1)
    with pytest.raises(ValueError, match="Ray address 'headnode' is not auto or HOST:PORT"):
        wait_for_head("headnode", 1)


@pytest.fixture(scope="module")
def local_ray():
    """One Ray instance on this machine for the module: 2 CPUs, listening on loopback only, workers that
    can import this test module (its run functions are pickled by reference)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read at import: bind to 127.0.0.1
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        patch.setenv("RAY_AUTH_MODE", "disabled")  # a loopback-only instance; writes no token to ~/.ray
        root = str(Path(__file__).resolve().parents[2])  # tests.infra.test_executors, importable from here
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        ray = pytest.importorskip("ray")
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20,
                 log_to_driver=False)
        assert ray.util.get_node_ip_address() == "127.0.0.1"
        yield ray
        ray.shutdown()


def without_timing(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in row.items() if k not in TIMING} for row in rows),
                  key=lambda row: (row["run_key"], row.get("phase", "")))


def test_ray_sweep_writes_the_same_results_as_the_local_one(local_ray, tmp_path):
    specs = grid(["aps", "dqn"], ["easy"], [0])
    run = partial(run_gridworld_rows, budget=BUDGET)
    with make_executor("local", workers=2) as local:
        assert not run_sweep(specs, run, tmp_path / "local.csv", executor=local, progress=False).failures
    with make_executor("ray") as ray:
        report = run_sweep(specs, run, tmp_path / "ray.csv", executor=ray, progress=False)
        assert sorted(report.completed) == ["aps-easy-seed0", "dqn-easy-seed0"] and not report.failures
        local_rows, ray_rows = read_rows(tmp_path / "local.csv"), read_rows(tmp_path / "ray.csv")
        assert len(ray_rows) == 4 and list(ray_rows[0]) == list(local_rows[0])
        assert without_timing(ray_rows) == without_timing(local_rows)
        again = run_sweep(specs, run, tmp_path / "local.csv", executor=ray, progress=False)
        assert again.completed == [] and sorted(again.skipped) == ["aps-easy-seed0", "dqn-easy-seed0"]


def logged_run(spec, attempts_dir: str) -> list[dict]:
    """Counts its attempts per run in a file; seed 1 is killed on its first attempt, seed 2 raises,
    seed 3 is killed on every attempt."""
    log = Path(attempts_dir) / spec.key
    with log.open("a") as file:
        file.write("x")
    attempt = len(log.read_text())
    if spec.seed == 3 or (spec.seed == 1 and attempt == 1):
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-run, as under the OOM killer
    if spec.seed == 2:
        raise RuntimeError("simulated bug in seed 2")
    return [{"seed": spec.seed, "attempt": attempt}]


def test_a_killed_worker_is_retried_a_raising_run_is_not_and_the_others_finish(local_ray, tmp_path):
    specs = grid(["aps"], ["easy"], range(4))
    results = tmp_path / "r.csv"
    with make_executor("ray", max_retries=1) as ray:
        report = run_sweep(specs, partial(logged_run, attempts_dir=str(tmp_path)), results, config={},
                           executor=ray, progress=False)
        attempts = {spec.seed: len((tmp_path / spec.key).read_text()) for spec in specs}
        assert attempts == {0: 1, 1: 2, 2: 1, 3: 2}  # killed: 1 + max_retries attempts at most; raised: 1
        assert sorted(report.completed) == ["aps-easy-seed0", "aps-easy-seed1"]
        assert {row["run_key"]: row["attempt"] for row in read_rows(results)} == {
            "aps-easy-seed0": "1", "aps-easy-seed1": "2"}
        assert sorted(report.failures) == ["aps-easy-seed2", "aps-easy-seed3"]
        assert "simulated bug in seed 2" in report.failures["aps-easy-seed2"]
        assert "WorkerCrashedError" in report.failures["aps-easy-seed3"]
        # the failed runs stay pending: the next call runs only them
        again = run_sweep(specs, fixed_run, results, config={}, executor=ray, progress=False)
    assert sorted(again.completed) == ["aps-easy-seed2", "aps-easy-seed3"] and not again.failures
    assert sorted(again.skipped) == ["aps-easy-seed0", "aps-easy-seed1"]
    assert len(read_rows(results)) == 4


def fixed_run(spec) -> list[dict]:
    """The same runs with their bugs fixed."""
    return [{"seed": spec.seed, "attempt": 0}]


def test_an_atari_sweep_on_ray_writes_the_local_executors_rows(local_ray, tmp_path):
    from aps_teach.atari.sweep import run_atari_sweep
    from tests.atari.test_train import tiny

    run_atari_sweep(["pong"], ["dqn"], 1, tiny(), tmp_path / "local", progress=False)
    with make_executor("ray", num_cpus=1) as ray:
        report = run_atari_sweep(["pong"], ["dqn"], 1, tiny(), tmp_path / "ray", executor=ray,
                                 progress=False)
    assert report.completed == ["dqn-pong-seed0"] and not report.failures
    local, remote = (read_rows(tmp_path / name / "scores.csv") for name in ("local", "ray"))
    assert without_timing(remote) == without_timing(local) and len(local) == 1
    assert read_rows(tmp_path / "ray" / "summary.csv") == read_rows(tmp_path / "local" / "summary.csv")
