"""Sphinx extension: the Chinese edition, built with the English one from the
same execution of the notebooks.

The English build starts the Chinese build, in a process of its own, once every
notebook's outputs are in the execution cache (``_build/.jupyter_cache``): at
its start where the test command's nbval run has cached them all, else once it
has read (and run) every page. The Chinese build reads the same notebooks and
the same cached outputs, translates the prose with Sphinx's gettext catalogs
(``locale/zh_CN/LC_MESSAGES``, one per page) and writes its pages, search index
and PDF to ``_build/html/zh``. The English build waits for it before it ends;
the Chinese build's warnings are reported as the English build's, so the
README's build command fails when either edition warns.

In the Chinese build a message of a page's prose that its catalog does not
translate (missing, empty or fuzzy: an English sentence edited since it was
translated) is a warning. Outputs of code are not prose: they come from the
notebooks' run, the same numbers in both editions; their words (what a
chapter prints, its tables, claims and interactive figures) come from the
course's catalog, ``locale/zh_CN/outputs.po``. The code stays as it ran; its
comments are messages of the page's catalog (``code_comments.py``).

Every page of either edition links to the same page of the other.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import code_comments
from build_paths import CACHE
from docutils import nodes
from sphinx import addnodes
from sphinx.search.zh import SearchChinese
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

import mha_lib.course.chinese as outputs
from mha_lib.course.chinese import cell_in_chinese
from mha_lib.course.figure_editions import translate

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
LANGUAGE = "zh_CN"
FOLDER = "zh"  # the Chinese edition's folder in _build/html
TITLE = "多头注意力，有问必答"
AUTHOR = "课程作者"
FONT = "_static/fonts/NotoSansSC-book.woff"  # book/_static/book.css uses it
SEARCH_TEXT = "搜索本书……"
LOCALE = ROOT / "locale" / LANGUAGE / "LC_MESSAGES"
# the course's terms, whole, for the search's word splitter (jieba), which
# would cut 多头注意力 into 多头 and 注意力 and so not find it as typed
SEARCH_WORDS = LOCALE.parent / "search_words.txt"


def build(outdir, builder="html", language="en", srcdir=ROOT, **options):
    """The README's build command (``jupyter-book build``) for one edition
    or builder; returns Sphinx's exit status."""
    from jupyter_book.sphinx import build_sphinx

    srcdir = Path(srcdir)
    overrides = {
        "external_toc_path": (srcdir / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "language": language,
        "nb_execution_cache_path": str(srcdir / CACHE.relative_to(ROOT)),
        **options.pop("overrides", {}),
    }
    return build_sphinx(
        srcdir,
        outdir,
        noconfig=True,
        path_config=str(srcdir / "_config.yml"),
        confoverrides=overrides,
        builder=builder,
        **options,
    )


def is_chinese(config):
    return (config.language or "en").startswith("zh")


# -- the English build starts and waits for the Chinese one -----------------


def all_cached(env):
    """Whether every notebook's outputs are in the execution cache (as after
    the test command's nbval run), so that the Chinese build can read them
    at once instead of after the English build has run what was missing."""
    from chapters_ahead import missing

    return not missing(env)


def _note_a_fresh_environment(app):
    """Whether this build began with an empty environment (``--all``, or
    the first build): then the Chinese one does too."""
    app.fresh_environment = not app.env.all_docs


def _start_early(app, env, docnames):
    if all_cached(env):
        _start_chinese(app, env)


def _start_chinese(app, env):
    if (
        is_chinese(app.config)
        or app.builder.name != "html"
        or hasattr(app, "chinese_build")
    ):
        return
    build_dir = Path(app.outdir).parent
    arguments = {
        "srcdir": str(app.srcdir),
        "outdir": str(Path(app.outdir) / FOLDER),
        # the English build's cache: the outputs it executed or found
        "overrides": {
            "nb_execution_cache_path": str(
                app.env.mystnb_config.execution_cache_path
            ),
        },
        "doctreedir": str(build_dir / f".doctrees-{FOLDER}"),
        # a fresh English environment (--all) reads every Chinese page again
        # too: their outputs may have changed where their sources did not
        "freshenv": getattr(app, "fresh_environment", False),
        # Sphinx 7 keeps -W in keep_going when --keep-going is given too
        "warningiserror": bool(app.warningiserror or app.keep_going),
        "keep_going": bool(app.keep_going),
    }
    log = open(build_dir / f"build-{FOLDER}.log", "w")
    app.chinese_build = (
        subprocess.Popen(
            [sys.executable, __file__, json.dumps(arguments)],
            cwd=app.srcdir,
            stdout=log,
            stderr=subprocess.STDOUT,
        ),
        log,
        time.perf_counter(),
    )


def _wait_for_chinese(app, exception):
    started = getattr(app, "chinese_build", None)
    if started is None:
        return
    process, log, began = started
    returncode = process.wait()
    log.close()
    text = Path(log.name).read_text(encoding="utf-8", errors="replace")
    seconds = time.perf_counter() - began
    if returncode != 0:
        problems = [
            line
            for line in text.splitlines()
            if "WARNING" in line or "ERROR" in line or "Error" in line
        ] or text.splitlines()[-20:]
        logger.warning(
            f"the Chinese edition's build failed (exit {returncode}, "
            f"{seconds:.0f} s; its log: {log.name}):\n" + "\n".join(problems)
        )
    else:
        logger.info(f"chinese_edition: built in {seconds:.0f} s")


# -- the Chinese build: every message of the prose translated ---------------

_catalogs = {}


def catalog(docname):
    """{message: translation} of one page's catalog, fuzzy and empty
    translations left out."""
    return catalog_file(LOCALE / f"{docname}.po")


def catalog_file(path):
    """{message: translation} of a catalog file (none if it is missing),
    fuzzy and empty translations left out."""
    if path not in _catalogs:
        from babel.messages.pofile import read_po

        translated = {}
        if path.is_file():
            with open(path, "rb") as file:
                for message in read_po(file):
                    if message.id and message.string and not message.fuzzy:
                        translated[message.id] = message.string
        _catalogs[path] = translated
    return _catalogs[path]


def _is_output(node):
    """Whether a node is, or is inside, the output of a code cell."""
    while node is not None:
        if isinstance(node, nodes.Element) and "cell_output" in node.get(
            "classes", []
        ):
            return True
        node = node.parent
    return False


class OutputsStayAsRun(SphinxTransform):
    """The outputs of code are the notebooks' run, the same in both
    editions: Sphinx's translation (priority 20) leaves them alone, even
    where a table's cell reads like a message of the prose."""

    default_priority = 10

    def apply(self):
        for node in self.document.findall(nodes.TextElement):
            if _is_output(node):
                node["translatable"] = False


CHINESE_CHARACTER = re.compile(r"[\u3400-\u9fff]")


class DisplayMathTranslated(SphinxTransform):
    """A display equation in Chinese. Sphinx's translation (priority 20)
    hands a translated equation to the parser as reStructuredText's "::"
    and an indented block, which a MyST page reads as the text "::", so the
    equation was lost. Here the catalog's equation goes in directly."""

    default_priority = 11

    def apply(self):
        if not is_chinese(self.config):
            return
        translated = catalog(self.env.docname)
        for node in self.document.findall(nodes.math_block):
            message = node.rawsource or node.astext()
            if message in translated:
                node[:] = [nodes.Text(translated[message])]
            node["translatable"] = False  # done here, or the same in both


# the words of the tables, figures and claims the chapters print
HEADERS = ROOT / "locale" / LANGUAGE / "outputs.po"


def _warning(docname):
    """What to do with words the outputs' catalog lacks: warn, at
    ``docname``."""

    def missing(what, text):
        logger.warning(
            f"{what} without a translation: {text!r} (add it to "
            f"{HEADERS.relative_to(ROOT)})",
            location=docname,
        )

    return missing


def folds_in_chinese(text, words, docname=None):
    """:func:`mha_lib.course.chinese.folds_in_chinese`, what ``words`` lacks
    a warning (at ``docname``)."""
    return outputs.folds_in_chinese(text, words, _warning(docname))


def in_chinese(text, words, what, docname=None):
    """:func:`mha_lib.course.chinese.in_chinese`, what ``words`` lacks a
    warning (at ``docname``)."""
    return outputs.in_chinese(text, words, what, _warning(docname))


def printed_in_chinese(text, words, docname=None):
    """:func:`mha_lib.course.chinese.printed_in_chinese`, what ``words``
    lacks a warning (at ``docname``)."""
    return outputs.printed_in_chinese(text, words, _warning(docname))


class TableWordsTranslated(SphinxTransform):
    """The cells of the tables a chapter prints, in Chinese: the numbers are
    the run's, the words come from ``locale/zh_CN/outputs.po``
    (:func:`cell_in_chinese`). A cell with words the catalog lacks is a
    warning."""

    default_priority = 12

    def apply(self):
        if not is_chinese(self.config):
            return
        words = catalog_file(HEADERS)
        for table in self.document.findall(nodes.table):
            if not _is_output(table):
                continue
            for text in list(table.findall(nodes.Text)):
                key = text.astext().strip()
                chinese = cell_in_chinese(key, words)
                if chinese is None:
                    logger.warning(
                        f"a table cell without a translation: {key!r} "
                        f"(add it to {HEADERS.relative_to(ROOT)})",
                        location=self.env.docname,
                    )
                elif chinese != key:
                    new = nodes.Text(text.astext().replace(key, chinese))
                    text.parent.replace(text, new)


class FoldLinesTranslated(SphinxTransform):
    """The line that folds a chapter's claims or a long table, in Chinese:
    the claims' count by :data:`mha_lib.course.chinese.CLAIM_LINES`, a
    table's words and the claims themselves from
    ``locale/zh_CN/outputs.po``."""

    default_priority = 12

    def apply(self):
        if not is_chinese(self.config):
            return
        words = catalog_file(HEADERS)
        for raw in list(self.document.findall(nodes.raw)):
            text = raw.astext()
            if "<summary>" not in text or not _is_output(raw):
                continue
            new = folds_in_chinese(text, words, self.env.docname)
            raw.parent.replace(raw, nodes.raw(new, new, **raw.attributes))


class PrintedTranslated(SphinxTransform):
    """What a chapter prints, in Chinese: the whole output from
    ``locale/zh_CN/outputs.po``, else each of its lines, from
    :data:`mha_lib.course.chinese.PRINTED_LINES` or the catalog, its
    numbers as the run wrote them; a line of code stays. A line with words
    the catalog lacks is a warning."""

    default_priority = 12

    def apply(self):
        if not is_chinese(self.config):
            return
        words = catalog_file(HEADERS)
        for block in list(self.document.findall(nodes.literal_block)):
            # what the code printed; a value's text/plain stands for its
            # richer forms (a table, a figure), which the page shows instead
            if "stream" not in block.get("classes", []):
                continue
            if not _is_output(block):
                continue
            text = block.astext()
            chinese = printed_in_chinese(text, words, self.env.docname)
            if chinese != text:
                block[:] = [nodes.Text(chinese)]
                block.rawsource = chinese


class CommentsTranslated(SphinxTransform):
    """The comments of a page's code in Chinese, from the page's catalog
    (:mod:`code_comments`); the code stays as it ran. A comment the catalog
    lacks is a warning."""

    default_priority = 12

    def apply(self):
        if not is_chinese(self.config):
            return
        translated = catalog(self.env.docname)
        for block in self.document.findall(nodes.literal_block):
            language = block.get("language")
            if language not in code_comments.LANGUAGES or _is_output(block):
                continue
            code = block.astext()
            for text in code_comments.messages(code):
                if text not in translated:
                    logger.warning(
                        "a comment without a translation (run python3 "
                        "scripts/translations.py, then translate "
                        f"{LOCALE.relative_to(ROOT)}/{self.env.docname}.po): "
                        f"{text!r}",
                        location=self.env.docname,
                    )
            chinese = code_comments.in_chinese(code, translated)
            if chinese != code:  # as Sphinx highlights it: rawsource too
                block[:] = [nodes.Text(chinese)]
                block.rawsource = chinese


class ControlsTranslated(SphinxTransform):
    """The names and choices of an interactive figure's controls, and its
    titles, in Chinese, from ``locale/zh_CN/outputs.po``: the figure's data
    and what a control selects stay as the run wrote them."""

    default_priority = 12
    SPEC = re.compile(r"(mhaEmbed\(\"#[\w-]+\", )(\{.*\})(, \{actions)", re.S)

    def apply(self):
        if not is_chinese(self.config):
            return
        words = catalog_file(HEADERS)
        for raw in list(self.document.findall(nodes.raw)):
            match = self.SPEC.search(raw.astext())
            if not match or not _is_output(raw):
                continue
            spec = json.loads(match.group(2).replace("<\\/", "</"))
            spec_in_chinese(spec, words, self.env.docname)
            for bind in _binds(spec):
                if "name" in bind:
                    name = bind["name"].strip()
                    bind["name"] = bind["name"].replace(
                        name, self._word(words, name)
                    )
                if "labels" in bind:
                    bind["labels"] = [
                        self._word(words, label) for label in bind["labels"]
                    ]
            for owner in _titled(spec):
                owner["title"] = self._title(words, owner["title"])
            text = json.dumps(spec, separators=(",", ":")).replace(
                "</", "<\\/"
            )
            source = raw.astext()
            new = source[: match.start(2)] + text + source[match.end(2) :]
            raw.parent.replace(raw, nodes.raw(new, new, **raw.attributes))

    def _title(self, words, title):
        if isinstance(title, list):  # one line each
            return [self._title(words, line) for line in title]
        return in_chinese(title, words, "a figure's title", self.env.docname)

    def _word(self, words, word):
        """``word`` in Chinese; a number or sentence of the data stays."""
        if word in words or not re.fullmatch(r"[A-Za-z][A-Za-z ]*", word):
            return words.get(word, word)
        logger.warning(
            f"a control's word without a translation: {word!r} (add it to "
            f"{HEADERS.relative_to(ROOT)})",
            location=self.env.docname,
        )
        return word


SLANTED_TITLE_PADDING = 10  # pixels; Vega-Lite's default is 4


def spec_in_chinese(spec, words, docname=None):
    """What an interactive figure draws besides its titles and controls, in
    Chinese, from ``words``: the label expressions' words ("head " + a
    number), its description (read aloud), the legends' labels (a nominal
    field's words: chunked, wide); a legend, axis or tooltip that shows its
    field's name gets the name as its title, which
    :class:`ControlsTranslated` then translates; an axis title under
    slanted labels is set further from them."""
    for part in _parts(spec):
        for box in part.values():
            if isinstance(box, dict) and isinstance(box.get("labelExpr"), str):
                box["labelExpr"] = _literals_in_chinese(
                    box["labelExpr"], words, docname
                )
        axis = part.get("axis")
        if isinstance(axis, dict) and axis.get("labelAngle"):
            # a Chinese title rises higher than a Latin one: room between it
            # and the slanted labels' ends, which it touched
            axis.setdefault("titlePadding", SLANTED_TITLE_PADDING)
        if isinstance(part.get("description"), str):
            part["description"] = in_chinese(
                part["description"], words, "a figure's description", docname
            )
    records = [
        record
        for part in _parts(spec)
        if isinstance(part.get("data"), dict)
        for record in part["data"].get("values", [])
        if isinstance(record, dict)
    ]
    for part in list(_parts(spec)):
        encoding = part.get("encoding")
        if not isinstance(encoding, dict):
            continue
        _tooltip_words_in_chinese(part, records, words)
        for channel, definitions in encoding.items():
            if not isinstance(definitions, list):
                definitions = [definitions]
            for field in definitions:
                if isinstance(field, dict):
                    _name_and_labels(channel, field, words, docname)


def _tooltip_words_in_chinese(part, records, words):
    """The words of a tooltip's nominal values (a task, a layer: "sized 16 x
    16") in Chinese where ``words`` has them: a field calculated from the
    data's own, which the tooltip shows under the data field's name; the
    data, and what the controls select in it, stay as the run wrote
    them."""
    tooltip = part["encoding"].get("tooltip")
    fields = tooltip if isinstance(tooltip, list) else [tooltip]
    calculated = []
    for field in fields:
        if not isinstance(field, dict) or field.get("type") != "nominal":
            continue
        name = field.get("field")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z ]+", name):
            continue
        expression = f"datum[{json.dumps(name)}]"
        for value in {r.get(name) for r in records} - {None}:
            chinese = translate(str(value), words)
            if chinese is not None and chinese != str(value):
                expression = (
                    f"datum[{json.dumps(name)}] == {json.dumps(value)} ? "
                    f"{json.dumps(chinese, ensure_ascii=False)} : {expression}"
                )
        if expression != f"datum[{json.dumps(name)}]":
            shown = f"{name} (zh)"
            calculated.append({"calculate": expression, "as": shown})
            field.update(field=shown, title=field.get("title", name))
    if calculated:
        part["transform"] = calculated + part.get("transform", [])


