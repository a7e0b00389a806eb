"""Opening the built book in headless Chromium, as a reader would: what the
browser tests share.

The fixtures (``site``, ``browser``, ``opened``) are registered for every test
by ``tests/conftest.py``; a test module calls :func:`skip_without_a_browser`
first, so that it is skipped, with the reason, where Playwright or Chromium is
missing.
"""

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from book_session import CACHE
from support import NOTEBOOKS, extension

# the flags and the quiet file server the build prints the PDF with
_book_pdf = extension("book_pdf")
CHROMIUM_FLAGS = _book_pdf.CHROMIUM_FLAGS
_QuietHandler = _book_pdf._QuietHandler
_QuietServer = _book_pdf._QuietServer


def chromium():
    """The Chromium the build prints the PDF with (the system's, else
    Playwright's own), or None."""
    return _book_pdf.find_chromium()


def skip_without_a_browser():
    """Skip the calling test module where Playwright or Chromium is
    missing."""
    pytest.importorskip(
        "playwright.sync_api",
        reason="Playwright is not installed (pip install playwright)",
    )
    if chromium() is None:
        pytest.skip(_book_pdf.NO_CHROMIUM, allow_module_level=True)


@pytest.fixture(scope="module")
def site(english_pages):
    """Serve the built book on a free localhost port; yields (base URL, html
    folder). The English pages are there from when they are written; a
    module that reads more (the PDF, the Chinese edition) asks for the whole
    build too."""
    handler = functools.partial(_QuietHandler, directory=str(english_pages))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", english_pages
    server.shutdown()


# every request to another host goes to a proxy at a closed local port and
# fails there, on this machine (Chromium never sends a request to 127.0.0.1
# through a proxy): a page that needs the network is reported, not served
OFFLINE = ["--proxy-server=http://127.0.0.1:9"]


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium(),
            headless=True,
            args=CHROMIUM_FLAGS + OFFLINE,
        )
        yield browser
        browser.close()


# set (to anything) to save a screenshot of every page in _build/screenshots
SCREENSHOTS = "MHA_SCREENSHOTS"


def opener(site, browser, width=1280):
    """``open_page(name)``: each page opened once at ``width`` px, returning
    (page, script errors), shared by the checks that read the page; a
    generator that closes the pages at its end. Where the variable
    ``MHA_SCREENSHOTS`` is set, each page's screenshot is saved.

    A chapter page takes seconds to typeset and draw; the checks at one width
    read it in turn instead of loading it again each. The pages share one
    browser context, as one reader's tabs do: the theme's scripts, MathJax
    and the fonts come from its cache after the first page.
    """
    base, html_root = site
    context = browser.new_context(viewport={"width": width, "height": 900})
    visited = {}

    def open_page(name):
        if name not in visited:
            screenshot = (
                extension("build_paths").SCREENSHOTS
                / name.replace("/", "_").replace(".html", f"-{width}.jpg")
                if os.environ.get(SCREENSHOTS)
                else None
            )
            visited[name] = visit(context, urljoin(base, name), screenshot)
        return visited[name]

    yield open_page
    context.close()


@pytest.fixture(scope="module")
def opened(site, browser):
    """Each page opened once at 1280 px (see :func:`opener`)."""
    yield from opener(site, browser)


# the Chinese edition's folder in the built book (book/_ext/chinese_edition.py)
CHINESE = "zh/"


def pages(html_root, edition=""):
    """Every page of one edition a reader lands on (the English one, or the
    Chinese one with ``edition=CHINESE``): not redirects, not Sphinx
    internals."""
    found = []
    for path in (html_root / edition).rglob("*.html"):
        name = path.relative_to(html_root).as_posix()
        within = name.removeprefix(edition)
        internal = within.startswith(("_", "genindex", CHINESE))
        if not internal and REDIRECT not in path.read_text():
            found.append(name)
    return sorted(found)


