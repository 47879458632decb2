"""Where a sweep's runs execute: `make_executor("local" | "ray", ...)` gives a `concurrent.futures.Executor`
for `aps_teach.infra.sweeps.run_sweep`, so results land in the same CSV whichever executor ran them.

- `local`: a pool of spawned processes on this machine, `cpu_count // num_cpus` runs at once by default;
  with `num_gpus=1`, one process per local GPU (`gpus`, default every visible one), each pinned to its GPU
  through CUDA_VISIBLE_DEVICES, so a run's `cuda` device is its own GPU.
- `ray`: one Ray task per run, each asking Ray for `num_cpus` CPUs and `num_gpus` GPUs (Ray sets
  CUDA_VISIBLE_DEVICES, so `num_gpus=1` puts one run on each GPU), on the cluster at `address`
  ("auto", "HOST:PORT") or, with no address, on a Ray instance started on this machine. Needs the
  `cluster` extra (`pip install "aps-teach[cluster]"`).

Retries (ray): a run whose worker is lost (the process crashes or is killed, its node goes down) is re-run
by Ray up to `max_retries` times, then reported as failed. A run that raises is not re-run (its seed fixes
its numbers, so it would raise again): it is reported with its traceback at once. Either way the other runs
go on, and the failed run stays pending for the next call of the sweep, as on the local executor.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

from aps_teach.infra.checks import check_int, check_range

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")
DEFAULT_MAX_RETRIES = 2
"""Re-runs of a run whose worker was lost before it is reported as failed (ray)."""
DEFAULT_RAY_TIMEOUT = 30.0
"""Seconds to wait for a Ray head at HOST:PORT to answer before the sweep is refused (ray)."""
PARENT_CHECK_SECONDS = 0.5
"""How often a local worker checks that its driver is alive (it exits when the driver has died)."""

def _start_worker(parent: int, initializer: Callable | None, initargs: tuple) -> None:
    """Worker initialiser: leave Ctrl-C to the driver (it stops the pool), exit when the driver has died
    (polled every PARENT_CHECK_SECONDS, so even a SIGKILLed driver leaves no worker), then `initializer`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


class LocalPool(ProcessPoolExecutor):
    """A pool of fresh (spawned) processes on this machine that die with their driver and can be stopped
    at once (`stop`)."""

    def __init__(self, workers: int, initializer: Callable | None = None, initargs: tuple = ()):
        check_int("workers", workers, default="one per core")
        super().__init__(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                         initializer=_start_worker, initargs=(os.getpid(), initializer, initargs))

    def stop(self) -> None:
        """Cancel the pending runs and kill the running ones (SIGTERM, then SIGKILL after 5 s)."""
        processes = list((self._processes or {}).values())  # the pool's own (3.14 has kill_workers)
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
        self.shutdown(wait=True)