def _name_and_labels(channel, field, words, docname):
    """A channel's field name as its title where it shows (see
    :func:`spec_in_chinese`), its nominal words in Chinese in its legend."""
    name = field.get("field")
    shown = field.get("legend", {}) is not None and (
        field.get("axis", {}) is not None
    )
    if isinstance(name, str) and "title" not in field and shown:
        if channel != "tooltip" or re.fullmatch(r"[A-Za-z]+", name):
            field["title"] = name
    scale = field.get("scale")
    if field.get("type") != "nominal" or not isinstance(scale, dict):
        return
    if channel == "tooltip" or field.get("legend", {}) is None:
        return
    pairs = []
    for value in scale.get("domain", []):
        if isinstance(value, str) and re.search("[A-Za-z]{2}", value):
            chinese = in_chinese(value, words, "a legend's label", docname)
            if chinese != value:
                pairs.append((value, chinese))
    if pairs:
        expression = "datum.label"
        for value, chinese in reversed(pairs):
            expression = (
                f"datum.label == {json.dumps(value)} ? "
                f"{json.dumps(chinese, ensure_ascii=False)} : {expression}"
            )
        field["legend"] = {**field.get("legend", {}), "labelExpr": expression}


def _literals_in_chinese(expression, words, docname):
    """The words of a Vega expression's quoted strings in Chinese."""

    def literal(match):
        text = match.group(1)
        key = text.strip()
        if not re.search("[A-Za-z]{2}", key):
            return match.group(0)
        chinese = in_chinese(key, words, "a figure's label", docname)
        return "'" + text.replace(key, chinese) + "'"

    return re.sub(r"'([^'\\]*)'", literal, expression)


