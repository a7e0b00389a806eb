"""Sphinx extension: pages that load without errors in the browser console.

Two upstream quirks of the Jupyter Book 1.x theme stack, mended at build time:
- sphinx-thebe adds its configuration script twice to every page, so the
  browser reports "Identifier 'THEBE_JS_URL' has already been declared"; we
  drop repeated scripts.
- pydata-sphinx-theme logs "Got invalid theme mode" for a first-time reader
  when no default colour mode reaches the template; we default to "auto"
  (follow the system setting).
"""


def unique_scripts(scripts):
    """``scripts`` without repeats, in order: an inline script added once with
    filename ``None`` and once with ``''`` counts once."""
    seen, unique = set(), []
    for script in scripts:
        key = (
            getattr(script, "filename", None) or "",
            tuple(sorted(getattr(script, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    return unique


def _mend_page(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = unique_scripts(scripts)


def setup(app):
    # early: a later handler may return a template name, which ends the event
    # for the rest
    app.connect("html-page-context", _mend_page, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
