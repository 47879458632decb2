"""Packaging: environment.yml and pyproject.toml cannot drift; gridworld stays independent of aps_teach; the
README's set-up section states the supported PyTorch range and the number of tests as they are."""

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_TO_PYPI = {"pytorch": "torch"}
NOT_PACKAGES = {"python", "pip"}


def split(requirement: str) -> tuple[str, str]:
    """'numpy>=2.0' -> ('numpy', '>=2.0'), names normalised as pip does."""
    name, specifier = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", requirement.strip()).groups()
    name = re.sub(r"[-_.]+", "-", CONDA_TO_PYPI.get(name, name)).lower()
    return name, specifier.replace(" ", "")


def pyproject_requirements() -> dict[str, str]:
    """Every third-party requirement, extras included (an extra naming another extra of ours is skipped)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    lines = project["dependencies"] + [line for extra in extras for line in extra]
    return dict(split(line) for line in lines if not line.startswith(project["name"] + "["))


def test_dev_extra_includes_the_cluster_extra_so_ci_runs_the_ray_tests():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "aps-teach[cluster]" in extras["dev"] and [split(r)[0] for r in extras["cluster"]] == ["ray"]


def environment_requirements() -> tuple[dict[str, str], list[str]]:
    """(package -> version specifier) over conda and pip entries, and the pip lines that install us."""
    dependencies = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda_lines = [d for d in dependencies if isinstance(d, str)]
    pip_lines = next(d["pip"] for d in dependencies if isinstance(d, dict))
    installs_us = [line for line in pip_lines if line.startswith("-e")]
    found = dict(split(line) for line in conda_lines + pip_lines if line not in installs_us)
    return {name: spec for name, spec in found.items() if name not in NOT_PACKAGES}, installs_us


def test_environment_yml_and_pyproject_name_the_same_packages_and_floors():
    conda, installs_us = environment_requirements()
    assert conda == pyproject_requirements()
    assert installs_us == ["-e .[dev]"]


def test_environment_yml_uses_conda_forge_and_python_311():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert environment["channels"] == ["conda-forge"]
    assert "python=3.11" in environment["dependencies"]


def test_gridworld_never_imports_aps_teach():
    for path in (ROOT / "gridworld").rglob("*.py"):
        tree = ast.parse(path.read_text())
        nodes = list(ast.walk(tree))
        imported = {alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in nodes if isinstance(node, ast.ImportFrom)}
        assert not any(name.split(".")[0] == "aps_teach" for name in imported), path


def test_pyproject_lists_every_package():
    """pyproject.toml lists the packages (to map results/ into aps_teach.results): none may be missing."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(path.parent.relative_to(ROOT).parts) for top in ("aps_teach", "gridworld")
               for path in (ROOT / top).rglob("__init__.py")}
    assert on_disk <= listed and listed - on_disk == {"aps_teach.results"}


def setup_section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## Set up", 1)[1].split("\n## ", 1)[0]


def test_the_readme_states_the_supported_torch_range_of_pyproject():
    assert f"`torch{pyproject_requirements()['torch']}`" in setup_section()


def test_the_readme_states_the_number_of_tests_the_suite_collects():
    """It said 560 while 698 were collected: the number is checked against a collection of the whole suite."""
    stated = re.findall(r"([\d,]+) tests in about", setup_section())
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
               str(ROOT / "tests")]
    collected = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    count = int(re.search(r"^(\d+) tests? collected", collected.stdout, re.MULTILINE).group(1))
    assert [int(n.replace(",", "")) for n in stated] == [count], f"the suite collects {count} tests"
