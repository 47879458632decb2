"""Headless, CPU-only test settings shared by every test (and the notebooks they execute), and the fixtures
several test files share."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def threads():
    """Two worker threads, the executor the sweep tests run their runs on."""
    with ThreadPoolExecutor(2) as pool:
        yield pool


@pytest.fixture
def no_cpp_compiler():
    """A machine without a C++ compiler, as torch.compile's CPU backend sees it: inductor pointed at a
    compiler that does not exist, no kernel compiled earlier allowed to stand in (torch's own config patch:
    pytest's monkeypatch leaves inductor's config without the key), and the backend check asked afresh. Its
    probe is one lambda, one code object, so dynamo's cache keeps the graph an earlier test compiled for it:
    dynamo is reset on the way in, and on the way out for the tests after."""
    import torch
    import torch._inductor.config as inductor

    from aps_teach.infra import phases

    phases.compile_backend_error.cache_clear()
    torch._dynamo.reset()
    with inductor.patch({"cpp.cxx": ("/nonexistent/g++",), "force_disable_caches": True}):
        yield
    phases.compile_backend_error.cache_clear()  # later tests: the compiler is back
    torch._dynamo.reset()
