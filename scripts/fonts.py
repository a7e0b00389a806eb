"""Write the book's Latin fonts, so that no page and no PDF depends on the
fonts of the machine that shows or prints it.

    python3 scripts/fonts.py

cuts DejaVu Sans (regular, bold, oblique, bold oblique) and DejaVu Sans Mono
(regular, bold) down to the Latin, Greek, punctuation, arrow, mathematical
and check-mark characters the pages use, without hinting, and writes them as
WOFF into ``book/_static/fonts``. The source is the copy Matplotlib installs
(the figures are drawn in the same faces), so the files are the same on every
machine with the lock's Matplotlib. DejaVu's licence (Bitstream Vera's terms
for the glyphs, public domain for DejaVu's changes) is copied beside them.
``book/_static/book.css`` puts these faces first in every font stack; the
Chinese characters come from the Noto Sans SC subset that
``scripts/translations.py --font`` writes. ``tests/test_book_pages.py``
checks that every character the pages draw is in the faces shipped.
"""

import shutil
from pathlib import Path

import matplotlib
from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parent.parent
FONTS = ROOT / "book" / "_static" / "fonts"
SOURCE = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
FACES = [
    "DejaVuSans",
    "DejaVuSans-Bold",
    "DejaVuSans-Oblique",
    "DejaVuSans-BoldOblique",
    "DejaVuSansMono",
    "DejaVuSansMono-Bold",
]
# Latin with its accents, Greek, punctuation, super- and subscripts, the euro,
# letter-like symbols, arrows, mathematical operators, technical symbols,
# box drawing, geometric shapes, the check and cross marks, and the
# replacement character
CHARACTERS = (
    "U+0020-007E,U+00A0-017F,U+0300-036F,U+0370-03FF,U+2000-206F,"
    "U+2070-209F,U+20AC,U+2100-214F,U+2190-21FF,U+2200-22FF,U+2300-23FF,"
    "U+2500-257F,U+25A0-25FF,U+2713-2718,U+FFFD"
)


def write(face):
    """One face cut to ``CHARACTERS``, as WOFF: the path written."""
    options = subset.Options()
    options.flavor = "woff"
    options.hinting = False  # half the size; browsers hint little anyway
    options.notdef_outline = True
    options.name_IDs = ["*"]
    font = TTFont(SOURCE / f"{face}.ttf", recalcTimestamp=False)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=subset.parse_unicodes(CHARACTERS))
    subsetter.subset(font)
    path = FONTS / f"{face}.woff"
    font.flavor = "woff"
    font.save(path)
    return path


def main():
    FONTS.mkdir(parents=True, exist_ok=True)
    for face in FACES:
        path = write(face)
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} B)")
    shutil.copyfile(SOURCE / "LICENSE_DEJAVU", FONTS / "LICENSE_DEJAVU.txt")


if __name__ == "__main__":
    main()
