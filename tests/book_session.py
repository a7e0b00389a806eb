"""The test session's plan: run each chapter once, build the book from those
runs, then test the pages. A pytest plugin (the root ``conftest.py`` loads
it); every file the session and the build write is named here, under
``BUILD``.

1. **The chapters.** With ``--nbval`` (the README's test command) pytest
   collects each notebook's code cells as tests and runs them in a fresh
   kernel, chapters first, the longest first. With ``-n 2`` two workers share
   them (``--dist loadfile``: a chapter runs whole on one worker). When every
   cell of a chapter has passed, the chapter with its outputs is stored in the
   book's execution cache (``CACHE``, the ``cache`` mode of ``_config.yml``);
   every chapter that ends, passed or not, leaves a mark in ``ENDED``.
2. **The build.** When the last chapter has ended, the worker that ended it
   starts the README's build command in a process of its own (this file run
   as a script), which finds every chapter in the cache and executes nothing
   again. It runs beside the tests that do not need it.
3. **The pages.** The tests of the built book come last, each file when the
   stage its tests wait for is written: the English pages (fixture
   ``english_pages``), the Chinese pages (``chinese_pages``), the English
   PDF (``english_pdf``), the whole build with the Chinese PDF and the log
   (``book_build``, ``built_book``).

The report ends with each chapter's time and the build's. Without
``--nbval`` the build executes every chapter itself.
"""

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from support import extension

ROOT = Path(__file__).resolve().parent.parent
PATHS = extension("build_paths")
# the test command's own build, beside the README's ``_build``, which it
# never touches: the same command and configuration, written under OUTPUT
OUTPUT = PATHS.TEST_OUTPUT
BUILD = PATHS.TEST_BUILD
# what the README's build had written when the session started
README_BUILD = PATHS.HTML
README_BUILD_BEFORE = OUTPUT / "readme-build-before.json"
HTML = BUILD / "html"  # the English pages; the Chinese ones in HTML / "zh"
CACHE = BUILD / ".jupyter_cache"  # the chapters' runs, as the build reads them
ENDED = BUILD / ".chapters"  # one file per chapter that has ended
STARTED = BUILD / ".build-started"  # the one process that builds made it
LOG = BUILD / "build.log"
PID = BUILD / "build.pid"
RESULT = BUILD / "build-result.json"  # the build's exit code and time
# the English edition's PDF (book/_ext/book_pdf.py, which writes it whole)
PDF = HTML / "mha-answered.pdf"
# how each edition's build got each chapter's outputs
# (book/_ext/execution_report.py), written with its pages
EXECUTION = BUILD / "execution.json"
EXECUTION_ZH = BUILD / "execution-zh_CN.json"
EXECUTOR = "nbval"  # recorded with each cached chapter: who executed it
WAIT = 1800  # seconds a test waits for the build at most
KERNEL_TRIES = 3
# nbval's settings for the chapters: each runs in this environment's kernel,
# and a cell that runs 5 minutes (ten times its time on a busy machine) fails
# with its chapter and cell instead of holding the run up (the build's own
# watch: book/_ext/chapters_ahead.py). Set here, not in pyproject.toml's
# addopts, so that a run without nbval (-p no:nbval) starts; an option given
# on the command line wins.
NBVAL_OPTIONS = {"nbval_current_env": True, "nbval_cell_timeout": 300}
# the README's build command, started by the interpreter running the tests
BUILD_COMMAND = [
    sys.executable,
    "-c",
    "from jupyter_book.cli.main import main; main()",
    "build",
    "--all",
    "--warningiserror",
    "--keep-going",
    "--path-output",
    str(OUTPUT),
    str(ROOT),
]
# the chapters that take longest on one core, longest first (a worker takes
# the next chapter when it nears the end of one, so the two share the seven
# about evenly)
LONGEST = [
    "07_real_text",
    "06_pretrained_heads",
    "04_heads_differ",
    "05_chunked_standard_wide",
    "03_same_weights_new_function",
]
# what a test of the built book waits for, in the order the build writes it
STAGES = ("english_pages", "chinese_pages", "english_pdf", "book_build")

# chapter path -> its cell items, and the outputs and seconds of those run
_chapters = {}
# chapter path -> seconds, for the chapters stored in the cache
cached_by_nbval = {}
# chapter path -> (seconds, failed cells, cached), as the report shows them
_ended = {}
_wanted = []  # whether a test of this session needs the book


