"""The course website's mkdocs hook (mkdocs.yml, `hooks:`): the site is the repository as GitHub shows it.

Every page is written with links relative to where it lies in the repository, so that it reads the same on
GitHub. This hook brings in the pages and figures that lie outside `docs/` and maps each repository path to
its place on the site:

- `README.md` is the site's home page (`index.md`); `docs/NAME.md` is `NAME.md`;
- the other READMEs of the documentation (`gridworld/`, `aps_teach/atari/`, `benchmarks/`) keep their paths;
- every committed, executed notebook `notebooks/*.ipynb` is a page (mkdocs-jupyter renders its outputs; it
  is never executed here), listed in the navigation under "Notebooks" in file order;
- every figure `results/**/*.png` is copied, so the pages can embed it;
- MathJax 3 (`tex-chtml.js` and its fonts, from the django-static-mathjax package) is copied to
  `assets/mathjax/`, so that equations typeset without a network (docs/javascripts/mathjax-config.js); the
  empty `<script src="">` mkdocs-jupyter writes in its place is removed.

A link to another repository file (source code, a CSV, `pyproject.toml`) becomes a link to that file in the
repository on GitHub (`repo_url`); a link to a path the repository does not have is left as written, so
that mkdocs reports it and `mkdocs build --strict` fails, as on a broken link between pages.

On every page, "notebook 04a", a library name in a code span and a paper's citation become links (to the
notebook, its API reference entry, the references page: `link_references`); a notebook page's Open in Colab
link opens the release its install cell pins (`release_tag`); code and equations are left out of the search
index (`search_prose`).
"""

import ast
import functools
import json
import posixpath
import re
import tomllib
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

PAGES = ("gridworld/README.md", "aps_teach/atari/README.md", "benchmarks/README.md")
"""The READMEs beside the code that are pages of the site, at their repository paths."""

LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
MASK = re.compile(r"\x00(\d+)\x00")
EMPTY_SCRIPT = re.compile(r'<script src="">\s*</script>')
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)


def repository(config) -> Path:
    """The repository's root: the folder that holds mkdocs.yml."""
    return Path(config.config_file_path).resolve().parent


def notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("*.ipynb"))


def site_path(repo_path: str) -> str:
    """Where a repository file lies on the site (its src_uri)."""
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return repo_path


