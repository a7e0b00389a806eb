"""The Chinese edition as built (``_build/html/zh``), read without a browser:
built from the English build's run of the notebooks (nothing executed again,
every output and glued number the same), every page paired with its English
twin, no paragraph of prose left in English, and every character it shows
in the font the book serves. Opened in Chromium in
``test_chinese_pages.py``."""

import json
import re
from collections import Counter

import pytest
from book_session import EXECUTION, EXECUTION_ZH
from browsing import CHINESE, figures_as_drawn, pages
from bs4 import BeautifulSoup
from support import ROOT, extension

from mha_lib.course.figure_editions import NUMBER, translate

OUTPUTS = ROOT / "locale" / "zh_CN" / "outputs.po"

CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
FONT = ROOT / "book" / "_static" / "fonts" / "NotoSansSC-book.woff"
# what is not prose: code and its outputs, maths, the reference list
NOT_PROSE = (
    "div.cell_output, div.cell_input, pre, .math, div.math, .citation, "
    "div.bibliography"
)


def _read(path):
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def twins(chinese_pages):
    """[(English page, Chinese page)], as their parsed HTML and name."""
    html = chinese_pages
    english = pages(html)
    chinese = pages(html, CHINESE)
    assert chinese, "the build wrote no Chinese pages (_build/html/zh)"
    assert [CHINESE + name for name in english] == chinese, (
        "the two editions have different pages: "
        f"{set(english) ^ {n.removeprefix(CHINESE) for n in chinese}}"
    )
    return [
        (name, _read(html / name), _read(html / CHINESE / name))
        for name in english
    ]


def test_each_page_links_to_its_twin_in_the_other_edition(twins):
    for name, english, chinese in twins:
        if name == "search.html":  # drawn by the theme's template alone
            continue
        up = "../" * name.count("/")
        to_chinese = english.select_one("p.edition-switch a")
        to_english = chinese.select_one("p.edition-switch a")
        assert to_chinese["href"] == f"{up}zh/{name}", name
        assert to_english["href"] == f"../{up}{name}", name
        assert chinese.html["lang"] == "zh-CN", name


def test_every_link_of_a_translated_paragraph_goes_where_the_english_does(
    twins,
):
    """A page's links within the book, counted by target and anchor, are the
    same in both editions (the Chinese answers had sent every link of a list
    to one page's sections to the last of them)."""
    for name, english, chinese in twins:
        links = [
            Counter(
                a["href"]
                for a in page.select(
                    "article a.reference.internal:not(.image-reference)[href]"
                )
            )
            for page in (english, chinese)
        ]
        assert links[0] == links[1], (name, links[0] - links[1])


def _maths(page):
    """Every equation of a page, inline and display, with the words of its
    ``\\text{...}`` left out (they are translated)."""
    found = []
    for node in page.select("article .math"):
        tex = re.sub(r"\\text\{[^{}]*\}", r"\\text{}", node.get_text())
        found.append(" ".join(tex.split()))
    return found


def test_every_equation_of_an_english_page_is_on_its_chinese_twin(twins):
    for name, english, chinese in twins:
        # the same equations, in the order each language's sentences take
        ours, theirs = Counter(_maths(english)), Counter(_maths(chinese))
        assert ours == theirs, (
            f"{name}: the Chinese page's equations differ from the English "
            f"page's: {[m for m in ours if m not in theirs][:3]} became "
            f"{[m for m in theirs if m not in ours][:3]}"
        )
        lost = [m for m in theirs if m.strip(r"\[]() :") == ""]
        assert not lost, f"{name}: an equation reads {lost[0]!r}"


