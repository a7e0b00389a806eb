"""The book builds with warnings as errors, and every chapter page carries its
figures."""

import base64
import json
import re
import subprocess
import sys

import book_session
import pytest
from support import NOTEBOOKS

CHAPTERS = [path.stem for path in NOTEBOOKS]


def test_the_book_builds_without_warnings(book_build):
    problems = [
        line
        for line in book_build.log.splitlines()
        if "WARNING" in line or "ERROR" in line
    ]
    details = "\n".join(problems[-30:]) or book_build.log[-4000:]
    assert book_build.returncode == 0, f"the book build failed:\n{details}"


def test_the_test_command_leaves_the_readme_build_as_it_was(book_build):
    """The tests build the book in a folder of their own
    (``_build-tests``): the README's ``_build/html``, where a reader built
    one, holds the same files, sizes and times as when the session began
    (and where there was none, there is none)."""
    assert book_build.html != book_session.README_BUILD
    before = json.loads(book_session.README_BUILD_BEFORE.read_text())
    after = book_session.readme_build()
    changed = sorted(
        name
        for name in {*(before or {}), *(after or {})}
        if (before or {}).get(name) != (after or {}).get(name)
    )
    assert after == before, f"the tests changed the README's build: {changed}"


def test_intro_page_is_built(english_pages):
    html = (english_pages / "book" / "intro.html").read_text()
    assert "The questions" in html and "Q1" in html


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_page_shows_its_figures_and_no_errors(english_pages, chapter):
    """Every figure the executed chapter drew is an image on its page."""
    html = (english_pages / "notebooks" / f"{chapter}.html").read_text()
    download = english_pages / "_sources" / "notebooks" / f"{chapter}.ipynb"
    cells = json.loads(download.read_text())["cells"]
    removed = {"remove-cell", "remove-output"}  # not shown on the page
    outputs = [
        o
        for c in cells
        if c["cell_type"] == "code"
        and not removed & set(c["metadata"].get("tags", []))
        for o in c["outputs"]
    ]
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    assert figures > 0, f"{chapter} drew no figure"
    # the chapter's figures, not the theme's icons (the Colab logo): each
    # as drawn and narrow (book/_ext/figure_editions.py)
    tags = re.findall(r'<img [^>]*src="\.\./_images/[^"]+\.png"[^>]*>', html)
    narrow = [tag for tag in tags if "mha-narrow" in tag]
    images = [re.search(r'src="([^"]+)"', tag).group(1) for tag in tags]
    assert len(images) == 2 * figures and len(narrow) == figures, (
        f"{chapter}: {figures} figures drawn, {len(images)} images on the "
        f"page, {len(narrow)} of them narrow"
    )
    for source in images:
        assert (english_pages / "notebooks" / source).resolve().is_file(), (
            f"{chapter}: missing image {source}"
        )
    assert "Traceback" not in html, (
        f"{chapter}: an error traceback is shown on the page"
    )
    assert "Short answer." in html


