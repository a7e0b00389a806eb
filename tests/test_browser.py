"""Open every page of the built book in headless Chromium, as a reader would.

Checks that images load, internal links resolve, chapter pages show their questions and
figures, the search page finds things, and no page throws a script error (requests to other
hosts are blocked here and not counted). Saves a screenshot of each page in
``_build/screenshots``. Skipped, with the reason, when Playwright or Chromium is missing.
"""

import functools
import http.server
import shutil
import threading
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)", allow_module_level=True)

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(built_book):
    """Serve the built book on a free localhost port; yields (base URL, html folder)."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", built_book
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def pages(html_root):
    return sorted(
        path.relative_to(html_root).as_posix()
        for path in html_root.rglob("*.html")
        if not path.relative_to(html_root).as_posix().startswith(("_", "genindex"))
    )


def visit(browser, url, screenshot=None):
    """Open ``url``; returns (page, script errors). Requests to other hosts are aborted."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    local = urlparse(url).netloc
    page.route("**/*", lambda route: route.continue_() if urlparse(route.request.url).netloc in ("", local)
               else route.abort())  # fmt: skip
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url, wait_until="load")
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot), full_page=True)
    # Failed requests to blocked hosts log "net::ERR_FAILED" console errors; only those are allowed.
    script_errors = [e for e in errors if "net::ERR_FAILED" not in e and "Failed to load resource" not in e]
    return page, script_errors


def test_every_page_renders_with_images_links_and_no_script_errors(site, browser):
    base, html_root = site
    all_pages = pages(html_root)
    assert "book/intro.html" in all_pages
    checked = {"pages": 0, "images": 0, "links": 0}
    for name in all_pages:
        url = urljoin(base, name)
        screenshot = html_root.parent / "screenshots" / name.replace("/", "_").replace(".html", ".png")
        page, script_errors = visit(browser, url, screenshot)
        assert not script_errors, f"{name}: script errors {script_errors}"
        broken = page.eval_on_selector_all(
            "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
        )
        assert not broken, f"{name}: images that did not load: {broken}"
        checked["images"] += page.eval_on_selector_all("img", "imgs => imgs.length")
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            target, fragment = urldefrag(href)
            if not target.startswith(base):
                continue  # other hosts and mailto: not ours to check
            path = html_root / urlparse(target).path.lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            assert path.is_file(), f"{name}: link to missing page {href}"
            if fragment and path.suffix == ".html":
                text = path.read_text()
                assert f'id="{fragment}"' in text, f"{name}: link to missing anchor {href}"
            checked["links"] += 1
        page.close()
        checked["pages"] += 1
    print(f"checked {checked['pages']} pages, {checked['images']} images, {checked['links']} internal links")


def test_chapter_pages_show_questions_answers_and_figures(site, browser):
    base, html_root = site
    chapters = [name for name in pages(html_root) if name.startswith("notebooks/")]
    assert chapters, "no chapter pages were built"
    for name in chapters:
        page, _ = visit(browser, urljoin(base, name))
        text = page.inner_text("main")
        assert "Questions answered here" in text and "Short answer." in text, f"{name}: no questions or answer"
        figures = page.eval_on_selector_all("main img", "imgs => imgs.filter(i => i.naturalWidth > 100).length")
        assert figures >= 1, f"{name}: no figure is visible"
        page.close()


def test_intro_links_every_written_chapter(site, browser):
    base, html_root = site
    page, _ = visit(browser, urljoin(base, "book/intro.html"))
    linked = set(page.eval_on_selector_all("main table a", "links => links.map(a => a.pathname)"))
    for chapter in (html_root / "notebooks").glob("*.html"):
        assert f"/notebooks/{chapter.name}" in linked, f"the questions table does not link {chapter.name}"
    page.close()


def test_search_finds_a_term(site, browser):
    base, _ = site
    page, script_errors = visit(browser, urljoin(base, "search.html?q=parameters"))
    page.wait_for_selector("#search-results ul li, .search li", timeout=15000)
    results = page.eval_on_selector_all("#search-results ul li, .search li", "items => items.length")
    assert results >= 1, "search found nothing for 'parameters'"
    assert not script_errors, script_errors
    page.close()
