"""The book builds with warnings as errors, and every chapter page carries its
figures."""

import json
import re

import pytest
from support import NOTEBOOKS, ROOT

CHAPTERS = [path.stem for path in NOTEBOOKS]


def test_the_book_builds_without_warnings(book_build):
    problems = [
        line
        for line in book_build.log.splitlines()
        if "WARNING" in line or "ERROR" in line
    ]
    details = "\n".join(problems[-30:]) or book_build.log[-4000:]
    assert book_build.returncode == 0, f"the book build failed:\n{details}"


def test_intro_page_is_built(built_book):
    html = (built_book / "book" / "intro.html").read_text()
    assert "The questions" in html and "Q1" in html


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_page_shows_its_figures_and_no_errors(built_book, chapter):
    html = (built_book / "notebooks" / f"{chapter}.html").read_text()
    notebook = json.loads(
        (ROOT / "notebooks" / f"{chapter}.ipynb").read_text()
    )
    figures = sum(
        "plt.show()" in "".join(cell["source"]) for cell in notebook["cells"]
    )
    images = re.findall(r'<img [^>]*src="([^"]+\.png)"', html)
    assert len(images) >= figures, (
        f"{chapter}: {figures} figures in the notebook, {len(images)} on the "
        "page"
    )
    for source in images:
        assert (built_book / "notebooks" / source).resolve().is_file(), (
            f"{chapter}: missing image {source}"
        )
    assert "Traceback" not in html, (
        f"{chapter}: an error traceback is shown on the page"
    )
    assert "Short answer." in html


def test_the_download_button_offers_each_chapter_executed(built_book):
    """book/_ext/executed_downloads.py: the notebook behind each page's
    download button has outputs."""
    for chapter in CHAPTERS:
        html = (built_book / "notebooks" / f"{chapter}.html").read_text()
        assert f'href="../_sources/notebooks/{chapter}.ipynb"' in html, (
            f"{chapter}: no download of the notebook"
        )
        download = json.loads(
            (
                built_book / "_sources" / "notebooks" / f"{chapter}.ipynb"
            ).read_text()
        )
        outputs = sum(
            len(cell.get("outputs", []))
            for cell in download["cells"]
            if cell["cell_type"] == "code"
        )
        assert outputs > 0, (
            f"{chapter}: the download is the notebook without outputs"
        )
