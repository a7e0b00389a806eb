"""Where the README's build command writes: the paths that the extensions, the
scripts and the tests share, named here once."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
HTML = BUILD / "html"  # the English pages; the Chinese ones in HTML / "zh"
CACHE = BUILD / ".jupyter_cache"  # the chapters' runs, as the build reads them
DOWNLOADS = HTML / "_sources" / "notebooks"  # each chapter as downloaded
TEMPLATES = BUILD / "gettext"  # every page's messages, to translate
TEMPLATE_DOCTREES = BUILD / ".doctrees-gettext"  # the build that writes them
# the test command's own build (tests/book_session.py): the same command with
# --path-output TEST_OUTPUT, so that the README's _build is left alone
TEST_OUTPUT = ROOT / "_build-tests"
TEST_BUILD = TEST_OUTPUT / "_build"
SCREENSHOTS = TEST_BUILD / "screenshots"  # the browser test's, where asked for
# each number a chapter glued in the test command's runs, one file per name
# (tests/book_session.py reads them from the chapters' outputs)
GLUED = TEST_OUTPUT / "glued"