def test_the_tables_a_chapter_prints_are_in_chinese(twins):
    """Their numbers are the run's, the same in both editions (checked
    below); the words of their cells come from ``locale/zh_CN/outputs.po``,
    where code names, symbols and the treebank's labels stay (a message
    translated as itself). The line that folds a table or a section's
    claims is Chinese too."""
    words = extension("chinese_edition").catalog_file(OUTPUTS)
    cells, english_left = 0, []
    for name, english, chinese in twins:
        select = "article .cell_output table :is(th, td)"
        ours, theirs = english.select(select), chinese.select(select)
        assert len(ours) == len(theirs), name
        for cell in theirs:
            text = re.sub(r"\\\(.*?\\\)", "", cell.get_text(" ", strip=True))
            cells += 1
            if re.search("[A-Za-z]{2}", text) and not CJK.search(text):
                if translate(text, words) != text:
                    english_left.append((name, text))
    assert cells > 1500 and not english_left, english_left[:10]
    folds = [
        (name, line.get_text())
        for name, _, chinese in twins
        for line in chinese.select("article .cell_output details > summary")
    ]
    english_folds = [fold for fold in folds if not CJK.search(fold[1])]
    assert len(folds) > 40 and not english_folds, english_folds[:5]


def test_the_chinese_edition_executed_nothing(chinese_pages):
    """Its outputs are the English build's: every notebook's came from the
    execution cache the English build filled."""
    english, chinese = (
        json.loads(path.read_text()) for path in (EXECUTION, EXECUTION_ZH)
    )
    assert chinese.keys() == english.keys()
    assert all(line["reused"] for line in chinese.values()), chinese


# what the Chinese edition writes in an interactive figure's specification
# (book/_ext/chinese_edition.py): its words, checked below, and the room
# under slanted labels for a Chinese axis title
FIGURE_WORDS = {
    "name",
    "labels",
    "title",
    "description",
    "labelExpr",
    "titlePadding",
}


def _without_words(spec):
    """An interactive figure's specification without its words: its data,
    marks and choices (a tooltip's field calculated in Chinese, "task (zh)",
    read as the data field it shows)."""
    if isinstance(spec, dict):
        kept = {
            key: _without_words(value)
            for key, value in spec.items()
            if key not in FIGURE_WORDS
        }
        if isinstance(kept.get("field"), str):
            kept["field"] = kept["field"].removesuffix(" (zh)")
        if isinstance(kept.get("transform"), list):
            kept["transform"] = [
                step
                for step in kept["transform"]
                if not str(step.get("as", "")).endswith(" (zh)")
            ]
            if not kept["transform"]:
                del kept["transform"]
        return {key: value for key, value in kept.items() if value != {}}
    if isinstance(spec, list):
        return [_without_words(value) for value in spec]
    return spec


def _outputs(page):
    """Every code cell's output as HTML, its tables' header cells, the
    lines that fold claims and tables and the claims left out, and what it
    printed but its numbers: the Chinese edition translates their words
    (checked above and below); a figure is drawn in Chinese (checked below),
    so its image files are left out too, and so are an interactive figure's
    words."""
    spec = extension("chinese_edition").ControlsTranslated.SPEC
    found = []
    for div in page.select("div.cell_output"):
        div = BeautifulSoup(str(div), "html.parser")
        for head in div.select("thead, summary, details.mha-claims li"):
            head.decompose()
        for cell in div.select("tbody :is(th, td)"):  # its numbers stay
            cell.string = " ".join(sorted(NUMBER.findall(cell.get_text())))
        for printed in div.select("pre"):  # its numbers stay
            printed.string = " ".join(
                sorted(NUMBER.findall(printed.get_text()))
            )
        for image in div.select("img, a.image-reference"):  # checked below
            for key in ("src", "href", "alt", "style"):  # its size too
                if image.has_attr(key):
                    image[key] = "figure"
        for script in div.select("script"):
            text = script.get_text()
            match = spec.search(text)
            if match:
                figure = json.loads(match.group(2).replace("<\\/", "</"))
                script.string = (
                    text[: match.start(2)]
                    + json.dumps(_without_words(figure), sort_keys=True)
                    + text[match.end(2) :]
                )
        found.append(str(div))
    return found


def test_the_controls_of_a_figure_are_named_in_chinese(twins):
    """Their names and word choices (task: 偏移复制) come from
    ``locale/zh_CN/outputs.po``; numbers and sentences of the data stay."""
    names = []
    for _, _, chinese in twins:
        for script in chinese.select("article .cell_output script"):
            for bind in re.findall(r'"bind":(\{[^{}]*\})', script.get_text()):
                bind = json.loads(bind)
                names += [bind.get("name", "")] + [
                    label
                    for label in bind.get("labels", [])
                    if re.fullmatch(r"[A-Za-z][A-Za-z ]*", label)
                ]
    english = [n for n in names if len(n.strip()) > 1 and not CJK.search(n)]
    assert len(names) >= 6 and not english, english


