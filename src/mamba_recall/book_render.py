"""The HTML book's renderer for charts: a MyST-NB mime render plugin.

Every chart of the library is one notebook output, its Vega-Lite JSON under
:data:`mamba_recall.plots.JSON_MIMETYPE` (see :mod:`mamba_recall.plots`). JupyterLab, Notebook 7 and VS Code
draw that mimetype themselves. MyST-NB does not, so this plugin, registered in ``pyproject.toml`` under the
``myst_nb.mime_renderers`` entry point, turns it into the book's HTML fragment
(:func:`mamba_recall.plots.chart_html`, drawn by the vendored ``vegaEmbed``) and gives the mimetype a place in
the HTML builder's priority list, above ``text/html``. Other builders keep their defaults (the text
fallback).
"""

from __future__ import annotations

from .plots import JSON_MIMETYPE, VEGA_JSON_MIMETYPE, chart_html, chart_id

CHART_MIMETYPES = (JSON_MIMETYPE, VEGA_JSON_MIMETYPE)


class VegaLiteHTML:
    """``myst_nb.core.render.MimeRenderPlugin`` for the charts' Vega-Lite (and Vega) JSON outputs."""

    # (builder, mimetype, priority): lower is preferred; MyST-NB's html list puts text/html at 30.
    mime_priority_overrides = [("html", mime, 25) for mime in CHART_MIMETYPES]

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        """The chart's HTML as a raw node, or ``None`` (MyST-NB's own renderers) for other mimetypes."""
        if data.mime_type not in CHART_MIMETYPES or inline:
            return None
        from docutils import nodes

        spec = data.content
        if not isinstance(spec, dict):
            raise TypeError(
                f"chart output {data.mime_type} of cell {data.cell_index} is not a JSON object "
                f"({type(spec).__name__}); re-execute the notebook with the library's renderer."
            )
        options = (data.output_metadata.get(data.mime_type) or {}).get("embed_options")
        div_id = chart_id(spec, f"{data.cell_index}-{data.output_index}")
        html = chart_html(spec, options, div_id)
        return [nodes.raw("", html, format="html", classes=["output", "text_html"])]
