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