IMAGES = "div.cell_output img"


def test_every_output_and_glued_number_is_the_same_in_both(twins):
    """... but a figure's words, which the Chinese page shows in Chinese."""
    twin = {}
    for figure in figures_as_drawn():
        twin[figure["en"][0]] = figure["zh"][0]
        twin[figure["narrow"][0]] = figure["zh-narrow"][0]
    outputs = images = 0
    for name, english, chinese in twins:
        assert _outputs(chinese) == _outputs(english), name
        glued = [
            Counter(span.get_text() for span in page.select(".pasted-text"))
            for page in (english, chinese)
        ]
        assert glued[0] == glued[1], name
        outputs += len(_outputs(english))
        # each figure: on the Chinese page, its Chinese renderings, drawn
        # from the same run
        shown = [
            [img["src"].rsplit("/", 1)[-1] for img in page.select(IMAGES)]
            for page in (english, chinese)
        ]
        assert shown[1] == [twin.get(file, file) for file in shown[0]], name
        images += len(shown[0])
    assert outputs > 100 and images > 20, (outputs, images)


def prose(page):
    """The text of each paragraph, list item, heading and table cell of a
    page's article that is not in code, output, maths or a reference."""
    article = page.select_one("article.bd-article")
    if article is None:  # the search page: no prose
        return []
    skipped = {id(tag) for tag in article.select(NOT_PROSE)}
    return [
        " ".join(block.get_text(" ", strip=True).split())
        for block in article.select("p, li, h1, h2, h3, td, th, dt, dd")
        if not block.select("p, li, dd")  # the innermost block only
        and id(block) not in skipped
        and not any(id(parent) in skipped for parent in block.parents)
    ]


def english_prose(texts):
    """The blocks of ``texts`` written in English: four words or more and
    not one Chinese character."""
    return [
        text
        for text in texts
        if len(re.findall(r"[A-Za-z]{2,}", text)) >= 4 and not CJK.search(text)
    ]


def test_no_chinese_page_leaves_a_paragraph_in_english(twins):
    counted = 0
    for name, english, chinese in twins:
        assert not english_prose(prose(chinese)), name
        counted += len(english_prose(prose(english)))
    # the same measure finds the English edition's prose
    assert counted > 400, counted


def test_the_measure_of_english_prose():
    assert english_prose(["Every head reads all of x."]) == [
        "Every head reads all of x."
    ]
    assert not english_prose(["每个头都读取 x 的全部（all of x）。"])
    assert not english_prose(["Q7", "PyTorch 2.13"])


# four English words in a row: what a sentence has and code has not
ENGLISH_WORD = r"[A-Za-z]+(?:['’][A-Za-z]+)?"
FOUR_ENGLISH_WORDS = re.compile(
    rf"{ENGLISH_WORD}(?:[ ,;:]+{ENGLISH_WORD}){{3}}"
)
# the printed lines a Chinese page keeps in English (their start), and why
ENGLISH_KEPT = {
    # Chapter 7's training text, quoted as the model reads it
    "Simon Peter, a servant": "the King James text Chapter 7 trains on",
    "obtained like precious faith": "the King James text",
    "Saviour Jesus Christ: Grace": "the King James text",
}


def english_lines(page):
    """The lines a page's code printed with four English words in a row,
    but those :data:`ENGLISH_KEPT` lists."""
    return [
        line.strip()
        for printed in page.select("article div.cell_output pre")
        for line in printed.get_text().splitlines()
        if FOUR_ENGLISH_WORDS.search(line)
        and not line.strip().startswith(tuple(ENGLISH_KEPT))
    ]


