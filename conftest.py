"""nbval runs every chapter once; the book build of the same run reuses those
runs.

With ``--nbval`` (the README's test command) pytest collects each notebook's
code cells as tests and runs them in a fresh kernel, chapters first. When all
cells of a chapter have passed, the chapter with the outputs nbval collected is
stored in the book's execution cache (``_build/.jupyter_cache``, the ``cache``
mode of ``_config.yml``), where the build that the book's tests start
(``tests/conftest.py``) finds it and executes nothing again.
"""

import shutil
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
EXECUTOR = "nbval"  # recorded with each cached chapter: who executed it

# chapter path -> its cell items, and the outputs and seconds of those run
_chapters = {}
# chapter path -> seconds, for the chapters stored in the cache
cached_by_nbval = {}


def _is_cell(item):
    return type(item).__name__ == "IPyNbCell"


def pytest_collection_modifyitems(session, config, items):
    """Chapters first (the book's tests need their executions), each in cell
    order."""
    cells = [item for item in items if _is_cell(item)]
    if not cells:
        return
    items[:] = cells + [item for item in items if not _is_cell(item)]
    # this run's executions, nothing older
    shutil.rmtree(BUILD, ignore_errors=True)
    config.nbval_chapters = _chapters  # read by tests/conftest.py
    for item in cells:
        chapter = _chapters.setdefault(
            Path(item.fspath), {"items": [], "done": {}}
        )
        chapter["items"].append(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    started = time.perf_counter()
    outcome = yield
    if _is_cell(item):
        chapter = _chapters[Path(item.fspath)]
        passed = outcome.excinfo is None
        seconds = time.perf_counter() - started
        chapter["done"][item.cell_num] = (passed, item.test_outputs, seconds)
        if item is chapter["items"][-1]:
            _store(Path(item.fspath), chapter)


def _store(path, chapter):
    """Cache the executed chapter if every cell passed (else the build runs it
    again)."""
    done = chapter["done"]
    if len(done) != len(chapter["items"]) or not all(
        d[0] for d in done.values()
    ):
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    notebook = nbformat.read(path, as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for count, (cell, item) in enumerate(
        zip(cells, chapter["items"]), start=1
    ):
        _, outputs, _ = done[item.cell_num]
        cell.outputs = [_finished(output, count) for output in outputs]
        cell.execution_count = count
    seconds = sum(d[2] for d in done.values())
    bundle = CacheBundleIn(
        notebook,
        str(path),
        data={"execution_seconds": seconds, "executor": EXECUTOR},
    )
    get_cache(str(CACHE)).cache_notebook_bundle(
        bundle, check_validity=False, overwrite=True
    )
    cached_by_nbval[path] = seconds


def _finished(output, count):
    """An nbval output as nbformat stores it."""
    output = nbformat.from_dict(dict(output))
    if output.output_type == "execute_result":
        output.execution_count = count
    return output


def pytest_terminal_summary(terminalreporter):
    """How long nbval took for each chapter (cells only, without the kernel's
    start)."""
    if not _chapters:
        return
    terminalreporter.section("chapters run by nbval")
    for path, chapter in sorted(_chapters.items()):
        done = chapter["done"].values()
        seconds = sum(d[2] for d in done)
        failed = sum(not d[0] for d in done)
        status = (
            "cached for the book" if path in cached_by_nbval else "not cached"
        )
        if failed:
            status = f"{failed} cells failed, {status}"
        terminalreporter.write_line(
            f"{path.stem:40s} {seconds:6.1f} s  {status}"
        )
