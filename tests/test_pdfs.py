"""The two PDFs the build prints last, one per edition: each holds every
chapter (the Chinese one in Chinese), reached by the intro's link, with
bookmarks and a contents page whose page numbers are right. Their text is read
with poppler's pdftotext where it is installed, else with pypdf. Skipped, with
the reason, when Playwright or Chromium is missing (the build prints the PDFs
with the same Chromium)."""

import json
import re
import shutil
import subprocess
import tempfile
import unicodedata
from pathlib import Path

import pytest
from browsing import CHINESE, page_texts, skip_without_a_browser
from support import ROOT

skip_without_a_browser()


def test_the_pdf_of_the_book_holds_every_chapter(built_book):
    pypdf = pytest.importorskip(
        "pypdf", reason="pypdf is not installed (pip install pypdf)"
    )
    html_root = built_book
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
    assert_bookmarks_read_cleanly(reader)
    assert_no_page_nearly_empty(pdf, reader)
    assert 60 <= len(reader.pages) <= 260, (
        f"the PDF has {len(reader.pages)} pages"
    )
    assert_no_link_to_the_build(reader)
    assert_no_text_about_controls(html_root, squeezed)
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


def test_the_chinese_pdf_holds_every_chapter_in_chinese(built_book):
    import pypdf

    html_root = built_book
    intro = (html_root / CHINESE / "book" / "intro.html").read_text()
    # the text's link and the .pdf button: one file
    (link,) = set(re.findall(r'href="([^"]+\.pdf)"', intro))
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
    assert_bookmarks_read_cleanly(reader)
    assert_no_page_nearly_empty(pdf, reader)
    assert_no_link_to_the_build(reader)
    assert_no_text_about_controls(html_root / CHINESE, text)


def assert_bookmarks_read_cleanly(reader):
    """Every bookmark, at every depth, is its heading's plain text: no piece
    written twice, no space inside a bracket."""
    stack, titles = list(reader.outline), []
    while stack:
        item = stack.pop()
        stack.extend(item) if isinstance(item, list) else titles.append(
            item.title
        )
    repeated = [t for t in titles if re.search(r"(\S.{4,}\S)\s*\1", t)]
    assert not repeated, f"bookmarks with a piece written twice: {repeated}"
    spaced = [t for t in titles if re.search(r"[(（] | [)）]", t)]
    assert not spaced, f"bookmarks with a space inside brackets: {spaced}"


def assert_no_page_nearly_empty(pdf, reader):
    """Every page is at least a quarter full (as far down as its ink goes),
    except the last of a chapter, of the title, of the contents, of the
    book, and the last page before a chapter starts (the Chinese edition's
    "how to run" ends with a few lines there). Checked where poppler's
    pdftoppm draws the pages."""
    if not shutil.which("pdftoppm"):
        return
    import numpy as np
    from PIL import Image

    # the page each top-level bookmark starts on, and whether it is a
    # chapter ("1. ..."), the title or the contents: a page may end those
    # short
    starts = {0: True}  # the title page
    for item in reader.outline:
        if isinstance(item, list):
            continue
        page = reader.get_destination_page_number(item)
        if page:
            chapter = re.match(r"\d+\. ", item.title)
            starts[page] = bool(chapter) or item.title in ("Contents", "目录")
    starts.setdefault(len(reader.pages), True)

    def may_end_short(index):  # the last page of a chapter, say
        if index + 1 not in starts:
            return False
        return (
            starts[index + 1] or starts[max(s for s in starts if s <= index)]
        )

    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            ["pdftoppm", "-r", "12", "-gray", str(pdf), f"{folder}/p"],
            check=True,
            timeout=300,
        )
        sparse = []
        for index, path in enumerate(sorted(Path(folder).glob("p-*"))):
            ink = np.asarray(Image.open(path)) < 160  # (rows, columns)
            body = ink[: int(0.9 * len(ink))]  # above the page number
            rows = np.flatnonzero(body.any(axis=1))
            depth = (rows[-1] + 1) / len(body) if len(rows) else 0.0
            if depth < 0.25 and not may_end_short(index):
                sparse.append((index + 1, round(depth, 2)))
    assert not sparse, f"nearly empty pages (page, share used): {sparse}"


def assert_no_link_to_the_build(reader):
    """No link leads to the address the build served the book at while it
    printed: on a reader's machine there is nothing there."""
    local = [
        (number, action["/URI"])
        for number, page in enumerate(reader.pages, 1)
        for note in page.get("/Annots") or []
        for action in [note.get_object().get("/A")]
        if action is not None and "/URI" in action.get_object()
        if re.match(r"https?://(127\.|localhost)", action.get_object()["/URI"])
    ]
    assert not local, f"links to the build's own address (page, URI): {local}"


def assert_no_text_about_controls(html_root, text):
    """What tells how to use a figure's controls (a page's ``on-screen``
    container) is left out of print: paper has no controls. ``text``: the
    PDF's text, without white space."""
    from bs4 import BeautifulSoup

    told = [
        "".join(unicodedata.normalize("NFKC", div.get_text()).split())[:30]
        for path in sorted(html_root.glob("notebooks/*.html"))
        for div in BeautifulSoup(path.read_text(), "html.parser").select(
            "div.on-screen"
        )
    ]
    assert len(told) >= 4, f"the pages' text about controls: {told}"
    printed = [words for words in told if words in text]
    assert not printed, f"printed, about controls paper lacks: {printed}"


def test_the_pdfs_figures_print_at_200_ppi_or_more(built_book):
    """Each figure of a chapter is drawn at 2.2 times its pixels
    (mha_lib.course.plotting.sharp_png), so printed at its size it holds 211
    pixels an inch, more where the page shrinks it. Read with poppler's
    pdfimages,
    which reports each placed image's resolution."""
    if shutil.which("pdfimages") is None:
        pytest.skip(
            "poppler's pdfimages is not installed (Debian: poppler-utils)"
        )
    for pdf in (
        built_book / "mha-answered.pdf",
        built_book / "zh" / "mha-answered.pdf",
    ):
        listing = subprocess.run(
            ["pdfimages", "-list", str(pdf)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.splitlines()[2:]
        images = [
            line.split() for line in listing if line.split()[2] == "image"
        ]
        coarse = [
            (row[0], row[12])
            for row in images
            if min(int(row[12]), int(row[13])) < 200
        ]
        assert images and not coarse, (
            f"{pdf.name}: figures below 200 ppi (page, ppi): {coarse}"
        )
