"""Every chapter runs once per test run, and the book shows that run.

With ``--nbval`` nbval runs each chapter cell by cell (a failing cell shows in
the report with its assertion) and the build reuses those executions from its
cache; these tests check that the build executed nothing again and that every
chapter on the built book has run to the end. One chapter on its own:
``python3 -m pytest --nbval notebooks/04_heads_differ.ipynb``.
"""

import json

import book_session
import pytest
from book_session import HTML
from support import NOTEBOOKS


@pytest.fixture(scope="module")
def execution(english_pages):
    """How the build got each chapter's outputs
    (``book/_ext/execution_report.py``, written with the pages, before the
    PDF)."""
    return json.loads(book_session.EXECUTION.read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_book_shows_one_run_of_each_chapter(request, execution, path):
    data = execution.get(f"notebooks/{path.stem}")
    assert data is not None, f"the book build has no outputs for {path.name}"
    assert data["succeeded"], (
        f"{path.name} failed ({data['error']}):\n{data['traceback']}"
    )
    chapters = getattr(request.config, "nbval_chapters", None)
    if chapters:  # nbval ran the chapters in this session
        assert data["reused"], f"the build executed {path.name} a second time"
    # the download: the chapter as the page shows it, carrying mha_lib first
    download = HTML / "_sources" / "notebooks" / path.name
    cells = json.loads(download.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code[0]["id"] == "install-mha-lib", (
        "the download does not carry mha_lib"
    )
    code = code[1:]
    for index, cell in enumerate(code):
        assert cell.get("execution_count") == index + 1, (
            f"{path.name}: code cell {index} did not run, or not in order"
        )
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        assert not errors, f"{path.name}: code cell {index} raised an error"


def test_a_kernel_that_dies_at_its_start_is_started_again():
    calls = []

    def dies_twice(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    start = book_session._tried_again(dies_twice)
    assert start(kernel_name="python") == ("manager", "client")
    assert len(calls) == 3 and book_session._tried_again(start) is start

    def always_dies(**kwargs):
        raise RuntimeError("Kernel died before replying to kernel_info")

    with pytest.raises(RuntimeError, match="Kernel died"):
        book_session._tried_again(always_dies)()