def _parts(spec):
    """Every object of a Vega-Lite spec, at any depth."""
    if isinstance(spec, dict):
        yield spec
        spec = list(spec.values())
    if isinstance(spec, list):
        for value in spec:
            yield from _parts(value)


def _titled(spec):
    """Every part of a Vega-Lite spec with a title (the chart, an axis, a
    legend)."""
    return [p for p in _parts(spec) if isinstance(p.get("title"), (str, list))]


def _binds(spec):
    """Every ``bind`` of a Vega-Lite spec's parameters, at any depth."""
    return [p["bind"] for p in _parts(spec) if isinstance(p.get("bind"), dict)]


class ChineseSearch(SearchChinese):
    """Sphinx's Chinese search, finding single characters too: 头 finds the
    pages about heads. Sphinx indexes the words jieba cuts and drops every
    one-letter word; here each Chinese character is indexed as well, and
    kept."""

    def split(self, input):
        return super().split(input) + CHINESE_CHARACTER.findall(input)

    def word_filter(self, stemmed_word):
        return bool(CHINESE_CHARACTER.fullmatch(stemmed_word)) or (
            super().word_filter(stemmed_word)
        )


def untranslated(doctree, translated):
    """The messages of a translated page's prose that its catalog
    (``translated``) lacks, and those whose translation Sphinx could not put
    in (one that does not read as a single paragraph of Markdown, such as a
    heading "1. ..." taken for a list): [(message, why)]."""
    found = []
    for node, message in extract_messages(doctree):
        if node.get("translated") or _is_output(node):
            continue
        if isinstance(node, addnodes.toctree):  # its caption, translated
            if node.get("caption") != message:  # in place, unmarked
                continue
        if message not in translated:
            found.append((message, "not translated"))
        elif translated[message] != message:
            found.append((message, "translation not applied"))
    return found


