"""Sphinx extension: the chapters run before Sphinx reads them, two at a
time, and a chapter that stalls fails the build.

With ``execute_notebooks: cache`` myst-nb runs each chapter missing from the
execution cache as it reads it, one after another. This extension runs them
first, once the builder is ready: each chapter whose code is not in the
cache runs in a process and kernel of its own, two at a time (one per core;
each kernel on one thread, as nbval's are under the test command), and its
outputs go into the cache, where myst-nb finds them. A chapter with a
failing cell is left out of the cache, so myst-nb runs it again and reports
the error as usual. A cell that sends nothing (no output, no message) for
``STALL`` seconds stops the build at once, naming the chapter and the cell,
with the kernel's Python stacks (its faulthandler, woken by SIGABRT);
``MHA_STALL_SECONDS`` sets another limit. The test command's build finds
every chapter cached by nbval and runs none. Chromium, which prints the PDF,
is looked for before any chapter runs.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STALL = 300  # seconds a cell may run without sending anything
AT_ONCE = 2  # chapters run together: one per core
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# run in each kernel as it starts, binding no name: on SIGUSR1 it writes every
# thread's Python stack to the file MHA_STACKS names, and runs on
WRITE_STACKS = (
    '__import__("faulthandler").register(__import__("signal").SIGUSR1, '
    'file=open(__import__("os").environ["MHA_STACKS"], "w"), '
    "all_threads=True)"
)
EXECUTOR = "chapters_ahead"  # recorded with each chapter it caches


class Stalled(Exception):
    """A cell sent nothing for the limit: its chapter, cell and stacks."""


def stall_seconds():
    return float(os.environ.get("MHA_STALL_SECONDS", STALL))


def run_chapter(path, cache_path, stall):
    """Run one chapter in a new kernel; cache it if every cell passed.
    Returns its seconds; raises :class:`Stalled` where a cell sent nothing
    for ``stall`` seconds."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from nbclient import NotebookClient

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=None,  # the watch below is the limit
        resources={"metadata": {"path": str(path.parent)}},
        extra_arguments=[f"--IPKernelApp.exec_lines={WRITE_STACKS}"],
    )
    heard, where = [None], [None]  # the time of the cell's last message

    def start(cell, cell_index):
        heard[0] = time.monotonic()
        where[0] = f"cell {cell_index} ({cell.source.splitlines()[0]!r} ...)"

    client.on_cell_start = start
    hear = client.process_message

    def process_message(msg, cell, cell_index):
        heard[0] = time.monotonic()  # any output or status
        return hear(msg, cell, cell_index)

    client.process_message = process_message
    with tempfile.TemporaryDirectory() as folder:
        stacks = Path(folder) / "stacks"

        async def watched():
            environment = {
                **os.environ,
                **ONE_THREAD,
                "MHA_STACKS": str(stacks),
            }
            run = asyncio.ensure_future(client.async_execute(env=environment))
            while not run.done():
                await asyncio.sleep(min(1.0, stall / 4))
                if heard[0] and time.monotonic() - heard[0] > stall:
                    kernel = client.km.provisioner.process
                    kernel.send_signal(signal.SIGUSR1)
                    await asyncio.sleep(1)  # it writes them
                    kernel.kill()
                    await asyncio.gather(run, return_exceptions=True)
                    raise Stalled(
                        f"{path.name}, {where[0]}, sent nothing for "
                        f"{stall:.0f} s; the kernel's Python stacks:\n"
                        + stacks.read_text()
                    )
            return run.result()

        started = time.perf_counter()
        try:
            asyncio.run(watched())
        except Stalled:
            raise
        except Exception:  # a failing cell: myst-nb runs it and says why
            return None
    seconds = time.perf_counter() - started
    source = nbformat.read(path, as_version=4)
    for cell, run in zip(source.cells, notebook.cells):
        if cell.cell_type == "code":
            cell.outputs = run.outputs
            cell.execution_count = run.execution_count
    bundle = CacheBundleIn(
        source,
        str(path),
        data={"execution_seconds": seconds, "executor": EXECUTOR},
    )
    get_cache(cache_path).cache_notebook_bundle(
        bundle, check_validity=False, overwrite=True
    )
    return seconds


def missing(env):
    """The chapters whose code has no outputs in the execution cache."""
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(env.mystnb_config.execution_cache_path)
    found = []
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        if path.suffix == ".ipynb":
            try:
                cache.match_cache_notebook(nbformat.read(path, as_version=4))
            except KeyError:
                found.append(path)
    return found


def _in_a_process(path, cache_path, stall):
    """:func:`run_chapter` in a process of its own: (seconds or None for a
    failed cell, the stall's message or None)."""
    result = subprocess.run(
        [sys.executable, __file__, json.dumps([str(path), cache_path, stall])],
        capture_output=True,
        text=True,
    )
    if result.returncode == 3:
        return None, result.stderr
    if result.returncode != 0:
        return None, None
    return json.loads(result.stdout.strip().splitlines()[-1]), None


def _run_ahead(app):
    from sphinx.errors import ExtensionError
    from sphinx.util import logging

    if app.builder.name != "html" or (app.config.language or "en") != "en":
        return
    from book_pdf import NO_CHROMIUM, find_chromium

    if not find_chromium():
        raise ExtensionError(NO_CHROMIUM)
    config = app.env.mystnb_config
    if config.execution_mode != "cache":
        return
    # the documents are not found yet: the toc's notebooks are
    app.env.find_files(app.config, app.builder)
    chapters = missing(app.env)
    if not chapters:
        return
    logger = logging.getLogger(__name__)
    stall = stall_seconds()
    logger.info(f"chapters_ahead: running {len(chapters)} chapters")
    with ThreadPoolExecutor(AT_ONCE) as pool:
        results = pool.map(
            lambda p: _in_a_process(p, config.execution_cache_path, stall),
            chapters,
        )
        for path, (seconds, stalled) in zip(chapters, results):
            if stalled:
                raise ExtensionError(f"a chapter stalled: {stalled}")
            done = "failed" if seconds is None else f"{seconds:.0f} s"
            logger.info(f"chapters_ahead: {path.stem}: {done}")


def setup(app):
    # after myst-nb's settings (priority 500) and execution_report's record
    # of the cache as the build found it (550)
    app.connect("builder-inited", _run_ahead, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # one chapter, started by _in_a_process
    chapter, cache_path, stall = json.loads(sys.argv[1])
    try:
        print(json.dumps(run_chapter(chapter, cache_path, stall)))
    except Stalled as stalled:
        print(stalled, file=sys.stderr)
        sys.exit(3)
