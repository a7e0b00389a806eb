"""The book is built once per test session; the notebook, page and browser
checks share it."""

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT

BUILD = ROOT / "_build"
_builds = []  # the build made in this session, if any


@dataclass
class Build:
    """One run of the README's build command: its exit code, output and what it
    wrote."""

    returncode: int
    log: str
    html: Path
    executed: (
        Path  # the notebooks as executed by the build, with their outputs
    )
    # per notebook: runtime, succeeded, error, traceback (execution_report.py)
    execution: dict


def _build_book():
    # From scratch, so that every notebook is executed against the library as
    # it is now.
    shutil.rmtree(BUILD, ignore_errors=True)
    result = subprocess.run(
        [
            "jupyter-book",
            "build",
            "--all",
            "--warningiserror",
            "--keep-going",
            str(ROOT),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    report = BUILD / "execution.json"
    return Build(
        returncode=result.returncode,
        log=result.stdout + result.stderr,
        html=BUILD / "html",
        executed=BUILD / "jupyter_execute",
        execution=json.loads(report.read_text()) if report.is_file() else {},
    )


@pytest.fixture(scope="session")
def book_build():
    """The session's one build of the book (every notebook executed once),
    successful or not."""
    _builds.append(_build_book())
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
    """Print how long each notebook took to execute in this session's build."""
    if not _builds or not _builds[-1].execution:
        return
    terminalreporter.section(
        "notebook execution (one run, inside the book build)"
    )
    for docname, data in sorted(_builds[-1].execution.items()):
        status = "ok" if data["succeeded"] else f"FAILED ({data['error']})"
        terminalreporter.write_line(
            f"{docname:40s} {data['runtime']:6.1f} s  {status}"
        )
