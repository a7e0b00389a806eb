"""Sphinx extension: the whole book as one PDF,
``_build/html/mha-answered.pdf``.

When the HTML build has finished, the article of every page, in the order of
the table of contents, is put into one document
(``_build/html/_pdf/book.html``, next to the pages so their relative links to
``_static`` and ``_images`` still hold), behind a title page and a table of
contents, and printed by headless Chromium through Playwright, after
MathJax, the interactive figures, the fonts and the images are ready. The PDF
has bookmarks for every chapter and section and page numbers. What only works
on screen is adapted: folded code is left out, and what it printed shows as on
screen before a click (a folded list of claims as its one line), except a
folded table, which prints open; the exercise solutions print in full under
their label, controls of
interactive figures are left out (a line names the selection each shows),
and so is the text that tells how to use
them (a page's ``{container} on-screen``). Nothing is executed again: the
PDF shows the outputs of this build. The browser is the system's Chromium,
else the one Playwright installed for itself (:func:`find_chromium`, which the
tests use too); where there is none the build warns, and so fails under
``--warningiserror``, with the command that installs one.
"""

import functools
import hashlib
import http.server
import io
import posixpath
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from bs4 import BeautifulSoup, Comment
from sphinx.util import logging

logger = logging.getLogger(__name__)
PDF_NAME = "mha-answered.pdf"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PRINT_CSS = """
@page { size: A4; margin: 16mm 13mm 18mm 13mm; }
body { padding: 0 !important; margin: 0 !important; }
.pdf-page { break-before: page; }
.pdf-title { text-align: center; padding-top: 30vh; }
.pdf-title h1 { font-size: 2.6em; margin-bottom: 0.4em; }
.pdf-title p { font-size: 1.2em; color: #444; }
.pdf-contents ol { list-style: none; padding-left: 1.4em; }
.pdf-contents li { margin: 0.15em 0; }
.pdf-contents a { color: inherit; text-decoration: none; }
.pdf-contents > ol > li { margin-top: 0.6em; font-weight: 600; }
.pdf-contents ol ol { font-weight: normal; }
.pdf-contents .pdf-number {
  float: right; min-width: 2.4em; text-align: right;
}
.mha-interactive .vega-bindings, .headerlink, .copybtn, .on-screen {
  display: none !important;
}
.pdf-solution { font-weight: 600; margin: 0.8em 0 0.2em; }
pre { white-space: pre-wrap !important; word-break: break-word; }
/* long code runs on to the next page (kept whole, it would leave the page
   before it part empty; Chromium keeps a scrolling box whole) */
div[class*="highlight"], pre {
  break-inside: auto !important;
  overflow: visible !important;
  display: block !important;
}
/* a section's checked claims print as their one line, without the marker of
   a fold that paper cannot open */
details.mha-claims > summary { list-style: none; }
details.mha-claims > summary::-webkit-details-marker { display: none; }
p.mha-scroll-hint { display: none; }
/* a figure stays whole; a long table or printout runs on to the next page
   (kept whole, it would leave the page before it nearly blank) */
figure, img, svg, tr, div.cell_output:has(img, svg) { break-inside: avoid; }
/* ... and is at most about half a page high (135 of the page's 263 mm): a
   heading and a paragraph at the top of a page leave it room, so it is not
   pushed over to leave that page nearly empty */
div.cell_output img, figure img { max-height: 135mm; object-fit: contain; }
/* Chromium keeps a scrolling box on one page: on paper a table does not
   scroll, so a long one can run on */
.pst-scrollable-table-container, div.cell_output table {
  overflow: visible !important;
}
div.cell_output table { display: table !important; }
div.cell_output:has(table) { break-inside: auto !important; }
h1, h2, h3 { break-after: avoid; break-inside: avoid; }
/* a solution's printout stays with the end of its code, not alone on the
   page before the next chapter */
div.cell.tag_hide-cell div.cell_output { break-before: avoid; }
"""
# the words of the title page and the contents, per edition
WORDS = {
    "en": {
        "subtitle": "An executable course on multi-head attention",
        "after_author": ", ",  # the author: the book's, from _config.yml
        "printed": "printed %d %B %Y",
        "contents": "Contents",
        # the first page's heading, which on screen is the book's title: in
        # print the cover has that, and the bookmarks name each page once
        "introduction": "Introduction",
    },
    "zh": {
        "subtitle": "一门可以运行的多头注意力课程",
        "after_author": "，",
        "printed": "印于 %Y 年 %m 月 %d 日",
        "contents": "目录",
        "introduction": "引言",
    },
}
FOOTER = (
    '<div style="font-size: 9px; width: 100%; text-align: center; '
    'color: #555;"><span class="pageNumber"></span> / '
    '<span class="totalPages"></span></div>'
)
# the first print only finds the page of each heading: images and drawings
# take their place there but are not painted (visibility moves nothing)
UNPAINTED = "img, svg { visibility: hidden !important; }"
# Waits for everything drawn after load; returns what is still missing after
# a minute.
READY = """async () => {
  const undrawn = () => [...document.querySelectorAll('.mha-interactive')]
    .filter(e => e.dataset.settled !== 'yes').length;
  const deadline = Date.now() + 60000;
  while (undrawn() && Date.now() < deadline)
    await new Promise(r => setTimeout(r, 100));
  if (undrawn()) return `${undrawn()} interactive figures not drawn`;
  if (window.MathJax && MathJax.startup) {
    const typeset = MathJax.startup.promise.then(() => true);
    const late = new Promise(r => setTimeout(() => r(false), 60000));
    if (!(await Promise.race([typeset, late])))
      return "MathJax did not finish typesetting";
  }
  // every face the page declares, loaded before the first print: print may
  // ask for a face the screen did not use (a bold oblique), which then came
  // in between the two prints and moved a heading to another page
  await Promise.all([...document.fonts].map(f => f.load().catch(() => {})));
  await document.fonts.ready;
  await Promise.all([...document.images].map(i => i.decode().catch(() => {})));
  return "";
}"""


