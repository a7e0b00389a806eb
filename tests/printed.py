"""Checks of a printed PDF that both editions' tests make
(``test_pdfs.py``, ``test_chinese_pdf.py``)."""

import re
import shutil
import subprocess
import tempfile
import unicodedata
from pathlib import Path


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
    assert shutil.which("pdftoppm"), (
        "pdftoppm is needed to check the PDF's pages (Debian and Ubuntu: "
        "apt-get install poppler-utils)"
    )
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

    count = len(reader.pages)
    with tempfile.TemporaryDirectory() as folder:
        # two processes, each drawing half of the pages
        halves = [(1, count // 2), (count // 2 + 1, count)]
        drawing = [
            subprocess.Popen(
                ["pdftoppm", "-r", "12", "-gray", "-f", str(first)]
                + ["-l", str(last), str(pdf), f"{folder}/p"]
            )
            for first, last in halves
        ]
        assert all(process.wait(timeout=300) == 0 for process in drawing)
        # p-7.pgm or p-007.pgm: the page number, padded as pdftoppm likes
        drawn = sorted(
            Path(folder).glob("p-*"), key=lambda p: int(p.stem.split("-")[1])
        )
        assert len(drawn) == count, f"pdftoppm drew {len(drawn)} pages"
        sparse = []
        for index, path in enumerate(drawn):
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
    from bs4 import BeautifulSoup, SoupStrainer

    # only the on-screen containers are built into a tree: a third of the
    # time of the whole pages
    on_screen = SoupStrainer(
        "div", attrs={"class": lambda c: c and "on-screen" in c.split()}
    )
    told = [
        "".join(unicodedata.normalize("NFKC", div.get_text()).split())[:30]
        for path in sorted(html_root.glob("notebooks/*.html"))
        for div in BeautifulSoup(
            path.read_text(), "html.parser", parse_only=on_screen
        ).select("div.on-screen")
    ]
    assert len(told) >= 4, f"the pages' text about controls: {told}"
    printed = [words for words in told if words in text]
    assert not printed, f"printed, about controls paper lacks: {printed}"


def assert_every_interactive_figure_names_its_selection(html_root, text):
    """Paper has no controls: each interactive figure of the chapters prints
    a line naming the selection it shows (``book/_static/interactive.js``),
    "Shown: task = offset copy (the web page can switch it)". ``text``: the
    PDF's text, without white space."""
    figures = sum(
        path.read_text().count("mhaEmbed(")
        for path in html_root.glob("notebooks/*.html")
    )
    # the text is NFKC-normalized: a full-width colon reads ":"
    shown = "本图所示:" if "/zh" in html_root.as_posix() else "Shown:"
    lines = re.findall(re.escape(shown) + r"[^=]+=", text)
    assert figures >= 5 and len(lines) == figures, (
        f"{figures} interactive figures, {len(lines)} printed lines "
        f"naming what they show: {lines}"
    )


def assert_figures_print_at_200_ppi(pdf):
    """Each figure of a chapter is drawn at 2.2 times its pixels
    (mha_lib.course.plotting.sharp_png), so printed at its size it holds 211
    pixels an inch, more where the page shrinks it. Read with poppler's
    pdfimages, which reports each placed image's resolution."""
    assert shutil.which("pdfimages"), (
        "poppler's pdfimages is needed to read the figures' resolution "
        "(Debian and Ubuntu: apt-get install poppler-utils)"
    )
    listing = subprocess.run(
        ["pdfimages", "-list", str(pdf)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()[2:]
    images = [line.split() for line in listing if line.split()[2] == "image"]
    coarse = [
        (row[0], row[12])
        for row in images
        if min(int(row[12]), int(row[13])) < 200
    ]
    assert images and not coarse, (
        f"{pdf.name}: figures below 200 ppi (page, ppi): {coarse}"
    )
