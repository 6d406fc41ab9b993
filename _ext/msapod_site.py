"""The book's Sphinx extension: every script once in a page's head.

Jupyter Book 1 registers the configuration scripts of sphinx-thebe and
sphinx-togglebutton twice; the second ``const THEBE_JS_URL = ...`` is a script error
("Identifier 'THEBE_JS_URL' has already been declared") on every page, which
``.ci/browser_check.py`` reports. This drops a page's exact repeats of a script (same
file or body, same attributes; an inline script's file is ``None`` or ``""``), keeping the
first.
"""

from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (
        getattr(script, "filename", str(script)) or "",  # an inline script: None or ""
        tuple(sorted((k, str(v)) for k, v in attributes.items())),
    )


def drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key in seen:
            continue
        seen.add(key)
        kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
