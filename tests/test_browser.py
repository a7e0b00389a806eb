"""Open every chapter of the built book in headless Chromium, as a reader
would.

Checks that images load, internal links resolve, chapter pages show their
questions and figures, and no page throws a script error; that no page asks
another host for anything (the book works offline), the math is typeset and
every control of an interactive figure redraws it; then narrows each page to a
phone's 390 px. With ``MHA_SCREENSHOTS=1`` it saves a screenshot of each page
in ``_build/screenshots``. The book's other pages, its search and its PDF are
checked in ``test_book_pages.py`` (so two workers share the pages). Skipped,
with the reason, when Playwright or Chromium is missing.
"""

import json

from browsing import (
    check_pages,
    check_phone_width,
    pages,
    skip_without_a_browser,
)
from support import ROOT

skip_without_a_browser()


def chapters(html_root):
    """The chapters' pages (the book's other pages are checked in
    ``test_book_pages.py``)."""
    return [name for name in pages(html_root) if name.startswith("notebooks/")]


def test_every_chapter_page_renders_with_images_links_and_no_script_errors(
    site, opened
):
    """... and its math is typeset and every control of an interactive figure
    redraws it."""
    _, html_root = site
    checked = check_pages(chapters(html_root), site, opened)
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
        "mha_lib.course.interactive" in "".join(cell["source"])
        for nb in notebooks
        for cell in nb["cells"]
    )
    assert checked["controls"] >= figures >= 3, (
        f"moved {checked['controls']} controls of {figures} interactive "
        "figures"
    )


def test_chapter_pages_show_questions_answers_and_figures(site, opened):
    names = chapters(site[1])
    assert names, "no chapter pages were built"
    for name in names:
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
    for name in chapters(html_root):
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


def test_no_chapter_page_is_cut_off_at_phone_width(site, opened):
    check_phone_width(chapters(html_root=site[1]), opened)