def test_the_download_button_offers_each_chapter_executed(english_pages):
    """book/_ext/executed_downloads.py: the notebook behind each page's
    download button has outputs."""
    for chapter in CHAPTERS:
        html = (english_pages / "notebooks" / f"{chapter}.html").read_text()
        assert f'href="../_sources/notebooks/{chapter}.ipynb"' in html, (
            f"{chapter}: no download of the notebook"
        )
        download = json.loads(
            (
                english_pages / "_sources" / "notebooks" / f"{chapter}.ipynb"
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


def test_the_download_carries_an_installable_mha_lib(english_pages, tmp_path):
    """The wheel packed into each download installs, package data and all."""
    sources = english_pages / "_sources" / "notebooks"
    download = sources / f"{CHAPTERS[0]}.ipynb"
    cells = json.loads(download.read_text())["cells"]
    (install,) = [c for c in cells if c.get("id") == "install-mha-lib"]
    source = "".join(install["source"])
    name = re.search(r'WHEEL_NAME = "([^"]+)"', source)[1]
    packed = re.search(r'WHEEL = "([^"]+)"', source)[1]
    wheel = tmp_path / name
    wheel.write_bytes(base64.b64decode(packed))
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps"]
    subprocess.run([*pip, "--target", str(target), str(wheel)], check=True)
    check = (
        "import sys; sys.path.insert(0, sys.argv[1]); import mha_lib; "
        "from mha_lib.course import results; print(mha_lib.__file__); "
        "print(sorted(p.name for p in results.FOLDER.iterdir())); "
        "from mha_lib.course.relations import load_treebank; "
        "print(len(load_treebank()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", check, str(target)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, stored, sentences = result.stdout.splitlines()
    assert where.startswith(str(target)), f"imported from {where}"
    assert "ch5_experiment.json" in stored, f"stored results missing: {stored}"
    assert sentences == "1000", f"the treebank in the wheel: {sentences}"


@pytest.mark.parametrize("edition", ["", "zh"])
def test_every_download_is_a_plain_notebook_in_its_editions_language(
    built_book, edition
):
    """A downloaded chapter shows numbers, not MyST: no glue, term, cite or
    ref role and no directive fence is left in its Markdown; it opens with
    how to run it; the Chinese edition's is in Chinese; no notebook names an
    address the course does not control."""
    root = built_book / edition  # once the build, downloads and all, is done
    for chapter in CHAPTERS:
        download = root / "_sources" / "notebooks" / f"{chapter}.ipynb"
        text = download.read_text()
        cells = json.loads(text)["cells"]
        markdown = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        )
        left = re.findall(r"\{(?:glue|term|cite|ref|doc)[\w:]*\}`", markdown)
        left += re.findall(r"^(?:`{3,}|:{3,})\{", markdown, flags=re.M)
        assert not left, f"{edition or 'en'} {chapter}: MyST left: {left}"
        assert cells[0]["id"] == "how-to-run" and "Colab" in "".join(
            cells[0]["source"]
        )
        assert "github.com/mha-answered" not in text
        chinese = len(re.findall(r"[\u4e00-\u9fff]", markdown))
        if edition:
            assert chinese > len(markdown) / 10, f"zh {chapter}: not Chinese"
        else:
            assert chinese == 0, f"{chapter}: Chinese in the English download"


def test_both_editions_carry_one_wheel_and_chapter_7_alone_its_text(
    built_book,
):
    """The wheel is built with fixed file times, so every download of both
    editions carries the same bytes (and opening the other edition's
    chapter does not replace mha_lib); only Chapter 7's carries its text."""
    wheels, texts = set(), {}
    for edition in ("", "zh"):
        sources = built_book / edition / "_sources" / "notebooks"
        for chapter in CHAPTERS:
            cells = json.loads((sources / f"{chapter}.ipynb").read_text())
            (install,) = [
                "".join(c["source"])
                for c in cells["cells"]
                if c.get("id") == "install-mha-lib"
            ]
            wheels.add(re.search(r'^WHEEL = "([^"]+)"', install, re.M)[1])
            texts[chapter] = "TEXT = None" not in install
    assert len(wheels) == 1, f"{len(wheels)} different wheels"
    assert [c for c, carried in texts.items() if carried] == [
        c for c in CHAPTERS if c.startswith("07")
    ]


def test_no_page_loads_a_script_or_a_style_from_another_host(built_book):
    """Read in the HTML of every page of both editions: no script or style
    sheet comes from another host (a widget's state would bring require.js
    and the widgets' manager from CDNs; the browser test opens the pages
    too, this reads every one)."""
    remote = re.compile(
        r"<(?:script[^>]*\ssrc|link[^>]*\shref)=\"(?:https?:)?//[^\"]+\"",
        flags=re.I,
    )
    found = {}
    for page in built_book.rglob("*.html"):
        hits = remote.findall(page.read_text(errors="replace"))
        if hits:
            found[str(page.relative_to(built_book))] = hits[:2]
    assert not found, f"pages that load from another host: {found}"