# -- the session ------------------------------------------------------------


def pytest_configure(config):
    # a session started by a test of another session (a command the README
    # names, run by a test) leaves that session's build and numbers alone
    config.nested_session = "MHA_BOOK_SESSION" in os.environ
    os.environ["MHA_BOOK_SESSION"] = "1"
    if hasattr(config, "workerinput"):
        # two workers on two cores: one thread each, in the chapters' kernels
        # (which inherit this) as in the tests
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)
    if config.pluginmanager.hasplugin("nbval"):
        given = " ".join(config.invocation_params.args)
        for name, value in NBVAL_OPTIONS.items():
            if "--" + name.replace("_", "-") not in given:
                setattr(config.option, name, value)
    import nbval.kernel

    nbval.kernel.start_new_kernel = _tried_again(nbval.kernel.start_new_kernel)
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "1":
        # the driver's switch, which mha_lib.pick_device cannot undo
        config.issue_config_time_warning(pytest.PytestConfigWarning(TF32), 2)


TF32 = (
    "NVIDIA_TF32_OVERRIDE=1 forces TF32 matrix products on a GPU, which "
    "PyTorch cannot switch off: the chapters' float32 comparisons may fail "
    "there. Unset it."
)


def _tried_again(start_new_kernel):
    """nbval's kernel start, tried again where the kernel dies before it
    answers (two workers starting kernels at once can be handed the same free
    port), so that a chapter fails for its cells, not for its start."""
    if getattr(start_new_kernel, "tries", None):
        return start_new_kernel

    @functools.wraps(start_new_kernel)
    def start(*args, **kwargs):
        for tried in range(1, KERNEL_TRIES + 1):
            try:
                return start_new_kernel(*args, **kwargs)
            except RuntimeError:
                if tried == KERNEL_TRIES:
                    raise

    start.tries = KERNEL_TRIES
    return start


def _main_process(config):
    return not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Nothing of an earlier session's build process (with nbval, the
    collection empties ``BUILD`` for the chapters' new runs)."""
    if _main_process(session.config) and not session.config.nested_session:
        for path in (STARTED, RESULT, PID, LOG):
            path.unlink(missing_ok=True)
        shutil.rmtree(PATHS.GLUED, ignore_errors=True)
        OUTPUT.mkdir(exist_ok=True)
        README_BUILD_BEFORE.write_text(json.dumps(readme_build()))


def readme_build():
    """What the README's build wrote in ``_build/html``: {file: [size,
    modified]}, or None where there is none."""
    if not README_BUILD.is_dir():
        return None
    return {
        str(path.relative_to(README_BUILD)): [
            path.stat().st_size,
            path.stat().st_mtime_ns,
        ]
        for path in sorted(README_BUILD.rglob("*"))
        if path.is_file()
    }


