"""nbval runs every chapter once; the book build of the same run reuses those
runs.

With ``--nbval`` (the README's test command) pytest collects each notebook's
code cells as tests and runs them in a fresh kernel, chapters first. When all
cells of a chapter have passed, the chapter with the outputs nbval collected is
stored in the book's execution cache (``_build/.jupyter_cache``, the ``cache``
mode of ``_config.yml``), where the build that the book's tests start
(``tests/conftest.py``) finds it and executes nothing again.

With ``-n 2`` (pytest-xdist, the README's command) two worker processes share
the work: each chapter runs whole on one worker (``--dist loadfile``), the two
workers take the chapters in turn, and every chapter that ends, passed or not,
leaves a mark in ``_build/.chapters`` that the build waits for. The report's
table of chapter times reaches the main process with each chapter's last
cell.
"""

import functools
import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
ENDED = BUILD / ".chapters"  # one file per chapter that has ended
EXECUTOR = "nbval"  # recorded with each cached chapter: who executed it

# chapter path -> its cell items, and the outputs and seconds of those run
_chapters = {}
# chapter path -> seconds, for the chapters stored in the cache
cached_by_nbval = {}
# chapter path -> (seconds, failed cells, cached), as the report shows them
_ended = {}


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        # two workers on two cores: one thread each, in the chapters' kernels
        # (which inherit this) as in the tests
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    import nbval.kernel

    nbval.kernel.start_new_kernel = _tried_again(nbval.kernel.start_new_kernel)


KERNEL_TRIES = 3


def _tried_again(start_new_kernel):
    """nbval's kernel start, tried again where the kernel dies before it
    answers (two workers starting kernels at once can be handed the same free
    port), so that a chapter fails for its cells, not for its start."""
    if getattr(start_new_kernel, "tries", None):
        return start_new_kernel

    @functools.wraps(start_new_kernel)
    def start(*args, **kwargs):
        for tried in range(1, KERNEL_TRIES + 1):
            try:
                return start_new_kernel(*args, **kwargs)
            except RuntimeError:
                if tried == KERNEL_TRIES:
                    raise

    start.tries = KERNEL_TRIES
    return start


# the chapters that take longest on one core, longest first
LONGEST = [
    "06_pretrained_heads",
    "04_heads_differ",
    "07_real_text",
    "05_chunked_standard_wide",
    "03_same_weights_new_function",
]


def _rank(stem):
    return LONGEST.index(stem) if stem in LONGEST else len(LONGEST)


def _is_cell(item):
    return type(item).__name__ == "IPyNbCell"


def pytest_collection_modifyitems(session, config, items):
    """Chapters first (the book's tests need their executions), each in cell
    order."""
    cells = [item for item in items if _is_cell(item)]
    if not cells:
        return
    # two workers end together when the longest chapters go first (a chapter
    # not named here goes after them)
    cells.sort(key=lambda item: _rank(Path(item.fspath).stem))
    items[:] = cells + [item for item in items if not _is_cell(item)]
    # this run's executions, nothing older (with two workers both remove it
    # while collecting, before either runs a test)
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
            _end(item, chapter)


def _end(item, chapter):
    """Cache the chapter, mark it ended, and send its line of the report
    along with its last cell."""
    path = Path(item.fspath)
    _store(path, chapter)
    done = chapter["done"].values()
    line = (
        sum(d[2] for d in done),
        sum(not d[0] for d in done),
        path in cached_by_nbval,
    )
    item.user_properties.append(("chapter", [str(path), *line]))
    ENDED.mkdir(parents=True, exist_ok=True)
    (ENDED / path.stem).write_text(json.dumps(line))


def pytest_runtest_logreport(report):
    """The report's line of a chapter that ended, here or on a worker."""
    for name, value in report.user_properties:
        if name == "chapter" and report.when == "call":
            path, *line = value
            _ended[Path(path)] = line


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
    start), then the book build."""
    if _ended:
        terminalreporter.section("chapters run by nbval")
    for path, (seconds, failed, cached) in sorted(_ended.items()):
        status = "cached for the book" if cached else "not cached"
        if failed:
            status = f"{failed} cells failed, {status}"
        terminalreporter.write_line(
            f"{path.stem:40s} {seconds:6.1f} s  {status}"
        )
    _build_summary(terminalreporter)


def _build_summary(terminalreporter):
    """The book build's time, and how it got each chapter's outputs (from the
    files the build wrote, ``tests/build_the_book.py``; here, where the main
    process of two workers sees them too)."""
    result, report = BUILD / "build-result.json", BUILD / "execution.json"
    if not (result.is_file() and report.is_file()):
        return
    seconds = json.loads(result.read_text())["seconds"]
    terminalreporter.section(f"book build: {seconds:.0f} s")
    for docname, data in sorted(json.loads(report.read_text()).items()):
        if data["reused"]:
            how = "outputs reused from the cache"
        else:
            how = f"executed in {data['runtime']:.1f} s"
        if not data["succeeded"]:
            how += f", FAILED ({data['error']})"
        terminalreporter.write_line(f"{docname:40s} {how}")
