"""Run downloaded chapters where the course's repository is out of reach.

    python3 scripts/check_download.py           # every chapter in _build/html
    python3 scripts/check_download.py 01_parameters 07_real_text

Builds a fresh virtual environment holding only what Colab preinstalls and the
course needs from it (PyTorch, NumPy, Matplotlib, IPython, ipywidgets and a
kernel), copies each chapter's download (``_build/html/_sources/notebooks``,
written by the book build) into an empty folder, and executes it there with
that environment's kernel. The chapter must install ``mha_lib`` from the wheel
it carries and everything else from PyPI. Prints one line per chapter.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOWNLOADS = ROOT / "_build" / "html" / "_sources" / "notebooks"
PREINSTALLED = [
    "torch==2.13.0",
    "numpy",
    "matplotlib",
    "ipython",
    "ipywidgets",
]
PREINSTALLED += ["ipykernel", "nbclient", "nbformat"]
RUN = """
import sys, nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(notebook, timeout=1800, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[2]}})
client.execute()
nbformat.write(notebook, sys.argv[1])
"""


def fresh_environment(folder):
    """A virtual environment with only ``PREINSTALLED``: its Python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(folder)], check=True
    )
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-cache-dir"]
    subprocess.run([*pip, *PREINSTALLED], check=True)
    return python


def run_chapter(python, download):
    """Run one downloaded chapter in an empty folder: (ok, seconds, error)."""
    with tempfile.TemporaryDirectory() as folder:
        notebook = Path(folder) / download.name
        shutil.copy(download, notebook)
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))
        }
        environment["PYTHONNOUSERSITE"] = "1"
        started = time.perf_counter()
        result = subprocess.run(
            [str(python), "-c", RUN, str(notebook), folder],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        error = (
            result.stderr.strip().splitlines()[-1:]
            if result.returncode
            else []
        )
        if not result.returncode:  # where mha_lib came from: the packed wheel
            cells = json.loads(notebook.read_text())["cells"]
            setup = next(
                c for c in cells if "pick_device()" in "".join(c["source"])
            )
            printed = "".join(
                "".join(o.get("text", "")) for o in setup.get("outputs", [])
            )
            if "running on" not in printed:
                error = ["the setup cell printed nothing"]
        return not error, seconds, " ".join(error)


def main():
    names = sys.argv[1:] or sorted(p.stem for p in DOWNLOADS.glob("*.ipynb"))
    if not DOWNLOADS.is_dir():
        sys.exit(f"no downloads in {DOWNLOADS}: build the book first")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        python = fresh_environment(Path(folder) / "venv")
        print(f"fresh environment in {time.perf_counter() - started:.0f} s")
        failures = 0
        for name in names:
            ok, seconds, error = run_chapter(
                python, DOWNLOADS / f"{name}.ipynb"
            )
            failures += not ok
            status = "ran to the end" if ok else f"FAILED: {error}"
            print(f"{name:40s} {seconds:6.0f} s  {status}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
