"""The comments of the code in Chinese (``book/_ext/code_comments.py``): read
from the pages and their catalogs as the Chinese build and downloads read
them, without a build. The code itself stays as it ran."""

import pytest
from support import ROOT, extension

pytest.importorskip("babel")
pytest.importorskip("markdown_it")
comments = extension("code_comments")
chinese_edition = extension("chinese_edition")
PAGES = sorted(
    path
    for folder in ("book", "notebooks")
    for path in (ROOT / folder).glob("*")
    if path.suffix in (".md", ".ipynb")
)
ENGLISH_LEFT = 5  # comment lines of four English words a Chinese page keeps


def _docname(path):
    return path.relative_to(ROOT).with_suffix("").as_posix()


def _chinese_code(path):
    """[(English code, the same in Chinese)] of a page, from its catalog."""
    translated = chinese_edition.catalog(_docname(path))
    return [
        (code, comments.in_chinese(code, translated))
        for code in comments.page_code(path)
    ]


def _code_only(source):
    """``source`` with its comments left out: what runs."""
    kept = []
    for line in source.split("\n"):
        comment = comments.line_comment(line)
        if comment is None:
            kept.append(line)
        elif comment["before"].strip():
            kept.append(comment["before"].rstrip())
    return kept


def test_the_chinese_pages_keep_few_english_comments():
    english = [
        f"{_docname(path)}: {line}"
        for path in PAGES
        for _, chinese in _chinese_code(path)
        for line in comments.english_lines(chinese)
    ]
    assert len(english) <= ENGLISH_LEFT, "\n".join(english)


@pytest.mark.parametrize("path", PAGES, ids=_docname)
def test_the_chinese_code_is_the_code_that_ran(path):
    for english, chinese in _chinese_code(path):
        assert _code_only(chinese) == _code_only(english)


@pytest.mark.parametrize("path", PAGES, ids=_docname)
def test_a_translated_block_fits_the_code_column(path):
    for english, chinese in _chinese_code(path):
        for line in set(chinese.split("\n")) - set(english.split("\n")):
            if comments.WHOLE_LINE.fullmatch(line):
                assert comments.columns(line) <= comments.WIDTH, line


def test_comments_are_read_as_blocks_and_ends_of_lines():
    source = (
        "# Exercise 1: a block of\n"
        "# two lines.\n"
        "#\n"
        "# Another one.\n"
        "x = f('#  # not a comment')\n"
        "    # indented, its own block\n"
        "y = x  # after the code\n"
        "z = 1  # noqa: E501\n"
        "w = 2  # (batch, seq, d)"
    )
    assert comments.messages(source) == [
        "Exercise 1: a block of two lines.",
        "Another one.",
        "indented, its own block",
        "after the code",
    ]
    translated = {
        "Exercise 1: a block of two lines.": "练习 1：" + "很长的话，" * 10,
        "indented, its own block": "缩进的一块",
        "after the code": "代码之后",
    }
    lines = comments.in_chinese(source, translated).split("\n")
    assert lines[0].startswith("# 练习 1：很长") and "很长" in lines[1]
    assert lines[2] == "#"
    assert lines[3] == "# Another one.", "without a translation it stays"
    assert lines[5] == "    # 缩进的一块"
    assert lines[6] == "y = x  # 代码之后"
    assert max(comments.columns(line) for line in lines) <= comments.WIDTH


def test_chinese_wraps_between_characters_not_inside_words_or_before_marks():
    text = "头 W_Q 的输出，" + "很长" * 20 + "（见 head_dim）。"
    lines = comments.wrap(text, 20)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(comments.columns(line) <= 20 for line in lines)
    assert not any(line[0] in comments.CLOSING for line in lines)
    assert not any(line[-1] in comments.OPENING for line in lines)
    assert any(line.endswith("W_Q") or "W_Q" in line for line in lines)
    assert comments.wrap("a_very_long_name_alone", 5) == [
        "a_very_long_name_alone"
    ]


def test_an_english_comment_is_counted_and_a_chinese_one_is_not():
    source = (
        "# the loss with layer 1 cut\n"
        "# 第 1 层被切断后的损失 (with layer 1 cut)\n"
        "x = 1  # two words\n"
        "y = 2  # four English words here"
    )
    assert comments.english_lines(source) == [
        "# the loss with layer 1 cut",
        "y = 2  # four English words here",
    ]
