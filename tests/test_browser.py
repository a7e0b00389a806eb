"""Open every page of the built book in headless Chromium, as a reader would.

Checks that images load, internal links resolve, chapter pages show their
questions and figures, the search page finds things, and no page throws a
script error; that no page asks another host for anything (the book works
offline), the math is typeset, every control of an interactive figure redraws
it, and the PDF of the book holds every chapter. Saves a screenshot of each
page in ``_build/screenshots``. Skipped, with the reason, when Playwright or
Chromium is missing.
"""

import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import unicodedata
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from support import ROOT

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright is not installed (pip install playwright)",
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "no Chromium on PATH (Debian: apt-get install chromium)",
        allow_module_level=True,
    )

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(built_book):
    """Serve the built book on a free localhost port; yields (base URL, html
    folder)."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", built_book
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def opened(site, browser):
    """Each page opened once at 1280 px, its screenshot saved: ``opened(name)``
    returns (page, script errors), shared by the checks that read the page.

    A chapter page takes seconds to typeset and draw; the checks at that width
    read it in turn instead of loading it again each.
    """
    base, html_root = site
    visited = {}

    def open_page(name):
        if name not in visited:
            screenshot = (
                html_root.parent
                / "screenshots"
                / name.replace("/", "_").replace(".html", ".jpg")
            )
            visited[name] = visit(browser, urljoin(base, name), screenshot)
        return visited[name]

    yield open_page
    for page, _ in visited.values():
        page.close()


def pages(html_root):
    """Every page a reader lands on: not redirects, not Sphinx internals."""
    found = []
    for path in html_root.rglob("*.html"):
        name = path.relative_to(html_root).as_posix()
        internal = name.startswith(("_", "genindex"))
        if not internal and REDIRECT not in path.read_text():
            found.append(name)
    return sorted(found)


TYPESET = (
    "async () => { if (window.MathJax && MathJax.startup) "
    "await MathJax.startup.promise; }"
)
FIGURES_DRAWN = (
    "() => [...document.querySelectorAll('.mha-interactive')]"
    ".every(e => e.querySelector('svg'))"
)
IMAGES_DECODED = "() => [...document.images].every(i => i.complete)"
# index.html only redirects to the intro: a page of its own would race the
# redirect (the checks could run on the page being left)
REDIRECT = 'http-equiv="Refresh"'


def test_index_redirects_to_the_intro(site, browser):
    base, html_root = site
    assert REDIRECT in (html_root / "index.html").read_text()
    page = browser.new_page()
    page.goto(urljoin(base, "index.html"))
    page.wait_for_url("**/book/intro.html", timeout=15000)
    page.close()


def visit(browser, url, screenshot=None, width=1280):
    """Open ``url`` and wait for the math and the figures; returns (page,
    script errors).

    Requests to other hosts are aborted, and each one is reported as an error:
    the book must not need the network.
    """
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    local = urlparse(url).netloc

    def only_local(route):
        if urlparse(route.request.url).netloc in ("", local):
            return route.continue_()
        errors.append(f"request to another host: {route.request.url}")
        return route.abort()

    page.route("**/*", only_local)
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
    # An aborted request also logs "Failed to load resource"; the request
    # itself is reported above.
    return page, [e for e in errors if "Failed to load resource" not in e]


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


def test_every_page_renders_with_images_links_and_no_script_errors(
    site, opened
):
    """... and its math is typeset and every control of an interactive figure
    redraws it."""
    base, html_root = site
    all_pages = pages(html_root)
    assert "book/intro.html" in all_pages
    checked = {
        "pages": 0,
        "images": 0,
        "links": 0,
        "formulas": 0,
        "controls": 0,
    }
    for name in all_pages:
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
            path = html_root / urlparse(target).path.lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            assert path.is_file(), f"{name}: link to missing page {href}"
            if fragment and path.suffix == ".html":
                text = path.read_text()
                assert f'id="{fragment}"' in text, (
                    f"{name}: link to missing anchor {href}"
                )
            checked["links"] += 1
        checked["pages"] += 1
    print(
        ", ".join(f"{count} {what}" for what, count in checked.items()),
        "checked",
    )
    assert checked["formulas"] > 0, (
        "no page has math: the MathJax check checked nothing"
    )
    notebooks = [
        json.loads(path.read_text())
        for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
    ]
    figures = sum(
        "mha_lib.interactive" in "".join(cell["source"])
        for nb in notebooks
        for cell in nb["cells"]
    )
    assert checked["controls"] >= figures >= 3, (
        f"moved {checked['controls']} controls of {figures} interactive "
        "figures"
    )


def test_chapter_pages_show_questions_answers_and_figures(site, opened):
    _, html_root = site
    chapters = [
        name for name in pages(html_root) if name.startswith("notebooks/")
    ]
    assert chapters, "no chapter pages were built"
    for name in chapters:
        page, _ = opened(name)
        text = page.inner_text("main")
        assert "Questions answered here" in text and "Short answer." in text, (
            f"{name}: no questions or answer"
        )
        figures = page.eval_on_selector_all(
            "main .cell_output img, main .mha-interactive svg",
            "figs => figs.filter(f => f.clientWidth > 100).length",
        )
        assert figures >= 1, f"{name}: no figure is visible"


# Code and printed output wider than their column, every fold opened.
OVERFLOWING = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const blocks = 'main div.highlight pre, main .output pre';
  return [...document.querySelectorAll(blocks)]
    .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => pre.textContent.split('\\n')
      .reduce((a, b) => (b.length > a.length ? b : a), ''));
}"""


