"""What a chapter prints and shows, in Chinese: the words of the course's
catalog (``locale/zh_CN/outputs.po``, read by :func:`figure_editions.catalog`)
put into the lines it printed, its tables, its checked claims and its
figures, the numbers as the run wrote them. The Chinese edition's pages and
downloads are written with them (``book/_ext/chinese_edition.py``,
``book/_ext/executed_downloads.py``), and a Chinese download run in a
reader's own kernel shows its outputs with them (:func:`use`, called by the
download's first cell).
"""

import html
import re
import sys

from .figure_editions import MIME, catalog, translate

# a value's mark: its claim held, was not refuted (its seeds could not
# resolve it), or failed
MARKS = (" ✓", " ○", " ✗")
PARTS = re.compile(r"( / |; )")  # the parts of a cell that holds several


def cell_in_chinese(text, words):
    """A table cell in Chinese, its numbers as the run wrote them: the whole
    cell from ``words``, else each of its parts (``a / b``, ``a; b``); a
    value's mark ✓ or ✗ stays. None where ``words`` lacks a part."""
    mark = next((m for m in MARKS if text.endswith(m)), "")
    text = text.removesuffix(mark)
    whole = translate(text, words)
    if whole is not None:
        return whole + mark
    parts = PARTS.split(text)
    parts[::2] = [translate(part, words) for part in parts[::2]]
    if None in parts:
        return None
    return "".join(parts).replace("; ", "；") + mark


# the one line of a chapter's checked claims (mha_lib.course.report), in
# Chinese (the claims it opens to: :func:`folds_in_chinese`)
CLAIM_LINES = [
    (r"✓ (\d+) claims? checked", r"✓ 已检验 \1 条论断"),
    (r"✗ (\d+) of (\d+) claims failed", r"✗ \2 条论断中有 \1 条不成立"),
    (
        r"✓ (\d+) claims held again, on seeds ([\d-]+)",
        r"✓ \1 条论断在种子 \2 上再次成立",
    ),
    (
        r"✓ (\d+) claims held again, (\d+) not refuted \(○\), on seeds "
        r"([\d-]+)",
        r"✓ \1 条论断在种子 \3 上再次成立，\2 条未被推翻（○）",
    ),
]


def folds_in_chinese(text, words, missing=None):
    """The HTML of a folded list of claims or a folded table in Chinese: its
    line by :data:`CLAIM_LINES` or ``words``, its claims by ``words``; what
    ``words`` lacks goes to ``missing(what, text)`` and stays."""

    def line(match):
        line = html.unescape(match.group(1))
        for pattern, chinese in CLAIM_LINES:
            if re.fullmatch(pattern, line):
                line = re.sub(pattern, chinese, line)
                break
        else:
            line = in_chinese(line, words, "a folded table's line", missing)
        return f"<summary>{html.escape(line)}</summary>"

    def claim(match):
        claim = html.unescape(match.group(2))
        chinese = in_chinese(claim, words, "a claim", missing)
        return f"<li>{match.group(1)} {html.escape(chinese)}</li>"

    text = re.sub(r"<summary>(.*?)</summary>", line, text)
    if 'class="mha-claims' in text:
        text = re.sub(r"<li>([✓✗]) (.*?)</li>", claim, text, flags=re.S)
    return text


def in_chinese(text, words, what, missing=None):
    """``text`` (a claim, a figure's title) in Chinese from ``words``, its
    numbers as the run wrote them (:func:`figure_editions.translate`);
    where ``words`` lacks it, ``missing(what, text)`` and ``text``."""
    chinese = translate(text, words)
    if chinese is None and missing is not None:
        missing(what, text)
    return chinese or text


# a line the course's own code prints with parts that vary (a version, a
# device, a run's length), in Chinese
PRINTED_LINES = [
    (r"mha_lib (\S+), running on (\S+)", r"mha_lib \1，运行于 \2"),
    (r"weights verified: SHA-256 (\S+)", r"权重已核验：SHA-256 \1"),
    (
        r"(.+?): (\d+) minutes on (.+) \((\w+)\)",
        r"\1：在 \3（\4）上运行 \2 分钟",
    ),
    (
        r"Python (\S+), torch (\S+), as locked",
        r"Python \1、torch \2，即锁定的版本",
    ),
    (r"made with other versions than the lock's:", r"所用版本与锁定的不同："),
    (
        r"(.+?): (\d+) minutes in (\d+) parts, on (\d+) machines:",
        r"\1：\3 个部分共运行 \2 分钟，在 \4 台机器上：",
    ),
    (
        r"(\s*)(\d+) parts on (.+) \((\w+)\): Python (\S+), torch (\S+), "
        r"as locked",
        r"\1\2 个部分在 \3（\4）上：Python \5、torch \6，即锁定的版本",
    ),
    (
        r"(\s*)(\d+) parts on (.+) \((\w+)\), other versions than the "
        r"lock's:",
        r"\1\2 个部分在 \3（\4）上，所用版本与锁定的不同：",
    ),
    (r"(\s*)(python|torch) (\S+) \(the lock: (\S+)\)", r"\1\2 \3（锁定：\4）"),
]
# what reads as code in a printed line (a module's or a tensor's repr): a
# name called or set (Linear(, bias=), a name in brackets, with _ or dots,
# a quoted key, True, False, None
CODE_WORDS = re.compile(
    r"\w+(?=[=(])|\(\w+\)|\w*_\w*|\w+(?:\.\w+)+|'[^'\s]*'"
    r"|\b(?:True|False|None)\b"
)