def notebook_title(path: Path) -> str:
    """A notebook's first heading, e.g. '00 · The key-passageway gridworlds'."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise PluginError(f"{path} is not a notebook (no JSON with cells: {type(error).__name__} {error}); "
                          f"regenerate it from {path.with_suffix('.py').name} (docs/development.md) or "
                          "restore it") from None
    for cell in cells:
        if cell["cell_type"] == "markdown":
            heading = re.search(r"^# (.+)$", "".join(cell["source"]), re.MULTILINE)
            if heading:
                return heading.group(1).strip()
    return path.stem


def on_config(config):
    """The navigation's "Notebooks" section: every committed notebook, in file order, by its title; and its
    "API reference": a page per public module (`reference_modules`), by package."""
    api_entry.cache_clear()  # `mkdocs serve` rebuilds with this module loaded: the sources may have changed
    if config.nav is None:  # no navigation written: mkdocs lists every page
        return config
    root = repository(config)
    entries = [{notebook_title(path): f"notebooks/{path.name}"} for path in notebooks(root)]
    packages: dict[str, list] = {}
    for module in reference_modules(root):
        packages.setdefault(module.rpartition(".")[0], []).append({module: reference_page(module)})
    reference = [{package: modules} for package, modules in packages.items()]
    nav = []
    for item in config.nav:
        if item == {"Notebooks": "NOTEBOOKS"}:
            item = {"Notebooks": entries}
        if item == {"API reference": "REFERENCE"}:
            item = {"API reference": reference}
        nav.append(item)
    config.nav = nav
    return config


def reference_modules(root: Path) -> list[str]:
    """Every public module of the gridworld and aps_teach packages (not `__init__`, `__main__`, a `_private`
    one or a file outside a package), by dotted name, packages in order of their folders."""
    found = []
    for top in ("gridworld", "aps_teach"):
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            packaged = all((root.joinpath(*parts[:depth]) / "__init__.py").is_file()
                           for depth in range(1, len(parts)))
            if packaged and not any(part.startswith("_") for part in parts) and "results" not in parts:
                found.append(".".join(parts))
    return sorted(found, key=lambda name: (name.rpartition(".")[0], name))


def reference_page(module: str) -> str:
    return f"reference/{module}.md"


@event_priority(100)  # before mkdocs-jupyter's own on_files, which turns the notebooks into pages
def on_files(files: Files, config) -> Files:
    root = repository(config)
    sources = ["README.md", *PAGES]
    sources += [path.relative_to(root).as_posix() for path in notebooks(root)]
    sources += sorted(path.relative_to(root).as_posix() for path in (root / "results").rglob("*.png"))
    for source in sources:
        if not (root / source).is_file():
            continue
        if site_path(source) != source:  # the README, as index.md
            files.append(File.generated(config, site_path(source), abs_src_path=str(root / source)))
        else:  # a file of the repository at its own path (mkdocs-jupyter needs a real source folder)
            files.append(File(source, src_dir=str(root), dest_dir=config.site_dir,
                              use_directory_urls=config.use_directory_urls))
    for module in reference_modules(root):
        files.append(File.generated(config, reference_page(module), content=f"::: {module}\n"))
    for path in mathjax_files():
        files.append(File.generated(config, f"{MATHJAX}/{path.relative_to(mathjax_root()).as_posix()}",
                                    abs_src_path=str(path)))
    return files


MATHJAX = "assets/mathjax"
"""Where MathJax's files lie on the site (mkdocs.yml's extra_javascript loads tex-chtml.js from there)."""


def mathjax_root() -> Path:
    """MathJax 3's es5 folder in the installed django-static-mathjax package."""
    try:
        import mathjax
    except ImportError:
        raise PluginError("the site typesets its equations with MathJax from the django-static-mathjax "
                          'package: install the docs extra (pip install -e ".[docs]")') from None
    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def mathjax_files() -> list[Path]:
    """tex-chtml.js, what it loads on demand (its extensions) and its CHTML fonts."""
    root = mathjax_root()
    return [root / "tex-chtml.js", *sorted((root / "input" / "tex" / "extensions").glob("*.js")),
            *sorted((root / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))]


def on_post_page(output: str, page, config) -> str:
    """The page without the empty MathJax script tag mkdocs-jupyter writes (the site loads its own), and a
    notebook's page with its launch links under its title (`launch_links`)."""
    output = EMPTY_SCRIPT.sub("", output)
    if page.file.src_uri.endswith(".ipynb"):
        output = HEADING.sub(lambda match: match.group(0) + launch_links(page.file.src_uri, config), output,
                             count=1)
    return output


HEADING = re.compile(r"<h1[^>]*>.*?</h1>", re.DOTALL)


def release_tag(root: Path) -> str:
    """The git tag the notebooks' install cell pins, v<pyproject.toml's version>, as
    `aps_teach.course.build.release_tag` makes it (not imported: it would bring torch into every build): a
    release that bumps the version moves the Colab links and the install cell together."""
    return "v" + tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def launch_links(src_uri: str, config) -> str:
    """Open in Colab (the notebook as the release its install cell pins has it, from the repository on GitHub,
    `repo_url`) and download links for a notebook page."""
    repo = (config.repo_url or "").rstrip("/").removeprefix("https://github.com/")
    name = posixpath.basename(src_uri)
    colab = f"https://colab.research.google.com/github/{repo}/blob/{release_tag(repository(config))}/{src_uri}"
    return (f'<p class="launch"><a class="md-button" href="{colab}">Open in Colab</a> '
            f'<a class="md-button" href="{name}" download>Download {name}</a> '
            '<span class="launch-note">(Colab runs it once the repository is public: see '
            '<a href="../../course/#on-colab">On Colab</a>)</span></p>')


