"""Sphinx extension: draw the notebooks' Vega-Lite outputs
(``mha_lib.course.interactive``) on the page.

A notebook output of MIME type ``application/vnd.vegalite.v5+json`` becomes a
``<div>`` and a call to ``mhaEmbed`` (``book/_static/interactive.js``:
Vega-Embed, in the figure's narrow layout where the column is narrower than
the figure, and a line naming the selection for print); pages holding one load
Vega, Vega-Lite and Vega-Embed from the book's own ``_static/vega``
(``book/_static/vega``), so the controls work with no kernel and no network.
myst-nb renders MIME types through plugins it collects once into a cached
list; we add ours to that list.
"""

import hashlib
import json
from pathlib import Path

from docutils import nodes
from myst_nb.core import render

MIMETYPE = "application/vnd.vegalite.v5+json"
STATIC = Path(__file__).resolve().parent.parent / "_static"
SCRIPTS = [
    "vega/vega@5.33.1.min.js",
    "vega/vega-lite@5.23.0.min.js",
    "vega/vega-embed@6.29.0.min.js",
    "interactive.js",
]
MARKER = "mha-interactive"
HTML_BUILDERS = ("html", "dirhtml", "singlehtml")


class VegaLiteRenderer:
    """myst-nb MIME renderer plugin (see
    ``myst_nb.core.render.MimeRenderPlugin``)."""

    mime_priority_overrides = [
        (builder, MIMETYPE, 1) for builder in HTML_BUILDERS
    ]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if inline or data.mime_type != MIMETYPE:
            return None
        spec = (
            data.content
            if isinstance(data.content, dict)
            else json.loads(data.content)
        )
        spec_json = json.dumps(spec, separators=(",", ":")).replace(
            "</", "<\\/"
        )
        # unique in the whole book, so pages can be joined into one document
        # (book_pdf.py)
        element = (
            f"{MARKER}-{hashlib.sha1(spec_json.encode()).hexdigest()[:12]}"
        )
        html = (
            f'<div class="{MARKER}" id="{element}"></div>\n'
            f'<script>mhaEmbed("#{element}", {spec_json}, '
            '{actions: false, renderer: "svg"})'
            f".catch(error => console.error(error));</script>"
        )
        return [
            nodes.raw("", html, format="html", classes=["output", "text_html"])
        ]


def _add_static_path(app, config):
    config.html_static_path.append(str(STATIC))


def _load_vega(app, pagename, templatename, context, doctree):
    if MARKER in context.get("body", ""):
        context["script_files"] = [
            *context.get("script_files", []),
            *(f"_static/{s}" for s in SCRIPTS),
        ]
        context["css_files"] = [
            *context.get("css_files", []),
            "_static/interactive.css",
        ]


def setup(app):
    # the cached list myst-nb consults for every output
    plugins = render.load_mime_renders()
    if VegaLiteRenderer not in plugins:
        plugins.append(VegaLiteRenderer)
    app.connect("config-inited", _add_static_path)
    app.connect("html-page-context", _load_vega)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
