"""The package maps a reader is given (each `__init__`'s docstring, the README's library screen, the learner
page's module table) name every module that exists: they are checked here against the files, so that a new
module cannot be missing from them (learner/group.py once was, from all three)."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = sorted(path.parent.name for path in (ROOT / "aps_teach").glob("*/__init__.py")
                  if path.parent.name != "results")


def modules(package: str) -> list[str]:
    return sorted(path.stem for path in (ROOT / "aps_teach" / package).glob("*.py")
                  if path.stem not in ("__init__", "__main__"))


def named(text: str, names: list[str]) -> list[str]:
    """The names of `names` that `text` does not mention as a word."""
    return [name for name in names if not re.search(rf"\b{name}\b", text)]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_docstring_names_its_modules(package):
    doc = importlib.import_module(f"aps_teach.{package}").__doc__ or ""
    assert named(doc, modules(package)) == [], f"aps_teach/{package}/__init__.py does not name these"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_readme_library_screen_names_every_module(package):
    screen = (ROOT / "README.md").read_text().split("## The library in one screen", 1)[1].split("```")[1]
    block = re.search(rf"\n  {package}/ .*?(?=\n  \w+/|\ngridworld/)", screen, re.DOTALL)
    assert block, f"the README's library screen has no line for aps_teach/{package}/"
    assert named(block.group(0), modules(package)) == []


def test_the_learner_page_has_a_row_per_learner_module():
    page = (ROOT / "docs" / "learner.md").read_text()
    rows = set(re.findall(r"^\| \[`(\w+)`\]\(\.\./aps_teach/learner/\1\.py\)", page, re.MULTILINE))
    assert rows == set(modules("learner"))


PAGES = ["README.md", "benchmarks/README.md", "gridworld/README.md", "aps_teach/atari/README.md",
         *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES)
def test_every_list_starts_after_a_blank_line(page):
    """Markdown renders a list that follows a line of text without a blank line as part of that paragraph
    (three lists of the studies page once read as one paragraph each)."""
    lines, fenced, glued = (ROOT / page).read_text().splitlines(), False, []
    for number, line in enumerate(lines[1:], start=2):
        fenced ^= line.startswith("```")
        before = lines[number - 2]
        if not fenced and re.match(r"(- |\d+\. )", line) and before.strip() and \
                not re.match(r"(\s*- |\s*\d+\. |\s+|\|)", before):
            glued.append(number)
    assert glued == [], f"{page}: lists glued to the line before them at lines {glued}"


def test_the_learner_pages_algorithm_1_names_functions_that_exist_and_every_step_of_the_update():
    """Each line of Algorithm 1 on docs/learner.md names the library function that does it: each name must
    resolve in aps_teach.learner, and every step function of the update module must be named there."""
    from aps_teach.learner import update

    page = (ROOT / "docs" / "learner.md").read_text()
    block = page.split("Algorithm 1 line by line", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    names = re.findall(r"\b(agent|batch|tasks|rewards|update)\.(\w+)(?:\.(\w+))?", block)
    assert len(names) >= 10, block
    for module, name, attribute in names:
        found = getattr(importlib.import_module(f"aps_teach.learner.{module}"), name, None)
        assert found is not None, f"docs/learner.md names learner.{module}.{name}, which does not exist"
        assert not attribute or hasattr(found, attribute), f"{module}.{name}.{attribute} does not exist"
    steps = ("rewarded_features", "window_rewards", "double_q_bootstrap", "sf_td_target", "gradient_step",
             "count_update")
    assert [step for step in steps if f"update.{step}" not in block] == []
    assert all(callable(getattr(update, step)) for step in steps)
