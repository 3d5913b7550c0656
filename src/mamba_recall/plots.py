"""Charts for the Mamba recall book (Altair).

The first section is the *offline renderer*: every Altair chart is one output, its Vega-Lite JSON under
``application/vnd.vegalite.v5+json`` (:data:`JSON_MIMETYPE`), and each front end draws it with the tools it
already has, offline:

* JupyterLab, Notebook 7 and VS Code draw that mimetype natively with the Vega they bundle, live and from
  saved outputs (no ``text/html`` copy: JupyterLab ranks HTML above Vega, and an HTML copy needs the book's
  scripts, which JupyterLab does not load, so the chart was blank there);
* the HTML book draws it through the MyST-NB mime renderer :class:`mamba_recall.book_render.VegaLiteHTML`
  (registered under the ``myst_nb.mime_renderers`` entry point), which writes :func:`chart_html`: a
  ``<div class="mamba-recall-chart">`` and a script calling ``vegaEmbed`` from the Vega JavaScript the book
  serves itself (``book/_static/vendor/``, loaded on every page through ``html_js_files``), with no
  ``<script src=...>`` to any URL. Under each drawn chart a line of buttons saves it as PNG or SVG (Vega's own
  ``view.toImageURL``) and its data as CSV (the rows inlined in its spec), all made in the browser.

Chart builders go below the renderer section.
"""

from __future__ import annotations

# =============================================================================
# Offline Altair renderer (owned by the renderer/vendoring work; keep on top)
# =============================================================================

import hashlib
import json
import string
from typing import Any

__all__ = ["RENDERER_NAME", "CHART_CLASS", "JSON_MIMETYPE", "enable_offline_renderer"]

#: Name under which the renderer is registered in ``altair.renderers``.
RENDERER_NAME = "mamba_recall"

#: Mimetype of the JSON copy of the chart's Vega-Lite spec in the bundle. Altair 6 itself uses
#: ``application/vnd.vegalite.v6.json``, but (a) nbformat only allows a JSON
#: *object* under ``application/*+json`` mimetypes, so nbclient/MyST-NB reject
#: that output with ``NotebookValidationError``, and (b) JupyterLab (4.6) only
#: draws ``application/vnd.vegalite.v3/v4/v5+json`` natively. The v5 mimetype
#: makes JupyterLab draw the (v6) spec with its bundled Vega-Lite 5, which
#: handles the specs Altair writes for ordinary charts (it may log a version
#: warning in the browser console).
JSON_MIMETYPE = "application/vnd.vegalite.v5+json"
VEGA_JSON_MIMETYPE = "application/vnd.vega.v5+json"

#: CSS class of the ``<div>`` each chart is drawn into
#: (``tools/browser_check.py`` looks for it).
CHART_CLASS = "mamba-recall-chart"

# Default embed options; ``actions: false`` hides the "..." menu (its
# "Open in Vega Editor" link would leave the machine).
_DEFAULT_EMBED_OPTIONS: dict[str, Any] = {"actions": False, "renderer": "svg"}

_HTML_TEMPLATE = string.Template(
    """\
<div id="$div_id" class="$css_class" style="width:100%"></div>
<script type="text/javascript">
(function() {
  var el = document.getElementById("$div_id");
  var spec = $spec;
  var opt = $opt;
  function fail(msg) {
    var text = "mamba_recall chart $div_id: " + msg;
    console.error(text);
    if (el) {
      el.innerHTML = "";
      var p = document.createElement("p");
      p.className = "mamba-recall-chart-error";
      p.style.color = "red";
      p.textContent = text;
      el.appendChild(p);
    }
  }
  function draw() {
    if (typeof window.vegaEmbed !== "function") {
      fail("vegaEmbed is not loaded: the page must load _static/vendor/vega.min.js, "
           + "vega-lite.min.js and vega-embed.min.js (html_js_files) and no require.js "
           + "(strip metadata.widgets from notebooks, or set nb_ipywidgets_js: {})");
      return;
    }
    window.vegaEmbed(el, spec, opt).then(function(result) {
      tools(result.view);
    }).catch(function(err) {
      fail("Vega error: " + (err && err.message ? err.message : err));
    });
  }
  function tables() {
    // every table of rows inlined in the chart's spec: Vega-Lite's top-level datasets, any data.values (Vega's too)
    var found = [], seen = [];
    function add(name, rows) {
      if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== "object" || seen.indexOf(rows) >= 0) return;
      seen.push(rows);
      found.push([name, rows]);
    }
    (function walk(node, key) {
      if (!node || typeof node !== "object") return;
      if (Array.isArray(node)) { node.forEach(function(n) { walk(n, key); }); return; }
      if (key === "datasets") {
        Object.keys(node).forEach(function(k) { add(k, node[k]); });
        return;
      }
      if (key === "data" && Array.isArray(node.values)) add(node.name || "data", node.values);
      Object.keys(node).forEach(function(k) { walk(node[k], k); });
    })(spec, "");
    return found;
  }
  function csv(rows) {
    var cols = [];
    rows.forEach(function(r) { Object.keys(r).forEach(function(k) { if (cols.indexOf(k) < 0) cols.push(k); }); });
    function cell(v) {
      if (v === null || v === undefined) return "";
      var t = typeof v === "object" ? JSON.stringify(v) : String(v);
      return /[",\\n\\r]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
    }
    return [cols.map(cell).join(",")].concat(rows.map(function(r) {
      return cols.map(function(k) { return cell(r[k]); }).join(",");
    })).join("\\r\\n") + "\\r\\n";
  }
  function save(url, name) {
    var a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  function tools(view) {
    var bar = document.createElement("div");
    bar.className = "$css_class-tools";
    bar.appendChild(document.createTextNode("Save: "));
    function button(text, title, act) {
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.title = title;
      b.addEventListener("click", act);
      bar.appendChild(b);
    }
    button("PNG", "the chart as a PNG image", function() {
      view.toImageURL("png", 2).then(function(url) { save(url, "$div_id.png"); });
    });
    button("SVG", "the chart as an SVG image", function() {
      view.toImageURL("svg").then(function(url) { save(url, "$div_id.svg"); });
    });
    var data = tables();
    data.forEach(function(t, i) {
      var name = data.length > 1 ? "CSV " + (i + 1) : "CSV";
      button(name, "the chart's data (" + t[1].length + " rows) as CSV", function() {
        var url = URL.createObjectURL(new Blob([csv(t[1])], {type: "text/csv"}));
        save(url, "$div_id" + (data.length > 1 ? "-" + (i + 1) : "") + ".csv");
        setTimeout(function() { URL.revokeObjectURL(url); }, 1000);
      });
    });
    el.parentNode.insertBefore(bar, el.nextSibling);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
</script>"""
)


