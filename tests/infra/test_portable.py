"""Portable: no module of the package needs `fcntl` (POSIX only) to import, so the course's first import works
on native Windows too. Each module is imported in a fresh interpreter where `import fcntl` fails, as there."""

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import aps_teach
import gridworld

IMPORT_ALL = """
import importlib, sys, warnings
sys.modules["fcntl"] = None  # `import fcntl` now raises ImportError, as on Windows
warnings.simplefilter("ignore")  # filelock says it falls back to its soft lock
for name in sys.argv[1:]:
    importlib.import_module(name)
    assert "fcntl" not in sys.modules or sys.modules["fcntl"] is None
print("imported", len(sys.argv) - 1)
"""


def package_modules() -> list[str]:
    names = ["aps_teach", "gridworld"]
    for package in (aps_teach, gridworld):
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
                  if not m.name.endswith("__main__")]  # `python -m aps_teach` runs the main job
    return names


def test_every_module_imports_without_fcntl():
    names = package_modules()
    assert {"aps_teach.infra.locks", "aps_teach.infra.run_dir", "aps_teach.grid.train",
            "aps_teach.course.widgets", "aps_teach.cli.main"} <= set(names)
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, *names], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"imported {len(names)}"


def test_the_import_check_notices_a_module_that_needs_fcntl():
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL.replace("for name", "import fcntl\nfor name"),
                           "aps_teach"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr
