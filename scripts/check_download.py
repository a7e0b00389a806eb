"""Run downloaded chapters where the course's repository is out of reach.

    python3 scripts/check_download.py           # every chapter in _build/html
    python3 scripts/check_download.py 01_parameters 07_real_text
    python3 scripts/check_download.py --oldest 01_parameters  # oldest allowed
    python3 scripts/check_download.py --downloads FOLDER  # other downloads

Each chapter gets a new virtual environment holding only what Colab
preinstalls and the course needs from it (PyTorch, NumPy, Matplotlib, IPython,
ipywidgets and a kernel), its download (``_build/html/_sources/notebooks``,
written by the book build) is copied into an empty folder and executed there
with that environment's kernel. The chapter must install ``mha_lib`` from the
wheel it carries. A chapter whose packages Colab already has (Chapters 1-5
and 7) runs with no network at all: pip may use no index and every connection
goes to a proxy that is not there. The other (Chapter 6's model) fetches its
packages from PyPI. Prints one line per chapter.

With ``--oldest`` the environment holds the oldest releases ``pyproject.toml``
allows of NumPy, Matplotlib and ipywidgets (the newest patch of each lower
bound's minor release, the first that installs on this Python) and, for the
rest, whatever pip resolves today (the kernel, IPython, the inline backend):
nothing the declared ranges do not ask for is pinned, so a chapter is checked
with what an older Colab image has. PyTorch stays at the lock's version: older
builds are downloads of several GB.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from build_paths import DOWNLOADS  # noqa: E402

PREINSTALLED = [
    "torch==2.13.0",
    "numpy",
    "matplotlib",
    "ipython",
    "ipywidgets",
]
PREINSTALLED += ["ipykernel", "nbclient", "nbformat"]
# where a chapter runs offline: no index, no configured wheel folders, and an
# address that refuses every connection
UNREACHABLE = "http://127.0.0.1:9"
OFFLINE = {
    "PIP_NO_INDEX": "1",
    "PIP_CONFIG_FILE": os.devnull,
    **{
        name: UNREACHABLE
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        + ("http_proxy", "https_proxy", "all_proxy")
    },
    "NO_PROXY": "",
    "no_proxy": "",
}
INSTALL_ID = "install-mha-lib"  # book/_ext/executed_downloads.py
RUN = """
import sys, nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(notebook, timeout=1800, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[2]}})
client.execute()
nbformat.write(notebook, sys.argv[1])
"""


def oldest_allowed():
    """``PREINSTALLED`` with NumPy, Matplotlib and ipywidgets at the oldest
    minor release ``pyproject.toml`` allows (its newest patch)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = (
        project["dependencies"] + project["optional-dependencies"]["plot"]
    )
    lowest = {}
    for requirement in declared:
        found = re.fullmatch(r"([\w-]+)>=(\d+)\.(\d+)[^,]*(,.*)?", requirement)
        if found and found[1] in ("numpy", "matplotlib", "ipywidgets"):
            lowest[found[1]] = f"{found[1]}=={found[2]}.{found[3]}.*"
    return [lowest.get(name, name) for name in PREINSTALLED]


def fresh_environment(folder, packages=PREINSTALLED):
    """A virtual environment with only ``packages``: its Python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(folder)], check=True
    )
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *packages], check=True)
    return python


def installs(download):
    """The packages the download's install cell installs where they are
    missing: ``{"numpy", "matplotlib", ...}``."""
    cells = json.loads(download.read_text())["cells"]
    install = next(
        ("".join(c["source"]) for c in cells if c.get("id") == INSTALL_ID),
        "",
    )
    lists = re.findall(
        r"^(?:REQUIRES|WITHOUT_DEPENDENCIES) = (\[.*\])", install, re.M
    )
    if len(lists) != 2:
        raise ValueError(f"{download.name} carries no install cell")
    return {
        re.match(r"[\w.-]+", requirement)[0].lower()
        for found in lists
        for requirement in json.loads(found)
    }


# what the check prints of each environment: the versions it ran with
SHOWN = ("torch", "numpy", "matplotlib", "ipywidgets", "matplotlib-inline")
SHOWN += ("ipykernel", "ipython")


def versions(python):
    """``"torch 2.13.0, numpy 1.23.5, ..."``: the versions of ``SHOWN`` in
    the environment of ``python``."""
    script = (
        "import sys, importlib.metadata as m\n"
        "print(', '.join(f'{n} {m.version(n)}' for n in sys.argv[1:]))"
    )
    result = subprocess.run(
        [str(python), "-c", script, *SHOWN],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def run_chapter(python, download, offline):
    """Run one downloaded chapter in an empty folder: (ok, seconds, error)."""
    with tempfile.TemporaryDirectory() as folder:
        notebook = Path(folder) / download.name
        shutil.copy(download, notebook)
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))
            and not (offline and key.startswith("PIP_"))
        }
        environment["PYTHONNOUSERSITE"] = "1"
        if offline:
            environment.update(OFFLINE)
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--oldest", action="store_true")
    parser.add_argument("--downloads", type=Path, default=DOWNLOADS)
    args = parser.parse_args()
    if not args.downloads.is_dir():
        sys.exit(f"no downloads in {args.downloads}: build the book first")
    packages = oldest_allowed() if args.oldest else PREINSTALLED
    print("preinstalled:", " ".join(packages))
    names = args.chapters or sorted(
        p.stem for p in args.downloads.glob("*.ipynb")
    )
    preinstalled = {re.match(r"[\w.-]+", p)[0].lower() for p in packages}
    failures = 0
    for name in names:
        download = args.downloads / f"{name}.ipynb"
        offline = installs(download) <= preinstalled
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            python = fresh_environment(Path(folder) / "venv", packages)
            made = time.perf_counter() - started
            print(f"{name}: {versions(python)}", flush=True)
            ok, seconds, error = run_chapter(python, download, offline)
        failures += not ok
        network = "no network" if offline else "PyPI"
        status = "ran to the end" if ok else f"FAILED: {error}"
        print(
            f"{name:32s} new environment {made:4.0f} s, {network:10s} "
            f"{seconds:5.0f} s  {status}",
            flush=True,
        )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
