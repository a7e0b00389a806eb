"""A chapter as a plain notebook: its Markdown with no MyST left, for a
reader who downloads it and opens it in Colab, Kaggle or any Jupyter.

The book's pages render MyST roles; a plain Jupyter shows them as written.
So in a downloaded chapter each glued number is written in (formatted as the
page formats it, from the value the chapter glued in this run), each glossary
term and citation becomes plain text (the book has no published address to
link them to), each link to another page of the book keeps its words, and a
fenced block keeps its content. ``translated`` turns the prose into the
Chinese edition's, message by message, from the same catalogs the pages use.
"""

import itertools
import re
from pathlib import Path

from myst_nb.core.variables import format_plain_text

GLUE_PREFIX = "application/papermill.record/"
BIB = Path(__file__).resolve().parents[1] / "references.bib"


def glued_values(notebook):
    """``{name: text/plain}`` of every value the executed notebook glued."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            data = output.get("data", {})
            text = data.get(GLUE_PREFIX + "text/plain", data.get("text/plain"))
            if name and text is not None:
                values[name] = text
    return values


def citations(path=BIB):
    """``{key: "Author et al. 2020"}`` of the book's bibliography."""
    from pybtex.database import parse_file

    names = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor")
        last = [" ".join(p.last_names) for p in people or []]
        if len(last) > 2:
            who = f"{last[0]} et al."
        else:
            who = " and ".join(last) or key
        names[key] = f"{who} {entry.fields.get('year', '')}".strip()
    return names


def _glue(match, glued):
    name, _, spec = match[1].partition(":")
    if name not in glued:
        raise KeyError(f"the notebook glues no value named {name!r}")
    return format_plain_text(glued[name], spec)


def _cite(match, cited):
    keys = [key.strip() for key in match[1].split(",")]
    return "(" + "; ".join(cited.get(key, key) for key in keys) + ")"


def plain_markdown(text, glued, cited):
    """``text``, a Markdown cell of a chapter, with no MyST syntax left."""
    text = re.sub(
        r"\{glue(?::text)?\}`([^`]+)`", lambda m: _glue(m, glued), text
    )
    text = re.sub(
        r"\{cite(?::[pt])?\}`([^`]+)`", lambda m: _cite(m, cited), text
    )
    # {term}`words <Glossary entry>` and {term}`Entry`: the words
    text = re.sub(r"\{term\}`([^`<]+?)\s*<[^`>]+>`", r"\1", text)
    text = re.sub(r"\{term\}`([^`]+)`", r"\1", text)
    text = re.sub(r"\{(?:ref|doc)\}`([^`<]+?)\s*<[^`>]+>`", r"\1", text)
    # a link to another page of the book: its words (no address to go to)
    text = re.sub(
        r"\[([^\]]+)\]\((?!https?:|#)[^)\s]+\)", lambda m: m[1], text
    )
    # ```{container} classes ... ``` and other fences of MyST directives
    text = re.sub(
        r"^(`{3,}|:{3,})\{[\w-]+\}[^\n]*\n(.*?)^\1[ \t]*$",
        lambda m: m[2].rstrip("\n"),
        text,
        flags=re.M | re.S,
    )
    return re.sub(r"^\([\w-]+\)=[ \t]*\n", "", text, flags=re.M)


def translated(text, catalog):
    """``text``, a Markdown cell, with every message that ``catalog``
    (``{English: Chinese}``) translates replaced; a message is a paragraph,
    a heading, a list item or a table cell, as Sphinx extracts them."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    # where each line starts, moved by the replacements made before it
    lines = [0, *itertools.accumulate(map(len, text.splitlines(True)))]
    shift = start = 0  # start: the end of the last replacement
    for token in tokens:
        if token.type != "inline" or not token.content.strip():
            continue
        message = " ".join(token.content.split())
        if message not in catalog:
            continue
        words = token.content.split()
        # the whole message where its line starts or after: a table cell
        # "held" is not the word ending an earlier {glue:text}`ch7_both_held`
        spaced = r"[ \t]*\n?[ \t]*".join(map(re.escape, words))
        pattern = re.compile(r"(?<!\w)" + spaced + r"(?!\w)")
        line = lines[token.map[0]] + shift if token.map else 0
        found = pattern.search(text, max(start, line))
        if found is None:
            continue
        replacement = catalog[message]
        text = text[: found.start()] + replacement + text[found.end() :]
        shift += len(replacement) - len(found[0])
        start = found.start() + len(replacement)
    return text


def check_plain(text):
    """The MyST syntax left in ``text``: an empty list for a plain
    notebook's Markdown."""
    left = re.findall(r"\{(?:glue|term|cite|ref|doc|numref)[\w:]*\}`", text)
    left += re.findall(r"^(?:`{3,}|:{3,})\{[\w-]+\}", text, flags=re.M)
    return left
