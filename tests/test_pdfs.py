"""The English edition's PDF, printed while the Chinese one still prints: it
holds every chapter, reached by the intro's link, with bookmarks and a
contents page whose page numbers are right. Its text is read with poppler's
pdftotext where it is installed, else with pypdf (the Chinese PDF:
``test_chinese_pdf.py``). Skipped, with the reason, when Playwright or
Chromium is missing (the build prints the PDFs with the same Chromium)."""

import json
import re
import unicodedata

import printed
import pytest
from browsing import page_texts, skip_without_a_browser
from support import ROOT

skip_without_a_browser()


def test_the_pdf_of_the_book_holds_every_chapter(english_pdf):
    pypdf = pytest.importorskip(
        "pypdf", reason="pypdf is not installed (pip install pypdf)"
    )
    html_root = english_pdf
    intro = (html_root / "book" / "intro.html").read_text()
    # the text's link and the .pdf button: one file
    (link,) = set(re.findall(r'href="([^"]+\.pdf)"', intro))
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
    assert len(set(top)) == len(top), f"bookmarks named twice: {top}"
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
    printed.assert_bookmarks_read_cleanly(reader)
    printed.assert_no_page_nearly_empty(pdf, reader)
    assert 60 <= len(reader.pages) <= 260, (
        f"the PDF has {len(reader.pages)} pages"
    )
    printed.assert_no_link_to_the_build(reader)
    printed.assert_no_text_about_controls(html_root, squeezed)
    printed.assert_every_interactive_figure_names_its_selection(
        html_root, squeezed
    )
    # the contents give each chapter's page, and the chapter starts there;
    # each answer's too, the page its heading is printed on
    chapters = contents_lines(reader, r"(\d+\. .*?)")
    numbers = sorted(int(title.split(".")[0]) for title in chapters)
    assert numbers == list(range(1, 8)), (
        f"the contents list chapters {numbers} with page numbers"
    )
    questions = contents_lines(reader, r"(Q\d+\. \S+ \S+).*?")
    assert len(questions) >= 12, f"the contents list answers {questions}"
    for title, page in {**chapters, **questions}.items():
        start = "".join(title.split())[:20]
        assert start in "".join(texts[page - 1].split()), (
            f"the contents put {title!r} on page {page}"
        )


def contents_lines(reader, title):
    """``{title: page}`` for each line of the contents (the PDF's pages 2 to
    8) that starts with the pattern ``title`` and ends with a page number."""
    listed = {}
    for page in reader.pages[1:8]:
        layout = unicodedata.normalize(
            "NFKC", page.extract_text(extraction_mode="layout")
        )
        for line in layout.splitlines():
            found = re.match(rf"\s*{title}\s{{2,}}(\d+)\s*$", line)
            if found:
                listed[found[1]] = int(found[2])
    return listed


def test_the_english_pdfs_figures_print_at_200_ppi_or_more(english_pdf):
    printed.assert_figures_print_at_200_ppi(english_pdf / "mha-answered.pdf")