# Sphinx's i18n gives a translated link the attributes of the original link
# with the same target document (sphinx.transforms.i18n, its
# update_pending_xrefs), so where a paragraph links to several sections of one
# page, every link got the last section's anchor (MyST keeps the anchor apart,
# in ``reftargetid``). The anchor joins the document while the attributes are
# matched, so each link keeps its own.
ANCHOR_MARK = "\x00#"


def _update_pending_xrefs_by_anchor(update):
    """``update`` (Sphinx's method) with each link matched by its target
    document and its anchor."""

    def update_pending_xrefs(updater):
        def links():
            return [
                *updater.node.findall(addnodes.pending_xref),
                *updater.patch.findall(addnodes.pending_xref),
            ]

        for link in links():
            if link.get("reftargetid"):
                link["reftarget"] += ANCHOR_MARK + link["reftargetid"]
        try:
            update(updater)
        finally:
            for link in links():
                link["reftarget"] = link["reftarget"].split(ANCHOR_MARK)[0]

    return update_pending_xrefs


def _links_keep_their_anchors():
    from sphinx.transforms import i18n

    updater = i18n._NodeUpdater
    if not getattr(updater.update_pending_xrefs, "by_anchor", False):
        patched = _update_pending_xrefs_by_anchor(updater.update_pending_xrefs)
        patched.by_anchor = True
        updater.update_pending_xrefs = patched