def test_no_chinese_page_prints_a_line_in_english(twins):
    """What the chapters print (their results, a run's versions, the
    messages of their set-up) is Chinese on the Chinese pages: code (a
    module's repr), names and numbers stay."""
    counted = 0
    for name, english, chinese in twins:
        assert not english_lines(chinese), (name, english_lines(chinese))
        counted += len(english_lines(english))
    # the same measure finds the English edition's printed sentences
    assert counted > 30, counted


def english_comments(page):
    """The comment lines of a page's code with four English words or more
    and no Chinese (``book/_ext/code_comments.py``)."""
    comments = extension("code_comments")
    return [
        line
        for code in page.select("article pre")
        if not code.find_parent("div", class_="cell_output")
        for line in comments.english_lines(code.get_text())
    ]


def test_the_chinese_pages_code_comments_are_chinese(twins):
    """At most five English comment lines on all the Chinese pages; the
    code itself is the English pages'."""
    english = [
        (name, line)
        for name, _, chinese in twins
        for line in english_comments(chinese)
    ]
    assert len(english) <= 5, english
    counted = sum(len(english_comments(page)) for _, page, _ in twins)
    assert counted > 150, counted  # the same measure finds the English


def english_hover_text(page):
    """The hover text of a page's frame (title, aria-label, data-bs-title)
    with two English words or more and no Chinese; the outputs of code and
    the references (a citation's hover text is its entry) left out."""
    found = []
    for element in page.select("[title], [aria-label], [data-bs-title]"):
        if element.find_parent("div", class_="cell_output") or (
            element.find_parent("span", class_="bibtex-citation")
        ):
            continue
        for name in ("title", "aria-label", "data-bs-title"):
            text = element.get(name) or ""
            if len(re.findall(r"[A-Za-z]{2,}", text)) >= 2 and not CJK.search(
                text
            ):
                found.append(text)
    return found


def test_the_hover_text_of_a_chinese_page_is_chinese(twins):
    for name, _, chinese in twins:
        assert not english_hover_text(chinese), name
    counted = sum(len(english_hover_text(page)) for _, page, _ in twins)
    assert counted > 100, counted  # the same measure finds the English


def download_labels(page):
    """The words of a page's download menu."""
    return [
        label.get_text(strip=True)
        for label in page.select(
            ".dropdown-download-buttons .btn__text-container"
        )
    ]


def test_the_download_menu_names_its_files_in_each_edition(twins):
    """A chapter's menu names the notebook and the book's PDF, not the bare
    suffixes ".ipynb" and ".pdf"; in Chinese on a Chinese page."""
    chapters = [t for t in twins if t[0].startswith("notebooks/")]
    assert len(chapters) == 7
    for name, english, chinese in chapters:
        assert download_labels(english) == [
            "This chapter (.ipynb)",
            "The book (PDF)",
        ], name
        assert download_labels(chinese) == [
            "本章笔记本（.ipynb）",
            "整本书（PDF）",
        ], name


def test_the_measure_of_a_printed_line_in_english():
    sentence = "36 heads removed before fewer than half of the held-out"
    assert FOUR_ENGLISH_WORDS.search(sentence)
    assert FOUR_ENGLISH_WORDS.search(
        "made with other versions than the lock's:"
    )
    for code in (
        "  (q_proj): Linear(in_features=384, out_features=384, bias=True)",
        "  d_model=384, num_heads=12, head_dim=32, num_kv_heads=12",
        "{'chunked': '740,352', 'standard': '2,362,368'}",
        "移除 36 个头后，保有最近邻的留出句子才不足一半；",
        "python3 scripts/ch7.py：在 NVIDIA H200（cuda）上运行 90 分钟",
    ):
        assert not FOUR_ENGLISH_WORDS.search(code), code


def test_the_book_serves_a_glyph_for_every_chinese_character(twins):
    from fontTools.ttLib import TTFont

    covered = set(map(chr, TTFont(FONT).getBestCmap()))
    shown = set()
    for _, _, chinese in twins:
        shown |= set(CJK.findall(chinese.get_text()))
    assert len(shown) > 500, len(shown)
    missing = "".join(sorted(shown - covered))
    assert not missing, (
        f"characters outside {FONT.name}: {missing} (python3 "
        "scripts/translations.py --font NotoSansCJK-Regular.ttc)"
    )


