"""Open every page of the built book in headless Chromium, as a reader would.

Checks that images load, internal links resolve, chapter pages show their
questions and figures, and no page throws a script error; that no page asks
another host for anything (the book works offline), the math is typeset and
every control of an interactive figure redraws it; then narrows each page to a
phone's 390 px. With ``MHA_SCREENSHOTS=1`` it saves a screenshot of each page
in ``_build/screenshots``. The search page and the PDF are checked in
``test_search_and_pdf.py`` (so two workers share the work). Skipped, with the
reason, when Playwright or Chromium is missing.
"""

import json
from urllib.parse import urldefrag, urljoin, urlparse

from browsing import REDIRECT, pages, skip_without_a_browser
from support import ROOT

skip_without_a_browser()


def test_index_redirects_to_the_intro(site, browser):
    base, html_root = site
    assert REDIRECT in (html_root / "index.html").read_text()
    page = browser.new_page()
    page.goto(urljoin(base, "index.html"))
    page.wait_for_url("**/book/intro.html", timeout=15000)
    page.close()


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
    texts = {}  # each page's HTML, read once (pages link to their own anchors)
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
                if path not in texts:
                    texts[path] = path.read_text()
                assert f'id="{fragment}"' in texts[path], (
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


def test_nothing_essential_is_cut_off_at_phone_width(site, opened):
    """At 390 px the page itself must not scroll sideways: wide code and
    tables scroll inside their own box, figures shrink to the column. Each
    page opened at 1280 px is narrowed to 390 px (the theme's layout follows
    the width as it changes) and widened again."""
    _, html_root = site
    for name in pages(html_root):
        page, _ = opened(name)
        page.set_viewport_size({"width": 390, "height": 900})
        try:
            too_wide = page.evaluate(
                "() => document.scrollingElement.scrollWidth"
            )
            assert too_wide <= 392, (
                f"{name}: at 390 px the page is {too_wide} px wide"
            )
            images = page.eval_on_selector_all(
                "main img",
                "imgs => imgs.filter(i => i.getBoundingClientRect().right > "
                "392).map(i => i.src)",
            )
            assert not images, f"{name}: images cut off at 390 px: {images}"
        finally:
            page.set_viewport_size({"width": 1280, "height": 900})


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
