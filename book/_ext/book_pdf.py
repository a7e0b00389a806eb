"""Sphinx extension: the whole book as one PDF,
``_build/html/mha-answered.pdf``.

When the HTML build has finished, the article of every page, in the order of
the table of contents, is put into one document
(``_build/html/_pdf/book.html``, next to the pages so their relative links to
``_static`` and ``_images`` still hold) and printed once by headless Chromium
through Playwright, after MathJax and the interactive figures have drawn.
Nothing is executed again: the PDF shows the outputs of this build. Where
neither Playwright nor a Chromium is installed the PDF is skipped with a
message (the browser test is skipped there too).
"""

import functools
import http.server
import shutil
import threading
from pathlib import Path

from bs4 import BeautifulSoup
from sphinx.util import logging

logger = logging.getLogger(__name__)
PDF_NAME = "mha-answered.pdf"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PRINT_CSS = """
@page { size: A4; margin: 14mm 12mm; }
body { padding: 0 !important; margin: 0 !important; }
.pdf-page { break-before: page; }
.pdf-page:first-child { break-before: auto; }
.mha-interactive .vega-bindings, .headerlink, .toggle-button, .copybtn {
  display: none !important;
}
pre { white-space: pre-wrap !important; word-break: break-word; }
"""


def reading_order(env, docname=None, seen=None):
    """Documents in the order of the table of contents, the root first."""
    docname = docname or env.config.root_doc
    seen = seen if seen is not None else []
    if docname not in seen:
        seen.append(docname)
        for child in env.toctree_includes.get(docname, []):
            reading_order(env, child, seen)
    return seen


def one_document(outdir, docnames):
    """One HTML document: every page's article, each on new pages, under the
    union of their heads."""
    book = BeautifulSoup(
        "<!DOCTYPE html><html "
        "data-theme='light'><head></head><body></body></html>",
        "html.parser",
    )
    seen_head = set()
    for docname in docnames:
        page = BeautifulSoup(
            (outdir / f"{docname}.html").read_text(encoding="utf-8"),
            "html.parser",
        )
        for tag in page.head.find_all(
            ["meta", "link", "script", "style", "title"], recursive=False
        ):
            key = str(tag)
            if key not in seen_head and not (
                tag.name == "title" and book.head.title
            ):
                seen_head.add(key)
                book.head.append(tag)
        article = page.select_one("article.bd-article") or page.body
        for link in article.select(
            "a.headerlink"
        ):  # the "#" after each heading links nowhere on paper
            link.decompose()
        section = book.new_tag(
            "section",
            attrs={
                "class": "pdf-page",
                "id": f"pdf-{docname.replace('/', '-')}",
            },
        )
        section.extend(list(article.children))
        book.body.append(section)
    style = book.new_tag("style")
    style.string = PRINT_CSS
    book.head.append(style)
    return str(book)


def print_pdf(html_path, pdf_path, outdir):
    """Serve the build on localhost, open ``html_path`` in headless Chromium
    and print it."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(outdir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{html_path.relative_to(outdir).as_posix()}"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
            )
            page = browser.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function(
                "() => "
                "[...document.querySelectorAll('.mha-interactive')].every(e "
                "=> e.querySelector('svg'))"
            )
            page.evaluate(
                "async () => "
                "{ if (window.MathJax && MathJax.startup) "
                "await MathJax.startup.promise; }"
            )
            page.pdf(path=str(pdf_path), format="A4", print_background=True)
            browser.close()
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _build_pdf(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        logger.info(
            f"book_pdf: Playwright is not installed, {PDF_NAME} is not built"
        )
        return
    outdir = Path(app.outdir)
    html_path = outdir / "_pdf" / "book.html"
    html_path.parent.mkdir(exist_ok=True)
    html_path.write_text(
        one_document(outdir, reading_order(app.env)), encoding="utf-8"
    )
    try:
        print_pdf(html_path, outdir / PDF_NAME, outdir)
    except (
        Exception
    ) as error:  # no browser to print with: the HTML book is still complete
        logger.info(
            f"book_pdf: {PDF_NAME} is not built ({type(error).__name__}: "
            f"{error})"
        )
        return
    logger.info(f"book_pdf: wrote {PDF_NAME}")


def setup(app):
    # late: after the other build-finished handlers, e.g. the one that copies
    # MathJax to _static
    app.connect("build-finished", _build_pdf, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