def is_code(line):
    """Whether a printed line is code (a repr), which stays as printed: no
    word left once its code is taken out."""
    return not re.search(r"[A-Za-z]{2}", CODE_WORDS.sub("", line))


def printed_in_chinese(text, words, missing=None):
    """A printed output in Chinese: the whole of it from ``words``, else
    each of its lines (:func:`printed_line_in_chinese`)."""
    whole = translate(text.strip("\n"), words)
    if whole is not None:
        return text.replace(text.strip("\n"), whole)
    lines = []
    for line in text.split("\n"):
        lines.append(printed_line_in_chinese(line, words, missing))
    return "\n".join(lines)


def printed_line_in_chinese(line, words, missing=None):
    """One printed line in Chinese, from :data:`PRINTED_LINES` or
    ``words``, its indent and code kept; what ``words`` lacks goes to
    ``missing(what, line)`` and stays."""
    for pattern, chinese in PRINTED_LINES:
        if re.fullmatch(pattern, line.rstrip()):
            return re.sub(pattern, chinese, line.rstrip())
    key = line.strip()
    if not key or is_code(key):
        return line
    translated = translate(key, words)
    if translated is None:
        if missing is not None:
            missing("a printed line", key)
        return line
    return line[: len(line) - len(line.lstrip())] + translated


def output_in_chinese(data, words, metadata=None, missing=None):
    """An output's data (``{MIME type: value}``, as a notebook stores it)
    in Chinese, in place: a figure drawn in Chinese (its renderings for the
    book, :data:`figure_editions.MIME`, give way to the Chinese one, its
    size in ``metadata``), the cells of a printed table, a folded list of
    claims or a folded table."""
    renderings = data.pop(MIME, None)
    if renderings is not None:
        data["image/png"] = renderings["zh"]
        if metadata is not None:
            metadata["image/png"] = renderings["shown"]["zh"]
    if data.get("text/markdown", "").startswith("|"):
        rows = data["text/markdown"].split("\n")
        for index, row in enumerate(rows):
            cells = row.split("|")
            if index == 1 or len(cells) < 3:  # the rule under the header
                continue
            cells[1:-1] = [
                f" {_cell(cell.strip(), words, missing)} "
                for cell in cells[1:-1]
            ]
            rows[index] = "|".join(cells)
        data["text/markdown"] = "\n".join(rows)
    if "text/html" in data:
        data["text/html"] = folds_in_chinese(data["text/html"], words, missing)
    return data


def _cell(text, words, missing):
    chinese = cell_in_chinese(text, words)
    if chinese is None and missing is not None:
        missing("a table cell", text)
    return text if chinese is None else chinese


class PrintedInChinese:
    """A text stream that passes what is printed to it on to ``stream`` in
    Chinese (:func:`printed_in_chinese`), a whole print at a time."""

    def __init__(self, stream, words):
        self.stream, self.words, self.pending = stream, words, ""

    def write(self, text):
        self.pending += text
        if self.pending.endswith("\n"):
            self.flush()
        return len(text)

    def flush(self):
        if self.pending:
            done, self.pending = self.pending, ""
            self.stream.write(printed_in_chinese(done, self.words))
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


_as_written = {}  # the kernel's own display formatter and standard output


def use(language):
    """What this kernel prints and shows from now on in ``language``:
    ``"zh_CN"`` Chinese, from the course's catalog, as the Chinese edition
    shows it (:func:`output_in_chinese`, :func:`printed_in_chinese`);
    ``"en"`` as the code writes it. A Chinese download's first cell calls
    it, so that its chapter stays Chinese when run again. Outside IPython,
    or where the catalog is not there, nothing changes."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    formatter = shell.display_formatter
    if not _as_written:
        _as_written.update(format=formatter.format, stdout=sys.stdout)
    formatter.format, sys.stdout = _as_written["format"], _as_written["stdout"]
    words = catalog() if language.startswith("zh") else None
    if words is None:
        return

    def format_in_chinese(obj, include=None, exclude=None):
        data, metadata = _as_written["format"](obj, include, exclude)
        return output_in_chinese(data, words, metadata), metadata

    formatter.format = format_in_chinese
    sys.stdout = PrintedInChinese(sys.stdout, words)