def _check_translated(app, doctree):
    if not is_chinese(app.config):
        return
    docname = app.env.docname
    # the captions of the table of contents (added to the page after Sphinx
    # translated it)
    for toctree in doctree.findall(addnodes.toctree):
        caption = toctree.get("caption")
        if caption in catalog(docname):
            toctree["caption"] = catalog(docname)[caption]
    for message, why in untranslated(doctree, catalog(docname)):
        shown = message if len(message) < 120 else message[:117] + "..."
        logger.warning(
            f"{why} (run python3 scripts/translations.py, then translate "
            f"{LOCALE.relative_to(ROOT)}/{docname}.po): {shown!r}",
            location=docname,
        )
    _translate_labels(doctree, docname)


# the labels of the folds that hide code (cell metadata, not prose), with
# their number where they have one: "Solution 2" -> "答案 2"
LABELS = {
    "Show the code": "显示代码",
    "Hide the code": "隐藏代码",
    "Show the checks": "显示检验代码",
    "Hide the checks": "隐藏检验代码",
    "Show the set-up": "显示准备代码",
    "Hide the set-up": "隐藏准备代码",
    "Show the settings": "显示设置",
    "Hide the settings": "隐藏设置",
    "Show the plotting code": "显示绘图代码",
    "Hide the plotting code": "隐藏绘图代码",
    "Solution": "答案",
    "Hide solution": "隐藏答案",
}