def reading_order(env, docname=None, seen=None):
    """Documents in the order of the table of contents, the root first."""
    docname = docname or env.config.root_doc
    seen = seen if seen is not None else []
    if docname not in seen:
        seen.append(docname)
        for child in env.toctree_includes.get(docname, []):
            reading_order(env, child, seen)
    return seen


def for_paper(article, prefix):
    """Adapt one page's article to print: unique ids, folds resolved."""
    for link in article.select("a.headerlink"):  # the "#" after each heading
        link.decompose()
    # ids unique in the whole document; an interactive figure's id is unique
    # already, and its script finds the figure by it
    for tag in article.select("[id]"):
        if not tag["id"].startswith("mha-interactive-"):
            tag["id"] = f"{prefix}{tag['id']}"
    for cell in article.select("div.cell.tag_hide-input"):
        # the folded code goes; its output prints as the screen shows it
        # before a click (a folded list of claims as its one line), but a
        # folded table prints open: the prose around it reads from it
        for fold in cell.select("details.above-input"):
            fold.decompose()
    for table in article.select("details.mha-table"):
        # printed open, as a plain block: Chromium does not split a
        # <details> across pages, so a long table moved whole to the next
        # page and left the one before nearly empty
        table.name = "div"
        table.find("summary").name = "p"
    for cell in article.select(
        "div.cell.tag_hide-cell, div.cell.tag_hide-output"
    ):
        for fold in cell.select("details"):
            summary = fold.find("summary")
            label = summary.select_one("p.collapsed") if summary else None
            title = label.get_text(strip=True) if label else "Solution"
            if summary:
                summary.decompose()
            heading = BeautifulSoup("", "html.parser").new_tag("p")
            heading["class"] = "pdf-solution"
            heading.string = title
            fold.insert_before(heading)
            fold.unwrap()
    return article


