"""The built book's pages other than the chapters, its search, its PDF.

Opened in headless Chromium as in ``test_browser.py`` (which takes the
chapters, so two workers share the pages): each renders with its images,
links and math and fits a phone's 390 px; the index leads to the intro, the
answers have an anchor per question, the intro links every chapter, the
search page finds a term; the PDF holds every chapter, with bookmarks and a
contents page whose page numbers are right. Skipped, with the reason, when
Playwright or Chromium is missing (the PDF is printed by the build, with the
same Chromium).
"""

import json
import re
import unicodedata
from urllib.parse import urljoin

import pytest
from browsing import (
    REDIRECT,
    check_pages,
    check_phone_width,
    page_texts,
    pages,
    skip_without_a_browser,
    visit,
)
from support import ROOT

skip_without_a_browser()


def test_index_redirects_to_the_intro(site, browser):
    base, html_root = site
    assert REDIRECT in (html_root / "index.html").read_text()
    page = browser.new_page()
    page.goto(urljoin(base, "index.html"))
    page.wait_for_url("**/book/intro.html", timeout=15000)
    page.close()


def others(html_root):
    """The book's pages that are not chapters."""
    return [
        name for name in pages(html_root) if not name.startswith("notebooks/")
    ]


def test_every_other_page_renders_with_images_links_and_no_script_errors(
    site, opened
):
    names = others(site[1])
    assert "book/intro.html" in names
    assert check_pages(names, site, opened)["links"] > 0


def test_no_other_page_is_cut_off_at_phone_width(site, opened):
    check_phone_width(others(site[1]), opened)


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


def test_the_pdf_of_the_book_holds_every_chapter(site, built_book):
    pypdf = pytest.importorskip(
        "pypdf", reason="pypdf is not installed (pip install pypdf)"
    )
    _, html_root = site
    intro = (html_root / "book" / "intro.html").read_text()
    (link,) = re.findall(r'href="([^"]+\.pdf)"', intro)
    pdf = (html_root / "book" / link).resolve()
    assert pdf == html_root / "mha-answered.pdf" and pdf.is_file(), (
        f"the intro links {link}, and the build wrote no PDF there "
        "(book/_ext/book_pdf.py)"
    )
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
