"""The Chinese edition opened in headless Chromium, as a reader on a phone
would: every page renders at 390 px with its images, links and math, every
control of an interactive figure redraws it, and no page scrolls sideways;
the search finds Chinese words (the Chinese PDF is checked in
``test_chinese_pdf.py``). The page layout at 1280 px is the same theme's as
the English pages', checked in ``test_browser.py``. Skipped, with the
reason, when Playwright or Chromium is missing."""

import time
from urllib.parse import quote, urljoin

import pytest
from browsing import (
    CHINESE,
    check_pages,
    check_phone_width,
    opener,
    pages,
    search_excerpts,
    skip_without_a_browser,
    visit,
)

skip_without_a_browser()


@pytest.fixture(scope="module", autouse=True)
def written(chinese_pages):
    """The Chinese pages are written after the English ones."""


@pytest.fixture(scope="module")
def on_a_phone(site, browser):
    """Each Chinese page opened once, at 390 px."""
    yield from opener(site, browser, width=390)


def test_every_chinese_page_renders_with_images_links_and_no_script_errors(
    site, on_a_phone
):
    """... and its math typeset, translated prose included, and its figures'
    controls react."""
    names = pages(site[1], CHINESE)
    checked = check_pages(names, site, on_a_phone)
    assert checked["pages"] == len(names) >= 13, checked
    assert checked["formulas"] > 0 and checked["images"] > 0, checked
    assert checked["controls"] > 0, checked


def test_no_chinese_page_is_cut_off_at_phone_width(site, on_a_phone):
    check_phone_width(pages(site[1], CHINESE), on_a_phone)


def test_chinese_search_finds_words(site, browser):
    """Sphinx splits Chinese text into words (with jieba): a search for
    多头注意力 finds the pages about it, a single word too, the course's
    terms (参数量 "parameter count", 不同的输出 "different outputs", kept
    whole by locale/zh_CN/search_words.txt) and single characters (头
    "head", 键 "key")."""
    base, _ = site
    for query in ("多头注意力", "剪枝", "参数量", "不同的输出", "头", "键"):
        page, script_errors = visit(
            browser, urljoin(base, f"{CHINESE}search.html?q={quote(query)}")
        )
        page.wait_for_selector("#search-results ul li", timeout=15000)
        found = page.eval_on_selector_all(
            "#search-results ul li a", "links => links.map(a => a.pathname)"
        )
        assert not script_errors, script_errors
        assert any("/zh/notebooks/" in path for path in found), (query, found)
        excerpts = search_excerpts(page)
        assert not [e for e in excerpts if "\\(" in e], (
            f"{query}: raw TeX in the excerpts: {excerpts}"
        )
        if len(query) > 1:  # cut around the word sought, not a piece of it
            assert query in excerpts[0], (query, excerpts[0])
        page.close()


def _fonts_drawing(page, selector):
    """The fonts Chromium drew an element's text with (its own account, over
    the DevTools protocol): [family name]."""
    session = page.context.new_cdp_session(page)
    session.send("DOM.enable")
    session.send("CSS.enable")
    root = session.send("DOM.getDocument")["root"]["nodeId"]
    node = session.send(
        "DOM.querySelector", {"nodeId": root, "selector": selector}
    )
    fonts = session.send(
        "CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]}
    )
    return [font["familyName"] for font in fonts["fonts"]]


def _has_chinese(fonts):
    return any("Noto Sans SC" in font or "CJK" in font for font in fonts)


def _fonts_once_loaded(page, selector, seconds=15):
    """The fonts an element is drawn with once the page's fonts have loaded
    and it has been drawn again: asked again until they hold Chinese or
    ``seconds`` pass (on a busy machine the text can still stand in its
    fallback's place, invisible, a few frames after the font arrived)."""
    deadline = time.monotonic() + seconds
    while True:
        page.evaluate(DRAWN_WITH_FONTS_LOADED)
        fonts = _fonts_drawing(page, selector)
        if _has_chinese(fonts) or time.monotonic() > deadline:
            return fonts
        page.wait_for_timeout(250)


# each font face the page declares, and whether it loaded
FACES = "() => [...document.fonts].map(f => `${f.family}: ${f.status}`)"


# the fonts loaded, and the page drawn again with them (a busy machine can
# take longer than the 3 s that font-display: block waits before it draws
# with a fallback, which the loaded font then replaces at the next frame)
DRAWN_WITH_FONTS_LOADED = """async () => {
  // every face the page declares, loaded (a face loads when a layout first
  // needs it, so a face not yet asked for does not hold fonts.ready back)
  const faces = [...document.fonts].filter(face => face.status !== "loaded");
  await Promise.all(faces.map(face => face.load().catch(() => null)));
  await document.fonts.ready;
  const frame = () => new Promise(r => requestAnimationFrame(r));
  await frame();
  await frame();
}"""


def test_chinese_text_is_drawn_in_a_font_that_has_it(
    site, browser, on_a_phone
):
    """On a machine without a Chinese font (as this one may be), the English
    pages' link "中文" and the Chinese pages' title and prose are drawn in the
    font the book serves, not in boxes."""
    base, _ = site
    english = visit(browser, urljoin(base, "book/intro.html"))
    for name, (page, script_errors), selector in (
        ("book/intro.html", english, "p.edition-switch a"),
        *[  # the Chinese pages as the tests above opened them
            (name, on_a_phone(name), selector)
            for name, selector in (
                (f"{CHINESE}book/intro.html", "a.navbar-brand"),
                (f"{CHINESE}notebooks/01_parameters.html", "article h1"),
            )
        ],
    ):
        fonts = _fonts_once_loaded(page, selector)
        if not _has_chinese(fonts):
            # once, under a full test run, a page opened minutes earlier
            # kept its fallback font; a reader would reload it: so does the
            # test, once, and a font the page cannot load still fails here
            faces = page.evaluate(FACES)
            print(f"{name}: {selector} drawn in {fonts}, reloaded: {faces}")
            page.reload(wait_until="load")
            fonts = _fonts_once_loaded(page, selector)
            assert _has_chinese(fonts), (
                f"{name}: {selector} is drawn in {fonts}, no font with "
                f"Chinese, also after a reload (its faces before: {faces})"
            )
        assert not script_errors, script_errors
    english[0].close()


# the Chinese words inside the equations of a page (\text{值路径}): their
# characters and how wide each is drawn, in ems of its font
WORDS_IN_EQUATIONS = r"""() => [...document.querySelectorAll('mjx-utext')]
  .filter(e => /[\u4e00-\u9fff]/.test(e.textContent))
  .map(e => [e.textContent, e.getBoundingClientRect().width
    / e.textContent.length / parseFloat(getComputedStyle(e).fontSize)])"""


def test_words_in_chinese_equations_are_drawn(on_a_phone):
    """MathJax's fonts have no Chinese glyphs: an equation's words come
    from the page's fonts, each character about an em wide (drawn in
    MathJax's own font they were blank, a third of an em apart)."""
    found = []
    for name in ("04_heads_differ", "05_chunked_standard_wide"):
        page, _ = on_a_phone(f"{CHINESE}notebooks/{name}.html")
        page.evaluate(DRAWN_WITH_FONTS_LOADED)
        found += page.evaluate(WORDS_IN_EQUATIONS)
    assert len(found) >= 4, found
    narrow = [(text, round(ems, 2)) for text, ems in found if ems < 0.8]
    assert not narrow, f"words in equations drawn without glyphs: {narrow}"
