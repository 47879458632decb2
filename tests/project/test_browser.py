"""The course website in a real browser: headless Chromium (Debian's chromium and chromium-driver, through
Selenium) loads the home page, every notebook's page, the studies, learner and references pages and the
pre-registration from the built site served on 127.0.0.1, waits for MathJax, and fails on what a reader would
see broken: TeX left untypeset, a figure wider than the text column or drawn smaller than it is with no way
to open it full size, a list rendered as part of a paragraph, a blank band (a strip of the column with nothing
drawn in it, or an element that scrolls past all it draws, as a notebook cell did below a \\tag'ged equation),
a display (equation, table, code or output) wider than its room and cut off instead of scrolling, a number
broken across two lines of printed output, an error in the console. A page planted with each defect (the
banded and cut-off equation as MathJax draws it without the site's styles) proves the checks can fail.

Skipped, saying why, where no browser is installed (a developer's laptop); never in CI (`APS_TEACH_BROWSER=1`,
set by .ci/run, turns the skip into a failure)."""

import functools
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
PAGES = ["", *(f"notebooks/{path.stem}/" for path in sorted((ROOT / "notebooks").glob("*.ipynb"))),
         "studies/", "learner/", "preregistration/held_out/", "references/"]
"""The home page, every notebook (a defect of one equation or one printed table is a notebook's own), the
pages with the most tables and figures, the pre-registration and the references."""

if not (CHROMIUM and DRIVER):
    if os.environ.get("APS_TEACH_BROWSER") == "1":
        raise RuntimeError("APS_TEACH_BROWSER=1 but chromium or chromedriver is not on the PATH: install "
                           "Debian's chromium and chromium-driver (.ci/run does)")
    pytest.skip("no chromium and chromedriver on the PATH: the real-browser test of the site needs Debian's "
                "chromium and chromium-driver (CI installs them)", allow_module_level=True)

