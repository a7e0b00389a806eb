"""Sphinx extension: the download button offers each chapter as the executed
notebook.

The notebooks are stored without outputs, and Sphinx copies the sources to
``_sources`` as they are. When the build has finished we overwrite each copied
notebook with the one myst-nb executed for the page
(``_build/jupyter_execute``), so a reader downloads the chapter with the
outputs, figures and tables they have just read.
"""

import shutil
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _copy_executed(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    executed = Path(app.env.mystnb_config.output_folder)
    sources = Path(app.outdir) / "_sources"
    copied = 0
    for download in sources.rglob("*.ipynb"):
        notebook = executed / download.relative_to(sources)
        if notebook.is_file():
            shutil.copyfile(notebook, download)
            copied += 1
    logger.info(
        f"executed_downloads: {copied} executed notebooks offered for download"
    )


def setup(app):
    app.connect("build-finished", _copy_executed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
