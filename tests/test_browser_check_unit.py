"""Unit tests of mamba_recall.browser_check helpers and the offline renderer (no browser)."""

from __future__ import annotations

import json
import re

import pytest

from mamba_recall import browser_check as bc

ORIGIN = "http://127.0.0.1:4321"


def test_toc_files_jb_book_nested():
    toc = {
        "format": "jb-book",
        "root": "intro",
        "parts": [
            {
                "caption": "A",
                "chapters": [
                    {"file": "book/one.md", "sections": [{"file": "book/one_a"}]},
                    {"file": "book/two.ipynb"},
                ],
            },
            {
                "caption": "B",
                "chapters": [{"url": "https://example.com", "title": "x"}, {"glob": "extra/*"}, {"file": "book/one_a"}],
            },
        ],
    }
    assert bc.toc_files(toc) == ["intro", "book/one", "book/one_a", "book/two"]
    assert [bc.html_page(f) for f in bc.toc_files(toc)] == [
        "intro.html",
        "book/one.html",
        "book/one_a.html",
        "book/two.html",
    ]


def test_toc_files_article_and_missing_root():
    assert bc.toc_files({"format": "jb-article", "root": "index.md", "sections": [{"file": "a"}]}) == ["index", "a"]
    with pytest.raises(bc.SetupError):
        bc.toc_files({"chapters": [{"file": "a"}]})


def test_load_toc(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: book/chart\n")
    assert bc.load_toc(toc) == ["book/intro.html", "book/chart.html"]


@pytest.mark.parametrize(
    ("url", "local"),
    [
        (f"{ORIGIN}/book/a.html", True),
        (ORIGIN, True),
        ("data:image/png;base64,AAAA", True),
        ("blob:http://127.0.0.1:4321/uuid", True),
        ("about:blank", True),
        ("chrome://resources/x.js", True),
        ("http://127.0.0.1:43210/x.js", False),  # another port
        ("http://localhost:4321/x.js", False),
        ("https://cdn.jsdelivr.net/npm/vega@6", False),
    ],
)
def test_is_local_url(url, local):
    assert bc.is_local_url(url, ORIGIN) is local


def _entry(method, **params):
    return {"message": json.dumps({"message": {"method": method, "params": params}})}


def test_parse_performance_log():
    entries = [
        _entry("Network.requestWillBeSent", requestId="1", request={"url": f"{ORIGIN}/p.html"}),
        _entry(
            "Network.responseReceived",
            requestId="1",
            type="Document",
            response={"url": f"{ORIGIN}/p.html", "status": 200},
        ),
        _entry("Network.requestWillBeSent", requestId="2", request={"url": "https://cdn.jsdelivr.net/npm/x.js"}),
        _entry("Network.loadingFailed", requestId="2", errorText="net::ERR_PROXY"),
        _entry("Network.requestWillBeSent", requestId="3", request={"url": f"{ORIGIN}/missing.js"}),
        _entry(
            "Network.responseReceived",
            requestId="3",
            type="Script",
            response={"url": f"{ORIGIN}/missing.js", "status": 404},
        ),
        _entry("Network.requestWillBeSent", requestId="4", request={"url": f"{ORIGIN}/favicon.ico"}),
        _entry(
            "Network.responseReceived",
            requestId="4",
            type="Other",
            response={"url": f"{ORIGIN}/favicon.ico", "status": 404},
        ),
        {"message": "not json"},
    ]
    rep = bc.parse_performance_log(entries, ORIGIN)
    assert rep.statuses == {f"{ORIGIN}/p.html": 200}
    assert rep.external == ["https://cdn.jsdelivr.net/npm/x.js"]
    assert rep.failed == [f"{ORIGIN}/missing.js (HTTP 404)"]


def test_missing_browser_message(tmp_path):
    with pytest.raises(bc.SetupError, match="apt-get install chromium chromium-driver"):
        bc._find_executable(str(tmp_path / "nope"), "/nonexistent", ("chromium",))


def test_main_missing_html_dir(tmp_path, capsys):
    assert bc.main([str(tmp_path / "nope"), "--toc", str(tmp_path / "_toc.yml")]) == 2
    assert "not a directory" in capsys.readouterr().err


# --- the offline renderer (mamba_recall.plots) ------------------------------


def test_offline_renderer_bundle():
    """One chart output: the Vega-Lite JSON mimetype that JupyterLab, Notebook 7 and VS Code draw themselves,
    and no text/html copy (JupyterLab would prefer it, and it needs the book's scripts: a blank chart)."""
    alt = pytest.importorskip("altair")
    pd = pytest.importorskip("pandas")
    from mamba_recall import plots

    previous = alt.renderers.active
    try:
        plots.enable_offline_renderer()
        assert alt.renderers.active == plots.RENDERER_NAME
        df = pd.DataFrame({"x": [1, 2], "y": ["</script><b>", "b"]})
        chart = alt.Chart(df).mark_bar().encode(x="x", y="y")
        bundle, meta = chart._repr_mimebundle_()
    finally:
        alt.renderers.enable(previous)

    assert set(bundle) == {plots.JSON_MIMETYPE, "text/plain"}
    assert isinstance(bundle[plots.JSON_MIMETYPE], dict)
    assert meta[plots.JSON_MIMETYPE]["embed_options"]["actions"] is False
    # a valid nbformat output (new_output validates; altair's own v6 mimetype is not)
    nbformat = pytest.importorskip("nbformat")
    nbformat.v4.new_output("display_data", data=bundle, metadata=meta)


def test_book_renderer_draws_chart_outputs_with_the_vendored_vega():
    """The HTML book's MyST-NB plugin (registered as an entry point) turns the chart's JSON into the drawn
    fragment: a div of the chart class and an inline vegaEmbed call, no script from any URL."""
    pytest.importorskip("myst_nb")
    from importlib.metadata import entry_points

    from myst_nb.core.render import MimeData, get_mime_priority

    from mamba_recall import plots
    from mamba_recall.book_render import VegaLiteHTML

    assert "mamba_recall.book_render:VegaLiteHTML" in [ep.value for ep in entry_points(group="myst_nb.mime_renderers")]
    priority = get_mime_priority("html", [])
    assert priority.index(plots.JSON_MIMETYPE) < priority.index("text/html")
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "data": {"values": [{"y": "</script><b>"}]}}
    meta = {plots.JSON_MIMETYPE: {"embed_options": {"actions": False}}}
    data = MimeData(plots.JSON_MIMETYPE, spec, output_metadata=meta, cell_index=3, output_index=0)
    (node,) = VegaLiteHTML.handle_mime(None, data, False)
    html = node.astext()
    assert not re.search(r"<script[^>]*\bsrc\s*=", html)
    assert "http://" not in html.replace("https://vega.github.io/schema/", "")
    assert f'class="{plots.CHART_CLASS}"' in html
    assert "vegaEmbed(" in html and "console.error" in html
    assert html.count("</script>") == 1  # the data string must not close the inline <script>
    div_id = re.search(r'id="([^"]+)"', html).group(1)
    assert re.fullmatch(plots.CHART_CLASS + r"-[0-9a-f]{12}-3-0", div_id)  # deterministic, unique per page
    assert VegaLiteHTML.handle_mime(None, MimeData("text/html", "<p>x</p>"), False) is None