def translate_label(label):
    """A fold's label in Chinese, or None where :data:`LABELS` lacks it."""
    words, _, number = label.rpartition(" ")
    if not number.isdigit():
        words, number = label, ""
    chinese = LABELS.get(words)
    return None if chinese is None else f"{chinese} {number}".strip()


def _translate_labels(doctree, docname):
    for node in doctree.findall(nodes.container):
        for key in ("prompt_show", "prompt_hide"):
            if key in node.attributes:
                chinese = translate_label(node[key])
                if chinese is None:
                    logger.warning(
                        f"a fold's label without a translation in "
                        f"chinese_edition.LABELS: {node[key]!r}",
                        location=docname,
                    )
                else:
                    node[key] = chinese


class _KeepsRenderer(dict):
    """A page's attributes that also keep, in ``temp_data`` (the data of the
    page being read), the notebook renderer myst-nb sets on the page while
    parsing it and removes after."""

    def __init__(self, attributes, temp_data):
        super().__init__(attributes)
        self.temp_data = temp_data

    def __setitem__(self, key, value):
        if key == "nb_renderer":
            self.temp_data[key] = value
        super().__setitem__(key, value)


def _glue_in_translations():
    """A glued number inside a translated sentence: myst-nb reads glue data
    from the renderer of the notebook being parsed, which Sphinx's
    translation (a sentence parsed on its own) lacks; it gets the page's."""
    from myst_nb.sphinx_ import Parser

    parse = Parser.parse

    def parse_with_glue(self, inputstring, document):
        temp_data = document.settings.env.temp_data
        if document.current_source.endswith("<translated>"):
            if "nb_renderer" in temp_data:
                document["nb_renderer"] = temp_data["nb_renderer"]
        else:
            document.attributes = _KeepsRenderer(
                document.attributes, temp_data
            )
        parse(self, inputstring, document)
        # the page is pickled, the renderer cannot be
        document.attributes = dict(document.attributes)
        if document.current_source.endswith("<translated>"):
            document.attributes.pop("nb_renderer", None)

    Parser.parse = parse_with_glue