PROTECTED = re.compile(r"<(a|pre|code|script|style|h[1-6])\b.*?</\1>|<[^>]+>", re.DOTALL)
ARITHMATEX = re.compile(r'<(span|div) class="arithmatex">.*?</\1>', re.DOTALL)
NOTEBOOK_MATH = re.compile(r"(?<![\\$])(\$\$[^<]+?\$\$|\$[^$<]+?(?<!\\)\$)")
NOTEBOOK_REFERENCE = re.compile(r"\b([Nn]otebooks?\s+)(\d\d[a-z]?\b(?:(?:,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*)"
                                r"\d\d[a-z]?\b)*)")
NOTEBOOK_ID = re.compile(r"\d\d[a-z]?\b")
CITATIONS = [("visr", r"Hansen et al\., 2020"), ("apt", r"Liu &amp; Abbeel, 2021a"),
             ("aps", r"Liu &amp; Abbeel, (?:ICML 2021|2021b?)(?![a-z])"),
             ("successor-features-and-gpi", r"Barreto et al\.(?:, 201[78])?")]
"""Citations in prose (their patterns in a page's HTML), by their section on the references page."""
CITATION = re.compile("|".join(f"({pattern})" for _, pattern in CITATIONS))
REFERENCES = "references.md"
"""The references page (docs/references.md), where CITATIONS link."""
CODE_NAME = re.compile(r"<code>([A-Za-z_][\w.]*\.[A-Za-z_]\w*)(\(\))?</code>")
OUTSIDE_LINKS = re.compile(r"<(a|pre|h[1-6])\b.*?</\1>", re.DOTALL)


def on_page_content(html: str, page, config, files: Files) -> str:
    """The page with its cross-references as links (`link_references`) and its code left out of the search
    index (`search_prose`)."""
    return search_prose(link_references(html, page, config), page)


def link_references(html: str, page, config) -> str:
    """A notebook named in prose ("notebook 04a", "notebooks 04b and 04c") links to its page, a paper's
    citation ("Hansen et al., 2020", `CITATIONS`) to the references page, and a library name in a code span
    (`aps_teach.learner.tasks.fit_task`, or `learner.tasks.fit_task` within aps_teach) to its entry in the API
    reference, where the reference documents it (`api_entry`); what is already a link, a heading, code or
    an equation is left alone."""
    root = repository(config)
    here = page.url.rstrip("/")
    pages = {path.stem.split("_")[0]: f"notebooks/{path.stem}/" for path in notebooks(root)}

    def url(target: str) -> str:
        return posixpath.relpath(target, here or ".") + "/"

    def notebook(match: re.Match) -> str:
        def one(number: re.Match) -> str:
            name = number.group(0)
            if name not in pages or pages[name] == page.url:  # not a notebook, or this one
                return name
            return f'<a href="{url(pages[name])}">{name}</a>'

        return match.group(1) + NOTEBOOK_ID.sub(one, match.group(2))

    def code(match: re.Match) -> str:
        entry = api_entry(root, match.group(1))
        if entry is None:
            return match.group(0)
        module, anchor = entry
        return f'<a href="{url(reference_page(module).removesuffix(".md"))}{anchor}">{match.group(0)}</a>'

    def citation(match: re.Match) -> str:
        if page.file.src_uri == REFERENCES:
            return match.group(0)
        anchor = CITATIONS[match.lastindex - 1][0]
        return f'<a href="{url(REFERENCES.removesuffix(".md"))}#{anchor}">{match.group(0)}</a>'

    html = outside([ARITHMATEX, PROTECTED, NOTEBOOK_MATH], html,
                   lambda text: CITATION.sub(citation, NOTEBOOK_REFERENCE.sub(notebook, text)))
    return outside([OUTSIDE_LINKS], html, lambda text: CODE_NAME.sub(code, text))