# a string in an interactive figure's specification, as JSON writes it
JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


# what a page does not draw in its own fonts (maths is MathJax's), and what
# it draws in its monospace
NOT_DRAWN = {"script", "style", "noscript", "mjx-container", "math"}
MONOSPACE = {"pre", "code"}


def _drawn_text(page):
    """(text in the pages' sans-serif, text in their monospace) of a page,
    its interactive figures' strings included."""
    sans = [
        json.loads(f'"{string}"')
        for script in page.select("article .cell_output script")
        for string in JSON_STRING.findall(script.get_text())
    ]
    mono = []
    for string in page.find_all(string=True):
        around = set()
        for parent in string.parents:
            around.add(parent.name)
            if "math" in (parent.get("class") or []):
                around.add("math")
        if not around & NOT_DRAWN:
            (mono if around & MONOSPACE else sans).append(str(string))
    return "".join(sans), "".join(mono)


def test_every_character_is_drawn_in_a_font_the_book_serves(twins):
    """Both editions, code and figures' labels included: each character
    shown is in the faces the book serves (book/_static/fonts: DejaVu for
    Latin and symbols, python3 scripts/fonts.py; Noto Sans SC for Chinese),
    so no page falls back on the machine's fonts."""
    from fontTools.ttLib import TTFont

    fonts = FONT.parent
    sans = set(map(chr, TTFont(fonts / "DejaVuSans.woff").getBestCmap()))
    mono = set(map(chr, TTFont(fonts / "DejaVuSansMono.woff").getBestCmap()))
    chinese = set(map(chr, TTFont(FONT).getBestCmap()))
    missing = {}
    for name, *editions in twins:
        for page in editions:
            for text, latin in zip(_drawn_text(page), (sans, mono)):
                for character in set(text) - latin - chinese:
                    if not character.isspace():
                        missing.setdefault(f"U+{ord(character):04X}", name)
    assert not missing, f"characters no font of the book has: {missing}"


def test_the_titles_of_an_interactive_figure_are_chinese(twins):
    """The chart's and its axes' titles: words in Chinese, symbols (h,
    W_Q) and numbers as the run wrote them."""
    titles = []
    for _, _, chinese in twins:
        for script in chinese.select("article .cell_output script"):
            titles += [
                json.loads(f'"{title}"')  # as JSON writes it: \\u8f93...
                for title in re.findall(
                    r'"title":"([^"]*)"', script.get_text()
                )
            ]
    english = [t for t in titles if re.search("[A-Za-z]{2}", t)]
    english = [t for t in english if not CJK.search(t)]
    assert len(titles) >= 20 and not english, english


def test_every_checked_claim_is_chinese_and_keeps_its_numbers(twins):
    from mha_lib.course.figure_editions import NUMBER

    count = 0
    for name, english, chinese in twins:
        claims = [
            [li.get_text() for li in page.select("details.mha-claims li")]
            for page in (english, chinese)
        ]
        assert len(claims[0]) == len(claims[1]), name
        for en, zh in zip(*claims):
            assert CJK.search(zh), f"{name}: {zh!r} is not in Chinese"
            assert zh[0] == en[0], f"{name}: {zh!r} held, {en!r} not"
            numbers = sorted(NUMBER.findall(en))
            assert sorted(NUMBER.findall(zh)) == numbers, (name, en, zh)
        count += len(claims[0])
    assert count > 200, count


def test_the_search_keeps_the_course_terms_whole():
    """Sphinx's Chinese search indexes the words jieba cuts (and each
    character); with the course's words list (``SEARCH_WORDS``) each term
    is a word of its own, so a search for it finds it as typed."""
    import jieba

    path = extension("chinese_edition").SEARCH_WORDS
    terms = path.read_text(encoding="utf-8").split()
    assert {"参数量", "不同的输出", "多头注意力"} <= set(terms)
    jieba.load_userdict(str(path))
    for term in terms:
        words = list(jieba.cut_for_search(f"本章说{term}，然后"))
        assert term in words, f"{term}: {'/'.join(words)}"
