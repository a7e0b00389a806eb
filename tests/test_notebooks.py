"""Every notebook runs to the end, asserts included, in the book build.

The build (tests/conftest.py) executes each notebook once; these tests read
what it did, so a test run pays for one execution, not two. To run one chapter
on its own through nbval: ``python3 -m pytest
notebooks/04_heads_differ.ipynb``.
"""

import json

import pytest
from support import NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_to_the_end(book_build, path):
    data = book_build.execution.get(f"notebooks/{path.stem}")
    assert data is not None, f"the book build did not execute {path.name}"
    assert data["succeeded"], (
        f"{path.name} failed ({data['error']}):\n{data['traceback']}"
    )
    executed = json.loads(
        (book_build.executed / "notebooks" / path.name).read_text()
    )
    for index, cell in enumerate(executed["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("execution_count") is not None, (
            f"{path.name} cell {index} did not run"
        )
        errors = [
            output
            for output in cell["outputs"]
            if output["output_type"] == "error"
        ]
        assert not errors, (
            f"{path.name} cell {index} raised {errors[0]['ename']}: "
            f"{errors[0]['evalue']}"
        )