TYPESET = (
    "async () => { if (window.MathJax && MathJax.startup) "
    "await MathJax.startup.promise; }"
)
FIGURES_DRAWN = (
    "() => [...document.querySelectorAll('.mha-interactive')]"
    ".every(e => e.querySelector('svg') && e.dataset.settled === 'yes')"
)
IMAGES_DECODED = "() => [...document.images].every(i => i.complete)"
# index.html only redirects to the intro: a page of its own would race the
# redirect (the checks could run on the page being left)
REDIRECT = 'http-equiv="Refresh"'


def visit(browser, url, screenshot=None):
    """Open ``url`` in ``browser`` (a browser or one of its contexts) and
    wait for the math and the figures; returns (page, script errors).

    Every request to another host is reported as an error: the book must not
    need the network. (The requests are watched, not intercepted: Chromium
    keeps no cache for a page whose requests are intercepted.)
    """
    page = browser.new_page()
    errors = []
    local = urlparse(url).netloc

    def only_local(request):
        if urlparse(request.url).netloc not in ("", local):
            errors.append(f"request to another host: {request.url}")

    page.on("request", only_local)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda message: (
            errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.goto(url, wait_until="load")
    # everything the reader waits for: the math typeset, every interactive
    # figure drawn, the fonts loaded, every image decoded
    page.evaluate(TYPESET)
    page.wait_for_function(FIGURES_DRAWN, timeout=15000)
    page.evaluate("async () => { await document.fonts.ready; }")
    page.wait_for_function(IMAGES_DECODED, timeout=15000)
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        # JPEG: half the time of PNG
        page.screenshot(
            path=str(screenshot), full_page=True, type="jpeg", quality=80
        )
    # A request that fails (to another host, with no network) also logs
    # "Failed to load resource"; the request itself is reported above.
    return page, [e for e in errors if "Failed to load resource" not in e]


def search_excerpts(page, seconds=15):
    """The excerpts under a search page's results, once the first has come
    (Sphinx fetches each result's page to cut it)."""
    page.wait_for_selector(
        "#search-results ul li p.context", timeout=seconds * 1000
    )
    return page.eval_on_selector_all(
        "#search-results ul li p.context", "ps => ps.map(p => p.textContent)"
    )


def move_every_control(page, name):
    """Move each control of each interactive figure on ``page``; fails unless
    the drawing changes.

    Returns the number of controls moved.
    """
    moved = 0
    for figure in page.query_selector_all(".mha-interactive"):
        controls = figure.query_selector_all(
            ".vega-bindings input[type=radio], .vega-bindings select"
        )
        assert controls, f"{name}: an interactive figure without a control"
        radios = [c for c in controls if c.get_attribute("type") == "radio"]
        selects = [c for c in controls if c.get_attribute("type") != "radio"]
        # the radio buttons of one control share a name
        for control in radios[:1] + selects:
            drawing = figure.eval_on_selector("svg", "svg => svg.innerHTML")
            if control in radios:
                next(r for r in radios if not r.is_checked()).check()
            else:
                options = control.eval_on_selector_all(
                    "option", "os => os.map(o => o.value)"
                )
                control.select_option(
                    next(o for o in options if o != control.input_value())
                )
            page.wait_for_function(
                "([figure, before]) => figure.querySelector('svg').innerHTML "
                "!== before",
                arg=[figure, drawing],
            )
            moved += 1
    return moved


def check_pages(names, site, opened, controls=True):
    """Each page of ``names``: no script error or request to another host,
    its math typeset, every control of an interactive figure redraws it
    (unless ``controls`` is false), every image loaded, every link to this
    book reaching a page and anchor that exist. Returns what was checked,
    counted."""
    base, html_root = site
    texts = {}  # each page's HTML, read once (pages link to their own anchors)
    checked = {
        "pages": 0,
        "images": 0,
        "links": 0,
        "formulas": 0,
        "controls": 0,
    }
    for name in names:
        page, script_errors = opened(name)
        assert not script_errors, (
            f"{name}: script errors or requests to other hosts {script_errors}"
        )
        raw_math = page.eval_on_selector_all(
            ".math",
            "ms => ms.filter(m => !m.querySelector('mjx-container')).length",
        )
        assert raw_math == 0, (
            f"{name}: {raw_math} formulas left as raw TeX (MathJax did not "
            "typeset them)"
        )
        checked["formulas"] += page.eval_on_selector_all(
            ".math", "ms => ms.length"
        )
        if controls:
            checked["controls"] += move_every_control(page, name)
        assert not script_errors, (
            f"{name}: script errors after moving the controls {script_errors}"
        )
        broken = page.eval_on_selector_all(
            "img",
            "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > "
            "0)).map(i => i.src)",
        )
        assert not broken, f"{name}: images that did not load: {broken}"
        checked["images"] += page.eval_on_selector_all(
            "img", "imgs => imgs.length"
        )
        for href in page.eval_on_selector_all(
            "a[href]", "links => links.map(a => a.href)"
        ):
            target, fragment = urldefrag(href)
            if not target.startswith(base):
                continue  # other hosts and mailto: not ours to check
            if target.endswith(".pdf") or (
                target.startswith(base + CHINESE) and CHINESE not in name
            ):
                # printed, and the Chinese edition built, after the English
                # pages are written: the PDF tests follow the intro's link to
                # the PDF, test_chinese_edition the links between editions
                continue
            path = html_root / urlparse(target).path.lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            assert path.is_file(), f"{name}: link to missing page {href}"
            if fragment and path.suffix == ".html":
                if path not in texts:
                    texts[path] = path.read_text()
                assert f'id="{fragment}"' in texts[path], (
                    f"{name}: link to missing anchor {href}"
                )
            checked["links"] += 1
        checked["pages"] += 1
    return checked


# Each figure at its displayed width: its box's right edge (the figure, or
# the box it scrolls in) and its scale against the size it was drawn for.
FIGURES = """imgs => imgs.map(i => {
  const box = i.parentElement.classList.contains("mha-figure-scroll")
    ? i.parentElement : i;
  return {src: i.src, right: box.getBoundingClientRect().right,
          shown: i.getBoundingClientRect().width,
          figure: i.closest("div.cell_output") !== null};
})"""


def figures_as_drawn():
    """Every figure of the built chapters, in its four renderings (``en``,
    ``zh``, ``narrow``, ``zh-narrow``): a list of ``{rendering: (image file
    name, what mha_lib.course.figure_editions measured of it)}``."""
    import base64
    import hashlib

    import nbformat
    from jupyter_cache import get_cache

    from mha_lib.course.figure_editions import MIME

    cache = get_cache(CACHE)
    figures = []
    for path in NOTEBOOKS:
        source = nbformat.read(path, as_version=4)
        _, notebook = cache.merge_match_into_notebook(source)
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if MIME not in data:
                    continue
                bundle = data[MIME]
                pngs = {"en": data["image/png"]}
                pngs.update(
                    (n, bundle[n]) for n in ("zh", "narrow", "zh-narrow")
                )
                figures.append(
                    {
                        name: (
                            hashlib.sha256(base64.b64decode(png)).hexdigest()
                            + ".png",
                            bundle["checks"][name],
                        )
                        for name, png in pngs.items()
                    }
                )
    return figures


def figure_checks():
    """``{image file name: what its drawing measured}`` for every rendering
    of every figure of the built chapters."""
    return {
        file: checks
        for figure in figures_as_drawn()
        for file, checks in figure.values()
    }


# what scrolls sideways in its own box (a printed table, a table of the
# prose in the theme's box, a display equation, a figure) without the line
# below it that says so (figures.js)
UNSAID_SCROLLS = """() => [...document.querySelectorAll(
    'article table, mjx-container[display="true"], div.mha-figure-scroll')]
  .map(e => e.closest('div.cell_output') ? e
    : e.closest('.pst-scrollable-table-container') || e)
  .filter(box => box.scrollWidth > box.clientWidth + 1)
  .filter(box => {
    const hint = box.nextElementSibling;
    const said = hint && hint.classList.contains('mha-scroll-hint');
    return !(said && !hint.hidden);
  })
  .map(box => box.textContent.trim().slice(0, 40))"""


# each interactive figure drawn wider than its column (the parent of the
# box Vega-Embed sizes to the drawing): [figure, column] px
INTERACTIVE_TOO_WIDE = """() => [...document.querySelectorAll(
    '.mha-interactive')]
  .map(box => [box.querySelector('svg').getBoundingClientRect().width,
    box.parentElement.clientWidth].map(Math.round))
  .filter(([figure, column]) => figure > column + 1)"""


def check_phone_width(names, opened):
    """At 390 px the page itself must not scroll sideways: wide code, tables,
    equations and interactive figures scroll inside their own box, and say
    so (code excepted: a code box shows its scroll bar), and an interactive
    figure fits its column in its narrow layout. Every figure shows
    its smallest text at 10 px or more (the page shows its narrow rendering,
    ``book/_ext/figure_editions.py``; the sizes are those its drawing
    measured). A page opened wider is narrowed to 390 px (the theme's layout
    follows the width as it changes) and widened again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    measured = figure_checks()
    for name in names:
        page, _ = opened(name)
        width = page.viewport_size["width"]
        page.set_viewport_size({"width": 390, "height": 900})
        try:
            too_wide = page.evaluate(
                "() => document.scrollingElement.scrollWidth"
            )
            assert too_wide <= 392, (
                f"{name}: at 390 px the page is {too_wide} px wide"
            )
            figures = [
                f
                for f in page.eval_on_selector_all("main img", FIGURES)
                if f["shown"] > 0
            ]
            cut = [f["src"] for f in figures if f["right"] > 392]
            assert not cut, f"{name}: images cut off at 390 px: {cut}"
            try:  # the hints and layouts follow the new width
                page.wait_for_function(
                    f"({UNSAID_SCROLLS})().length === 0", timeout=5000
                )
                page.wait_for_function(FIGURES_DRAWN, timeout=5000)
            except PlaywrightTimeout:
                pass
            wide = page.evaluate(INTERACTIVE_TOO_WIDE)
            assert not wide, (
                f"{name}: interactive figures wider than the column at 390 "
                f"px (their width, the column's): {wide}"
            )
            unsaid = page.evaluate(UNSAID_SCROLLS)
            assert not unsaid, (
                f"{name}: at 390 px these scroll sideways unsaid: {unsaid}"
            )
            small = []
            for f in figures:
                if not f["figure"]:
                    continue
                file = f["src"].rsplit("/", 1)[-1]
                assert file in measured, f"{name}: {file} was not measured"
                checks = measured[file]
                text = (
                    checks["smallest_text_px"] * f["shown"] / checks["width"]
                )
                if text < 10:
                    small.append((file, round(text, 1)))
            assert not small, (
                f"{name}: figure text under 10 px at 390 px: {small}"
            )
        finally:
            page.set_viewport_size({"width": width, "height": 900})


# Prints the text of pages [start, stop) of a PDF as a JSON list.
PAGE_TEXTS = (
    "import json, sys, pypdf; pages = pypdf.PdfReader(sys.argv[1]).pages; "
    "start, stop = map(int, sys.argv[2:]); "
    "print(json.dumps([p.extract_text() for p in pages[start:stop]]))"
)


def page_texts(pdf, count, workers=2):
    """The text of each page of ``pdf``: by poppler's ``pdftotext`` where it
    is installed (a second for the book), else extracted by ``workers``
    processes side by side (pypdf reads a page's content in Python: seconds a
    page)."""
    if shutil.which("pdftotext"):
        output = subprocess.run(
            ["pdftotext", "-enc", "UTF-8", str(pdf), "-"],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        return output.split("\f")[:count]  # a form feed ends each page
    bounds = [count * i // workers for i in range(workers + 1)]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                PAGE_TEXTS,
                str(pdf),
                str(start),
                str(stop),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for start, stop in zip(bounds, bounds[1:])
    ]
    texts = []
    for process in processes:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, "extracting the PDF's text failed"
        texts += json.loads(output)
    return texts