def pytest_sessionfinish(session):
    """A build still running at the end (the session was stopped) is
    stopped."""
    nested = session.config.nested_session
    if _main_process(session.config) and not nested and PID.is_file():
        if not RESULT.is_file():
            try:
                os.killpg(int(PID.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The chapters first, each in cell order, the longest first; then the
    tests that do not need the book, the longest first, so that they run
    beside the build; then the files of the book's tests, in the order of
    the stages they wait for (two workers take whole files in turn). Last
    of the hooks, so that it sees the tests ``-m`` and ``-k`` leave: a run
    that deselects every test of the book builds none."""
    book = [item for item in items if _stage(item) is not None]
    waiting = {item.path for item in book}
    cells = [item for item in items if _is_cell(item)]
    early = sorted(
        (i for i in items if i.path not in waiting and not _is_cell(i)),
        key=lambda item: item.path.name != "test_replication.py",
    )
    stage = {}
    for item in book:
        stage[item.path] = max(stage.get(item.path, 0), _stage(item))
    late = sorted(
        (item for item in items if item.path in waiting),
        key=lambda item: stage.get(item.path, 0),
    )
    cells.sort(key=lambda item: _rank(Path(item.fspath).stem))
    items[:] = cells + early + late
    _wanted[:] = [bool(book)]
    if not cells:
        return
    # this run's executions, nothing older (with two workers both remove it
    # while collecting, before either runs a test)
    shutil.rmtree(BUILD, ignore_errors=True)
    config.nbval_chapters = _chapters
    for item in cells:
        chapter = _chapters.setdefault(
            Path(item.fspath), {"items": [], "done": {}}
        )
        chapter["items"].append(item)


def _is_cell(item):
    return type(item).__name__ == "IPyNbCell"


def _rank(stem):
    return LONGEST.index(stem) if stem in LONGEST else len(LONGEST)


def _stage(item):
    """The last stage of the build a test waits for, or None."""
    names = getattr(item, "fixturenames", ())
    waits = [stage for stage in STAGES if stage in names]
    return STAGES.index(waits[-1]) if waits else None


# -- 1. the chapters --------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    started = time.perf_counter()
    outcome = yield
    if _is_cell(item):
        chapter = _chapters[Path(item.fspath)]
        passed = outcome.excinfo is None
        seconds = time.perf_counter() - started
        chapter["done"][item.cell_num] = (passed, item.test_outputs, seconds)
        if item is chapter["items"][-1]:
            _end(item, chapter)


def _end(item, chapter):
    """Cache the chapter, mark it ended, and send its line of the report
    along with its last cell."""
    path = Path(item.fspath)
    _store(path, chapter)
    done = chapter["done"].values()
    line = (
        sum(d[2] for d in done),
        sum(not d[0] for d in done),
        path in cached_by_nbval,
    )
    item.user_properties.append(("chapter", [str(path), *line]))
    ENDED.mkdir(parents=True, exist_ok=True)
    (ENDED / path.stem).write_text(json.dumps(line))


def pytest_runtest_logreport(report):
    """The report's line of a chapter that ended, here or on a worker."""
    for name, value in report.user_properties:
        if name == "chapter" and report.when == "call":
            path, *line = value
            _ended[Path(path)] = line


def _store(path, chapter):
    """Cache the executed chapter if every cell passed (else the build runs it
    again)."""
    done = chapter["done"]
    if len(done) != len(chapter["items"]) or not all(
        d[0] for d in done.values()
    ):
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    notebook = nbformat.read(path, as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for count, (cell, item) in enumerate(
        zip(cells, chapter["items"]), start=1
    ):
        _, outputs, _ = done[item.cell_num]
        cell.outputs = [_finished(output, count) for output in outputs]
        cell.execution_count = count
    seconds = sum(d[2] for d in done.values())
    bundle = CacheBundleIn(
        notebook,
        str(path),
        data={"execution_seconds": seconds, "executor": EXECUTOR},
    )
    get_cache(str(CACHE)).cache_notebook_bundle(
        bundle, check_validity=False, overwrite=True
    )
    cached_by_nbval[path] = seconds
    # every number it glued, for tests/test_quoted.py
    extension("quoted_numbers").write_glued(notebook)


def _finished(output, count):
    """An nbval output as nbformat stores it."""
    output = nbformat.from_dict(dict(output))
    if output.output_type == "execute_result":
        output.execution_count = count
    return output


# -- 2. the build -----------------------------------------------------------


def _chapter_stems(config):
    """The chapters nbval runs in this session (on any worker)."""
    return [Path(path).stem for path in getattr(config, "nbval_chapters", {})]


def pytest_runtest_teardown(item):
    """The build starts once every chapter has ended, here or on the other
    worker (at once where nbval runs no chapter), if a test needs it."""
    if not any(_wanted) or STARTED.is_file():
        return
    chapters = _chapter_stems(item.config)
    if all((ENDED / stem).is_file() for stem in chapters):
        _start_build(item.config)


def _start_build(config):
    """Start the build unless this session has already started it; where
    nbval runs no chapter, the build executes every chapter afresh."""
    BUILD.mkdir(parents=True, exist_ok=True)
    try:  # one process wins, on whichever worker
        os.close(os.open(STARTED, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    if not _chapter_stems(config):  # nothing of an earlier build to reuse
        for path in BUILD.iterdir():
            if path != STARTED:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    # beside the tests, and left to finish if this worker ends first
    subprocess.Popen(
        [sys.executable, __file__], cwd=ROOT, start_new_session=True
    )
    # the build takes one core, the tests the other: two threads here would
    # spin waiting for a core the build holds
    import torch

    torch.set_num_threads(1)


def build():
    """The README's build command (:data:`BUILD_COMMAND`), its output in
    ``LOG``; when it ends, its exit code and time in ``RESULT``."""
    PID.write_text(str(os.getpid()))
    started = time.perf_counter()
    with open(LOG, "w") as log:
        try:
            returncode = subprocess.run(
                BUILD_COMMAND,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=WAIT,
            ).returncode
        except subprocess.TimeoutExpired:
            returncode = f"timed out after {WAIT} s"
    seconds = time.perf_counter() - started
    written = RESULT.with_suffix(".partial")
    written.write_text(
        json.dumps({"returncode": returncode, "seconds": seconds})
    )
    written.replace(RESULT)  # whole, or not there


# -- 3. the pages -----------------------------------------------------------


@dataclass
class Build:
    """One run of the README's build command: its exit code, output, time and
    what it wrote."""

    returncode: int
    log: str
    seconds: float
    html: Path
    # per chapter: runtime, method, succeeded, error, traceback
    execution: dict


def _wait_for(ready):
    waited = time.perf_counter()
    while not ready():
        if time.perf_counter() - waited > WAIT:
            pytest.fail(f"the book build did not end in {WAIT} s")
        time.sleep(0.5)


def _written(request, written):
    """``HTML`` as soon as the file ``written`` is there: the tests that
    read it run beside the rest of the build."""
    _start_build(request.config)
    _wait_for(lambda: RESULT.is_file() or written.is_file())
    if RESULT.is_file() and json.loads(RESULT.read_text())["returncode"]:
        pytest.fail(
            "the book build failed (see "
            "test_the_book_builds_without_warnings)",
            pytrace=False,
        )
    return HTML


@pytest.fixture(scope="session")
def english_pages(request):
    """The English pages, written, and the English build's execution report
    (the PDFs and the Chinese edition may still be coming)."""
    # book_pdf writes _pdf/book.html from the pages before it prints
    return _written(request, HTML / "_pdf" / "book.html")


@pytest.fixture(scope="session")
def chinese_pages(request, english_pages):
    """The Chinese pages (``HTML / "zh"``) and the English ones, written,
    and each edition's report of how its notebooks got their outputs."""
    html = _written(request, HTML / "zh" / "_pdf" / "book.html")
    _wait_for(lambda: EXECUTION.is_file() and EXECUTION_ZH.is_file())
    return html


@pytest.fixture(scope="session")
def english_pdf(request, english_pages):
    """``HTML`` with the English PDF printed (the Chinese one may still be
    printing)."""
    return _written(request, PDF)


@pytest.fixture(scope="session")
def book_build(request):
    """The session's one build of the book, successful or not."""
    _start_build(request.config)
    _wait_for(RESULT.is_file)
    result = json.loads(RESULT.read_text())
    return Build(
        returncode=result["returncode"],
        log=LOG.read_text(),
        seconds=result["seconds"],
        html=HTML,
        execution=json.loads(EXECUTION.read_text())
        if EXECUTION.is_file()
        else {},
    )


@pytest.fixture(scope="session")
def built_book(book_build):
    """``HTML`` of a build that succeeded; the pages' tests need nothing
    less."""
    if book_build.returncode != 0:
        pytest.fail(
            "the book build failed (see "
            "test_the_book_builds_without_warnings)",
            pytrace=False,
        )
    return book_build.html


# -- the report -------------------------------------------------------------


def pytest_terminal_summary(terminalreporter):
    """How long nbval took for each chapter (cells only, without the kernel's
    start), then the book build and how it got each chapter's outputs."""
    if _ended:
        terminalreporter.section("chapters run by nbval")
    for path, (seconds, failed, cached) in sorted(_ended.items()):
        status = "cached for the book" if cached else "not cached"
        if failed:
            status = f"{failed} cells failed, {status}"
        terminalreporter.write_line(
            f"{path.stem:40s} {seconds:6.1f} s  {status}"
        )
    if not (RESULT.is_file() and EXECUTION.is_file()):
        return
    seconds = json.loads(RESULT.read_text())["seconds"]
    terminalreporter.section(f"book build: {seconds:.0f} s")
    for docname, data in sorted(json.loads(EXECUTION.read_text()).items()):
        if data["reused"]:
            how = "outputs reused from the cache"
        else:
            how = f"executed in {data['runtime']:.1f} s"
        if not data["succeeded"]:
            how += f", FAILED ({data['error']})"
        terminalreporter.write_line(f"{docname:40s} {how}")


if __name__ == "__main__":  # started by _start_build
    build()
