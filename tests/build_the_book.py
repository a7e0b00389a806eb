"""The README's build command, run by the test session beside its tests
(``tests/conftest.py``), in a process of its own so that it finishes even if
the worker that started it has no tests left. Its output goes to
``_build/build.log``; when it ends, its exit code and time go to
``_build/build-result.json``."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
# the README's build command, started by the interpreter running the tests
COMMAND = [
    sys.executable,
    "-c",
    "from jupyter_book.cli.main import main; main()",
    "build",
    "--all",
    "--warningiserror",
    "--keep-going",
    str(ROOT),
]


def main():
    (BUILD / "build.pid").write_text(str(os.getpid()))
    started = time.perf_counter()
    with open(BUILD / "build.log", "w") as log:
        try:
            returncode = subprocess.run(
                COMMAND,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=1800,
            ).returncode
        except subprocess.TimeoutExpired:
            returncode = "timed out after 1800 s"
    written = BUILD / "build-result.json.partial"
    written.write_text(
        json.dumps(
            {
                "returncode": returncode,
                "seconds": time.perf_counter() - started,
            }
        )
    )
    written.replace(BUILD / "build-result.json")  # whole, or not there


if __name__ == "__main__":
    main()
