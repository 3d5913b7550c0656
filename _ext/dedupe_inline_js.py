"""Work around Sphinx 7.4 duplicating inline <script> bodies (None vs '' filename).

sphinx-thebe adds ``const THEBE_JS_URL = ...`` on env-before-read-docs; Sphinx 7.4
then re-adds it in prepare_writing with filename '' instead of None, so every page
gets it twice -> "Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been declared".
"""


def _dedupe(app, pagename, templatename, context, doctree):
    files = context.get("script_files")
    if not isinstance(files, list):
        return
    seen, unique = set(), []
    for js in files:
        key = (
            getattr(js, "filename", js) or "",
            getattr(js, "priority", None),
            tuple(sorted(getattr(js, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(js)
    files[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
