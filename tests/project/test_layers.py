"""Pipelines compute, views draw: no module of the computing and pipeline layer imports matplotlib or a
drawing module, directly or through any module of the repository it imports (walked with `ast`, lazy
imports inside functions included, so the check needs no import and no display)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = ("aps_teach", "gridworld")
DRAWING = {"aps_teach.grid.plots", "aps_teach.studies.plots", "aps_teach.atari.plots",
           "aps_teach.course.widgets", "aps_teach.course.schematic", "aps_teach.infra.figures"}
"""The view layer: figures and widgets."""
ENTRY_POINTS = {"aps_teach.__main__", "aps_teach.cli.main", "aps_teach.cli.gridworld",
                "aps_teach.cli.studies", "aps_teach.cli.atari", "aps_teach.cli.demo"}
"""The commands: they run a pipeline and draw what it returns."""


def repo_modules() -> dict[str, Path]:
    """Every module of the repository's packages: dotted name -> file."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_statements(name: str, source: str, modules: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """Every import anywhere in `source` (module `name`) as (the module it reads, the names it takes):
    `import a` is (a, []), `from a import b, c` is (a, [b, c]), a relative `from .a` resolved."""
    package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
    statements = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            statements += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            statements.append((module, [alias.name for alias in node.names]))
    return statements


def imported_names(name: str, source: str, modules: dict[str, Path]) -> set[str]:
    """The modules `source` (module `name`) imports anywhere in its text, with the packages whose
    __init__ each import runs; `from a import b` counts a.b when it is a module."""
    found = set()
    for module, names in import_statements(name, source, modules):
        found.add(module)
        found |= {f"{module}.{n}" for n in names if f"{module}.{n}" in modules}
    parents = {".".join(n.split(".")[:i]) for n in found for i in range(1, n.count(".") + 1)}
    return found | parents


def drawing_chain(start: str, sources: dict[str, str], modules: dict[str, Path]) -> list[str] | None:
    """The shortest import chain from `start` to matplotlib or a drawing module, or None (breadth-first
    over the repository's modules)."""
    chains, queue = {start: [start]}, [start]
    while queue:
        name = queue.pop(0)
        for imported in sorted(imported_names(name, sources[name], modules)):
            if imported.split(".")[0] == "matplotlib" or imported in DRAWING:
                return [*chains[name], imported]
            if imported in modules and imported not in chains:
                chains[imported] = [*chains[name], imported]
                queue.append(imported)
    return None


MODULES = repo_modules()
SOURCES = {name: path.read_text() for name, path in MODULES.items()}
COMPUTING = sorted(set(MODULES) - DRAWING - ENTRY_POINTS)


@pytest.mark.parametrize("module", COMPUTING)
def test_no_computing_module_reaches_matplotlib_or_a_drawing_module(module):
    chain = drawing_chain(module, SOURCES, MODULES)
    assert chain is None, " -> ".join(chain)


def test_the_layers_are_the_modules_they_name():
    assert DRAWING | ENTRY_POINTS <= set(MODULES)
    assert {"aps_teach.grid.cell_maps", "aps_teach.grid.experiments", "aps_teach.grid.transfer",
            "aps_teach.studies.budget", "aps_teach.grid.quickstart", "aps_teach.atari.sweep",
            "aps_teach.grid.train", "gridworld"} <= set(COMPUTING)
    for module in DRAWING:  # each view does draw, so the walk would find it from anything importing it
        imported = imported_names(module, SOURCES[module], MODULES)
        assert "matplotlib" in {name.split(".")[0] for name in imported}


@pytest.mark.parametrize(("module", "added", "start", "end"), [
    ("aps_teach.grid.experiments", "from . import plots\n", "aps_teach.grid.experiments",
     "aps_teach.grid.plots"),
    ("aps_teach.grid.transfer", "from ..studies.plots import plot_transfer\n", "aps_teach.grid.transfer",
     "aps_teach.studies.plots"),
    ("aps_teach.atari.sweep", "from ..infra.figures import save_figure\n", "aps_teach.atari.sweep",
     "aps_teach.infra.figures"),
    # a lazy import some modules down: studies.budget -> ... -> rewards -> matplotlib
    ("aps_teach.learner.rewards", "def draw():\n    import matplotlib.pyplot as plt\n",
     "aps_teach.studies.budget", "matplotlib"),
])
def test_the_walk_finds_a_drawing_import_added_to_a_pipeline(module, added, start, end):
    assert drawing_chain(start, SOURCES, MODULES) is None
    found = drawing_chain(start, {**SOURCES, module: SOURCES[module] + "\n" + added}, MODULES)
    assert found is not None and found[0] == start and found[-1] == end and module in found, found


LAYER_PAGE = ROOT / "docs" / "development.md"
"""The page whose table "The library's layers" orders the modules."""


def layer_table() -> dict[str, int]:
    """Module -> row of the layer table on LAYER_PAGE. A cell names folders and modules: `gridworld/` is the
    environments package; `folder/` every module of aps_teach/folder/ that no other cell names (its
    __init__ too, when it holds code); `folder/x` the module aps_teach.folder.x."""
    text = LAYER_PAGE.read_text().split("## The library's layers", 1)[1]
    rows = [line for line in text.split("\n\n", 2)[2].splitlines() if line.startswith("| ")][1:]
    cells = [[name.strip().strip("`") for name in row.split("|")[2].split(",")] for row in rows]
    layers = {}
    for index, names in enumerate(cells):
        for name in names:
            if not name.endswith("/"):
                layers["aps_teach." + name.replace("/", ".")] = index
    for index, names in enumerate(cells):
        for name in names:
            if name == "gridworld/":
                layers.update({m: index for m in MODULES if m.split(".")[0] == "gridworld"})
            elif name.endswith("/"):
                package = "aps_teach." + name.rstrip("/")
                layers.update({m: index for m in set(MODULES) - PACKAGE_FILES - set(layers)
                               if m == package or m.startswith(package + ".")})
    return layers


def runtime_imports(name: str) -> set[str]:
    """The repository modules `name` imports, lazy ones included, those under `if TYPE_CHECKING:` left out."""
    tree = ast.parse(SOURCES[name])
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            node.body = [ast.Pass()]
    return {m for m in imported_names(name, ast.unparse(tree), MODULES) if m in MODULES} - {name}


def holds_code(source: str) -> bool:
    """Whether a module's text holds more than a docstring."""
    body = ast.parse(source).body
    docstring = bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return len(body) > docstring


PACKAGE_FILES = {"aps_teach", "aps_teach.__main__"} | {
    name for name, path in MODULES.items() if path.name == "__init__.py" and not holds_code(SOURCES[name])}
"""The package itself, `python -m`'s entry and package __init__ files that hold no code (a docstring at most:
the folder's map, `tests/project/test_maps.py`): outside the table."""
LAYERS = layer_table()


def test_the_layer_table_names_every_module_once():
    assert set(LAYERS) == set(MODULES) - PACKAGE_FILES


def test_every_module_of_the_library_sits_in_a_folder():
    """The top of aps_teach/ holds only the package and `python -m`'s entry: every wing and layer is a
    folder."""
    top = {path.name for path in MODULES.values() if path.parent == ROOT / "aps_teach"}
    assert top == {"__init__.py", "__main__.py"}, sorted(top - {"__init__.py", "__main__.py"})


@pytest.mark.parametrize("module", sorted(set(MODULES) - PACKAGE_FILES))
def test_a_module_imports_only_its_own_row_of_the_layer_table_or_rows_above(module):
    upward = sorted(m for m in runtime_imports(module) if LAYERS.get(m, -1) > LAYERS[module])
    assert not upward, f"{module} (row {LAYERS[module]}) imports {upward} from rows below it"


STUDIES = sorted(name for name in MODULES if name.startswith("aps_teach.studies.") and name not in DRAWING)
"""The studies and what they share: aps_teach/studies/ but its view."""


@pytest.mark.parametrize("module", [name for name in STUDIES
                                    if LAYERS[name] > LAYERS["aps_teach.studies.verdicts"]])
def test_a_study_builds_only_on_the_studies_of_the_rows_above_its_own(module):
    """Which study may build on which is the table's order: a study imports no study of its own row."""
    beside = sorted(m for m in runtime_imports(module) if m in STUDIES and LAYERS[m] == LAYERS[module])
    assert not beside, f"{module} (row {LAYERS[module]}) imports {beside} of its own row"


def test_the_studies_share_a_row_above_them_and_the_studies_built_on_studies_sit_below():
    shared = {"aps_teach.studies.arms", "aps_teach.studies.verdicts", "aps_teach.studies.protocol"}
    assert {LAYERS[name] for name in shared} == {LAYERS["aps_teach.studies.verdicts"]}
    assert LAYERS["aps_teach.studies.verdicts"] < LAYERS["aps_teach.studies.task_families"] \
        < LAYERS["aps_teach.studies.held_out"] < LAYERS["aps_teach.studies.plots"]
    for name in shared:  # what the studies share imports no study
        assert not [m for m in runtime_imports(name) if m in STUDIES and m not in shared], name


def named_imports(name: str, source: str) -> set[str]:
    """The repository modules `source` (module `name`) names in its imports, anywhere in its text (lazy ones
    and those under `if TYPE_CHECKING:` too): `from a import b` is a.b when that is a module, else a. The
    packages Python initialises on the way are left out: a package's own modules import it by being in it."""
    found = set()
    for module, names in import_statements(name, source, MODULES):
        found |= {f"{module}.{n}" if f"{module}.{n}" in MODULES else module for n in names} or {module}
    return {m for m in found if m in MODULES and m != name}


def import_cycle(sources: dict[str, str]) -> list[str] | None:
    """A chain m1 -> m2 -> ... -> m1 of repository modules each importing the next (`named_imports`), or
    None (depth-first search)."""
    edges = {name: sorted(named_imports(name, source)) for name, source in sources.items()}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name):], name]
        if name in done:
            return None
        for imported in edges[name]:
            if cycle := visit(imported, [*path, name]):
                return cycle
        done.add(name)
        return None

    return next((cycle for name in sorted(sources) if (cycle := visit(name, []))), None)