@functools.cache
def api_entry(root: Path, name: str) -> tuple[str, str] | None:
    """(module, "#anchor" or "") of `name` on the API reference's pages, or None where they do not document
    it: its module (a page of `reference_modules`), an object its module defines with a docstring (the
    reference shows no other), or a documented member of such a class; a name a package's `__init__`
    imports is looked for where it comes from, a name without its top package in aps_teach."""
    modules = set(reference_modules(root))
    for full in (name, f"aps_teach.{name}"):
        parts = full.split(".")
        for cut in range(len(parts), 0, -1):
            module, rest = ".".join(parts[:cut]), parts[cut:]
            if module in modules:
                if not rest:
                    return module, ""
                return (module, f"#{full}") if documented(root, module, rest) else None
            package = root.joinpath(*parts[:cut]) / "__init__.py"
            if rest and package.is_file():
                source = imported(package).get(rest[0])
                if source and source != ".".join(parts[:cut]):
                    return api_entry(root, ".".join([source, *rest]))
    return None


def definitions(body: list) -> dict[str, ast.AST]:
    """The public names a module or class body defines with a docstring (a def, a class, or an assignment
    followed by its string), by name."""
    found = {}
    for index, node in enumerate(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if ast.get_docstring(node):
                found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign) and index + 1 < len(body):
            following = body[index + 1]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                found.update({target.id: node for target in targets if isinstance(target, ast.Name)})
    return {name: node for name, node in found.items() if not name.startswith("_")}


