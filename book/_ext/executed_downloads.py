"""Sphinx extension: each chapter's download runs anywhere, and shows its
outputs.

The notebooks are stored without outputs, and Sphinx copies the sources to
``_sources`` as they are (a rebuild keeps the copies of unchanged pages). When
the build has finished we replace each chapter's copy by the one the reader has
just read: its outputs come from the
execution cache. Before its first cell we put the course library itself, a
wheel of ``mha_lib`` packed in base64, and a few lines that install it (with
the packages it needs from PyPI) where ``mha_lib`` is missing: so a downloaded
chapter runs on Colab, Kaggle or any Jupyter with PyPI access, without the
course's repository.
"""

import base64
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from sphinx.util import logging

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
EXTRAS = "plot,pretrained,text"
INSTALL_ID = "install-mha-lib"  # the id of the cell that carries the wheel
INSTALL = """\
# This chapter carries the course library, mha_lib, packed below, so that it
# runs on Colab, Kaggle or any Jupyter with PyPI access. Where mha_lib is
# missing, this cell installs it, with the packages it needs from PyPI.
import base64
import importlib
import importlib.util
import pathlib
import subprocess
import sys
import tempfile

WHEEL_NAME = "{name}"
WHEEL = "{wheel}"
if importlib.util.find_spec("mha_lib") is None:
    wheel = pathlib.Path(tempfile.mkdtemp()) / WHEEL_NAME
    wheel.write_bytes(base64.b64decode(WHEEL))
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"{{wheel}}[{extras}]"], check=True)
    importlib.invalidate_caches()
"""


def build_wheel(folder):
    """Build the ``mha_lib`` wheel into ``folder`` (no network, so no build
    isolation)."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps"]
    command += ["--no-build-isolation", "-q", "-w", str(folder), str(ROOT)]
    subprocess.run(command, check=True, capture_output=True)
    (wheel,) = Path(folder).glob("mha_lib-*.whl")
    return wheel


def install_cell(wheel):
    """The code cell that carries ``wheel`` and installs it where needed."""
    packed = base64.b64encode(wheel.read_bytes()).decode("ascii")
    source = INSTALL.format(name=wheel.name, wheel=packed, extras=EXTRAS)
    cell = nbformat.v4.new_code_cell(source.rstrip("\n"))
    cell.metadata["tags"] = ["hide-input"]
    return cell


def _offer_executed(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    sources = Path(app.outdir) / "_sources"
    with tempfile.TemporaryDirectory() as folder:
        cell = install_cell(build_wheel(folder))
    offered = 0
    for download in sources.rglob("*.ipynb"):
        docname = download.relative_to(sources).with_suffix("").as_posix()
        if docname not in app.env.found_docs:
            continue  # left in _build by an earlier book, no longer a page
        # from the chapter itself: the copy in _sources may be one an earlier
        # build has already offered
        source = Path(app.srcdir) / f"{docname}.ipynb"
        notebook = nbformat.read(source, as_version=4)
        try:
            _, notebook = cache.merge_match_into_notebook(notebook)
        except KeyError:
            logger.warning(
                f"executed_downloads: no outputs cached for {download}"
            )
            continue
        first_code = next(
            i for i, c in enumerate(notebook.cells) if c.cell_type == "code"
        )
        notebook.cells.insert(first_code, cell)
        cell["id"] = INSTALL_ID
        nbformat.write(notebook, download)
        offered += 1
    logger.info(f"executed_downloads: {offered} chapters offered with outputs")


def setup(app):
    app.connect("build-finished", _offer_executed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