# a space between two Chinese characters or marks (Chinese sets none)
CHINESE_GAP = re.compile(
    r"(?<=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]) "
    r"(?=[\u3000-\u303f\u3400-\u9fff\uff00-\uffef])"
)


def _text(tag):
    """A tag's text as read: words of inline children kept apart (but not
    Chinese ones)."""
    return CHINESE_GAP.sub("", " ".join(tag.get_text(" ", strip=True).split()))


# where a contents line's page number goes: a space until the first print has
# said on which page each heading fell (the line is as high either way)
NUMBER = '<span class="pdf-number">&nbsp;</span>'
# Writes each contents line's page number: {anchor: page}.
FILL_NUMBERS = """numbers => {
  for (const link of document.querySelectorAll('.pdf-contents a')) {
    const number = numbers[link.getAttribute('href').slice(1)];
    const slot = link.parentElement.querySelector(':scope > .pdf-number');
    if (number && slot) slot.textContent = number;
  }
}"""


def destination_pages(pdf_path):
    """{anchor: page number} for every heading Chromium made a destination
    of (the page numbers of the footer, counted from 1)."""
    from pypdf import PdfReader

    reader = PdfReader(pdf_path)
    return {
        name.lstrip("/"): reader.get_destination_page_number(destination) + 1
        for name, destination in reader.named_destinations.items()
    }


def heading_anchor(heading):
    """The id a contents line links to: the heading's own (given one, from
    its section's), so that its page number is the page the heading is
    printed on; a section can begin at the foot of the page before, where its
    heading, kept with what follows, does not fit."""
    if not heading.get("id"):
        heading["id"] = f"{heading.parent['id']}-heading"
    return heading["id"]


def contents(pages, heading="Contents"):
    """A table of contents: every page's title and its sections, linked, each
    with its page number (filled in by :func:`print_pdf`)."""
    items = []
    for article in pages:
        title = article.find("h1")
        if title is None:
            continue
        sections = "".join(
            f'<li>{NUMBER}<a href="#{heading_anchor(h2)}">{_text(h2)}</a></li>'
            for h2 in article.find_all("h2")
            if h2.parent.name == "section" and h2.parent.get("id")
        )
        anchor = (
            heading_anchor(title)
            if title.parent.name == "section" and title.parent.get("id")
            else ""
        )
        name = _text(title)
        items.append(
            f'<li>{NUMBER}<a href="#{anchor}">{name}</a>'
            + (f"<ol>{sections}</ol>" if sections else "")
            + "</li>"
        )
    return BeautifulSoup(
        f'<section class="pdf-page pdf-contents"><h1>{heading}</h1>'
        f"<ol>{''.join(items)}</ol></section>",
        "html.parser",
    )


def head_key(tag):
    """What a tag of a page's head loads: two pages that load one file, one
    with a ``?v=`` digest and one without (a rebuild rewrites only changed
    pages), must not load it twice (MathJax loaded twice never starts)."""
    url = tag.get("src") or tag.get("href")
    return (tag.name, url.split("?")[0]) if url else str(tag)


