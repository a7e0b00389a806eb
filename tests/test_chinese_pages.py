"""The Chinese edition opened in headless Chromium, as ``test_browser.py``
and ``test_book_pages.py`` open the English one: every page renders with its
images, links and math, its figures' controls react, it fits a phone's
390 px; the search finds Chinese words; the Chinese PDF holds every chapter
in Chinese, set in the font the book ships. Skipped, with the reason, when
Playwright or Chromium is missing."""

import re
import unicodedata
from urllib.parse import quote, urljoin

import pytest
from browsing import (
    CHINESE,
    check_pages,
    check_phone_width,
    page_texts,
    pages,
    skip_without_a_browser,
    visit,
)

skip_without_a_browser()


@pytest.fixture(scope="module", autouse=True)
def whole_build(built_book):
    """The Chinese edition ends with the build, after the English pages."""


def test_every_chinese_page_renders_with_images_links_and_no_script_errors(
    site, opened
):
    """... its math typeset and every control of its figures redrawing."""
    names = pages(site[1], CHINESE)
    checked = check_pages(names, site, opened)
    assert checked["pages"] == len(names) >= 13, checked
    assert checked["formulas"] > 0 and checked["controls"] >= 3, checked


# Marks the first 30 shown elements whose own text has Chinese characters;
# returns how many characters each has.
MARK_CHINESE = """() => {
  const chinese = /[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]/g;
  const found = [];
  for (const element of document.querySelectorAll('body *')) {
    const own = [...element.childNodes].filter(n => n.nodeType === 3)
      .map(n => n.textContent).join('');
    const count = (own.match(chinese) || []).length;
    if (count && found.length < 30 && element.checkVisibility()) {
      element.setAttribute('data-chinese', found.length);
      found.push(count);
    }
  }
  return found;
}"""


def test_chinese_text_is_drawn_in_the_font_the_book_serves(site, opened):
    """Every Chinese character of the first 30 passages of each page, the
    title and the headings first, is drawn by the book's font, not left as an
    empty box for want of a system font (Chromium's own account of the fonts
    it used)."""
    for name in pages(site[1], CHINESE):
        page, _ = opened(name)
        counts = page.evaluate(MARK_CHINESE)
        session = page.context.new_cdp_session(page)
        session.send("DOM.enable")
        session.send("CSS.enable")
        root = session.send("DOM.getDocument")["root"]["nodeId"]
        for index, count in enumerate(counts):
            node = session.send(
                "DOM.querySelector",
                {"nodeId": root, "selector": f"[data-chinese='{index}']"},
            )["nodeId"]
            fonts = session.send(
                "CSS.getPlatformFontsForNode", {"nodeId": node}
            )["fonts"]
            drawn = sum(f["glyphCount"] for f in fonts if f["isCustomFont"])
            assert drawn >= count, (name, index, fonts)
        session.detach()


def test_no_chinese_page_is_cut_off_at_phone_width(site, opened):
    check_phone_width(pages(site[1], CHINESE), opened)


def test_chinese_search_finds_words(site, browser):
    """Sphinx splits Chinese text into words (with jieba): a search for
    多头注意力 finds the pages about it, and a single word too."""
    base, _ = site
    for query in ("多头注意力", "剪枝"):
        page, script_errors = visit(
            browser, urljoin(base, f"{CHINESE}search.html?q={quote(query)}")
        )
        page.wait_for_selector("#search-results ul li", timeout=15000)
        found = page.eval_on_selector_all(
            "#search-results ul li a", "links => links.map(a => a.pathname)"
        )
        assert not script_errors, script_errors
        assert any("/zh/notebooks/" in path for path in found), (query, found)
        page.close()


def test_the_chinese_pdf_holds_every_chapter_in_chinese(site):
    import pypdf

    _, html_root = site
    intro = (html_root / CHINESE / "book" / "intro.html").read_text()
    (link,) = re.findall(r'href="([^"]+\.pdf)"', intro)
    pdf = (html_root / CHINESE / "book" / link).resolve()
    assert pdf == html_root / CHINESE / "mha-answered.pdf" and pdf.is_file(), (
        f"the Chinese intro links {link}, and the build wrote no PDF there"
    )
    reader = pypdf.PdfReader(pdf)
    text = "".join(
        "".join(unicodedata.normalize("NFKC", page).split())
        for page in page_texts(pdf, len(reader.pages))
    )
    titles = [
        re.sub(r"\s+", "", re.sub(r"<[^>]+>", "", h1.group(1)))
        for path in sorted((html_root / CHINESE / "notebooks").glob("*.html"))
        for h1 in [re.search(r"<h1>(.*?)</h1>", path.read_text(), re.S)]
    ]
    assert len(titles) == 7
    for title in titles:
        assert re.search(r"[\u4e00-\u9fff]", title), title
        title = unicodedata.normalize("NFKC", title).rstrip("#")
        assert title in text, title
    outline = [
        item.title for item in reader.outline if not isinstance(item, list)
    ]
    assert "目录" in outline, outline