CHECK = """
const done = arguments[arguments.length - 1];
// MathJax's configuration object exists before its script has loaded (under load, seconds later): wait for
// the script's startup, where the page loads MathJax, then for its first typesetting.
const loads = document.querySelector("script[src*='mathjax' i], script[src*='tex-' i]") !== null;
const started = new Promise(resolve => {
  const poll = () => (!loads || (window.MathJax && MathJax.startup && MathJax.startup.promise))
      ? resolve() : setTimeout(poll, 100);
  poll();
});
started.then(() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null)
    .then(() => new Promise(resolve => setTimeout(resolve, 300))).then(() => {
  const article = document.querySelector("article") || document.body;
  const copy = article.cloneNode(true);
  copy.querySelectorAll("pre, code, mjx-container, script, style").forEach(node => node.remove());
  const text = copy.textContent;
  const raw = ["$$", "\\\\mathbb", "\\\\frac", "\\\\sum_", "\\\\psi", "\\\\phi"]
      .filter(tex => text.includes(tex));
  const column = article.getBoundingClientRect().width;
  const figures = [...article.querySelectorAll("img")].filter(image => image.naturalWidth > 0).map(image => ({
    src: image.src.slice(0, 60), width: image.getBoundingClientRect().width, natural: image.naturalWidth,
    zoomable: image.classList.contains("zoomable")}));
  const wide = figures.filter(f => f.width > column + 1 || (f.natural > f.width * 1.05 && !f.zoomable));
  const glued = [...article.querySelectorAll("p")].map(p => p.innerHTML)
      .filter(t => /\\n\\s*(- |\\d+\\. )\\S/.test(t)).map(t => t.slice(0, 80));
  // A blank band: a strip of the column with nothing drawn in it, or an element that scrolls (as an anchor's
  // jump or a find in page scrolls a cell whose overflow is hidden) past all it draws: MathJax's hidden copy
  // of a \\tag'ged equation for screen readers, hundreds of pixels tall, did both.
  const named = element => (element.tagName.toLowerCase() + [...element.classList].map(c => "." + c).join(""))
      .slice(0, 50) + ": " + element.textContent.trim().replace(/\\s+/g, " ").slice(0, 40);
  const edges = article.getBoundingClientRect();
  const spans = [], bands = [];
  function drawn(element) {  // [top, bottom] of what is drawn in the element, or null
    const style = getComputedStyle(element);
    if (style.display === "none" || style.visibility === "hidden" || style.opacity === "0" ||
        style.clip !== "auto" || style.clipPath !== "none") return null;
    const box = element.getBoundingClientRect();
    let top = Infinity, bottom = -Infinity;
    const add = rect => {
      if (rect.height > 0 && rect.width > 0) {
        top = Math.min(top, rect.top);
        bottom = Math.max(bottom, rect.bottom);
        spans.push([rect.top, rect.bottom]);
      }
    };
    if (element.matches("img, svg, canvas, video, iframe, input, textarea, select, hr, mjx-math")) {
      add(box);
    } else {
      if (!element.children.length && (style.backgroundImage !== "none" || style.borderTopWidth !== "0px" ||
          !/^(transparent|rgba\\(.*, 0\\))$/.test(style.backgroundColor))) add(box);
      for (const child of element.childNodes) {
        if (child.nodeType === Node.TEXT_NODE && child.textContent.trim()) {
          const range = document.createRange();
          range.selectNodeContents(child);
          [...range.getClientRects()].forEach(add);
        } else if (child.nodeType === Node.ELEMENT_NODE) {
          const inner = drawn(child);
          if (inner) [top, bottom] = [Math.min(top, inner[0]), Math.max(bottom, inner[1])];
        }
      }
    }
    if (style.overflowY !== "visible" && bottom > top) {
      const blank = element.scrollHeight - parseFloat(style.paddingBottom) -
          (bottom - box.top - element.clientTop + element.scrollTop);
      if (blank > 40) bands.push({element: named(element), blank: Math.round(blank), scrolls: true});
    }
    return bottom > top ? [top, bottom] : null;
  }
  drawn(article);
  spans.sort((a, b) => a[0] - b[0]);
  let reach = spans.length ? spans[0][1] : 0;
  for (const [top, bottom] of spans) {
    if (top - reach > 150) bands.push({blank: Math.round(top - reach), at: Math.round(reach + scrollY)});
    reach = Math.max(reach, bottom);
  }
  // A display (an equation, a table, a block of code or output) wider than its room, cut off or sticking
  // out of the column where it should scroll.
  const cut = [];
  for (const display of article.querySelectorAll("mjx-container[display='true'], table, pre")) {
    const content = display.querySelector("mjx-math") || display;
    const left = content.getBoundingClientRect().left;
    const right = left + Math.max(content.getBoundingClientRect().width, content.scrollWidth);
    let room = edges.right, overflow = "visible";
    for (let element = display; element && element !== article; element = element.parentElement) {
      overflow = getComputedStyle(element).overflowX;
      if (overflow !== "visible") {
        room = element.getBoundingClientRect().right;
        break;
      }
    }
    if (right > room + 1 && !["auto", "scroll"].includes(overflow))
      cut.push({element: named(display), width: Math.round(right - left), room: Math.round(room - left)});
  }
  // A number in printed output (or code) broken across two lines.
  const split = [];
  for (const pre of article.querySelectorAll("pre")) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const nodes = [];
    let text = "";
    while (walker.nextNode()) {
      nodes.push([walker.currentNode, text.length]);
      text += walker.currentNode.textContent;
    }
    const at = offset => {
      const [node, start] = nodes.findLast(([, start]) => start <= offset);
      return [node, offset - start];
    };
    for (const number of text.matchAll(/[-+]?\\d+(?:[.,]\\d+)*%?/g)) {
      if (number[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(...at(number.index));
      range.setEnd(...at(number.index + number[0].length));
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) split.push(text.slice(number.index - 20 > 0 ? number.index - 20 : 0,
                                                number.index + number[0].length));
    }
  }
  const typeset = article.querySelectorAll("mjx-container").length;
  done({raw, wide, glued, typeset, column, bands, cut, split});
});
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        """Requests are not logged: the test's output is its findings."""