def one_document(outdir, docnames, title, subtitle, language="en"):
    """One HTML document: a title page, the contents, then every page's
    article, each starting on a new page, under the union of their heads."""
    book = BeautifulSoup(
        f"<!DOCTYPE html><html lang='{language}' "
        "data-theme='light'><head></head><body></body></html>",
        "html.parser",
    )
    seen_head, pages = set(), []
    for docname in docnames:
        page = BeautifulSoup(
            (outdir / f"{docname}.html").read_text(encoding="utf-8"),
            "html.parser",
        )
        for tag in page.head.find_all(
            ["meta", "link", "script", "style"], recursive=False
        ):
            if head_key(tag) not in seen_head:
                seen_head.add(head_key(tag))
                book.head.append(tag)
        article = page.select_one("article.bd-article") or page.body
        prefix = "pdf-" + re.sub(r"\W", "-", docname) + "-"
        pages.append((prefix, for_paper(article, prefix), docname))
    relink(pages)
    first = pages[0][1].find("h1") if pages else None
    if first is not None and first.get_text(strip=True) == title:
        first.string = WORDS[language.split("-")[0]]["introduction"]
    for _, article, _ in pages:  # an author's comments print nothing
        for comment in article.find_all(
            string=lambda s: isinstance(s, Comment)
        ):
            comment.extract()
    head_title = book.new_tag("title")
    head_title.string = title
    book.head.append(head_title)
    cover = BeautifulSoup(
        f'<section class="pdf-title"><h1>{title}</h1>'
        f"<p>{subtitle}</p></section>",
        "html.parser",
    )
    book.body.append(cover)
    book.body.append(
        contents(
            [article for _, article, _ in pages],
            WORDS[language.split("-")[0]]["contents"],
        )
    )
    previous = ""
    for _, article, docname in pages:
        # the first page starts a sheet, each chapter too, and the first
        # page after one; the pages around them run on (a sheet for a list's
        # last item left it nearly empty)
        chapter = docname.startswith("notebooks/")
        new_sheet = (
            chapter or not previous or previous.startswith("notebooks/")
        )
        section = book.new_tag(
            "section", attrs={"class": "pdf-page" if new_sheet else "pdf-on"}
        )
        section.extend(list(article.children))
        book.body.append(section)
        previous = docname
    style = book.new_tag("style")
    style.string = PRINT_CSS
    book.head.append(style)
    return book


def relink(pages):
    """Links between pages become links inside the one document:
    ``page.html#id`` to that id, ``page.html`` to the page's title. A link to
    any other file of the build (the PDF itself, a download) keeps its text
    and loses its target: printed, it would lead to the address the build
    printed from (``http://127.0.0.1:...``), on no reader's machine."""
    prefixes, titles = {}, {}
    for prefix, article, docname in pages:
        prefixes[f"{docname}.html"] = prefix
        title = article.find("h1")
        section = title.parent if title is not None else None
        if section is not None and section.get("id"):
            titles[f"{docname}.html"] = section["id"]
    for prefix, article, docname in pages:
        folder = posixpath.dirname(docname)
        for link in article.select("a[href]"):
            href = link["href"]
            if href.startswith("#"):
                link["href"] = f"#{prefix}{href[1:]}"
                continue
            target, _, fragment = href.partition("#")
            path = posixpath.normpath(posixpath.join(folder, target))
            if path in prefixes and (fragment or path in titles):
                anchor = (
                    prefixes[path] + fragment if fragment else titles[path]
                )
                link["href"] = f"#{anchor}"
            elif not urlsplit(href).scheme:  # a file of the build
                link.unwrap()


def plain_math(tex):
    """Inline TeX as plain text for a bookmark: ``\\(W^Q, W^K\\)`` -> ``WQ,
    WK``."""
    tex = re.sub(
        r"\\[a-zA-Z]+", " ", tex.removeprefix("\\(").removesuffix("\\)")
    )
    return " ".join(re.sub(r"[\\^_{}]", "", tex).split())


MATH = "@@math@@"  # where a heading's math was, while its text is read


def headings(book):
    """Every heading of the one document, in order, as a pair: what
    Chromium's bookmark spells (the text without its math, which Chromium
    leaves out) and what the bookmark should say (the math written plainly).
    """
    found = []
    for heading in book.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        heading = BeautifulSoup(str(heading), "html.parser")
        texs = []
        for math in heading.select("span.math"):
            texs.append(math.get_text())
            math.string = MATH
        shown = _text(heading)
        spelled = shown.replace(MATH, "")
        for tex in texs:
            shown = shown.replace(MATH, plain_math(tex), 1)
        shown = re.sub(r" ([?,.:;!)])", r"\1", " ".join(shown.split()))
        shown = shown.replace("( ", "(")  # "([Chapter 3](...) on ...)"
        found.append((spelled, shown))
    return found