class _Terms(set):
    """A set that takes a list's ``extend``: Sphinx's Chinese search keeps
    every Latin word of the book in a list and looks each word it indexes up
    in it, seconds of the build; a set finds it at once, the same index."""

    def extend(self, terms):
        self.update(terms)


def _quick_latin_terms():
    SearchChinese.latin_terms = _Terms()


def _own_output_folder(app):
    """myst-nb writes a page's executed notebook and its images beside the
    output folder: for the Chinese build, in _build, not inside the English
    pages (_build/html)."""
    if is_chinese(app.config):
        folder = Path(app.outdir).parent.parent / f"jupyter_execute-{FOLDER}"
        app.env.mystnb_config = app.env.mystnb_config.copy(
            output_folder=str(folder)
        )


def _chinese_settings(app, config):
    if is_chinese(config):
        _glue_in_translations()
        _quick_latin_terms()
        config.html_title = TITLE
        config.project = TITLE
        config.author = AUTHOR
        config.html_theme_options = {
            **config.html_theme_options,
            "search_bar_text": SEARCH_TEXT,
        }
        config.html_search_options = {"dict": str(SEARCH_WORDS)}
        # words in an equation (\text{值路径}) in the page's fonts: MathJax's
        # own have no Chinese glyphs, and it drew them with none (blank)
        mathjax = dict(config.mathjax3_config or {})
        mathjax["chtml"] = {
            **mathjax.get("chtml", {}),
            "mtextInheritFont": True,
        }
        config.mathjax3_config = mathjax


# MathJax measures an equation's words as it lays them out: it waits for the
# Chinese font, else it measured them in the fallback's empty boxes, 0.6 em
# a character, and drew them there (whether it won the race with the font
# depended on the machine)
TYPESET_AFTER_FONT = """if (window.MathJax) {
  MathJax.startup = Object.assign(MathJax.startup || {}, {
    pageReady: () => document.fonts.load('1em "Noto Sans SC book"', "中")
      .catch(() => null)
      .then(() => MathJax.startup.defaultPageReady()),
  });
}"""


# the hover text of the page's frame (title, aria-label, data-bs-title) that
# neither Sphinx's nor the themes' catalogs translate (Sphinx 7.4's zh_CN
# lacks its links' titles, pydata-sphinx-theme's zh its colour modes and
# sidebar) or that a template writes in English (sphinx-book-theme's sidebar
# buttons, myst-nb's folds)
THEME_WORDS = {
    "Link to this heading": "链接到此标题",
    "Link to this definition": "链接到此定义",
    "Link to this term": "链接到此术语",
    "Link to this table": "链接到此表格",
    "Link to this code": "链接到此代码",
    "Link to this image": "链接到此图片",
    "Link to this toctree": "链接到此目录",
    "Color mode": "颜色模式",
    "System Settings": "跟随系统设置",
    "Collapse Sidebar": "收起侧边栏",
    "Expand Sidebar": "展开侧边栏",
    "Toggle primary sidebar": "显示或隐藏目录栏",
    "Toggle secondary sidebar": "显示或隐藏本页导航",
    "Toggle hidden content": "显示或隐藏内容",  # myst-nb's folds
}
HOVER = re.compile(r'(\s(?:title|aria-label|data-bs-title)=")([^"]*)(")')


