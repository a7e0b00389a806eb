"""Refresh the Chinese edition's catalogs after an English edit.

    python3 scripts/translations.py

extracts every message of the English pages (the prose, and the comments of
their code: ``book/_ext/code_comments.py``; the notebooks are read without
running them, so no computed output reaches a catalog) into
``_build/gettext`` and brings each catalog of ``locale/zh_CN/LC_MESSAGES`` in
step: a new message arrives untranslated, a changed one keeps its old
translation marked fuzzy (Sphinx does not use it), a removed one goes. Then
translate what is empty or fuzzy and delete the fuzzy mark; the book's build
warns, and so fails, while any message of a page is missing.

    python3 scripts/translations.py --font NotoSansCJK-Regular.ttc

also writes the Chinese pages' font (``book/_static/fonts``): Noto Sans SC (SIL
Open Font License; Debian's ``fonts-noto-cjk`` holds the file) cut down to the
3,755 common characters of GB 2312 and every character the catalogs use.
"""

import argparse
import sys
from pathlib import Path

from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import code_comments  # noqa: E402
from build_paths import TEMPLATE_DOCTREES, TEMPLATES  # noqa: E402
from chinese_edition import build  # noqa: E402

LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
FONT = ROOT / "book" / "_static" / "fonts" / "NotoSansSC-book.woff"
LICENCE = FONT.with_name("OFL.txt")


def extract():
    """Every page's messages as a ``.pot`` template, from a build that runs
    no notebook."""
    result = build(
        TEMPLATES,
        overrides={"nb_execution_mode": "off"},
        doctreedir=TEMPLATE_DOCTREES,
        builder="gettext",
        freshenv=True,
        really_quiet=True,
    )
    if result:
        sys.exit(f"extracting the messages failed: {result}")
    for template_path in TEMPLATES.rglob("*.pot"):
        add_code_comments(template_path)


def add_code_comments(template_path):
    """The comments of a page's code added to its template, after its
    prose."""
    page = ROOT / template_path.relative_to(TEMPLATES).with_suffix("")
    (source,) = [
        page.with_suffix(suffix)
        for suffix in (".md", ".ipynb")
        if page.with_suffix(suffix).is_file()
    ]
    with open(template_path, "rb") as file:
        template = read_po(file)
    for code in code_comments.page_code(source):
        for text in code_comments.messages(code):
            if text not in template:
                template.add(text, auto_comments=["a comment in the code"])
    with open(template_path, "wb") as file:
        write_po(file, template, width=0, omit_header=False)


HEADER = (
    "# The Chinese edition of one page of Multi-Head Attention, Answered.\n"
    "# Refreshed by python3 scripts/translations.py: translate each empty\n"
    "# msgstr, check each fuzzy one and delete its fuzzy mark."
)


def _messages(catalog):
    return [
        (message.id, message.string, message.fuzzy)
        for message in catalog
        if message.id
    ]


def update():
    """Each catalog brought in step with its template; returns {page: number
    of messages still to translate}."""
    todo = {}
    for template_path in sorted(TEMPLATES.rglob("*.pot")):
        page = template_path.relative_to(TEMPLATES).with_suffix("")
        with open(template_path, "rb") as file:
            template = read_po(file)
        path = LOCALE / page.with_suffix(".po")
        before = None
        if path.is_file():
            with open(path, "rb") as file:
                catalog = read_po(file, locale="zh_CN")
            before = _messages(catalog)
            catalog.update(template)
        else:
            catalog = template
            catalog.locale = "zh_CN"
        catalog.project = "Multi-Head Attention, Answered"
        catalog.header_comment = HEADER
        catalog.last_translator = "The course authors"
        catalog.language_team = "zh_CN"
        catalog.fuzzy = False
        if _messages(catalog) != before:  # else left as it is, date and all
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as file:
                write_po(
                    file,
                    catalog,
                    width=0,
                    ignore_obsolete=True,
                    omit_header=False,
                    no_location=True,
                )
        todo[page.as_posix()] = sum(
            1
            for message in catalog
            if message.id and (not message.string or message.fuzzy)
        )
    for path in LOCALE.rglob("*.po"):  # a page that no longer exists
        page = path.relative_to(LOCALE).with_suffix("")
        if not (TEMPLATES / page.with_suffix(".pot")).is_file():
            path.unlink()
    return todo


def catalog_characters():
    """Every character of every translation, the outputs' catalog's too."""
    characters = set()
    for path in LOCALE.parent.rglob("*.po"):
        with open(path, "rb") as file:
            for message in read_po(file):
                characters.update(message.string or "")
    return characters


def common_characters():
    """The 3,755 characters of GB 2312's first level."""
    characters = set()
    for first in range(0xB0, 0xD8):
        for second in range(0xA1, 0xFF):
            try:
                characters.add(bytes([first, second]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return characters


def write_font(collection):
    """The Chinese pages' font: Noto Sans SC's glyphs for the common and the
    catalogs' characters, as WOFF."""
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    fonts = TTCollection(collection).fonts
    font = next(
        font for font in fonts if "SC" in font["name"].getDebugName(1).split()
    )
    wanted = common_characters() | catalog_characters()
    wanted |= {chr(code) for code in range(0x3000, 0x3040)}  # punctuation
    wanted |= {chr(code) for code in range(0xFF00, 0xFFF0)}  # full width
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in wanted])
    subsetter.subset(font)
    FONT.parent.mkdir(parents=True, exist_ok=True)
    font.flavor = "woff"
    font.save(FONT)
    print(f"wrote {FONT.relative_to(ROOT)} ({FONT.stat().st_size:,} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--font",
        type=Path,
        help="NotoSansCJK-Regular.ttc: also write the Chinese pages' font",
    )
    arguments = parser.parse_args()
    extract()
    todo = update()
    for page, count in todo.items():
        print(
            f"{page}: {count} message(s) to translate"
            if count
            else f"{page}: complete"
        )
    if arguments.font:
        write_font(arguments.font)


if __name__ == "__main__":
    main()