def check_not_reimported() -> None:
    """In a worker process that is importing the user's main script anew on start-up (Python's spawn start
    method, which sweeps use, runs it as `__mp_main__` in each worker, before the worker knows its parent)
    and reached a sweep there: exit the worker with one line saying to guard the script. Unguarded, every
    worker would start the sweep again, refused as "another process" by the sweep that started it."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise SystemExit(f"aps-teach: a sweep's worker process re-ran {frame.f_code.co_filename} as it "
                             "started (each worker imports the main script anew) and reached the sweep "
                             "again: put the lines that start the sweep under `if __name__ == \"__main__\":`")
        frame = frame.f_back


def local_executor(workers: int | None = None) -> Executor:
    """A `LocalPool` of `workers` processes; default: one per local core."""
    check_int("workers", workers, default="one per core")
    return LocalPool(workers or os.cpu_count() or 1)


def stop_executor(executor: Executor) -> None:
    """Cancel what has not started and stop what runs: the executor's own `stop` if it has one (local
    pools kill their workers, Ray cancels its tasks), else a shutdown that cancels pending work."""
    stop = getattr(executor, "stop", None)
    if callable(stop):
        stop()
    else:
        executor.shutdown(wait=False, cancel_futures=True)


def make_executor(name: str = "local", *, workers: int | None = None, address: str | None = None,
                  num_cpus: float = 1, num_gpus: float = 0,
                  max_retries: int = DEFAULT_MAX_RETRIES, gpus: Sequence[int] | None = None,
                  connect_timeout: float = DEFAULT_RAY_TIMEOUT) -> Executor:
    """An executor for `run_sweep`: `name` is local or ray; num_cpus/num_gpus are what each run needs;
    `gpus` the local GPUs to spread runs over (local, num_gpus=1; default every visible GPU);
    `connect_timeout` how long a Ray head at HOST:PORT may take to answer (`wait_for_head`)."""
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; executors: {', '.join(EXECUTORS)}")
    if num_cpus <= 0 or num_gpus < 0 or max_retries < 0:
        raise ValueError(f"need num_cpus > 0, num_gpus >= 0, max_retries >= 0; got {num_cpus}, {num_gpus}, "
                         f"{max_retries}")
    check_int("workers", workers, default="one per core")
    if name == "local":
        if address is not None:
            raise ValueError("a Ray address is for the ray executor (--executor ray)")
        if num_gpus:
            if num_gpus != 1 or workers is not None:
                raise ValueError(f"the local executor gives each run one whole GPU: num_gpus=1 and no "
                                 f"workers (one per GPU), got num_gpus={num_gpus}, workers={workers}")
            return gpu_executor(visible_gpus() if gpus is None else gpus)
        if gpus is not None:
            raise ValueError("gpus is for runs on local GPUs (num_gpus=1)")
        return local_executor(workers or max(1, int((os.cpu_count() or 1) // num_cpus)))
    if gpus is not None:
        raise ValueError("gpus is for the local executor; Ray places each run on a GPU itself (num_gpus)")
    if workers is not None:
        raise ValueError("workers is for the local executor; Ray runs as many runs at once as the cluster's "
                         "CPUs and GPUs allow (num_cpus, num_gpus per run)")
    return RayExecutor(address, num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries,
                       connect_timeout=connect_timeout)


def visible_gpus() -> list[int]:
    """Indices of the CUDA GPUs this process sees; ValueError if there are none."""
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        raise ValueError("no CUDA GPU is visible for runs on local GPUs; run on the CPU (--device cpu) or "
                         "on a Ray cluster with GPUs (--executor ray)")
    return list(range(count))


def gpu_executor(gpus: Sequence[int], runs_per_gpu: int = 1) -> Executor:
    """A pool of `runs_per_gpu` spawned processes per GPU in `gpus` (indices as this process numbers them),
    each seeing only its own GPU (CUDA_VISIBLE_DEVICES), so every run in it uses `cuda` = `cuda:0` = that GPU
    (several runs on one GPU share it: a latency-bound update leaves it room)."""
    check_int("runs_per_gpu", runs_per_gpu)
    if not gpus or len(set(gpus)) != len(gpus) or any(int(g) != g or g < 0 for g in gpus):
        raise ValueError(f"gpus must be distinct GPU indices >= 0, got {list(gpus)!r}")
    parent = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = parent.split(",") if parent else [str(g) for g in range(max(gpus) + 1)]
    if max(gpus) >= len(names):
        raise ValueError(f"GPU {max(gpus)} is not among the {len(names)} visible "
                         f"(CUDA_VISIBLE_DEVICES={parent})")
    queue = multiprocessing.get_context("spawn").Queue()
    for gpu in [*gpus] * runs_per_gpu:
        queue.put(names[gpu])
    return LocalPool(len(gpus) * runs_per_gpu, initializer=_pin_gpu, initargs=(queue,))


def _pin_gpu(queue) -> None:
    """Worker initialiser: take one GPU off the queue and see only it (before CUDA starts)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = queue.get()


