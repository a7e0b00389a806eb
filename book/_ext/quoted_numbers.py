"""The numbers the answers page quotes, pinned: ``book/quoted.json`` holds
each one's value and where it comes from, and the test command checks the
value every chapter glued in its run against it (``tests/test_quoted.py``).

A quoted number moves only when someone means it to: a run that glues
another value fails the test, and ``python3 scripts/quoted.py`` writes the
file again from the test command's last run. The tolerances, in one place
(:data:`TOLERANCE`): a number read from a stored results file, or a count,
must be the same to the last digit; a number a chapter computes live may
move by its relative tolerance (a GPU's kernels round otherwise); a time
measured on the machine that runs the chapter is not pinned (its chapter
checks it against a bound).
"""

import ast
import json
import math
import re
from pathlib import Path

from build_paths import GLUED, ROOT

PAGE = ROOT / "book" / "answers.md"
QUOTED = ROOT / "book" / "quoted.json"
SOURCES = ("stored", "live", "machine")
# relative tolerance by source; None: not pinned
TOLERANCE = {"stored": 0.0, "live": 1e-3, "machine": None}
ROLE = re.compile(r"\{glue:text\}`[^`:]+\.ipynb::([a-z0-9_]+):[^`]*`")


def quoted_names(page=PAGE):
    """The names of the glued numbers ``page`` quotes, in order, once each."""
    return list(dict.fromkeys(ROLE.findall(Path(page).read_text())))


def glued_in(notebook):
    """``{name: value}`` of every number an executed ``notebook`` glued: its
    ``glue`` outputs (myst-nb's, marked ``scrapbook``) hold each value's repr
    (``0.25``, ``np.float64(0.25)``)."""
    found = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            data = output.get("data", {})
            shown = [v for k, v in data.items() if k.endswith("text/plain")]
            if name and shown:
                text = re.sub(r"^np\.\w+\((.*)\)$", r"\1", shown[0].strip())
                try:
                    found[name] = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    found[name] = text
    return found


def write_glued(notebook, folder=GLUED):
    """Write each number ``notebook`` glued into ``folder``, one file a
    name, for :func:`glued`."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    for name, value in glued_in(notebook).items():
        (Path(folder) / f"{name}.json").write_text(json.dumps(value))


def glued(folder=GLUED):
    """``{name: value}`` of every number glued into ``folder``."""
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted(Path(folder).glob("*.json"))
    }


def problems(expected, measured):
    """What differs between the pinned numbers (``{name: {"value",
    "source"}}``) and the ``measured`` ones (``{name: value}``), each within
    its source's tolerance; a count (an int) must be equal wherever it comes
    from."""
    found = []
    for name, pinned in expected.items():
        if pinned["source"] not in SOURCES:
            found.append(f"{name}: unknown source {pinned['source']!r}")
            continue
        tolerance = TOLERANCE[pinned["source"]]
        if tolerance is None:
            continue
        if name not in measured:
            found.append(f"{name}: no chapter glued it in this run")
            continue
        value, want = measured[name], pinned["value"]
        if isinstance(want, int) or isinstance(value, int):
            tolerance = 0.0
        if not math.isclose(value, want, rel_tol=tolerance, abs_tol=0.0):
            found.append(
                f"{name}: the page quotes {want!r} ({pinned['source']}), "
                f"the chapter glued {value!r} (tolerance {tolerance:g})"
            )
    return found


def write(measured, sources, path=QUOTED):
    """Write ``path``: every number the answers page quotes, its measured
    value and its source (``sources``: ``{name: source}``)."""
    names = quoted_names()
    missing = [n for n in names if n not in measured or n not in sources]
    if missing:
        raise ValueError(
            f"no measured value or no source for {missing}: run the test "
            "command first; give a new number its source with --source"
        )
    numbers = {
        name: {"value": measured[name], "source": sources[name]}
        for name in names
    }
    text = json.dumps({"tolerance": TOLERANCE, "numbers": numbers}, indent=1)
    Path(path).write_text(text + "\n")
    return numbers


def pinned(path=QUOTED):
    """``{name: {"value", "source"}}`` of ``path``, once its tolerances are
    the ones this code applies."""
    data = json.loads(Path(path).read_text())
    if data["tolerance"] != TOLERANCE:
        raise ValueError(
            f"{path} states the tolerances {data['tolerance']}, the check "
            f"applies {TOLERANCE}: write it again (scripts/quoted.py)"
        )
    return data["numbers"]
