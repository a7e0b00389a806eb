"""What the newest releases inside the declared ranges break:

    python3 scripts/try_newest.py                      # the unit tests
    python3 scripts/try_newest.py tests/test_style.py  # any pytest arguments

Only a report, never part of the test command: the set-up installs
``requirements.lock``, and this shows what the next ``python3 scripts/lock.py``
would bring. Copies the repository's files into a temporary folder, makes a
new virtual environment, installs ``requirements.txt`` there from that copy
(its ``-e .`` is the copy, so nothing is written into the checkout) with
PyTorch held at the lock's version (any other is a download of its own), so
pip takes the newest release inside every other range, prints each package
whose version differs from the lock, then runs pytest with that environment
in the copy: by default the unit tests only, every test that waits for the
built book deselected (the book is the test command's job) and no chapter
run. Prints each test that failed with its reason; exits with pytest's status.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from lock import freeze  # scripts/lock.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
# a pytest plugin, written into the copy's root: it deselects every test that
# waits for a stage of the book's build (tests/book_session.py's STAGES),
# before book_session sees them, so no build starts
UNIT_ONLY = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    from book_session import STAGES

    book = [i for i in items if set(STAGES) & set(i.fixturenames)]
    if book:
        config.hook.pytest_deselected(items=book)
        items[:] = [i for i in items if i not in book]
"""
UNIT_TESTS = ["tests", "-p", "unit_only"]


def copy_of_repository(folder):
    """The repository's files (tracked, and untracked ones git does not
    ignore) copied into ``folder``; returns it."""
    listed = subprocess.run(
        [
            "git",
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source, target = ROOT / name, folder / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


def pins(lines):
    """``{lowercase name: version}`` of ``name==version`` lines, without a
    local label (``2.13.0+cpu`` is the lock's ``2.13.0``)."""
    found = (
        re.fullmatch(r"([\w.-]+)==([^+\s]+)(\+\S+)?", s.strip()) for s in lines
    )
    return {m[1].lower().replace("_", "-"): m[2] for m in found if m}


def newest_environment(folder, repository):
    """A new environment with the newest releases inside the ranges of
    requirements.txt, PyTorch as locked, the course installed from
    ``repository`` (a copy): its Python."""
    venv.create(folder, with_pip=True)
    python = str(folder / "bin" / "python")
    torch = pins(LOCK.read_text().splitlines())["torch"]
    constraints = folder / "torch.txt"
    constraints.write_text(f"torch=={torch}\n")
    command = [python, "-m", "pip", "install", "-q", "-c", str(constraints)]
    subprocess.run(
        [*command, "-r", "requirements.txt"], check=True, cwd=repository
    )
    return python


def failures(report):
    """``[(test, reason)]`` of a JUnit XML report: each failure's or error's
    message and where it was raised (its traceback's last line)."""
    found = []
    for case in ElementTree.parse(report).iter("testcase"):
        for problem in [*case.iter("failure"), *case.iter("error")]:
            name = f"{case.get('classname')}::{case.get('name')}"
            lines = (problem.text or "").strip().splitlines()
            where = lines[-1:] if lines else []
            reason = [problem.get("message") or "", *where]
            found.append((name, "\n".join(reason).strip()))
    return found


def main():
    arguments = sys.argv[1:] or UNIT_TESTS
    with tempfile.TemporaryDirectory() as folder:
        copy = copy_of_repository(Path(folder) / "repository")
        (copy / "unit_only.py").write_text(UNIT_ONLY)  # -p unit_only
        python = newest_environment(Path(folder) / "venv", copy)
        frozen = freeze(python)
        locked, newest = pins(LOCK.read_text().splitlines()), pins(frozen)
        changed = sorted(
            name
            for name in locked.keys() | newest.keys()
            if locked.get(name) != newest.get(name)
        )
        print(f"{len(changed)} packages differ from requirements.lock:")
        for name in changed:
            print(f"  {name}: {locked.get(name)} -> {newest.get(name)}")
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHONPATH", "VIRTUAL_ENV"))
        }
        report = Path(folder) / "report.xml"
        result = subprocess.run(
            [python, "-m", "pytest", "-q", f"--junitxml={report}"] + arguments,
            cwd=copy,
            env=environment,
            capture_output=True,
            text=True,
        )
        failed = failures(report) if report.is_file() else []
    for name, reason in failed:
        print(f"FAILED {name}\n  " + reason.replace("\n", "\n  "))
    if not failed:
        print("no test failed")
    summary = result.stdout.strip().splitlines()
    print(summary[-1] if summary else result.stderr[-2000:])
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
