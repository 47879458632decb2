"""The course website (mkdocs.yml, docs/hooks.py): it builds with --strict from the committed, executed
notebooks and the pages, never executing a notebook; its home page links to every notebook and every page;
every notebook's figures are on its page; and a broken link of any kind, or a page missing from the
navigation or from the repository, fails the build."""

import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "gridworld" / "README.md",
         ROOT / "aps_teach" / "atari" / "README.md", ROOT / "benchmarks" / "README.md"]
"""Every page of the site but its home page (README.md), at its repository path."""


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `config` into `site`, run from `site`'s folder (mkdocs-jupyter's cache goes
    there, not into the repository)."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
               "--site-dir", str(site)]
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about MkDocs 2.0
    return subprocess.run(command, cwd=site.parent, env=environment, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = build(ROOT / "mkdocs.yml", folder / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    return folder / "site"


def url(page: Path) -> str:
    """Where a page of the repository lies on the site (use_directory_urls): docs/course.md -> course/."""
    relative = page.relative_to(ROOT).as_posix().removeprefix("docs/")
    stem = posixpath.splitext(relative)[0]
    return posixpath.dirname(stem) + "/" if posixpath.basename(stem) == "README" else stem + "/"


def article_links(html: str) -> set[str]:
    """The links of a page's own text (its article), not of the navigation every page carries."""
    article = re.search(r"<article[^>]*>(.*)</article>", html, re.DOTALL).group(1)
    return {posixpath.normpath(href) + "/" for href in re.findall(r'href="([^"#:]+)/(?:#[^"]*)?"', article)}


def test_the_home_page_links_to_every_notebook_and_every_page(site):
    links = article_links((site / "index.html").read_text())
    expected = {url(page) for page in PAGES} | {f"notebooks/{path.stem}/" for path in NOTEBOOKS}
    assert expected - links == set()


def test_every_page_and_notebook_is_built(site):
    for path in [*PAGES, *NOTEBOOKS]:
        assert (site / url(path) / "index.html").is_file(), path


def test_every_notebooks_figures_are_on_its_page_as_committed(site):
    assert len(NOTEBOOKS) >= 12
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        outputs = [output for cell in cells for output in cell.get("outputs", [])]
        figures = [output["data"]["image/png"] for output in outputs if "image/png" in output.get("data", {})]
        assert figures, path.name  # every notebook draws
        page = (site / "notebooks" / path.stem / "index.html").read_text()
        for figure in figures:  # the committed image itself: never re-executed
            assert "".join(figure).replace("\n", "") in page, path.name


def test_every_results_figure_a_page_embeds_is_on_the_site(site):
    embedded = {match for page in [ROOT / "README.md", *PAGES]
                for match in re.findall(r"!\[[^\]]*\]\(((?:\.\./)*results/[^)]+\.png)\)", page.read_text())}
    assert len(embedded) >= 7
    for image in embedded:
        name = image.split("results/", 1)[1]
        assert (site / "results" / name).read_bytes() == (ROOT / "results" / name).read_bytes()


LINKS = {  # kind: (a link that works, the same link broken)
    "a page": ("[the page](docs/page.md)", "[the page](docs/gone.md)"),
    "a heading on a page": ("[a heading](docs/page.md#a-heading)", "[a heading](docs/page.md#gone)"),
    "a figure": ("![a figure](results/figure.png)", "![a figure](results/gone.png)"),
    "a repository file": ("[the code](aps_teach/code.py)", "[the code](aps_teach/gone.py)"),
}


def tiny_repository(folder: Path, links: list[str], nav: list | None = None) -> Path:
    """A repository with this site's configuration and hook whose home page holds `links`, with a page, a
    figure and a source file for them to point at; its navigation is `nav` (None: mkdocs lists every page)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config.pop("nav")
    if nav is not None:
        config["nav"] = nav
    config.pop("watch")  # paths this tiny repository does not have
    (folder / "docs").mkdir(parents=True)
    (folder / "mkdocs.yml").write_text(yaml.safe_dump(config))
    for part in ("hooks.py", "overrides", "javascripts", "stylesheets"):  # the site's own code
        copy = shutil.copytree if (ROOT / "docs" / part).is_dir() else shutil.copy
        copy(ROOT / "docs" / part, folder / "docs" / part)
    (folder / "docs" / "page.md").write_text("# A page\n\n## A heading\n\n[home](../README.md)\n")
    (folder / "results").mkdir()
    shutil.copy(ROOT / "results" / "quickstart" / "overview.png", folder / "results" / "figure.png")
    (folder / "aps_teach").mkdir()
    (folder / "aps_teach" / "code.py").write_text("")
    (folder / "README.md").write_text("# Home\n\n" + "\n\n".join(links) + "\n")
    return folder / "mkdocs.yml"


def test_a_tiny_site_with_every_kind_of_link_builds(tmp_path):
    built = build(tiny_repository(tmp_path, [works for works, _ in LINKS.values()]), tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    assert 'href="page/"' in home and 'href="page/#a-heading"' in home and 'src="results/figure.png"' in home
    assert 'href="https://github.com/aps-teach/aps-teach/blob/main/aps_teach/code.py"' in home


@pytest.mark.parametrize("kind", LINKS)
def test_a_broken_link_fails_the_build(tmp_path, kind):
    built = build(tiny_repository(tmp_path, [LINKS[kind][1]]), tmp_path / "site")
    output = built.stdout + built.stderr
    assert built.returncode != 0 and "Aborted with 1 warnings in strict mode" in output, output
    (warning,) = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert "gone" in warning and "index.md" in warning


@pytest.mark.parametrize("nav", [["index.md", "page.md", "gone.md"], ["index.md"]],
                         ids=["a page the navigation lists is missing", "a page the navigation misses"])
def test_a_navigation_that_disagrees_with_the_pages_fails_the_build(tmp_path, nav):
    built = build(tiny_repository(tmp_path, [LINKS["a page"][0]], nav), tmp_path / "site")
    output = built.stdout + built.stderr
    assert built.returncode != 0 and "Aborted with 1 warnings in strict mode" in output, output
    (warning,) = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert ("gone.md" in warning) if "gone.md" in nav else ("page.md" in output and "nav" in warning)


def test_every_public_module_has_its_api_page_from_its_docstring(site):
    """The API reference is generated (mkdocstrings, a page per module listed by docs/hooks.py), so no module
    can be missing from it: each page shows the module's own docstring."""
    import html
    import importlib

    modules = [".".join(path.relative_to(ROOT).with_suffix("").parts)
               for top in ("gridworld", "aps_teach") for path in sorted((ROOT / top).rglob("*.py"))
               if not any(part.startswith("_") or part == "results" for part in path.relative_to(ROOT).parts)]
    assert len(modules) > 70
    for module in modules:
        page = site / "reference" / module / "index.html"
        assert page.is_file(), module
        first = (importlib.import_module(module).__doc__ or "").strip().split("\n")[0][:40]
        words = re.sub(r"[`*]", "", first).split()[:3]
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        assert " ".join(words) in " ".join(text.split()), module


def load_hooks():
    """docs/hooks.py as a module (mkdocs loads it by path, it is no package's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def test_a_notebooks_colab_link_opens_the_release_its_install_cell_pins(site):
    from aps_teach.course.build import REPOSITORY, install_requirement, release_tag

    assert yaml.safe_load((ROOT / "mkdocs.yml").read_text())["repo_url"] == REPOSITORY
    for path in NOTEBOOKS:
        page = (site / "notebooks" / path.stem / "index.html").read_text()
        colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
        assert colab == [f"https://colab.research.google.com/github/aps-teach/aps-teach/blob/{release_tag()}/"
                         f"notebooks/{path.name}"], path.name
        code = re.sub(r"<[^>]+>", "", page).replace("&quot;", '"')
        assert f'"{install_requirement()}"' in code, path.name  # the install cell, as the page shows it


def test_a_release_moves_the_colab_links_and_the_install_cell_together(tmp_path, monkeypatch):
    """Both read the tag from pyproject.toml's version: bumped there, both follow."""
    from types import SimpleNamespace

    from aps_teach.course import build

    (tmp_path / "notebooks").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "aps-teach"\nversion = "9.8.7"\n')
    (tmp_path / "mkdocs.yml").write_text("")
    monkeypatch.setattr(build, "NOTEBOOK_DIR", tmp_path / "notebooks")
    config = SimpleNamespace(repo_url=build.REPOSITORY, config_file_path=str(tmp_path / "mkdocs.yml"))
    links = load_hooks().launch_links("notebooks/04_aps.ipynb", config)
    assert build.install_requirement().endswith("@v9.8.7")
    assert "/blob/v9.8.7/notebooks/04_aps.ipynb" in links


def test_search_results_read_as_prose_without_latex_or_code(site):
    """docs/hooks.py marks code blocks, a notebook's code cells (code, prompts, output) and equations for the
    search plugin to leave out, an inline equation indexed by its plain text instead. The API pages are left
    as they are: a docstring about LaTeX may name it."""
    entries = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    notebooks = [entry for entry in entries if entry["location"].startswith("notebooks/")]
    assert {entry["location"].split("/")[1] for entry in notebooks} == {path.stem for path in NOTEBOOKS}
    leaks = {"<pre>": "a code block or printed output", "In\xa0[": "a code cell's prompt",
             "Copied!": "a copy button", "$": "a notebook's TeX", "\\(": "a page's TeX", "\\mathbb": "TeX",
             "\\phi": "TeX", "\\top": "TeX", "print(f\"": "code"}
    for entry in entries:
        if entry["location"].startswith("reference/"):
            continue
        prose = re.sub(r"<code>.*?</code>", "", entry["text"])  # a name in a sentence stays searchable
        found = [what for leak, what in leaks.items() if leak in prose]
        assert found == [], (entry["location"], found, prose[:200])
    page = next(entry["text"] for entry in notebooks if entry["location"] == "notebooks/04_aps/")
    assert "APS keeps all of VISR's blue parts" in page  # the prose is still found, with its inline equations
    assert "‖φ(s)‖ = 1, and let q(· | w) be a von Mises–Fisher density" in page  # as plain text


PAPERS = {"successor-features-and-gpi": ["1606.05312", "1901.10964"], "visr": ["1906.05030"],
          "apt": ["2103.04551"], "aps": ["2108.13956"]}
"""The papers the course builds (VISR, APT, APS, successor features and GPI), by their section on the
references page, with their arXiv numbers."""


def test_the_papers_are_linked_from_a_references_page_in_the_navigation(site):
    assert {"Papers": "references.md"} in next(item for item in yaml.safe_load(
        (ROOT / "mkdocs.yml").read_text())["nav"] if "Reference" in item)["Reference"]
    page = (site / "references" / "index.html").read_text()
    for section, numbers in PAPERS.items():
        heading = re.search(rf'<h2 id="{section}">.*?(?=<h2 |</article>)', page, re.DOTALL)
        assert heading, section
        for number in numbers:
            assert f'href="https://arxiv.org/abs/{number}"' in heading.group(0), (section, number)


def test_cross_references_library_names_and_citations_are_links_that_resolve(site):
    """docs/hooks.py (`link_references`) links "notebook 04a", `aps_teach.learner.tasks.fit_task` and
    "Hansen et al., 2020" on every page; each link it makes reaches a page of the site, and its anchor an
    element of that page."""
    ids: dict[str, set[str]] = {}
    made = {"notebooks": 0, "reference": 0, "references": 0}
    for path in site.rglob("index.html"):
        here = path.parent.relative_to(site).as_posix().removeprefix(".")
        article = re.search(r"<article[^>]*>(.*)</article>", path.read_text(), re.DOTALL)
        for href, anchor in re.findall(r'<a href="((?:\.\./)*[\w./-]*/)(?:#([^"]*))?"', article.group(1)):
            target = posixpath.normpath(posixpath.join(here, href))
            if target.split("/")[0] not in made:
                continue
            made[target.split("/")[0]] += 1
            built = site / target / "index.html"
            assert built.is_file(), (here, href)
            if target not in ids:
                ids[target] = set(re.findall(r'\bid="([^"]+)"', built.read_text()))
            assert not anchor or anchor in ids[target], (here, href, anchor)
    assert made["notebooks"] > 200 and made["reference"] > 200 and made["references"] >= 5, made
    aps = (site / "notebooks" / "04_aps" / "index.html").read_text()
    assert 'notebook <a href="../04b_aps_gridworlds/">04b</a> runs one seed' in aps
    assert r"\text{notebook 02}" in aps  # an equation is left as written
    learner = (site / "learner" / "index.html").read_text()
    assert ('<a href="../reference/aps_teach.learner.tasks/#aps_teach.learner.tasks.gpi_action_values">'
            "<code>learner.tasks.gpi_action_values</code></a>") in learner
    assert '<a href="references/#visr">Hansen et al., 2020</a>' in (site / "index.html").read_text()