def spells(name, title):
    """Whether Chromium's bookmark ``name`` is the heading ``title``: equal
    once whitespace is dropped, or with one piece of the title written twice
    ("ContentsContents")."""
    name, title = re.sub(r"\s", "", name), re.sub(r"\s", "", title)
    extra = len(name) - len(title)
    if not title or extra < 0:
        return False
    return any(  # ``title`` with title[i : i + extra] written twice
        title[:i] + title[i : i + extra] + title[i:] == name
        for i in range(len(title) - extra + 1)
    )


def _within(title, name):
    """Whether every character of ``title`` (a long one) is in ``name``, in
    order, and they make up at least half of it."""
    title, name = re.sub(r"\s", "", title), re.sub(r"\s", "", name)
    rest = iter(name)
    return len(title) >= max(8, len(name) / 2) and all(
        c in rest for c in title
    )


def retitle_outline(pdf_path, titles):
    """Give the PDF's bookmarks the headings' own text (``titles``: pairs of
    :func:`headings`).

    Chromium names a bookmark after the heading's line boxes, joined without
    spaces, and repeats one line of some headings ("ContentsContents"). Each
    bookmark is matched, in order, to the next heading it spells once spaces
    and such a repeat are ignored; a bookmark that matches none keeps its name.
    The renamed bookmarks are appended to the file as an update (see
    ``append_update``): copying the whole PDF took longer than printing it.
    """
    import logging as std_logging

    from pypdf import PdfReader
    from pypdf.generic import NameObject, TextStringObject

    # pypdf warns about Chromium's harmless trailer sizes
    std_logging.getLogger("pypdf").setLevel(std_logging.ERROR)
    reader = PdfReader(pdf_path)
    outline = reader.trailer["/Root"].get("/Outlines")
    # (reference, bookmark) pairs: the reference says which object to replace
    items = []
    stack = [outline.get_object().raw_get("/First")] if outline else []
    while stack:  # depth first, in reading order
        reference = stack.pop()
        item = reference.get_object()
        items.append((reference, item))
        if "/Next" in item:
            stack.append(item.raw_get("/Next"))
        if "/First" in item:
            stack.append(item.raw_get("/First"))
    position, renamed = 0, []
    for reference, item in items:
        name = str(item["/Title"])
        for index in range(position, len(titles)):
            spelled, shown = titles[index]
            # the next heading also when Chromium wrote more than one of its
            # lines twice (a Chinese heading broken around its math)
            if spells(name, spelled) or (
                index == position and _within(spelled, name)
            ):
                item[NameObject("/Title")] = TextStringObject(shown)
                renamed.append((reference, item))
                position = index + 1
                break
    append_update(pdf_path, reader.trailer, renamed)


def append_update(pdf_path, trailer, objects):
    """Append new versions of ``objects`` ((reference, object) pairs) to the
    PDF as an incremental update (PDF 1.7, section 7.5.6): the objects, a
    cross-reference section for them and a trailer pointing back to the
    file's last one. The bytes already there stay as they are."""
    from pypdf.generic import DictionaryObject, NameObject, NumberObject

    if not objects:
        return
    data = Path(pdf_path).read_bytes()
    previous = int(re.findall(rb"startxref\s+(\d+)", data[-1024:])[-1])
    update, offsets = io.BytesIO(), []
    update.write(b"\n")
    for reference, obj in sorted(objects, key=lambda pair: pair[0].idnum):
        offsets.append((reference, len(data) + update.tell()))
        update.write(
            f"{reference.idnum} {reference.generation} obj\n".encode()
        )
        obj.write_to_stream(update)
        update.write(b"\nendobj\n")
    xref = len(data) + update.tell()
    # the free head of the list first, as in a whole file's table; then a
    # subsection of one entry for each object
    update.write(b"xref\n0 1\n0000000000 65535 f \n")
    for reference, offset in offsets:
        entry = f"{offset:010d} {reference.generation:05d} n \n"
        update.write(f"{reference.idnum} 1\n{entry}".encode())
    new_trailer = DictionaryObject(
        {
            NameObject(key): trailer.raw_get(key)
            for key in ("/Size", "/Root", "/Info", "/ID")
            if key in trailer
        }
    )
    new_trailer[NameObject("/Prev")] = NumberObject(previous)
    update.write(b"trailer\n")
    new_trailer.write_to_stream(update)
    update.write(f"\nstartxref\n{xref}\n%%EOF\n".encode())
    with open(pdf_path, "ab") as file:
        file.write(update.getvalue())


