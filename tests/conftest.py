"""The book is built once per test session; the page and browser checks share
the build.

With ``--nbval`` the chapters have already run (the root ``conftest.py``) and
the build reuses those executions from its cache. Without it, the build
starts from an empty ``_build`` and executes every chapter itself.

The build is a process of its own (``tests/build_the_book.py``), started as
soon as every chapter has ended, which writes its result to ``_build``. It
runs beside the tests that do not need it (the book's tests come last), so the
two cores work at once. With two workers (``-n 2``, the README's command) the
worker that ends the last chapter starts it, and a test of either worker that
needs the book waits for the result.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from browsing import browser, opened, site  # noqa: F401 (fixtures)
from support import ROOT

BUILD = ROOT / "_build"
ENDED = BUILD / ".chapters"  # conftest.py: one file per chapter that ended
STARTED = BUILD / ".build-started"  # the one process that builds made it
RESULT = BUILD / "build-result.json"  # written by build_the_book.py
LOG = BUILD / "build.log"
PID = BUILD / "build.pid"
WAIT = 1800  # seconds a test waits for the build at most
if os.environ.get("PYTEST_XDIST_WORKER"):  # two workers on two cores
    torch.set_num_threads(1)


@dataclass
class Build:
    """One run of the README's build command: its exit code, output, time and
    what it wrote."""

    returncode: int
    log: str
    seconds: float
    html: Path
    # per chapter: runtime, method, succeeded, error, traceback
    # (book/_ext/execution_report.py)
    execution: dict


def _chapter_stems(config):
    """The chapters nbval runs in this session (on any worker)."""
    return [Path(path).stem for path in getattr(config, "nbval_chapters", {})]


def _start_build(config):
    """Start the build unless this session has already started it; where
    nbval runs no chapter, the build executes every chapter afresh."""
    BUILD.mkdir(exist_ok=True)
    try:  # one process wins, on whichever worker
        os.close(os.open(STARTED, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    if not _chapter_stems(config):  # nothing of an earlier build to reuse
        for path in BUILD.iterdir():
            if path != STARTED:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    # beside the tests, and left to finish if this worker ends first
    subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "build_the_book.py")],
        cwd=ROOT,
        start_new_session=True,
    )
    # the build takes one core, the tests the other: two threads here would
    # spin waiting for a core the build holds
    torch.set_num_threads(1)


def _main_process(config):
    return not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Nothing of an earlier session's build process (with nbval,
    ``conftest.py`` empties ``_build`` for the chapters' new runs)."""
    if _main_process(session.config):
        for path in (STARTED, RESULT, PID, LOG):
            path.unlink(missing_ok=True)


def pytest_sessionfinish(session):
    """A build still running at the end (the session was stopped) is
    stopped."""
    if _main_process(session.config) and PID.is_file():
        if not RESULT.is_file():
            try:
                os.killpg(int(PID.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


# what a test of the built book waits for, in the order the build writes it:
# the English pages, the Chinese pages, the whole build (the PDFs, the log)
STAGES = ("english_pages", "chinese_pages", "book_build")


def _stage(item):
    """The last stage of the build a test waits for, or None."""
    names = getattr(item, "fixturenames", ())
    waits = [stage for stage in STAGES if stage in names]
    return STAGES.index(waits[-1]) if waits else None


def _needs_the_book(item):
    return _stage(item) is not None


_wanted = []  # whether a test of this session needs the book


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """The tests of the built book last, so that the build runs beside the
    others. Two workers take whole files in turn (``--dist loadfile``): the
    files holding such tests go last."""
    book = [item for item in items if _needs_the_book(item)]
    waiting = {item.path for item in book}
    # the longest test first, so that it runs beside the build
    early = sorted(
        (item for item in items if item.path not in waiting),
        key=lambda item: item.path.name != "test_replication.py",
    )
    late = [item for item in items if item.path in waiting]
    # a file goes when the last stage its tests wait for can be written: the
    # English pages' files first
    stage = {}
    for item in book:
        stage[item.path] = max(stage.get(item.path, 0), _stage(item))
    book.sort(key=lambda item: stage[item.path])
    items[:] = early + [item for item in late if item not in book] + book
    _wanted[:] = [bool(book)]


def pytest_runtest_teardown(item):
    """The build starts once every chapter has ended, here or on the other
    worker (at once where nbval runs no chapter), if a test needs it."""
    if not any(_wanted) or STARTED.is_file():
        return
    chapters = _chapter_stems(item.config)
    if all((ENDED / stem).is_file() for stem in chapters):
        _start_build(item.config)


def _wait_for(ready):
    waited = time.perf_counter()
    while not ready():
        if time.perf_counter() - waited > WAIT:
            pytest.fail(f"the book build did not end in {WAIT} s")
        time.sleep(0.5)


def _pages_written(request, edition):
    """``_build/html`` as soon as one edition's pages are written (book_pdf
    writes ``_pdf/book.html`` from them, before it prints the PDF): their
    tests run beside the rest of the build."""
    _start_build(request.config)
    written = BUILD / "html" / edition / "_pdf" / "book.html"
    _wait_for(lambda: RESULT.is_file() or written.is_file())
    if RESULT.is_file() and json.loads(RESULT.read_text())["returncode"]:
        pytest.fail(
            "the book build failed (see "
            "test_the_book_builds_without_warnings)",
            pytrace=False,
        )
    return BUILD / "html"


@pytest.fixture(scope="session")
def english_pages(request):
    """The English pages, written (the PDFs and the Chinese edition may
    still be coming)."""
    return _pages_written(request, "")


@pytest.fixture(scope="session")
def chinese_pages(request, english_pages):
    """The Chinese pages (``_build/html/zh``) and the English ones, written,
    and each edition's report of how its notebooks got their outputs."""
    html = _pages_written(request, "zh")
    reports = [BUILD / "execution.json", BUILD / "execution-zh_CN.json"]
    _wait_for(lambda: all(report.is_file() for report in reports))
    return html


@pytest.fixture(scope="session")
def book_build(request):
    """The session's one build of the book, successful or not."""
    _start_build(request.config)
    _wait_for(RESULT.is_file)
    result = json.loads(RESULT.read_text())
    report = BUILD / "execution.json"
    return Build(
        returncode=result["returncode"],
        log=LOG.read_text(),
        seconds=result["seconds"],
        html=BUILD / "html",
        execution=json.loads(report.read_text()) if report.is_file() else {},
    )


@pytest.fixture(scope="session")
def built_book(book_build):
    """``_build/html`` of a build that succeeded; the pages' tests need nothing
    less."""
    if book_build.returncode != 0:
        pytest.fail(
            "the book build failed (see "
            "test_the_book_builds_without_warnings)",
            pytrace=False,
        )
    return book_build.html
