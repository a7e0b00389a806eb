"""What the newest releases inside the declared ranges break:

    python3 scripts/try_newest.py                      # the unit tests
    python3 scripts/try_newest.py tests/test_style.py  # any pytest arguments

Only a report, never part of the test command: the set-up installs
``requirements.lock``, and this shows what the next ``python3 scripts/lock.py``
would bring. Makes a new virtual environment, installs ``requirements.txt``
there with PyTorch held at the lock's version (any other is a download of its
own), so pip takes the newest release inside every other range, prints each
package whose version differs from the lock, then runs pytest with that
environment in a copy of the repository's files (so nothing it writes, a
book build included, lands in the repository): by default the unit tests,
without the chapters and the tests that need the built book (minutes each).
Prints the tests that failed; exits with pytest's status.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from lock import freeze  # scripts/lock.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
# the fixtures of tests/book_session.py and tests/browsing.py that build the
# book
BOOK = r"\b(book_build|built_book|english_pages|chinese_pages|site|opened)\b"


def unit_tests():
    """pytest's arguments for the tests that need no built book."""
    needs_book = [
        path.name
        for path in sorted((ROOT / "tests").glob("test_*.py"))
        if re.search(r"def test_\w+\([^)]*" + BOOK, path.read_text())
    ]
    return ["tests", *(f"--ignore=tests/{name}" for name in needs_book)]


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


def newest_environment(folder):
    """A new environment with the newest releases inside the ranges of
    requirements.txt, PyTorch as locked: its Python."""
    venv.create(folder, with_pip=True)
    python = str(folder / "bin" / "python")
    torch = pins(LOCK.read_text().splitlines())["torch"]
    constraints = folder / "torch.txt"
    constraints.write_text(f"torch=={torch}\n")
    command = [python, "-m", "pip", "install", "-q", "-c", str(constraints)]
    subprocess.run([*command, "-r", "requirements.txt"], check=True, cwd=ROOT)
    return python


def main():
    arguments = sys.argv[1:] or unit_tests()
    with tempfile.TemporaryDirectory() as folder:
        python = newest_environment(Path(folder) / "venv")
        copy = copy_of_repository(Path(folder) / "repository")
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
        result = subprocess.run(
            [python, "-m", "pytest", "-q", "-rfE", *arguments],
            cwd=copy,
            env=environment,
            capture_output=True,
            text=True,
        )
    report = result.stdout.splitlines()
    failed = [line for line in report if line.startswith(("FAILED", "ERROR"))]
    print("\n".join(failed) or "no test failed")
    print(report[-1] if report else result.stderr[-2000:])
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
