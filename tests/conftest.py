"""The book is built once per test session; the page and browser checks share
the build.

With ``--nbval`` the chapters have already run (the root ``conftest.py``) and
the build reuses those executions from its cache. Without it, the build
starts from an empty ``_build`` and executes every chapter itself.

The build is a process of its own: it starts when the first test after the
chapters does, and runs beside the tests that do not need it (the book's tests
are moved to the end), so the two cores work at once.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from support import ROOT

BUILD = ROOT / "_build"
# the README's build command, started by the interpreter running the tests
BUILD_COMMAND = [
    sys.executable,
    "-c",
    "from jupyter_book.cli.main import main; main()",
    "build",
    "--all",
    "--warningiserror",
    "--keep-going",
    str(ROOT),
]
_builds = []  # the build made in this session, if any
_running = []  # the build started in the background, if any
_asked = []  # the first test in tests/, when it asked whether to build


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


class _BackgroundBuild:
    """The build command running beside the tests; ``result()`` waits for
    it."""

    def __init__(self, nbval_ran):
        if not nbval_ran:  # nothing to reuse: execute every chapter afresh
            shutil.rmtree(BUILD, ignore_errors=True)
        # a file, not a pipe: nobody reads the output until the build ends
        self.log = tempfile.TemporaryFile(mode="w+")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            BUILD_COMMAND,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.seconds = None
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        self.waiter.start()

    def _wait(self):
        try:
            self.process.wait(timeout=1800)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.seconds = time.perf_counter() - self.started

    def result(self):
        self.waiter.join()
        self.log.seek(0)
        report = BUILD / "execution.json"
        return Build(
            returncode=self.process.returncode,
            log=self.log.read(),
            seconds=self.seconds,
            html=BUILD / "html",
            execution=(
                json.loads(report.read_text()) if report.is_file() else {}
            ),
        )

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.waiter.join()
        self.log.close()


def _needs_the_book(item):
    return "book_build" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session, config, items):
    """The tests of the built book last, so that the build runs beside the
    others."""
    items[:] = [item for item in items if not _needs_the_book(item)] + [
        item for item in items if _needs_the_book(item)
    ]


def _nbval_ran(config):
    return bool(getattr(config, "nbval_chapters", None))


def pytest_runtest_setup(item):
    """The build starts with the first test in tests/: the chapters' cells,
    which run before, have filled the cache it reuses."""
    if _asked:
        return
    _asked.append(item)
    # the items left to run, after -k and the like have deselected some
    if any(map(_needs_the_book, item.session.items)):
        _running.append(_BackgroundBuild(_nbval_ran(item.config)))
        # the build takes one core, the tests the other: two threads here
        # would spin waiting for a core the build holds
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def book_build(request):
    """The session's one build of the book, successful or not."""
    if not _running:
        _running.append(_BackgroundBuild(_nbval_ran(request.config)))
    _builds.append(_running[0].result())
    return _builds[-1]


def pytest_sessionfinish(session):
    """A build still running at the end (the session was stopped) is
    stopped."""
    for build in _running:
        build.stop()


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


def pytest_terminal_summary(terminalreporter):
    """The build's time, and how it got each chapter's outputs."""
    if not _builds:
        return
    build = _builds[-1]
    terminalreporter.section(f"book build: {build.seconds:.0f} s")
    for docname, data in sorted(build.execution.items()):
        if data["reused"]:
            how = "outputs reused from the cache"
        else:
            how = f"executed in {data['runtime']:.1f} s"
        if not data["succeeded"]:
            how += f", FAILED ({data['error']})"
        terminalreporter.write_line(f"{docname:40s} {how}")
