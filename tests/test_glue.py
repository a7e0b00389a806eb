"""Numbers pasted into the prose pages with myst-nb's glue roles are on the built pages.

A page quotes a number measured in a chapter with ``{glue:text}`../notebooks/NN_x.ipynb::key:.1f` ``
(see the README). When the notebook glues no such key, myst-nb only warns and leaves a gap in the
sentence; when the role is mistyped, the raw text shows. Each check here reads the role from the
page's source, the glued value from the notebook that this build executed, and looks for the
formatted value on the built page.
"""

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from myst_nb.core.variables import format_plain_text
from support import ROOT

GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>[a-z]*))?\}`(?P<target>[^`]+)`")
PAGES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "book").glob("*.md"))


def glued_values(notebook):
    """``{key: text/plain}`` of every ``glue()`` output of an executed notebook."""
    values = {}
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                text = output["data"].get("text/plain", "")
                values[name] = "".join(text) if isinstance(text, list) else text
    return values


def glue_problems(page, source_root, html_root, executed_root):
    """What is wrong with the glued numbers of ``page`` (a path relative to ``source_root``)."""
    source = (source_root / page).read_text()
    built = (html_root / page).with_suffix(".html").read_text()
    article = re.sub(r"<[^>]+>", " ", built.split('role="main"', 1)[-1])
    problems = [f"{page}: a glue role shows as raw text"] if "{glue" in html.unescape(article) else []
    for match in GLUE_ROLE.finditer(source):
        kind, target = match["kind"] or "any", match["target"]
        path, _, key_format = target.rpartition("::")
        key, _, fmt_spec = key_format.partition(":") if kind == "text" else (key_format, "", "")
        notebook = (executed_root / Path(page).parent / path).resolve()
        values = glued_values(notebook) if notebook.is_file() else {}
        if kind not in ("any", "text", "md", "math"):
            problems.append(f"{page}: unknown role {{glue:{kind}}} (myst-nb drops it and leaves a gap)")
        elif not path or not notebook.is_file():
            problems.append(f"{page}: {target!r} must name an executed notebook, {notebook} is not one")
        elif key not in values:
            problems.append(f"{page}: {notebook.name} glues no value called {key!r}")
        elif kind == "text" and not fmt_spec:
            problems.append(f"{page}: {target!r} needs a format, e.g. ::{key}:.2f (myst-nb reads the key otherwise)")
        elif kind == "text":
            expected = html.escape(format_plain_text(values[key], fmt_spec), quote=False)
            if f'<span class="pasted-text">{expected}</span>' not in built:
                problems.append(f"{page}: {key} = {expected} is not on the built page")
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_glued_number_is_on_the_built_page(built_book, page):
    executed = built_book.parent / "jupyter_execute"
    assert glue_problems(page, ROOT, built_book, executed) == []


def test_the_check_catches_a_missing_and_a_mistyped_glue(tmp_path):
    """A two-page book: a notebook that glues one number; a page that pastes it, asks for a key
    the notebook does not glue, and mistypes the role (myst-nb warns and leaves gaps for both)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Chapter")])
    glued = nbformat.v4.new_output(
        "display_data", data={"text/plain": "0.48213"}, metadata={"scrapbook": {"name": "ch9_gap", "mime_prefix": ""}}
    )
    notebook.cells.append(nbformat.v4.new_code_cell("glue('ch9_gap', 0.48213)", outputs=[glued]))
    nbformat.write(notebook, tmp_path / "chapter.ipynb")
    (tmp_path / "page.md").write_text(
        "# Page\n\nGap {glue:text}`chapter.ipynb::ch9_gap:.2f`, lost {glue:text}`chapter.ipynb::ch9_lost:.2f`,"
        " typo {glue:txt}`chapter.ipynb::ch9_gap:.2f`.\n"
    )
    (tmp_path / "conf.py").write_text("extensions = ['myst_nb']\nroot_doc = 'page'\nnb_execution_mode = 'off'\n")
    html_root = tmp_path / "_build" / "html"  # myst-nb writes the notebooks next to it, as in the book
    command = [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(html_root)]
    subprocess.run(command, capture_output=True, check=True, timeout=120)
    executed = tmp_path / "_build" / "jupyter_execute"
    assert '<span class="pasted-text">0.48</span>' in (html_root / "page.html").read_text()
    problems = glue_problems("page.md", tmp_path, html_root, executed)
    assert any("glues no value called 'ch9_lost'" in problem for problem in problems), problems
    assert "page.md: unknown role {glue:txt} (myst-nb drops it and leaves a gap)" in problems, problems
    assert not any("ch9_gap =" in problem for problem in problems), problems
