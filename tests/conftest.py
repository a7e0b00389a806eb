"""The book is built once per test session; the page and browser checks share
the build.

With ``--nbval`` the chapters have already run (the root ``conftest.py``) and
the build reuses those executions from its cache. Without it, the build
starts from an empty ``_build`` and executes every chapter itself.
"""

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
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


def _build_book(nbval_ran):
    if not nbval_ran:  # nothing to reuse: execute every chapter afresh
        shutil.rmtree(BUILD, ignore_errors=True)
    started = time.perf_counter()
    result = subprocess.run(
        BUILD_COMMAND, cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    report = BUILD / "execution.json"
    return Build(
        returncode=result.returncode,
        log=result.stdout + result.stderr,
        seconds=time.perf_counter() - started,
        html=BUILD / "html",
        execution=json.loads(report.read_text()) if report.is_file() else {},
    )


@pytest.fixture(scope="session")
def book_build(request):
    """The session's one build of the book, successful or not."""
    nbval_ran = bool(getattr(request.config, "nbval_chapters", None))
    _builds.append(_build_book(nbval_ran))
    return _builds[-1]


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