def hover_text_in_chinese(page):
    """A page's HTML with the frame's hover text from :data:`THEME_WORDS`."""
    return HOVER.sub(lambda m: m[1] + THEME_WORDS.get(m[2], m[2]) + m[3], page)


# the notes of book/references.bib, as the reference list and a citation's
# hover text show them (pybtex sets ``narrow'' as “narrow”)
REFERENCE_NOTES = {
    "The 2019 version describes the chunked (“narrow”) and the wide layer; "
    "according to its 2023 revision, the post now uses the standard layer": (
        "2019 年的版本描述的是分块层（“窄”）和宽层；据其 2023 年的修订，"
        "这篇文章现在用的是标准层"
    ),
}


def notes_in_chinese(page):
    """A page's HTML with the references' notes from
    :data:`REFERENCE_NOTES`."""
    for note, chinese in REFERENCE_NOTES.items():
        page = page.replace(note, chinese)
    return page


def _theme_words_in_chinese(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    if not is_chinese(app.config):
        return
    for path in Path(app.outdir).rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        chinese = notes_in_chinese(hover_text_in_chinese(page))
        if chinese != page:
            path.write_text(chinese, encoding="utf-8")


# -- both editions: a link to the same page in the other --------------------


def other_edition(pagename, chinese):
    """The relative address of a page's twin in the other edition."""
    up = "../" * pagename.count("/")
    if chinese:
        return f"../{up}{pagename}.html", "en", "English"
    return f"{up}{FOLDER}/{pagename}.html", "zh-CN", "中文"


def _link_editions(app, pagename, templatename, context, doctree):
    if app.builder.name != "html":
        return
    href, language, name = other_edition(pagename, is_chinese(app.config))
    context["metatags"] = (
        context.get("metatags", "")
        + f'<link rel="alternate" hreflang="{language}" href="{href}">'
    )
    if is_chinese(app.config):
        # fetched at once: text drawn before the font has come stays in
        # empty boxes in Chromium where no system font has the characters
        font = context["pathto"](FONT, 1)
        context["metatags"] += (
            f'<link rel="preload" href="{font}" as="font" type="font/woff" '
            "crossorigin>"
        )
        # after MathJax's settings (priority 500), before it runs (deferred)
        app.builder.add_js_file(None, body=TYPESET_AFTER_FONT, priority=501)
    if "body" in context:
        # the same section in the other edition (the two share their ids)
        keep_place = "this.href = this.href.split('#')[0] + location.hash"
        context["body"] = (
            f'<p class="edition-switch"><a href="{href}" '
            f'hreflang="{language}" lang="{language}" '
            f'onclick="{keep_place}">{name}</a></p>' + context["body"]
        )


def setup(app):
    _links_keep_their_anchors()
    app.add_transform(OutputsStayAsRun)
    app.add_transform(DisplayMathTranslated)
    app.add_transform(TableWordsTranslated)
    app.add_transform(FoldLinesTranslated)
    app.add_transform(ControlsTranslated)
    app.add_transform(PrintedTranslated)
    app.add_transform(CommentsTranslated)
    app.add_search_language(ChineseSearch)
    app.connect("config-inited", _chinese_settings)
    app.connect("builder-inited", _own_output_folder, priority=600)
    app.connect("builder-inited", _note_a_fresh_environment)
    # at once where every notebook is cached, else once the English build
    # has read (and run) every page
    app.connect("env-before-read-docs", _start_early)
    app.connect("env-updated", _start_chinese)
    app.connect("doctree-read", _check_translated)
    # after MathJax has added its settings to the page
    app.connect("html-page-context", _link_editions, priority=600)
    # before the Chinese PDF is printed (priority 900)
    app.connect("build-finished", _theme_words_in_chinese, priority=800)
    # after the English PDF is printed (priority 900), beside the Chinese build
    app.connect("build-finished", _wait_for_chinese, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # the Chinese build, started by the English one
    options = json.loads(sys.argv[1])
    sys.exit(build(options.pop("outdir"), language=LANGUAGE, **options))