def _js_json(obj: Any) -> str:
    """JSON that is safe to inline inside an HTML ``<script>`` element."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def chart_html(spec: dict, embed_options: dict | None, div_id: str) -> str:
    """The HTML book's fragment for one chart: a ``<div>`` of class :data:`CHART_CLASS` and an inline script
    that draws ``spec`` with the page's ``vegaEmbed`` (the vendored Vega files), or writes a red
    ``mamba-recall-chart-error`` paragraph (and a console error) saying why it could not."""
    options = dict(_DEFAULT_EMBED_OPTIONS)
    options.update(embed_options or {})
    if str(spec.get("$schema", "")).startswith("https://vega.github.io/schema/vega/"):
        options.setdefault("mode", "vega")
    return _HTML_TEMPLATE.substitute(div_id=div_id, css_class=CHART_CLASS, spec=_js_json(spec), opt=_js_json(options))


def chart_id(spec: dict, suffix: str = "") -> str:
    """A deterministic element id for ``spec``: :data:`CHART_CLASS`, a hash of its JSON and ``suffix`` (the
    cell and output index, so the same chart twice on one page gets two ids)."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    return f"{CHART_CLASS}-{digest}" + (f"-{suffix}" if suffix else "")


def _offline_renderer(spec: dict, **metadata: Any):
    """Altair renderer: the chart's Vega-Lite JSON under :data:`JSON_MIMETYPE` (or its Vega JSON under
    :data:`VEGA_JSON_MIMETYPE` when VegaFusion compiled it), with the embed options in the output metadata."""
    from altair.utils.display import default_renderer_base
    from altair.vegalite.v6.display import (
        DEFAULT_DISPLAY,
        VEGA_MIME_TYPE,
        VEGALITE_MIME_TYPE,
    )

    embed_options = dict(_DEFAULT_EMBED_OPTIONS)
    embed_options.update(metadata.pop("embed_options", None) or {})
    # default_renderer_base compiles with VegaFusion when that is enabled and
    # then returns a Vega (not Vega-Lite) spec.
    bundle, _ = default_renderer_base(spec, VEGALITE_MIME_TYPE, DEFAULT_DISPLAY)
    if VEGA_MIME_TYPE in bundle:
        drawn_spec, json_mime = bundle.pop(VEGA_MIME_TYPE), VEGA_JSON_MIMETYPE
        embed_options.setdefault("mode", "vega")
    else:
        drawn_spec, json_mime = bundle.pop(VEGALITE_MIME_TYPE), JSON_MIMETYPE
    bundle[json_mime] = drawn_spec
    return bundle, {json_mime: {"embed_options": embed_options}}


def enable_offline_renderer(**embed_options: Any) -> None:
    """Register and enable the :data:`RENDERER_NAME` Altair renderer.

    Call once near the top of every notebook (before displaying charts).
    ``embed_options`` (e.g. ``renderer="canvas"``) are passed to vega-embed
    on top of the defaults ``{"actions": False, "renderer": "svg"}``.

    The data of each chart is inlined into the notebook output (twice: once
    in the Vega-Lite JSON and once in the HTML), so keep it small:
    Altair's default data transformer refuses more than 5000 rows
    (``alt.data_transformers`` ``max_rows``); aggregate before plotting
    rather than disabling that limit.
    """
    import altair as alt

    if RENDERER_NAME not in alt.renderers.names():
        alt.renderers.register(RENDERER_NAME, _offline_renderer)
    if embed_options:
        alt.renderers.enable(RENDERER_NAME, embed_options=embed_options)
    else:
        alt.renderers.enable(RENDERER_NAME)