def serve(folder: Path) -> tuple[socketserver.TCPServer, str]:
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("browser") / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
               "--site-dir", str(folder)]
    built = subprocess.run(command, cwd=folder.parent, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    planted = folder / "planted" / "index.html"  # every defect the checks look for, on one page
    planted.parent.mkdir()
    figure = next(folder.rglob("task_families.png")).relative_to(folder).as_posix()
    mathjax = next(folder.rglob("tex-chtml.js")).relative_to(folder).as_posix()
    terms = " + ".join(f"a_{{{i}}}" for i in range(40))
    planted.write_text(f"""<!doctype html><html><head>
        <script src="/javascripts/mathjax-config.js"></script><script src="/{mathjax}"></script></head>
        <body><article style="width: 300px">
        <p class="tex2jax_ignore">$$\\mathbb{{E}}[x]$$</p>
        <p>The findings:
        - one
        - two</p>
        <img src="/{figure}">
        <div style="overflow: hidden"><p>As a notebook cell, without the site's styles:</p>
        <p>$$y = {terms} \\tag{{3}}$$</p><p>The end of the cell.</p></div>
        <p>Before a blank band.</p><div style="height: 400px"></div><p>After it.</p>
        <pre style="white-space: pre-wrap; word-break: break-all">pi = {"3.14159265" * 8}</pre>
        <script>console.error("planted error");</script></article></body></html>""")
    return folder


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def address(site):
    server, url = serve(site)
    yield url
    server.shutdown()


def inspect(browser, url: str, looks: int = 5) -> dict:
    """What a reader of the page would see broken (`CHECK`), with the console's errors. A page found broken
    is looked at again, up to `looks` times a second apart: under load a page was seen with its typesetting or
    its figures' marks not yet done, and a defect is one that stays."""
    browser.get(url)
    for _ in range(looks):
        found = browser.execute_async_script(CHECK)
        if not any(found[check] for check in ("raw", "wide", "glued", "bands", "cut", "split")):
            break
        time.sleep(1)
    found["errors"] = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    return found


@pytest.mark.parametrize("page", PAGES)
def test_a_page_reads_as_written(page, browser, address):
    found = inspect(browser, address + page)
    assert found["raw"] == [], f"untypeset TeX on {page or 'the home page'}"
    assert found["wide"] == [], "a figure wider than the column, or shrunk with no way to open it full size"
    assert found["glued"] == [], "a list rendered inside a paragraph"
    assert found["bands"] == [], "a blank band: an element taller (or scrolling further) than what it draws"
    assert found["cut"] == [], "a display wider than its column, cut off instead of scrolling"
    assert found["split"] == [], "a number broken across two lines of printed output"
    assert found["errors"] == [], "errors in the console"


def test_the_notebook_and_docs_pages_typeset_their_equations(browser, address):
    """A notebook's $ and $$ (mkdocs-jupyter), and a docs page's $$ and \\( \\) (pymdownx.arithmatex)."""
    assert inspect(browser, address + "notebooks/04_aps/")["typeset"] > 20
    assert inspect(browser, address + "learner/")["typeset"] >= 2


def test_the_checks_fail_on_a_page_planted_with_each_defect(browser, address):
    found = inspect(browser, address + "planted/")
    assert found["raw"] == ["$$", "\\mathbb"]
    assert len(found["wide"]) == 1 and found["glued"] and any("planted error" in e for e in found["errors"])
    (cut,) = found["cut"]  # the equation, cut off by its cell
    assert cut["element"].startswith("mjx-container") and cut["width"] > 2 * cut["room"], cut
    scrolled, strip = found["bands"]  # MathJax's hidden copy of a \tag'ged equation; the planted strip
    assert scrolled["scrolls"] and "As a notebook cell" in scrolled["element"] and scrolled["blank"] > 100
    assert 400 <= strip["blank"] < 460, strip  # the 400 px and the paragraphs' margins
    assert found["split"] == ["pi = " + "3.14159265" * 8], found["split"]
