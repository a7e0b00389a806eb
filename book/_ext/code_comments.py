"""The comments of the course's code in Chinese, for the Chinese edition; the
code itself stays as it ran, so one execution serves both editions.

A comment of words is a message of its page's catalog
(``locale/zh_CN/LC_MESSAGES``, beside the page's prose): a block of
whole-line comments at one indent, its lines joined (a bare ``#`` line ends
it), or the comment that ends a line of code. ``scripts/translations.py``
adds them to the catalogs; the Chinese build puts their translations in the
code cells and code blocks of its pages (``chinese_edition.py``), and the
Chinese download in its notebook's (``executed_downloads.py``). A block's
translation is wrapped again to the code's 79 columns, a Chinese character
taking two.
"""

import re
import unicodedata
from pathlib import Path

# the code blocks whose comments are read: Python (a notebook's cells are
# "ipython3") and a shell's
LANGUAGES = {"ipython3", "python", "bash", "sh", "shell"}
WIDTH = 79
WHOLE_LINE = re.compile(r"(?P<before>[ \t]*)#(?: (?P<text>.*))?")
# after code, as ruff formats it: two spaces or more, then "# "
AFTER_CODE = re.compile(r"(?P<before>.*\S[ \t]{2,})# (?P<text>.*)")
# what is code in a comment: a shape "(batch, seq, d)", a name with _, =, a
# digit or a dot inside it
CODE = re.compile(r"\([^()]*\)|\S*(?:[_=\d]|\w\.\w)\S*")
WORD = re.compile(r"[A-Za-z]{2,}")
CJK = re.compile(r"[\u3400-\u9fff]")
# a tool's directive, not words for the reader
DIRECTIVE = re.compile(r"(noqa|type:|fmt:|pragma)\b")


def comments(source):
    """The comments of ``source``: ``[(first, end, before, text)]``, one
    comment on lines ``first`` to ``end`` (exclusive), ``before`` what comes
    before the ``#`` of its first line (the indent, or the code it ends),
    ``text`` its words, its lines joined."""
    found = []
    for number, line in enumerate(source.split("\n")):
        match = line_comment(line)
        if match is None or not (match["text"] or "").strip():
            continue
        before, text = match["before"], match["text"].strip()
        last = found[-1] if found else None
        if (
            last
            and not before.strip()
            and (last[1], last[2]) == (number, before)
        ):
            last[1] += 1
            last[3] += " " + text
        else:
            found.append([number, number + 1, before, text])
    return [tuple(comment) for comment in found]


def line_comment(line):
    """The match of a line's comment, or None: a ``#`` inside a string (an
    odd number of quotes before it) begins none."""
    match = WHOLE_LINE.fullmatch(line) or AFTER_CODE.fullmatch(line)
    quotes = match and re.sub(r"\\.", "", match["before"])
    if match and (quotes.count('"') % 2 or quotes.count("'") % 2):
        return None
    return match


def words(text):
    """The English words of a comment, its code left out."""
    return WORD.findall(CODE.sub(" ", text))


def is_message(text):
    """Whether a comment is words a reader reads (two or more), so a message
    to translate: not a shape, a name or a tool's directive."""
    return len(words(text)) >= 2 and not DIRECTIVE.match(text)


def messages(source):
    """The comments of ``source`` to translate, in order, each once."""
    found = [text for *_, text in comments(source) if is_message(text)]
    return list(dict.fromkeys(found))


def page_code(path):
    """The code of a page (a notebook or a Markdown file) whose comments are
    read: a notebook's code cells and the code blocks of its Markdown in
    one of :data:`LANGUAGES`, as ``[source]``."""
    import nbformat
    from markdown_it import MarkdownIt

    path = Path(path)
    if path.suffix == ".md":
        cells = [("markdown", path.read_text(encoding="utf-8"))]
    else:
        notebook = nbformat.read(path, as_version=4)
        cells = [(cell.cell_type, cell.source) for cell in notebook.cells]
    code = []
    for kind, source in cells:
        if kind == "code":
            code.append(source)
        elif kind == "markdown":
            code += [
                token.content
                for token in MarkdownIt().parse(source)
                if token.type == "fence" and token.info.strip() in LANGUAGES
            ]
    return code


def in_chinese(source, translated):
    """``source`` with each comment that ``translated`` ({message:
    translation}) has in Chinese; a block wrapped to :data:`WIDTH`, a
    comment after code kept on its line."""
    lines = source.split("\n")
    for first, end, before, text in reversed(comments(source)):
        chinese = translated.get(text) if is_message(text) else None
        if chinese is None:
            continue
        if before.strip():
            lines[first:end] = [f"{before}# {chinese}"]
        else:
            width = WIDTH - columns(before) - 2
            wrapped = wrap(chinese, width)
            lines[first:end] = [f"{before}# {line}" for line in wrapped]
    return "\n".join(lines)


def english_lines(source):
    """The comment lines of ``source`` that are English: four words or more
    and no Chinese."""
    found = []
    for line in source.split("\n"):
        match = line_comment(line)
        text = (match and match["text"]) or ""
        if len(words(text)) >= 4 and not CJK.search(text):
            found.append(line.strip())
    return found


def columns(text):
    """How many columns of monospaced type ``text`` takes: a Chinese
    character (or a full-width mark) two."""
    return sum(
        2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


# what may not begin a line (a closing mark) or end one (an opening mark)
CLOSING = "，。；：、）」』》！？…%"
OPENING = "（「『《"
PIECE = re.compile(
    rf"[{OPENING}]*(?:[\u3400-\u9fff]|[^\s\u3400-\u9fff{CLOSING}{OPENING}]+"
    rf"|[{CLOSING}])[{CLOSING}]*|\s+"
)


def wrap(text, width):
    """``text`` in lines of at most ``width`` columns (a piece longer than
    that alone on its line): a line may break between two Chinese
    characters or at a space, not inside a Latin word nor before a closing
    mark."""
    lines, line = [], ""
    for piece in PIECE.findall(text):
        if line.strip() and columns(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        if line or not piece.isspace():
            line += piece
    return [*lines, line.rstrip()] if line.strip() else lines
