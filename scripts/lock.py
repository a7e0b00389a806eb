"""Pin every package the book and the tests install: python3 scripts/lock.py

Makes a fresh virtual environment, installs the CPU build of PyTorch (the
version .ci/run installs first) and then ``requirements.txt``, the declared
ranges, and writes what pip resolved to ``requirements.lock``: every package,
the transitive ones too, pinned with ``==``, then the course itself (``-e .``).
The README's commands install the lock, so a set-up made next year gets the
packages of today. Run it with Python 3.11 on Linux x86_64, the platform of
the lock; ``tests/test_requirements.py`` checks the lock against the ranges.
"""

import platform
import re
import subprocess
import sys
import tempfile
import venv
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
PYTHON = (3, 11)
# the line .ci/run installs before anything else
TORCH = re.search(
    r"pip install -q (torch==\S+)", (ROOT / ".ci" / "run").read_text()
).group(1)


def freeze(python):
    """``pip freeze`` of the environment of ``python``, without the project
    itself: one ``name==version`` line a package."""
    return subprocess.run(
        [python, "-m", "pip", "freeze", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()


def resolve(folder):
    """Install torch and requirements.txt into a new environment in
    ``folder``; its packages as ``name==version`` lines, sorted."""
    venv.create(folder, with_pip=True)
    python = str(Path(folder) / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, TORCH], check=True)
    subprocess.run([*pip, "-r", "requirements.txt"], check=True, cwd=ROOT)
    frozen = freeze(python)
    # torch==2.13.0+cpu: the local label names where the wheel came from, and
    # torch==2.13.0 accepts it; PyPI has no +cpu release to pin
    pinned = [re.sub(r"\+[\w.]+$", "", line) for line in frozen]
    unpinned = [line for line in pinned if "==" not in line]
    if unpinned:
        sys.exit(f"pip freeze gave lines that are not pins: {unpinned}")
    return sorted(pinned, key=str.lower)


def main():
    machine = f"{platform.system()} {platform.machine()}"
    if sys.version_info[:2] != PYTHON or machine != "Linux x86_64":
        sys.exit(
            f"the lock is for Python {'.'.join(map(str, PYTHON))} on Linux "
            f"x86_64; this is Python {platform.python_version()} on {machine}"
        )
    with tempfile.TemporaryDirectory() as folder:
        pins = resolve(folder)
    header = [
        "# Every package the book and the tests install, pinned: written",
        "# by python3 scripts/lock.py from requirements.txt (the ranges)",
        f"# on {date.today()}, Python {platform.python_version()}, Linux "
        "x86_64, with",
        f"# {TORCH} (the CPU build) installed first, as .ci/run does.",
        "# Do not edit: change requirements.txt and run the script again.",
    ]
    LOCK.write_text("\n".join([*header, *pins, "-e .", ""]))
    print(f"{len(pins)} packages pinned in {LOCK.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
