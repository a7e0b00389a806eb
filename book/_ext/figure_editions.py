"""Sphinx extension: every figure of a chapter in the page's language, and
narrow on a phone.

As a chapter runs, each figure is drawn four times from the same numbers
(``mha_lib.course.figure_editions``): as the notebook shows it, with its
words in Chinese, and each of the two narrow, its panels stacked. myst-nb
puts the first on the page; here the page gets its edition's wide rendering
and the narrow one, and ``book.css`` shows the narrow one on a narrow
screen. A figure whose narrow rendering would show text under 10 pixels on a
phone, whose labels are drawn over each other or whose legend covers data
points, or whose words the catalog lacks on a Chinese page, is a warning, so
the build fails.
"""

import base64
import hashlib
from pathlib import Path

import nbformat
from chinese_edition import is_chinese
from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from mha_lib.course import figure_editions as editions

logger = logging.getLogger(__name__)
NARROW_CLASS = "mha-narrow"
WIDE_CLASS = "mha-wide"


def _bundles(env):
    """``{SHA-256 of a figure's PNG: (its renderings, its PNG's metadata)}``
    of the page's notebook as run (from the execution cache)."""
    from jupyter_cache import get_cache

    source = Path(env.srcdir) / f"{env.docname}.ipynb"
    if not source.is_file():
        return {}
    cache = get_cache(env.mystnb_config.execution_cache_path)
    try:
        _, notebook = cache.merge_match_into_notebook(
            nbformat.read(source, as_version=4)
        )
    except KeyError:  # not run: myst-nb says so
        return {}
    bundles = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if editions.MIME in data and "image/png" in data:
                png = base64.b64decode(data["image/png"])
                bundles[hashlib.sha256(png).hexdigest()] = (
                    data[editions.MIME],
                    output.get("metadata", {}).get("image/png", {}),
                )
    return bundles


def problems(renderings):
    """What is wrong with a figure's renderings, in words (none: [])."""
    found = []
    for name, checks in renderings["checks"].items():
        for a, b in checks["overlaps"]:
            found.append(f"{name}: {a!r} is drawn over {b!r}")
        for label in checks["legend_over_data"]:
            found.append(f"{name}: the legend covers points of {label!r}")
    for name in ("narrow", "zh-narrow"):
        size = editions.phone_text_px(renderings["checks"][name])
        if size < editions.PHONE_TEXT_PX:
            found.append(
                f"{name}: its smallest text is {size:.1f} px on a phone "
                f"(at least {editions.PHONE_TEXT_PX})"
            )
    return found


class FiguresForEveryReader(SphinxTransform):
    """Each figure of a notebook's page as its edition's wide rendering and
    the narrow one (classes :data:`WIDE_CLASS`, :data:`NARROW_CLASS`)."""

    default_priority = 13

    def apply(self):
        folder = Path(self.env.mystnb_config.output_folder)
        bundles = _bundles(self.env)
        chinese = is_chinese(self.config)
        for image in list(self.document.findall(nodes.image)):
            found = bundles.get(Path(image["uri"]).stem)
            if found is None:
                continue
            renderings, shown = found
            for problem in problems(renderings):
                logger.warning(
                    f"a figure to redraw: {problem}",
                    location=image,
                )
            if chinese:
                for word in renderings["untranslated"]:
                    logger.warning(
                        f"a figure's words without a translation: {word!r} "
                        f"(add them to locale/zh_CN/outputs.po)",
                        location=image,
                    )
            if chinese:
                wide = self._image(
                    image, renderings["zh"], renderings["shown"]["zh"], folder
                )
            else:
                wide = self._image(image, None, shown, folder)
            name = "zh-narrow" if chinese else "narrow"
            narrow = self._image(
                image, renderings[name], renderings["shown"][name], folder
            )
            wide["classes"].append(WIDE_CLASS)
            narrow["classes"].append(NARROW_CLASS)
            image.parent.replace(image, [wide, narrow])

    def _image(self, image, data, shown, folder):
        """A copy of ``image`` showing the PNG ``data`` (base64; None: the
        image's own) at the size ``shown``."""
        new = image.deepcopy()
        if data is not None:
            png = base64.b64decode(data)
            name = f"{hashlib.sha256(png).hexdigest()}.png"
            (folder / name).write_bytes(png)
            new["uri"] = Path(image["uri"]).with_name(name).as_posix()
        for key in ("width", "height"):
            if key in shown:
                new[key] = str(shown[key])
        return new


def setup(app):
    app.add_transform(FiguresForEveryReader)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