def test_no_module_imports_one_that_imports_it():
    cycle = import_cycle(SOURCES)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_search_finds_a_circle_through_a_type_checking_import():
    added = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
             "    from aps_teach.learner.update import td_targets\n")
    cycle = import_cycle({**SOURCES, "aps_teach.learner.batch": SOURCES["aps_teach.learner.batch"] + added})
    assert cycle is not None and "aps_teach.learner.batch" in cycle and "aps_teach.learner.update" in cycle


@pytest.mark.parametrize("module", sorted(name for name in MODULES if name.startswith("aps_teach.infra")))
def test_the_foundations_import_nothing_of_the_environments(module):
    """infra/ is what both wings run on: it knows no gridworld (it once imported it for one constant)."""
    imported = {name.split(".")[0] for name in imported_names(module, SOURCES[module], MODULES)}
    assert "gridworld" not in imported


ATARI_WING = sorted(name for name in MODULES if name.split(".")[:2] == ["aps_teach", "atari"])
"""The Atari wing: aps_teach/atari/."""


def barred_from_atari(module: str) -> bool:
    """What the Atari wing may not reach: the gridworld wing (aps_teach/grid/), the environments
    (gridworld/) and the studies (aps_teach/studies/, whose Atari study builds on the wing, not the
    reverse)."""
    parts = module.split(".")
    return parts[0] == "gridworld" or parts[:2] in (["aps_teach", "grid"], ["aps_teach", "studies"])