def test_code_and_output_fit_the_column_and_nothing_stray_is_printed(
    site, opened
):
    _, html_root = site
    chapters = [
        name for name in pages(html_root) if name.startswith("notebooks/")
    ]
    for name in chapters:
        page, _ = opened(name)
        wide = page.evaluate(OVERFLOWING)
        assert not wide, f"{name}: lines wider than the code column: {wide}"
        outputs = page.eval_on_selector_all(
            "main .cell_output .output.text_plain pre",
            "pres => pres.map(p => p.textContent.trim())",
        )
        stray = [
            text
            for text in outputs
            if text.replace(".", "", 1).replace("-", "", 1).isdigit()
        ]
        assert not stray, f"{name}: bare values printed under cells: {stray}"


def test_nothing_essential_is_cut_off_at_phone_width(site, browser):
    """At 390 px the page itself must not scroll sideways: wide code and
    tables scroll inside their own box, figures shrink to the column."""
    base, html_root = site
    for name in pages(html_root):
        page, _ = visit(browser, urljoin(base, name), width=390)
        too_wide = page.evaluate("() => document.scrollingElement.scrollWidth")
        assert too_wide <= 392, (
            f"{name}: at 390 px the page is {too_wide} px wide"
        )
        images = page.eval_on_selector_all(
            "main img",
            "imgs => imgs.filter(i => i.getBoundingClientRect().right > 392)"
            ".map(i => i.src)",
        )
        assert not images, f"{name}: images cut off at 390 px: {images}"
        page.close()


def test_every_question_has_its_own_anchor(opened):
    page, _ = opened("book/answers.html")
    for number in range(1, 17):
        heading = page.query_selector(
            f"[id='q{number}'] + h2, [id='q{number}'] h2, h2[id='q{number}']"
        )
        assert heading is not None, f"answers.html has no anchor #q{number}"
        assert heading.inner_text().startswith(f"Q{number}."), (
            f"#q{number} holds {heading.inner_text()!r}"
        )


def test_intro_links_every_written_chapter(site, opened):
    _, html_root = site
    page, _ = opened("book/intro.html")
    linked = set(
        page.eval_on_selector_all(
            "main table a", "links => links.map(a => a.pathname)"
        )
    )
    for chapter in (html_root / "notebooks").glob("*.html"):
        assert f"/notebooks/{chapter.name}" in linked, (
            f"the questions table does not link {chapter.name}"
        )


