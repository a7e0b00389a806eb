"""Sphinx extension: write what executing each notebook did to
``_build/execution.json``.

The build executes every notebook once; the tests read this report (did each
notebook run to the end, and how long did it take) instead of executing the
notebooks a second time.
"""

import json
from pathlib import Path


def _write_report(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    report = {
        docname: {
            key: data[key]
            for key in ("runtime", "succeeded", "error", "traceback")
        }
        for docname, metadata in getattr(app.env, "nb_metadata", {}).items()
        if (data := metadata.get("exec_data"))
    }
    path = Path(app.outdir).parent / "execution.json"
    path.write_text(json.dumps(report, indent=1, sort_keys=True))


def setup(app):
    app.connect("build-finished", _write_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