def barred_chain(start: str, sources: dict[str, str], barred) -> list[str] | None:
    """The shortest import chain from `start` through the repository's modules to one that `barred` names,
    lazy imports and those under `if TYPE_CHECKING:` included, or None (breadth-first)."""
    chains, queue = {start: [start]}, [start]
    while queue:
        name = queue.pop(0)
        for imported in sorted(imported_names(name, sources[name], MODULES)):
            if barred(imported):
                return [*chains[name], imported]
            if imported in MODULES and imported not in chains:
                chains[imported] = [*chains[name], imported]
                queue.append(imported)
    return None


@pytest.mark.parametrize("module", ATARI_WING)
def test_the_atari_wing_reaches_neither_the_gridworld_wing_nor_the_studies(module):
    """The wings mirror each other and share what lies above both (the learner, infra/): Atari code that
    reached the gridworld's would tie a pixel run to the key-passageway levels. The layer table alone allows
    it (the gridworld wing's row is above the Atari wing's), so the rule is walked here, through every
    module on the way."""
    chain = barred_chain(module, SOURCES, barred_from_atari)
    assert chain is None, " -> ".join(chain)


@pytest.mark.parametrize(("module", "added", "end"), [
    ("aps_teach.atari.train", "from aps_teach.grid.config import TrainConfig\n", "aps_teach.grid"),
    ("aps_teach.atari.update_step", "def later():\n    from aps_teach.studies import verdicts\n",
     "aps_teach.studies"),
    # some modules down: atari.train -> ... -> learner.update -> gridworld
    ("aps_teach.learner.update", "import gridworld\n", "gridworld"),
])
def test_the_atari_walk_finds_a_barred_import_added_on_the_way(module, added, end):
    assert barred_chain("aps_teach.atari.train", SOURCES, barred_from_atari) is None
    found = barred_chain("aps_teach.atari.train", {**SOURCES, module: SOURCES[module] + "\n" + added},
                         barred_from_atari)
    assert found is not None and found[-1] == end and module in found, found