def test_search_finds_a_term(site, browser):
    base, _ = site
    page, script_errors = visit(
        browser, urljoin(base, "search.html?q=parameters")
    )
    page.wait_for_selector("#search-results ul li, .search li", timeout=15000)
    results = page.eval_on_selector_all(
        "#search-results ul li, .search li", "items => items.length"
    )
    assert results >= 1, "search found nothing for 'parameters'"
    assert not script_errors, script_errors
    page.close()


# Prints the text of pages [start, stop) of a PDF as a JSON list.
PAGE_TEXTS = (
    "import json, sys, pypdf; pages = pypdf.PdfReader(sys.argv[1]).pages; "
    "start, stop = map(int, sys.argv[2:]); "
    "print(json.dumps([p.extract_text() for p in pages[start:stop]]))"
)


def page_texts(pdf, count, workers=2):
    """The text of each page of ``pdf``, extracted by ``workers`` processes
    side by side (pypdf reads a page's content in Python: seconds a page)."""
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


def test_the_pdf_of_the_book_holds_every_chapter(site):
    pypdf = pytest.importorskip(
        "pypdf", reason="pypdf is not installed (pip install pypdf)"
    )
    _, html_root = site
    pdf = html_root / "mha-answered.pdf"
    assert pdf.is_file(), "the build wrote no PDF (book/_ext/book_pdf.py)"
    reader = pypdf.PdfReader(pdf)
    texts = [
        unicodedata.normalize("NFKC", page)
        for page in page_texts(pdf, len(reader.pages))
    ]
    text = " ".join(texts)
    squeezed = "".join(text.split())  # line breaks fall anywhere in a title
    for chapter in sorted((ROOT / "notebooks").glob("*.ipynb")):
        title = (
            "".join(json.loads(chapter.read_text())["cells"][0]["source"])
            .splitlines()[0]
            .lstrip("# ")
        )
        assert "".join(title.split()) in squeezed, (
            f"the PDF lacks {chapter.stem} ({title!r})"
        )
    assert "\\frac" not in text and "$$" not in text, "the PDF shows raw TeX"
    outline = reader.outline
    top = [item.title for item in outline if not isinstance(item, list)]
    assert "Contents" in top and any(t.startswith("1. ") for t in top), (
        f"the PDF's bookmarks lack the contents or the chapters: {top}"
    )
    assert any(isinstance(item, list) for item in outline), (
        "the PDF's bookmarks have no sections under the chapters"
    )
    title = re.search(
        r'^title: "(.*)"', (ROOT / "_config.yml").read_text(), re.M
    )
    assert top[0] == title.group(1), f"the PDF's first bookmark is {top[0]!r}"
    assert not any(re.search("[a-z][A-Z]", t) for t in top), (
        f"bookmark titles run words together: {top}"
    )
    every = []
    stack = list(outline)
    while stack:  # every bookmark, at every depth
        item = stack.pop()
        stack.extend(item) if isinstance(item, list) else every.append(item)
    gaps = [t.title for t in every if re.search(r"  | [?,.]", t.title)]
    assert not gaps, f"bookmarks with a word missing (math?): {gaps}"
    assert 60 <= len(reader.pages) <= 260, (
        f"the PDF has {len(reader.pages)} pages"
    )
    # the contents give each chapter's page, and the chapter starts there
    listed = {}
    for page in reader.pages[1:8]:
        layout = unicodedata.normalize(
            "NFKC", page.extract_text(extraction_mode="layout")
        )
        for line in layout.splitlines():
            found = re.match(r"\s*(\d+)\. (.*?)\s{2,}(\d+)\s*$", line)
            if found:
                listed[int(found[1])] = (found[2], int(found[3]))
    assert sorted(listed) == list(range(1, 8)), (
        f"the contents list chapters {sorted(listed)} with page numbers"
    )
    for number, (title, page) in listed.items():
        start = "".join(f"{number}. {title}".split())[:20]
        assert start in "".join(texts[page - 1].split()), (
            f"the contents put chapter {number} on page {page}"
        )