def import_ray():
    """The `ray` module, or an ImportError saying which extra installs it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError('the ray executor needs Ray: pip install "aps-teach[cluster]"') from error
    return ray


def wait_for_head(address: str, timeout: float) -> None:
    """Return once a TCP connection to the Ray head at `address` (HOST:PORT, or ray://HOST:PORT) succeeds,
    trying every second; ValueError in one line if none has within `timeout` seconds."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"Ray address {address!r} is not auto or HOST:PORT (e.g. 10.0.0.1:6379)")
    check_range("the Ray connection timeout", timeout, 0, low_open=True)
    deadline = time.monotonic() + timeout
    while True:
        wait = max(0.1, min(5.0, deadline - time.monotonic()))
        try:
            with socket.create_connection((host, int(port)), timeout=wait):
                return
        except OSError as error:
            if time.monotonic() + 1 > deadline:
                raise ValueError(f"no Ray head answered at {address} within {timeout:g} s "
                                 f"({error.strerror or error}); check the address and `ray status` on the "
                                 "head, or wait longer with --ray-timeout") from None
        time.sleep(1)


def ray_token_to_write(address: str | None) -> Path | None:
    """Where `ray.init(address)` is about to write an authentication token into the user's home, or None: a
    Ray with token authentication (2.5x on) writes ~/.ray/auth_token when it starts a cluster on this
    machine (no address, or "local", and no RAY_ADDRESS) and neither RAY_AUTH_MODE nor a token is set."""
    path = Path.home() / ".ray" / "auth_token"
    starts_local = address in (None, "local") and not os.environ.get("RAY_ADDRESS")
    has_token_auth = importlib.util.find_spec("ray._private.authentication") is not None
    set_up = any(os.environ.get(name) for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"))
    return path if starts_local and has_token_auth and not set_up and not path.exists() else None


class RayExecutor(Executor):
    """Each `submit` is one Ray task with the given resources; `Future`s come from `ObjectRef.future()`.

    Connects to `address` unless this process is already connected to Ray (then it uses that connection
    and leaves it open on shutdown); a head at HOST:PORT that does not answer within `connect_timeout`
    seconds is a one-line ValueError (`wait_for_head`).
    """

    def __init__(self, address: str | None = None, *, num_cpus: float = 1, num_gpus: float = 0,
                 max_retries: int = DEFAULT_MAX_RETRIES, connect_timeout: float = DEFAULT_RAY_TIMEOUT):
        self._ray = import_ray()
        lost = self._ray.exceptions
        self.lost_worker_errors = (lost.WorkerCrashedError, lost.NodeDiedError, lost.LocalRayletDiedError)
        """What a run's future raises when its worker or node was lost (`sweeps.failure_text`)."""
        self._owns_connection = not self._ray.is_initialized()
        if self._owns_connection:
            if address not in (None, "auto", "local"):
                wait_for_head(address, connect_timeout)  # ray.init would retry an unreachable head forever
            token = ray_token_to_write(address)
            if token is not None:
                print(f"starting Ray on this machine; Ray writes an authentication token to {token} (set "
                      "RAY_AUTH_MODE=disabled to start it without one)", file=sys.stderr, flush=True)
            try:
                self._ray.init(address=address)
            except ConnectionError as error:  # ray's text names its own --address flag, not ours
                if address != "auto":
                    raise
                said = " ".join(str(error).split())
                raise ValueError("--ray-address auto found no Ray cluster this machine has joined: start one "
                                 "with `ray start --head` (docs/sweeps.md), or give its head's HOST:PORT or "
                                 f"no --ray-address to start Ray here (Ray: {said})") from None
        self._options = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_retries": max_retries,
                         "retry_exceptions": False}
        self._remote: dict[Callable, Any] = {}
        self._refs: list = []

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        if fn not in self._remote:
            self._remote[fn] = self._ray.remote(fn).options(**self._options)
        ref = self._remote[fn].remote(*args, **kwargs)
        self._refs.append(ref)
        return ref.future()

    def stop(self) -> None:
        """Cancel every task of this executor at once, killing the workers of those that run (Ctrl-C)."""
        for ref in self._refs:
            self._ray.cancel(ref, force=True)
        self.shutdown()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            for ref in self._refs:
                self._ray.cancel(ref)
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()
        self._refs.clear()
