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
SCREENSHOTS = BUILD / "screenshots"  # the browser test's, where asked for