def documented(root: Path, module: str, rest: list[str]) -> bool:
    """Whether the API reference shows `module.rest` (`definitions`), a member at most two names deep."""
    body = ast.parse((root / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")).body
    for depth, part in enumerate(rest):
        node = definitions(body).get(part)
        if node is None or (depth < len(rest) - 1 and not isinstance(node, ast.ClassDef)):
            return False
        body = getattr(node, "body", [])
    return len(rest) <= 2


def imported(package: Path) -> dict[str, str]:
    """What a package's `__init__` imports from its own modules: name -> the module it comes from."""
    names = {}
    for node in ast.parse(package.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update({alias.asname or alias.name: node.module for alias in node.names})
    return names


SEARCH_EXCLUDE = ' data-search-exclude="1"'
"""mkdocs-material's search leaves out an element with this attribute (and removes it from the page). Only
elements that hold no element of their own tag: its parser forgets the exclusion at the first closing tag of
the same name (a code cell's nested divs), so each part of a code cell is marked."""
CODE_BLOCK = re.compile(r'<pre\b|<clipboard-copy\b|<div(?= class="(?:clipboard-copy-txt|jp-InputPrompt |'
                        r'jp-OutputPrompt ))|<span(?= class="cell-tag")|<(?:span|div)(?= class="arithmatex")')
UNMATHED = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.DOTALL)


def search_prose(html: str, page) -> str:
    """The page as it is, with its code left out of the search index: code blocks, a notebook's code cells
    (their code, its copy for the copy button, their prompts and tags, their printed output) and equations
    (arithmatex's on a docs page, a notebook's $ and $$ wrapped in a span for it), so that a search result
    reads as prose, without raw LaTeX or code."""
    html = CODE_BLOCK.sub(lambda match: match.group(0) + SEARCH_EXCLUDE, html)
    if page.file.src_uri.endswith(".ipynb"):
        html = outside([UNMATHED], html, lambda text: NOTEBOOK_MATH.sub(math_for_search, text))
    return html


def math_for_search(match: re.Match) -> str:
    """A notebook's equation, left out of the search index; an inline one followed by its plain text for the
    index alone (`hidden`: the reader sees the typeset equation), so a result reads "let q(· | w) be a von
    Mises-Fisher density" rather than "let be a von Mises-Fisher density"."""
    tex = match.group(0)
    excluded = f"<span{SEARCH_EXCLUDE}>{tex}</span>"
    return excluded if tex.startswith("$$") else f"{excluded}<span hidden>{tex_text(tex[1:-1])}</span>"


TEX_TEXT = {"phi": "φ", "psi": "ψ", "kappa": "κ", "gamma": "γ", "alpha": "α", "beta": "β", "lambda": "λ",
            "mu": "μ", "sigma": "σ", "theta": "θ", "epsilon": "ε", "varepsilon": "ε", "pi": "π", "tau": "τ",
            "rho": "ρ", "delta": "δ", "Delta": "Δ", "top": "ᵀ", "mid": "|", "le": "≤", "leq": "≤", "ge": "≥",
            "geq": "≥", "approx": "≈", "neq": "≠", "sum": "Σ", "log": "log", "exp": "exp", "max": "max",
            "min": "min", "arg": "arg", "lVert": "‖", "rVert": "‖", "Vert": "‖", "cdot": "·", "in": "∈",
            "infty": "∞", "to": "→", "times": "×", "pm": "±", "ldots": "…", "dots": "…", "sim": "~"}
"""TeX commands in the plain text an inline equation is indexed by; any other command is dropped."""


def tex_text(tex: str) -> str:
    """Plain text for an inline TeX equation: \\text{..} and the like unwrapped, Greek letters and common
    symbols as characters (`TEX_TEXT`), other commands, braces, ^ and _ dropped."""
    text = re.sub(r"\\(?:text|mathrm|mathbf|mathit|mathbb|mathcal|operatorname)\{([^{}]*)\}", r"\1", tex)
    text = re.sub(r"\\([A-Za-z]+)", lambda command: TEX_TEXT.get(command.group(1), " "), text)
    text = re.sub(r"\\.|[{}^_]", "", text)
    return " ".join(text.split())


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    """Each link written for GitHub, resolved in the repository, pointed at its place on the site."""
    if not page.file.src_uri.endswith(".md") or page.file.abs_src_path is None:  # a notebook (mkdocs-jupyter
        return markdown  # renders it, links and all) or an API page (mkdocstrings writes it)
    root = repository(config)
    here = Path(page.file.abs_src_path).resolve().parent.relative_to(root).as_posix()
    site_dir = posixpath.dirname(page.file.src_uri)
    repo_url = (config.repo_url or "").rstrip("/")

    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if EXTERNAL.match(target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(here, path))
        if repo_path.startswith("../") or not (root / repo_path).exists():
            return match.group(0)  # left as written: mkdocs reports the link it cannot find
        on_site = site_path(repo_path)
        if files.get_file_from_path(on_site) is not None:
            new = posixpath.relpath(on_site, site_dir or ".")
        else:
            kind = "tree" if (root / repo_path).is_dir() else "blob"
            new = f"{repo_url}/{kind}/main/{repo_path}"
        return match.group(1) + new + ("#" + anchor if anchor else "") + match.group(3)

    return outside_code(markdown, lambda text: LINK.sub(rewrite, text))


def outside_code(markdown: str, change) -> str:
    """`change(markdown)` with its fenced blocks and code spans masked, then put back as written."""
    return outside([FENCE, CODE_SPAN], markdown, change)


def outside(patterns: list[re.Pattern], text: str, change) -> str:
    """`change(text)` with what each pattern matches (in order) masked, then put back as written."""
    pieces = []

    def mask(match: re.Match) -> str:
        pieces.append(match.group(0))
        return f"\x00{len(pieces) - 1}\x00"

    for pattern in patterns:
        text = pattern.sub(mask, text)
    return MASK.sub(lambda mark: pieces[int(mark.group(1))], change(text))
