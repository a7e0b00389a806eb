"""How the chapters run: ahead of the build, two at a time, into the cache
(``book/_ext/chapters_ahead.py``); and a cell that stalls fails the build and
the test command, naming its chapter and cell, instead of waiting."""

import subprocess
import sys
from types import SimpleNamespace

import book_session
import nbformat
import pytest
from support import extension

# a cell that waits for ever, in a function whose name its stack shows
STALLING = """import time

def waiting_forever():
    time.sleep(600)

waiting_forever()"""


def notebook(path, *sources):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_markdown_cell("# A chapter")] + [
        nbformat.v4.new_code_cell(source) for source in sources
    ]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(book, path)
    return path


@pytest.fixture(scope="module")
def ahead():
    pytest.importorskip("nbclient")
    pytest.importorskip("jupyter_cache")
    return extension("chapters_ahead")


def test_a_chapter_run_ahead_is_found_in_the_cache(ahead, tmp_path):
    from jupyter_cache import get_cache

    path = notebook(tmp_path / "chapter.ipynb", "print(6 * 7)")
    seconds = ahead.run_chapter(path, str(tmp_path / "cache"), stall=60)
    assert seconds > 0
    cached = get_cache(str(tmp_path / "cache")).match_cache_notebook(
        nbformat.read(path, as_version=4)
    )
    bundle = get_cache(str(tmp_path / "cache")).get_cache_bundle(cached.pk)
    assert bundle.record.data["executor"] == ahead.EXECUTOR
    assert bundle.nb.cells[0].outputs[0]["text"] == "42\n"  # code cells


def test_a_chapter_with_a_failing_cell_is_left_to_the_build(ahead, tmp_path):
    path = notebook(tmp_path / "chapter.ipynb", "1 / 0")
    assert ahead.run_chapter(path, str(tmp_path / "cache"), stall=60) is None


def test_a_stalled_cell_stops_the_build_with_its_chapter_cell_and_stacks(
    ahead, tmp_path
):
    """The planted cell sends nothing for the (short) limit: the build's
    route, a process per chapter, gives the chapter, the cell and the
    kernel's Python stack at the moment it stalled."""
    path = notebook(tmp_path / "stalls.ipynb", "print('set up')", STALLING)
    seconds, stalled = ahead._in_a_process(path, str(tmp_path / "cache"), 2)
    assert seconds is None and stalled, "the stall was not reported"
    assert "stalls.ipynb, cell 2 ('import time' ...)" in stalled, stalled
    assert "sent nothing for 2 s" in stalled, stalled
    assert "in waiting_forever" in stalled, stalled


def test_a_stalled_cell_fails_the_test_command_with_its_chapter_and_cell(
    tmp_path,
):
    """nbval's limit per cell is set for the test command (5 minutes); the
    same mechanism, under a short limit, fails the planted chapter."""
    assert book_session.NBVAL_OPTIONS["nbval_cell_timeout"] == 300
    notebook(tmp_path / "stalls.ipynb", "print('set up')", STALLING)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "stalls.ipynb"]
        + [
            "--nbval-cell-timeout=2",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout[-3000:]
    assert "FAILED stalls.ipynb::Cell 1" in run.stdout, run.stdout[-3000:]
    assert "Timeout of 2 seconds exceeded" in run.stdout, run.stdout[-3000:]


def test_without_chromium_the_build_stops_before_any_chapter_runs(
    ahead, monkeypatch
):
    """The PDF needs Chromium: the build says so at once, not after every
    chapter has run."""
    from sphinx.errors import ExtensionError

    book_pdf = extension("book_pdf")
    monkeypatch.setattr(book_pdf, "find_chromium", lambda: None)
    monkeypatch.setitem(sys.modules, "book_pdf", book_pdf)
    monkeypatch.setattr(ahead, "missing", lambda env: pytest.fail("ran"))
    app = SimpleNamespace(
        builder=SimpleNamespace(name="html"),
        config=SimpleNamespace(language="en"),
    )
    with pytest.raises(ExtensionError, match="Chromium"):
        ahead._run_ahead(app)
