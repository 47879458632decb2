"""Headless, CPU-only test settings shared by every test (and the notebooks they execute)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