# =============================================================================
# Chart builders (below)
# =============================================================================


# =============================================================================
# Chart builders used by the chapters
# =============================================================================

import sys  # noqa: E402

# altair imports jsonschema, whose format checker imports rfc3987_syntax when it is installed (JupyterLab's
# jupyter-events brings it), and that module builds a grammar at import: about 2 s in every notebook kernel.
# No chart here uses jsonschema's "iri" format check, so the import is declined (a None entry in sys.modules
# makes it raise ImportError, which jsonschema suppresses). A process that imported it already keeps it.
sys.modules.setdefault("rfc3987_syntax", None)

import altair as alt  # noqa: E402
import pandas as pd  # noqa: E402


def grid_param(name: str, values, default, label: str) -> tuple[alt.Parameter, str]:
    """A browser-side control over a grid of values that shows the value chosen, not its position: a slider over
    the values when they are evenly spaced (Vega prints the value beside it), else one radio button per value.
    Returns the parameter and a filter expression for rows that carry the grid position in a field: call it with
    the field's name (``transform_filter(match("delta_i"))``) to keep the rows at the chosen value."""
    values = [v.item() if hasattr(v, "item") else v for v in values]
    gaps = [b - a for a, b in zip(values, values[1:])]
    even = len(values) > 2 and all(g > 0 for g in gaps) and max(gaps) - min(gaps) <= 1e-9 * max(abs(v) for v in values)
    if even:
        bind = alt.binding_range(min=values[0], max=values[-1], step=round(gaps[0], 12), name=label)
    else:
        bind = alt.binding_radio(options=values, name=label)
    param = alt.param(name=name, value=default.item() if hasattr(default, "item") else default, bind=bind)
    tol = (min(gaps) / 2 if gaps else 1.0) * (1 - 1e-6) if all(g > 0 for g in gaps) else 0
    grid = json.dumps(values)

    def match(index_field: str) -> str:
        return f"abs({grid}[datum.{index_field}] - {name}) <= {tol!r}"

    return param, match


def state_chart(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Lines of ``value`` over token ``t``, one per ``series`` (inputs, states, ...)."""
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("t:Q", title="token t"),
            y=alt.Y("value:Q", title="value"),
            color=alt.Color("series:N", title=None),
            tooltip=["t", "series", alt.Tooltip("value:Q", format=".4f")],
        )
        .properties(width=560, height=260, title=title)
    )


def scan_explorer_chart(frame: pd.DataFrame, deltas: list, a_values: list, delta0, a0) -> alt.Chart:
    """State h_t of a one-state scan for every (Δ, A) on a grid, with two browser-side sliders.

    ``frame`` columns: delta_i, a_i (grid positions), t, series (e.g. 'state (Euler)'), value.
    """
    d_param, d_match = grid_param("delta", deltas, delta0, "Δ ")
    a_param, a_match = grid_param("A", a_values, a0, "A ")
    return (
        state_chart(frame, "Inputs u_t and the state h_t (choose Δ and A)")
        .add_params(d_param, a_param)
        .transform_filter(f"{d_match('delta_i')} && {a_match('a_i')}")
    )


def bench_chart(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Forward+backward seconds per backend on a log axis (the timings span four orders of magnitude), one panel
    per size, each timing a dot labelled with its value.

    Dots, not bars: a bar on a log axis has no zero to start from (Vega-Lite draws it from 0, which a log scale
    cannot place: the chart came out empty, "Log scale domain includes zero"). A timing that is not a positive
    number cannot be placed on a log axis either; such rows are left out and the subtitle says how many."""
    seconds = pd.to_numeric(frame["seconds"], errors="coerce")
    shown = frame[seconds > 0]
    left_out = len(frame) - len(shown)
    base = alt.Chart(shown).encode(
        x=alt.X("backend:N", title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("seconds:Q", scale=alt.Scale(type="log"), title="forward + backward (s, log)"),
        color=alt.Color("backend:N", legend=None),
        tooltip=["size", "backend", alt.Tooltip("seconds:Q", format=".4f")],
    )
    dots = base.mark_point(filled=True, size=90, opacity=1)
    labels = base.mark_text(dy=-12, fontSize=11).encode(text=alt.Text("seconds:Q", format=".3g"))
    subtitle = [f"{left_out} timing(s) not > 0 left out: a log axis cannot show them"] if left_out else []
    return (
        alt.layer(dots, labels)
        .properties(width=200, height=240)
        .facet(column=alt.Column("size:N", title=None))
        .properties(title=alt.TitleParams(title, subtitle=subtitle) if subtitle else title)
    )
