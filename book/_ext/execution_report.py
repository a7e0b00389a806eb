"""Sphinx extension: write how each notebook got its outputs to
``_build/execution.json``.

The notebooks run in ``cache`` mode: a notebook whose code is unchanged since
its outputs were cached is not executed again (the test command caches the
executions of its nbval run, so its build executes nothing). For every
notebook the report says whether its outputs were ``reused`` from a cache
entry that existed before this build, and what executing it did
(``runtime``, ``succeeded``, ``error``, ``traceback``).
"""

import json
from pathlib import Path

import nbformat

KEYS = ("runtime", "succeeded", "error", "traceback")


def entry(exec_data, record, before):
    """One notebook's line of the report: what executing it did, and whether
    its outputs came from a cache ``record`` already there ``before`` the
    build (``record`` is ``None`` where nothing was cached)."""
    line = {key: exec_data[key] for key in KEYS}
    line["reused"] = record is not None and record.pk in before
    return line


def _cache(app):
    from jupyter_cache import get_cache

    return get_cache(app.env.mystnb_config.execution_cache_path)


def _snapshot(app):
    """The cache entries there before anything is executed."""
    records = _cache(app).list_cache_records()
    app.env.execution_report_before = {record.pk for record in records}


def _write_report(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    before = getattr(app.env, "execution_report_before", set())
    cache = _cache(app)
    report = {}
    for docname, metadata in getattr(app.env, "nb_metadata", {}).items():
        data = metadata.get("exec_data")
        if not data:
            continue
        notebook = nbformat.read(app.env.doc2path(docname), as_version=4)
        try:
            record = cache.match_cache_notebook(notebook)
        except KeyError:  # not cached: its execution failed
            record = None
        report[docname] = entry(data, record, before)
    # _build/execution.json; the Chinese edition's build, which must execute
    # nothing, writes _build/execution-zh_CN.json
    name = "execution.json"
    if (app.config.language or "en") != "en":
        name = f"execution-{app.config.language}.json"
    path = Path(app.env.mystnb_config.execution_cache_path).parent / name
    written = path.with_suffix(".partial")
    written.write_text(json.dumps(report, indent=1, sort_keys=True))
    written.replace(path)  # whole, or not there (the tests read it early)


def setup(app):
    # after myst-nb's settings (500), before chapters_ahead runs any (600)
    app.connect("builder-inited", _snapshot, priority=550)
    app.connect("build-finished", _write_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
