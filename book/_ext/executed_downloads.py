"""Sphinx extension: each chapter's download runs anywhere, and shows its
outputs.

The notebooks are stored without outputs, and Sphinx copies the sources to
``_sources`` as they are (a rebuild keeps the copies of unchanged pages). When
the build has finished we replace each chapter's copy by the one the reader has
just read: its outputs come from the
execution cache. Before its first cell we put the course library itself, a
wheel of ``mha_lib`` packed in base64, and a few lines that install it with
the extras the chapter imports, where one of them is missing: so a downloaded
chapter runs on Colab, Kaggle or any Jupyter, without the course's repository.
Where the chapter's packages are there (Chapters 1-5 on Colab need only
PyTorch, NumPy, Matplotlib and ipywidgets), pip installs the wheel alone and
fetches nothing. The extras and the modules to look for are those of the
chapter's own first code cell (``mha-lib[...]`` and ``NEEDS``), read from it.
"""

import ast
import base64
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from sphinx.util import logging

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
INSTALL_ID = "install-mha-lib"  # the id of the cell that carries the wheel
INSTALL = """\
# This chapter carries the course library, mha_lib, packed below, so that it
# runs on Colab, Kaggle or any Jupyter without the course's repository. Where
# mha_lib or a package the chapter imports is missing, this cell installs the
# wheel with what the chapter needs; pip fetches from PyPI only the packages
# that are not there yet.
import base64
import importlib
import importlib.util
import pathlib
import subprocess
import sys
import tempfile

WHEEL_NAME = "{name}"
WHEEL = "{wheel}"
NEEDS = {needs}
if any(importlib.util.find_spec(name) is None for name in NEEDS):
    wheel = pathlib.Path(tempfile.mkdtemp()) / WHEEL_NAME
    wheel.write_bytes(base64.b64decode(WHEEL))
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"{{wheel}}[{extras}]"], check=True)
    importlib.invalidate_caches()
"""


def chapter_needs(notebook):
    """The extras and the modules the chapter's first code cell asks for:
    ``("plot,text", ["mha_lib", ...])``."""
    first = next(c for c in notebook.cells if c.cell_type == "code")
    extras = re.search(r"mha-lib\[([\w,]+)\]", first.source)
    needs = re.search(r"^NEEDS = (\[[^\]]*\])", first.source, flags=re.M)
    if extras is None or needs is None:
        raise ValueError(
            "the first code cell should name mha-lib[EXTRAS] and NEEDS = "
            f"[...], got {first.source[:300]!r}"
        )
    return extras.group(1), ast.literal_eval(needs.group(1))


def build_wheel(folder):
    """Build the ``mha_lib`` wheel into ``folder`` (no network, so no build
    isolation)."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps"]
    command += ["--no-build-isolation", "-q", "-w", str(folder), str(ROOT)]
    subprocess.run(command, check=True, capture_output=True)
    (wheel,) = Path(folder).glob("mha_lib-*.whl")
    return wheel


def install_cell(wheel, extras, needs):
    """The code cell that carries ``wheel`` and installs it, with ``extras``,
    where a module of ``needs`` is missing."""
    packed = base64.b64encode(wheel.read_bytes()).decode("ascii")
    source = INSTALL.format(
        name=wheel.name, wheel=packed, extras=extras, needs=json.dumps(needs)
    )
    cell = nbformat.v4.new_code_cell(source.rstrip("\n"))
    cell.metadata["tags"] = ["hide-input"]
    return cell


def _offer_executed(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    sources = Path(app.outdir) / "_sources"
    offered = 0
    with tempfile.TemporaryDirectory() as folder:
        wheel = build_wheel(folder)
        for download in sources.rglob("*.ipynb"):
            docname = download.relative_to(sources).with_suffix("").as_posix()
            if docname not in app.env.found_docs:
                continue  # left in _build by an earlier book, no longer a page
            # from the chapter itself: the copy in _sources may be one an
            # earlier build has already offered
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
                i
                for i, c in enumerate(notebook.cells)
                if c.cell_type == "code"
            )
            try:
                cell = install_cell(wheel, *chapter_needs(notebook))
            except ValueError as error:
                logger.warning(f"executed_downloads: {download.name}: {error}")
                continue
            notebook.cells.insert(first_code, cell)
            cell["id"] = INSTALL_ID
            nbformat.write(notebook, download)
            offered += 1
    logger.info(f"executed_downloads: {offered} chapters offered with outputs")


def setup(app):
    app.connect("build-finished", _offer_executed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
