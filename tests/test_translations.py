"""The Chinese edition's catalogs: every message translated, none fuzzy, and
every translation keeps what the build reads in its message (code, maths,
roles, links), so a number glued into a sentence or a reference cannot be
lost or changed in translation. (That every message of every page is in its
catalog is the Chinese build's own check: ``book/_ext/chinese_edition.py``
warns about any it lacks.)"""

import re
from collections import Counter

import pytest
from babel.messages.pofile import read_po
from support import ROOT

LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
CATALOGS = sorted(LOCALE.rglob("*.po"))
CJK = re.compile(r"[\u4e00-\u9fff]")

# what a translation must carry over unchanged: code spans, maths, roles
# (their target: a {term}`中文 <English term>` keeps the English term), link
# targets, HTML tags
CODE = re.compile(r"``.+?``|`[^`]+`")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.S)
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
TAG = re.compile(r"<(/?[a-z]+)(?:\s[^>]*)?>")


def _role_target(name, text):
    target = re.search(r"<([^<>]+)>\s*$", text)
    target = target.group(1) if target else text
    return name, target.strip().lower() if name == "term" else target


# words inside maths may be translated: \text{value path} as \text{值路径}
WORDS_IN_MATHS = re.compile(r"\\text\{[^{}]*\}")


def is_maths(text):
    """A display equation's message: its maths, between line breaks."""
    return text.startswith("\n") and text.endswith("\n") and "$" not in text


def kept(text):
    """Everything in a message or its translation that must be the same in
    both."""
    if is_maths(text):
        return {"maths": WORDS_IN_MATHS.sub(r"\\text{}", text)}
    roles = [_role_target(*match) for match in ROLE.findall(text)]
    bare = ROLE.sub("", text)
    maths = MATH.findall(CODE.sub("", bare))
    return {
        "roles": Counter(roles),
        "code": Counter(CODE.findall(bare)),
        "maths": Counter(WORDS_IN_MATHS.sub(r"\\text{}", m) for m in maths),
        "links": Counter(LINK.findall(bare)),
        "tags": Counter(TAG.findall(bare)),
    }


def messages(path):
    with open(path, "rb") as file:
        return [message for message in read_po(file) if message.id]


def _name(path):
    return path.relative_to(LOCALE).with_suffix("").as_posix()


def test_there_is_a_catalog_for_every_page():
    pages = {
        path.relative_to(ROOT).with_suffix("").as_posix()
        for folder in ("book", "notebooks")
        for path in (ROOT / folder).glob("*")
        if path.suffix in (".md", ".ipynb")
    }
    assert {_name(path) for path in CATALOGS} == pages


@pytest.mark.parametrize("path", CATALOGS, ids=_name)
def test_every_message_is_translated_and_none_is_fuzzy(path):
    missing = [m.id for m in messages(path) if not m.string]
    fuzzy = [m.id for m in messages(path) if m.fuzzy]
    assert not missing, f"{len(missing)} untranslated, e.g. {missing[0]!r}"
    assert not fuzzy, (
        f"{len(fuzzy)} fuzzy (the English changed since it was translated), "
        f"e.g. {fuzzy[0]!r}"
    )


@pytest.mark.parametrize("path", CATALOGS, ids=_name)
def test_translations_keep_code_maths_roles_and_links(path):
    for message in messages(path):
        if message.string:
            assert kept(message.string) == kept(message.id), message.id


@pytest.mark.parametrize("path", CATALOGS, ids=_name)
def test_translations_are_chinese(path):
    """A message of words (outside code and maths) is translated into
    Chinese, not copied."""
    for message in messages(path):
        if is_maths(message.id):
            continue
        prose = MATH.sub("", CODE.sub("", ROLE.sub("", message.id)))
        words = re.findall(r"[A-Za-z]{3,}", prose)
        if message.string and len(words) >= 4:
            assert CJK.search(message.string), message.id


def test_markup_is_compared():
    """The comparison sees a changed number format, a dropped code span and
    a term that links elsewhere."""
    english = (
        "Heads {term}`averaging bound` solved {glue:text}`n:d` of `x` "
        "in $d/h$ ([Chapter 4](04.ipynb))."
    )
    good = (
        "{term}`平均界 <averaging bound>` {glue:text}`n:d` `x` $d/h$ "
        "（[第 4 章](04.ipynb)）。"
    )
    assert kept(good) == kept(english)
    for bad in (
        good.replace("n:d", "n:.1f"),
        good.replace("`x` ", ""),
        good.replace("averaging bound", "head size"),
        good.replace("04.ipynb", "05.ipynb"),
    ):
        assert kept(bad) != kept(english)


def test_the_font_has_every_chinese_character_of_the_catalogs():
    from fontTools.ttLib import TTFont

    font = ROOT / "book" / "_static" / "fonts" / "NotoSansSC-book.woff"
    covered = set(map(chr, TTFont(font).getBestCmap()))
    used = {
        character
        for path in [*CATALOGS, LOCALE.parent / "outputs.po"]
        for message in messages(path)
        for character in CJK.findall(message.string or "")
    }
    missing = "".join(sorted(used - covered))
    assert len(used) > 500 and not missing, (
        f"characters outside {font.name}: {missing} (python3 "
        "scripts/translations.py --font NotoSansCJK-Regular.ttc)"
    )


def test_the_english_pages_link_to_chinese_in_two_glyphs_of_the_font():
    """ "中文" on every English page, from a 1.8 KB cut of the same font (its
    command is in book/_static/book.css)."""
    from fontTools.pens.recordingPen import RecordingPen
    from fontTools.ttLib import TTFont

    fonts = ROOT / "book" / "_static" / "fonts"
    switch = TTFont(fonts / "NotoSansSC-switch.woff")
    book = TTFont(fonts / "NotoSansSC-book.woff")
    assert set(switch.getBestCmap()) == {ord("中"), ord("文")}
    for character in "中文":
        drawn = []
        for font in (switch, book):
            pen = RecordingPen()
            font.getGlyphSet()[font.getBestCmap()[ord(character)]].draw(pen)
            drawn.append(pen.value)
        assert drawn[0] == drawn[1], f"{character} is not the book font's"


def emphasis(text):
    """How many bold and italic spans a message's Markdown makes."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(ROLE.sub("`role`", text))
    return html.count("<strong>"), html.count("<em>")


@pytest.mark.parametrize("path", CATALOGS, ids=_name)
def test_translations_keep_their_bold_and_italic(path):
    """In Chinese a ** next to a full-width mark or a role can fail to open
    or close (CommonMark's rule), and the reader sees the asterisks."""
    for message in messages(path):
        if message.string and not is_maths(message.id):
            assert emphasis(message.string) == emphasis(message.id), (
                message.string
            )