def print_pdf(html_path, pdf_path, outdir, titles):
    """Serve the build on localhost, open ``html_path`` in headless Chromium
    and print it, with bookmarks (named ``titles``) and page numbers, in the
    footer and in the contents."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(outdir))
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/{html_path.relative_to(outdir).as_posix()}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=find_chromium(),
                headless=True,
                args=CHROMIUM_FLAGS,
            )
            page = browser.new_page()
            page.goto(url, wait_until="load")
            missing = page.evaluate(READY)
            if missing:
                raise RuntimeError(
                    f"the page was not ready to print: {missing}"
                )
            options = dict(
                path=str(pdf_path),
                format="A4",
                print_background=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER,
            )
            # printed twice: the first print says on which page each heading
            # fell, the second carries those numbers in the contents (the
            # first without tags and bookmarks, and with the figures laid out
            # but not painted: 4 s instead of 10; with the same footer)
            unpainted = page.add_style_tag(content=UNPAINTED)
            page.pdf(**options)
            unpainted.evaluate("style => style.remove()")
            # printed again while a heading fell on another page than the
            # contents say: Chromium's layout of one page can alternate from
            # one print to the next (a heading near a page's end, seen), so
            # the numbers filled in are those of the print before last
            prints = [destination_pages(pdf_path)]
            for _ in range(4):
                said = prints[-2] if len(prints) > 1 else prints[-1]
                page.evaluate(FILL_NUMBERS, said)
                page.pdf(**options, outline=True, tagged=True)  # bookmarks
                prints.append(destination_pages(pdf_path))
                if prints[-1] == said:
                    break
            browser.close()
    finally:
        server.shutdown()
    retitle_outline(pdf_path, titles)


# what fixes a machine with no browser to print with, said by the build and
# by the tests that skip for it
NO_CHROMIUM = (
    "no Chromium to print the PDF with: install one (Debian and Ubuntu: "
    "apt-get install chromium; elsewhere: python3 -m playwright install "
    "chromium)"
)


def find_chromium():
    """The Chromium the PDF is printed with and the tests browse with: the
    system's (``chromium`` or ``chromium-browser`` on the PATH), else the one
    Playwright installed for itself; None where neither is there."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            own = playwright.chromium.executable_path
    except Exception:  # no Playwright, or no driver for it
        return None
    return own if own and Path(own).is_file() else None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    """A local server that says nothing when a page hung up before its
    answer was sent (a favicon's "not found" after the page closed)."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def printed_digest(book, folder):
    """What the PDF of ``book`` (its HTML in ``folder``) shows and how it
    prints: its HTML, runs of white space as one (a comment leaves its
    line's end behind), without the ``?v=`` checksums of the files it loads
    (a first build writes none: the files are not there yet when its pages
    are written) but with those files' contents, and this file."""
    shown = re.sub(r"\?v=[0-9a-f]+", "", re.sub(r"\s+", " ", str(book)))
    digest = hashlib.sha256(shown.encode() + Path(__file__).read_bytes())
    for tag in book.head.find_all(["link", "script"]):
        if tag.name == "link" and "stylesheet" not in tag.get("rel", []):
            continue  # not loaded to print (the page's twin, say)
        url = (tag.get("href") or tag.get("src") or "").split("?")[0]
        loaded = folder / url
        if url.endswith("searchindex.js"):
            continue  # the search's index: not printed, and rebuilt anew
        if url and "://" not in url and loaded.is_file():
            digest.update(url.encode() + loaded.read_bytes())
            if url.endswith(".css"):  # and the fonts it names
                text = loaded.read_text(encoding="utf-8", errors="replace")
                for name in re.findall(r"url\(['\"]?([^'\")?#]+)", text):
                    font = loaded.parent / name
                    if "://" not in name and font.is_file():
                        digest.update(name.encode() + font.read_bytes())
    return digest.hexdigest()


def _build_pdf(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        logger.warning(
            f"book_pdf: Playwright is not installed, so {PDF_NAME} cannot be "
            "printed: python3 -m pip install -r requirements.lock"
        )
        return
    if find_chromium() is None:
        logger.warning(f"book_pdf: {NO_CHROMIUM}")
        return
    outdir = Path(app.outdir)
    html_path = outdir / "_pdf" / "book.html"
    html_path.parent.mkdir(exist_ok=True)
    language = "zh" if (app.config.language or "en").startswith("zh") else "en"
    words = WORDS[language]
    subtitle = (
        f"{words['subtitle']}<br>{app.config.author}{words['after_author']}"
        f"{time.strftime(words['printed'])}"
    )
    book = one_document(
        outdir,
        reading_order(app.env),
        app.config.html_title or app.config.project,
        subtitle,
        language,
    )
    html_path.write_text(str(book), encoding="utf-8")
    # a rebuild that changed nothing the PDF shows (a comment, say) keeps it
    printed_from = outdir / f"{PDF_NAME}.printed-from"
    digest = printed_digest(book, html_path.parent)
    if (outdir / PDF_NAME).is_file() and printed_from.is_file():
        if printed_from.read_text() == digest:
            logger.info(f"book_pdf: {PDF_NAME} kept, the book is as printed")
            return
    # printed under another name and renamed when whole, so that the file
    # named PDF_NAME is never half-written (the tests read it as soon as it
    # is there)
    printing = outdir / f"{PDF_NAME}.part"
    try:
        print_pdf(html_path, printing, outdir, headings(book))
    except Exception as error:  # the HTML book is complete, the PDF not
        printing.unlink(missing_ok=True)
        logger.warning(
            f"book_pdf: {PDF_NAME} could not be printed "
            f"({type(error).__name__}: {error})"
        )
        return
    printing.replace(outdir / PDF_NAME)
    printed_from.write_text(digest)
    logger.info(f"book_pdf: wrote {PDF_NAME}")


def book_pdf_button(buttons, url, label, tooltip):
    """``buttons``, the theme's header buttons, with its ".pdf" download
    (the browser printing the page in view) turned into a link to the
    book's PDF at ``url``, named ``label``."""
    for group in buttons:
        for button in group.get("buttons", []):
            if button.get("label") == "download-pdf-button":
                button.update(
                    type="link", url=url, text=label, tooltip=tooltip
                )
                button.pop("javascript", None)
    return buttons


def _link_the_pdf(app, pagename, templatename, context, doctree):
    if "header_buttons" in context and "pathto" in context:
        chinese = (app.config.language or "en").startswith("zh")
        label = "整本书（PDF）" if chinese else "The book (PDF)"
        tooltip = "整本书的 PDF" if chinese else "The whole book as a PDF"
        url = context["pathto"](PDF_NAME, 1)
        book_pdf_button(context["header_buttons"], url, label, tooltip)


def setup(app):
    # after the theme has added its buttons (priority 501)
    app.connect("html-page-context", _link_the_pdf, priority=600)
    # late: after the other build-finished handlers, e.g. the one that copies
    # MathJax to _static
    app.connect("build-finished", _build_pdf, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
