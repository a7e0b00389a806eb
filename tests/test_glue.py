"""Numbers pasted into the prose pages with myst-nb's glue roles are on the
built pages.

A page quotes a number measured in a chapter with
``{glue:text}`../notebooks/NN_x.ipynb::key:.1f` `` (see the README). When the
notebook glues no such key, myst-nb only warns and leaves a gap in the
sentence, and a mistyped role also leaves a gap. Each check here reads the glue
roles from the page's source and finds one pasted value on the built page for
each.
"""

import html
import re
import subprocess
import sys

import nbformat
import pytest
from support import ROOT

GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>[a-z]*))?\}`(?P<target>[^`]+)`")
PAGES = sorted(
    path.relative_to(ROOT).as_posix() for path in (ROOT / "book").glob("*.md")
)


def glue_problems(page, source_root, html_root):
    """What is wrong with the glued numbers of ``page`` (a path relative to
    ``source_root``).

    Every ``{glue:text}`` role becomes one ``<span class="pasted-text">`` on
    the built page; a key the notebook does not glue becomes nothing at all
    (myst-nb only warns), so the spans are counted. The executed notebooks
    cannot be asked instead: myst-nb removes the outputs of ``glue(...,
    display=False)`` from the copies it writes.
    """
    source = (source_root / page).read_text()
    built = (html_root / page).with_suffix(".html").read_text()
    article = re.sub(r"<[^>]+>", " ", built.split('role="main"', 1)[-1])
    problems = (
        [f"{page}: a glue role shows as raw text"]
        if "{glue" in html.unescape(article)
        else []
    )
    texts = []
    for match in GLUE_ROLE.finditer(source):
        kind, target = match["kind"] or "any", match["target"]
        path, _, key_format = target.rpartition("::")
        if kind not in ("any", "text", "md", "math"):
            problems.append(
                f"{page}: unknown role {{glue:{kind}}} (myst-nb drops it and "
                "leaves a gap)"
            )
        elif not path:
            problems.append(
                f"{page}: {target!r} must name the notebook, e.g. "
                "../notebooks/NN_x.ipynb::key:.2f"
            )
        elif kind == "text" and ":" not in key_format:
            problems.append(
                f"{page}: {target!r} needs a format, e.g. ::{key_format}:.2f "
                "(myst-nb reads the key otherwise)"
            )
        elif kind == "text":
            texts.append(target)
    pasted = re.findall(
        r'<span class="pasted-text">(.*?)</span>', built, flags=re.DOTALL
    )
    if len(pasted) != len(texts):
        problems.append(
            f"{page}: {len(texts)} {{glue:text}} roles but {len(pasted)} "
            "pasted values on the built page; "
            f"a notebook does not glue one of {texts}"
        )
    problems += [
        f"{page}: an empty pasted value"
        for value in pasted
        if not value.strip()
    ]
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_glued_number_is_on_the_built_page(english_pages, page):
    assert glue_problems(page, ROOT, english_pages) == []


def test_the_check_catches_a_missing_and_a_mistyped_glue(tmp_path):
    """A two-page book: a notebook that glues one number; a page that pastes
    it, asks for a key the notebook does not glue, and mistypes the role
    (myst-nb warns and leaves gaps for both)."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Chapter")]
    )
    glued = nbformat.v4.new_output(
        "display_data",
        data={"text/plain": "0.48213"},
        metadata={"scrapbook": {"name": "ch9_gap", "mime_prefix": ""}},
    )
    notebook.cells.append(
        nbformat.v4.new_code_cell("glue('ch9_gap', 0.48213)", outputs=[glued])
    )
    nbformat.write(notebook, tmp_path / "chapter.ipynb")
    (tmp_path / "page.md").write_text(
        "# Page\n\nGap {glue:text}`chapter.ipynb::ch9_gap:.2f`, lost "
        "{glue:text}`chapter.ipynb::ch9_lost:.2f`,"
        " typo {glue:txt}`chapter.ipynb::ch9_gap:.2f`.\n"
    )
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_nb']\nroot_doc = 'page'\nnb_execution_mode = "
        "'off'\n"
    )
    html_root = tmp_path / "_build" / "html"
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-q",
        "-b",
        "html",
        str(tmp_path),
        str(html_root),
    ]
    subprocess.run(command, capture_output=True, check=True, timeout=120)
    assert (
        '<span class="pasted-text">0.48</span>'
        in (html_root / "page.html").read_text()
    )
    problems = glue_problems("page.md", tmp_path, html_root)
    assert any(
        "2 {glue:text} roles but 1 pasted values" in problem
        for problem in problems
    ), problems
    assert (
        "page.md: unknown role {glue:txt} (myst-nb drops it and leaves a gap)"
        in problems
    ), problems
    assert len(problems) == 2, problems
