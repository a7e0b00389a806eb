"""The built book's pages other than the chapters, and its search.

Opened in headless Chromium as in ``test_browser.py`` (which takes the
chapters, so two workers share the pages): each renders with its images,
links and math and fits a phone's 390 px; the index leads to the intro, the
answers have an anchor per question, the intro links every chapter, the
search page finds a term (the PDF is checked in ``test_pdfs.py``). Skipped,
with the reason, when Playwright or Chromium is missing."""

from urllib.parse import urljoin

from browsing import (
    REDIRECT,
    check_pages,
    check_phone_width,
    pages,
    search_excerpts,
    skip_without_a_browser,
    visit,
)

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


def test_a_request_to_another_host_is_reported_and_fails_here(browser):
    page, errors = visit(
        browser,
        "data:text/html,<img src='http://example.org/figure.png'>",
    )
    assert errors == ["request to another host: http://example.org/figure.png"]
    assert not page.evaluate("document.images[0].naturalWidth")
    page.close()


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
    # an excerpt is cut around the words sought, its math read as text
    page, _ = visit(browser, urljoin(base, "search.html?q=head%20size"))
    excerpts = search_excerpts(page)
    assert "head size" in excerpts[0].lower(), excerpts[0]
    assert not [e for e in excerpts if "\\(" in e], excerpts
    page.close()
