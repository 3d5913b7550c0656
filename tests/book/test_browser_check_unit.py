"""Unit tests of tools/browser_check.py: its helpers (no browser), its layout, chart and console checks on small
synthetic pages in headless Chromium (marked ``browser``, skipped without Chromium), and the offline renderer."""

from __future__ import annotations

import json
import re

import pytest

import browser_check as bc  # tools/ (on the path through conftest)

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


def test_console_problems_errors_and_vega_warnings():
    entries = [
        {"level": "SEVERE", "message": "http://x/a.js 1:2 Uncaught TypeError: boom"},
        {"level": "SEVERE", "message": f"{ORIGIN}/favicon.ico - Failed to load resource: 404"},
        {
            "level": "WARNING",
            "message": f'{ORIGIN}/_static/vendor/vega.min.js 0:1502 "WARN" "Log scale domain includes zero"',
        },
        {"level": "WARNING", "message": f"{ORIGIN}/_static/other.js 3:4 something unrelated"},
        {"level": "INFO", "message": '"[PST]: Changed to light mode"'},
    ]
    found = bc._console_problems(entries, ORIGIN)
    assert found == [
        "console error: http://x/a.js 1:2 Uncaught TypeError: boom",
        f'Vega warning: {ORIGIN}/_static/vendor/vega.min.js 0:1502 "WARN" "Log scale domain includes zero"',
    ]


def test_main_rejects_bad_widths(tmp_path, capsys):
    html = tmp_path / "html"
    html.mkdir()
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: intro\n")
    assert bc.main([str(html), "--toc", str(toc), "--widths", "1300,phone"]) == 2
    assert bc.main([str(html), "--toc", str(toc), "--widths", "1300,100"]) == 2
    assert "--widths" in capsys.readouterr().err


def _png(width, height, rows, filters):
    """A tiny 8-bit RGB PNG of ``rows`` (bytes of width*3 each), row i filtered with ``filters[i]``."""
    import struct
    import zlib

    bpp, raw, prior = 3, b"", bytes(width * 3)
    for row, kind in zip(rows, filters):
        out = bytearray()
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            if kind == 0:
                pred = 0
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            out.append((x - pred) & 0xFF)
        raw += bytes([kind]) + bytes(out)
        prior = row

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _unpng(data):
    """Pixel rows of an 8-bit RGB/RGBA PNG (unfiltered), for checking :func:`stack_pngs`."""
    import struct
    import zlib

    chunks = dict()
    pos, idat = 8, b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        chunks[kind] = body
        idat += body if kind == b"IDAT" else b""
        pos += 12 + n
    w, h, _, color, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    bpp = {2: 3, 6: 4}[color]
    raw, stride, rows, prior = zlib.decompress(idat), 1 + w * bpp, [], bytes(w * bpp)
    for y in range(h):
        kind, line = raw[y * stride], bytearray(raw[y * stride + 1 : (y + 1) * stride])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            if kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            else:
                pred = [0, a, b, (a + b) // 2][kind]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prior = bytes(line)
    return w, h, rows


def test_stack_pngs_joins_tiles_whatever_their_filters():
    """Screenshot tiles are joined into one PNG without an image library; the first row of each tile (filtered
    against a zero row in its own file) must come out right whatever filter it used."""
    w = 5
    rows = [bytes((17 * y + 29 * x + 3 * c) % 256 for x in range(w) for c in range(3)) for y in range(10)]
    tiles = [
        _png(w, 3, rows[0:3], [1, 2, 4]),
        _png(w, 3, rows[3:6], [4, 3, 1]),
        _png(w, 2, rows[6:8], [3, 0]),
        _png(w, 2, rows[8:10], [2, 4]),
    ]
    width, height, got = _unpng(bc.stack_pngs(tiles))
    assert (width, height) == (w, 10)
    assert got == rows
    with pytest.raises(ValueError):
        bc.stack_pngs([tiles[0], _png(w + 1, 1, [bytes((w + 1) * 3)], [0])])


# --- the layout, chart and console checks in headless Chromium -------------------

VENDOR = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


def _chromium_missing() -> str | None:
    import os

    for path in (bc.DEFAULT_CHROMIUM, bc.DEFAULT_CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} not found (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed"
    return None


@pytest.fixture(scope="module")
def browser_site(tmp_path_factory):
    """A folder served on 127.0.0.1 with the book's wide.css and vendored Vega, and one headless Chromium."""
    import shutil
    from pathlib import Path

    reason = _chromium_missing()
    if reason:
        pytest.skip(reason)
    root = Path(__file__).resolve().parents[2] / "book" / "_static"
    site = tmp_path_factory.mktemp("site")
    shutil.copy(root / "wide.css", site / "wide.css")
    for name in VENDOR:
        shutil.copy(root / "vendor" / name, site / name)
    with bc.serve(site) as origin, bc.chromium_driver() as driver:
        yield site, origin, driver


def _page(body: str) -> str:
    scripts = "".join(f'<script src="{name}"></script>' for name in VENDOR)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="stylesheet" href="wide.css">'
        f"{scripts}<style>body{{margin:0;font:16px sans-serif}} article{{padding:0 8px}}</style></head>"
        f'<body><main><article class="bd-article">{body}</article></main></body></html>'
    )


def _check(browser_site, name: str, body: str):
    site, origin, driver = browser_site
    (site / name).write_text(_page(body), encoding="utf-8")
    shots = site / "shots"
    result = bc.check_page(driver, origin, site, name, wait_s=10, screenshots=shots)
    return result, shots


def _chart(spec: dict, name: str) -> str:
    from mamba_recall import plots

    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", **spec}
    return plots.chart_html(spec, None, f"{plots.CHART_CLASS}-{name}")


def _failures(result, text: str) -> list[str]:
    return [f for f in result.failures if text in f]


@pytest.mark.browser
def test_browser_plain_page_passes_and_is_shot_whole(browser_site):
    """A page of ordinary text, a table and a chart passes at both widths; its screenshots are whole pages,
    taller than one capture tile (joined from tiles)."""
    table = "<table><tr><th>claim</th><th>evidence</th></tr><tr><td>errata confirmed</td><td>a b c</td></tr></table>"
    spec = {"data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 3}]}, "mark": "point"}
    spec["encoding"] = {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}
    tall = f'<div style="height:{bc.SCREENSHOT_TILE_HEIGHT + 500}px">tall</div><p>end</p>'
    result, shots = _check(browser_site, "plain.html", table + _chart(spec, "plain") + tall)
    assert result.ok, result.failures
    assert (result.charts, result.drawn) == (1, 1)
    for width in bc.WIDTHS:
        w, h = _png_size((shots / str(width) / "plain.png").read_bytes())
        assert w == width and h > bc.SCREENSHOT_TILE_HEIGHT + 500


def _png_size(data: bytes) -> tuple[int, int]:
    import struct

    return struct.unpack(">II", data[16:24])


@pytest.mark.browser
def test_browser_column_narrower_than_its_word_fails_at_both_widths(browser_site):
    """``overflow-wrap: anywhere`` squeezes a column below its longest word ("errat/um", "sy/mb/ol"): that fails
    at 1300 and 400 px; a word that sticks out of its fixed-width cell fails too."""
    squeezed = (
        '<table style="width:60px"><tr><th>symbol</th><th>verdict</th></tr>'
        '<tr><td style="overflow-wrap:anywhere">erratum</td><td style="overflow-wrap:anywhere">confirmed</td></tr>'
        "</table>"
    )
    result, _ = _check(browser_site, "squeezed.html", squeezed)
    words = _failures(result, "column narrower than its longest word")
    assert any(f.startswith("[1300 px]") for f in words) and any(f.startswith("[400 px]") for f in words), words
    assert any('"confirmed"' in f and "split between letters" in f for f in words), words

    sticking = (
        '<table style="table-layout:fixed;width:80px"><tr><td style="width:40px;overflow:hidden">'
        "incomprehensibilities</td><td>x</td></tr></table>"
    )
    result, _ = _check(browser_site, "sticking.html", sticking)
    assert any("sticks out of the cell" in f for f in result.failures), result.failures


@pytest.mark.browser
def test_browser_wide_table_scrolls_in_its_container_only_at_400(browser_site):
    """A nine-column table may scroll sideways inside its own scroll container at 400 px (not at 1300 px, where
    it must fit); the page itself may not scroll sideways."""
    cells = "".join(f"<td>column{i}wordwordword</td>" for i in range(9))
    body = f'<div style="overflow-x:auto"><table><tr>{cells}</tr></table></div>'
    result, _ = _check(browser_site, "widetable.html", body)
    assert not any(f.startswith("[400 px]") for f in result.failures), result.failures
    assert any(f.startswith("[1300 px] overflows its container") for f in result.failures), result.failures


@pytest.mark.browser
def test_browser_waits_for_a_transition_the_narrow_window_starts(browser_site):
    """The book's theme slides its sidebar out when the window narrows, over a CSS transition. The 400 px check and
    screenshot come after it ends: a block that is 700 px wide at 1300 px and shrinks to the window over 0.6 s is
    not caught half-way, wider than the window, and the picture shows it at its final width."""
    style = (
        "<style>.slide{width:700px;height:40px;background:#123;transition:width .6s linear}"
        "@media (max-width:960px){.slide{width:100%}}</style>"
    )
    result, shots = _check(browser_site, "transition.html", style + '<div class="slide"></div><p>text</p>')
    assert result.ok, result.failures
    w, _ = _png_size((shots / "400" / "transition.png").read_bytes())
    assert w == 400


@pytest.mark.browser
def test_browser_page_wider_than_the_window_fails_at_400(browser_site):
    result, _ = _check(browser_site, "wide.html", '<div style="width:700px">a block of fixed width</div>')
    page = _failures(result, "scrolls sideways")
    assert page and all(f.startswith("[400 px]") for f in page), result.failures
    assert "in a 400 px window" in page[0] and "sticking out: div" in page[0], page


@pytest.mark.browser
def test_browser_chart_without_data_marks_and_vega_warning_fail(browser_site):
    """Bars on a log axis (the old speed chart): Vega warns "Log scale domain includes zero" and draws every bar
    with no height -- only the axes show. Both the warning and the undrawn data fail."""
    spec = {
        "data": {"values": [{"b": "a", "s": 0.5}, {"b": "b", "s": 60.0}]},
        "mark": "bar",
        "encoding": {
            "x": {"field": "b", "type": "nominal"},
            "y": {"field": "s", "type": "quantitative", "scale": {"type": "log"}},
        },
    }
    result, _ = _check(browser_site, "logbars.html", _chart(spec, "logbars"))
    assert (result.charts, result.drawn) == (1, 1)
    assert _failures(result, "chart data not drawn: chart mamba-recall-chart-logbars"), result.failures
    assert any(f.startswith("Vega warning:") and "Log scale domain includes zero" in f for f in result.failures)

    empty = {"data": {"values": []}, "mark": "point"}
    empty["encoding"] = {"x": {"field": "x", "type": "quantitative", "scale": {"domain": [0, 1]}}}
    result, _ = _check(browser_site, "empty.html", _chart(empty, "empty"))
    assert _failures(result, "chart data not drawn: chart mamba-recall-chart-empty"), result.failures


@pytest.mark.browser
def test_browser_vega_console_warning_fails(browser_site):
    body = "<p>text</p><script>vega.logger(vega.Warn).warn('something is off');</script>"
    result, _ = _check(browser_site, "warn.html", body)
    assert [f for f in result.failures if f.startswith("Vega warning:") and "something is off" in f], result.failures


@pytest.mark.browser
def test_browser_chart_text_below_10px_fails_at_1300(browser_site):
    """A chart twice as wide as the column is scaled down by wide.css to fit: its 11-pixel labels are drawn at
    about 5 pixels, which fails at 1300 px (at 400 px charts may shrink)."""
    values = [{"x": i, "y": i % 3} for i in range(10)]
    spec = {"data": {"values": values}, "mark": "point", "width": 2400, "height": 100}
    spec["encoding"] = {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}
    result, _ = _check(browser_site, "small.html", _chart(spec, "small"))
    fonts = _failures(result, "chart text too small: chart mamba-recall-chart-small")
    assert fonts and all(f.startswith("[1300 px]") for f in fonts), result.failures
    assert not _failures(result, "chart data not drawn")


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


# --- text the reader cannot read: overlapping chart texts, shrunk charts, raw TeX ---------------------------

#: Table 1's chart as the book drew it before (page 1.5): four facet columns 70 px wide titled with the models'
#: names (about 170 px each), written over each other.
TABLE1_LABELS = (
    "1-layer Mamba (conv ✓)",
    "1-layer TF (conv ✓, no PE)",
    "2-layer TF (conv ✗, no PE)",
    "2-layer TF w/ RoPE (conv ✓)",
)


def _table1_rows():
    return [
        {"label": label, "kappa": kappa, "T": 128, "source": source, "value": value}
        for label in TABLE1_LABELS
        for kappa in (1, 4)
        for source, value in (("ours", 80.0), ("paper", 100.0))
    ]


TABLE1_BEFORE = {
    "data": {"values": _table1_rows()},
    "mark": "bar",
    "width": 70,
    "height": 120,
    "encoding": {
        "x": {"field": "source", "type": "nominal", "title": None},
        "y": {"field": "value", "type": "quantitative", "title": "query accuracy (%)"},
        "color": {"field": "source", "type": "nominal"},
        "column": {"field": "label", "type": "nominal", "title": None},
        "row": {"field": "kappa", "type": "nominal", "title": "κ"},
    },
}
#: The book's chart CSS before the narrow layout: every chart shrunk to the column, whatever the window.
SHRINK_CSS = "<style>div.mamba-recall-chart svg{max-width:100%!important;height:auto}div.mamba-recall-chart{overflow:visible!important}</style>"


def _wide_chart(width: int) -> dict:
    """A chart ``width`` pixels wide with 10-11 px axis text (as 4.1's serial-recall panels in a row)."""
    values = [{"x": i, "y": i % 3} for i in range(10)]
    spec = {"data": {"values": values}, "mark": "point", "width": width, "height": 100}
    spec["encoding"] = {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}
    return spec


@pytest.mark.browser
def test_browser_table1_before_fails_overlapping_titles_and_4px_text(browser_site):
    """Today's Table 1 chart (its four facet titles drawn over each other) fails the overlap check; a wide chart
    shrunk to a 400 px column by the old CSS draws its text at about 4 px and fails below 7 px at 400 px."""
    result, _ = _check(browser_site, "table1_before.html", _chart(TABLE1_BEFORE, "table1"))
    overlaps = _failures(result, "chart text overlaps: chart mamba-recall-chart-table1")
    assert overlaps and "pair(s) of texts drawn over each other" in overlaps[0], result.failures
    assert TABLE1_LABELS[0] in overlaps[0] and TABLE1_LABELS[1] in overlaps[0], overlaps

    result, _ = _check(browser_site, "shrunk.html", SHRINK_CSS + _chart(_wide_chart(900), "shrunk"))
    small = _failures(result, "[400 px] chart text too small: chart mamba-recall-chart-shrunk")
    assert small, result.failures
    size = float(re.search(r"drawn at ([0-9.]+) px", small[0]).group(1))
    assert size < bc.MIN_CHART_FONT_PX_NARROW and size < 5, small
    assert not _failures(result, "[1300 px] chart text too small"), result.failures  # 900 px fits at 1300


@pytest.mark.browser
def test_browser_table1_after_and_wide_chart_at_400_pass(browser_site):
    """The fixed Table 1 chart (models named on the y axis, a panel per κ) has no overlapping text; with the book's
    CSS a wide chart keeps its size at 400 px and scrolls sideways in its own box, which fits the column."""
    pd = pytest.importorskip("pandas")
    from mamba_recall.chapters.ch1_gradient_dynamics.views import table1_chart

    spec = table1_chart(pd.DataFrame(_table1_rows())).to_dict()
    body = _chart(spec, "table1after") + _chart(_wide_chart(900), "wide")
    result, shots = _check(browser_site, "table1_after.html", body)
    assert result.ok, result.failures
    site, _, driver = browser_site
    bc._set_viewport(driver, 400, bc.WINDOW_HEIGHT)
    bc._settle(driver)
    box = driver.execute_script(
        "const c = document.getElementById('mamba-recall-chart-wide'), s = c.querySelector('svg');"
        "return [getComputedStyle(c).overflowX, c.clientWidth, c.scrollWidth, s.getBoundingClientRect().width];"
    )
    assert box[0] == "auto" and box[1] < 400 < box[2] and box[3] > 900, box


@pytest.mark.browser
def test_browser_rotated_axis_labels_do_not_count_as_overlap(browser_site):
    """Axis labels turned by -45 degrees sit close, their upright boxes would overlap; the turned boxes do not."""
    values = [{"b": f"backend number {i}", "s": i + 1} for i in range(8)]
    spec = {"data": {"values": values}, "mark": "bar", "width": 300, "height": 100}
    spec["encoding"] = {
        "x": {"field": "b", "type": "nominal", "axis": {"labelAngle": -45}},
        "y": {"field": "s", "type": "quantitative"},
    }
    result, _ = _check(browser_site, "rotated.html", _chart(spec, "rotated"))
    assert result.ok, result.failures


@pytest.mark.browser
def test_browser_raw_tex_outside_math_fails(browser_site):
    """A paper's quote with its TeX left raw ($V_k = \\frac{V}{2}$, \\ll) fails; the same TeX in code, in a
    notebook input, or typeset as math does not."""
    raw = "<p>“an MQAR task of $V_k = \\frac{V}{2} = 512$ given $N = 32 \\ll V_k$”</p>"
    result, _ = _check(browser_site, "tex.html", raw)
    tex = _failures(result, "raw TeX outside math in 1 place(s)")
    assert tex and "\\frac{V}{2}" in tex[0], result.failures
    result, _ = _check(browser_site, "tex_ll.html", "<p>dimensions N = 32 \\ll V_k</p>")
    assert _failures(result, "raw TeX outside math"), result.failures
    fine = (
        "<p>a price of $5 and <code>$x = \\frac{1}{2}$</code></p>"
        '<div class="cell_input"><pre>s = "$\\\\alpha$"</pre></div>'
        '<p><span class="math notranslate nohighlight">\\(\\frac{V}{2}\\)</span></p>'
    )
    result, _ = _check(browser_site, "tex_fine.html", fine)
    assert not _failures(result, "raw TeX"), result.failures


@pytest.mark.browser
def test_browser_jobs_check_every_page_once_and_report_in_page_order(browser_site, tmp_path):
    """``--jobs 2``: two browsers share the pages; every page is checked once, with the failures it has alone, a
    line printed for each, and the results come back in the toc's order."""
    import io

    site = browser_site[0]
    pages = [f"jobs_{i}.html" for i in range(4)] + ["jobs_missing.html"]
    for i, name in enumerate(pages[:-1]):
        body = "<p>a quote with $V_k = \\frac{V}{2}$ left raw</p>" if i == 2 else f"<p>page {i}</p>"
        (site / name).write_text(_page(body), encoding="utf-8")
    out = io.StringIO()
    results = bc.run_check(site, pages, out=out, screenshots=tmp_path / "shots", jobs=2)
    assert [r.page for r in results] == pages
    assert [r.ok for r in results] == [True, True, False, True, False]
    assert _failures(results[2], "raw TeX outside math") and _failures(results[4], "page missing")
    assert sorted(line.split()[0] for line in out.getvalue().splitlines()) == sorted(pages)
    assert all((tmp_path / "shots" / "400" / name).with_suffix(".png").is_file() for name in pages[:-1])
    with pytest.raises(bc.SetupError, match="--jobs"):
        bc.run_check(site, pages, jobs=0)


@pytest.mark.browser
def test_browser_chart_saves_png_svg_and_csv(browser_site):
    """Under each chart a line of buttons saves it as PNG and SVG and its inline data as CSV (made in the
    browser: nothing leaves the machine)."""
    spec = {"data": {"values": [{"x": 1, "y": 2, "name": "a, b"}, {"x": 2, "y": 3, "name": 'say "hi"'}]}}
    spec.update(
        mark="point",
        encoding={"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}},
    )
    result, _ = _check(browser_site, "tools.html", _chart(spec, "tools"))
    assert result.ok, result.failures
    _, _, driver = browser_site
    saved = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const saved = [];
        HTMLAnchorElement.prototype.click = function() { saved.push([this.download, this.href]); };
        const bar = document.querySelector('.mamba-recall-chart-tools');
        const buttons = Array.from(bar.querySelectorAll('button'));
        buttons.forEach(b => b.click());
        setTimeout(async () => {
          const out = [];
          for (const [name, href] of saved) {
            out.push([name, href.slice(0, 30), href.startsWith('blob:') ? await (await fetch(href)).text() : '']);
          }
          done([buttons.map(b => b.textContent), out]);
        }, 300);
        """
    )
    names, files = saved
    assert names == ["PNG", "SVG", "CSV"], names
    by_name = {f[0].rsplit(".", 1)[1]: f for f in files}
    assert by_name["png"][1].startswith("data:image/png"), files
    assert by_name["svg"][1].startswith(("data:image/svg", "blob:")), files
    # the chart's spec is inlined with its keys sorted: the columns come in that order
    assert by_name["csv"][2] == 'name,x,y\r\n"a, b",1,2\r\n"say ""hi""",2,3\r\n', files


@pytest.mark.browser
def test_browser_grid_slider_shows_the_value(browser_site):
    """A control over a grid of values shows the value chosen (not "Δ index 3"): a slider over an evenly spaced
    grid, radio buttons over an uneven one; the chart keeps the rows at that value."""
    pd = pytest.importorskip("pandas")
    from mamba_recall import plots

    frame = pd.DataFrame(
        [
            {"t": t, "series": "state", "value": d * t, "delta_i": i, "a_i": j}
            for i, d in enumerate([0.01, 0.1, 1.0])
            for j in range(3)
            for t in range(3)
        ]
    )
    spec = plots.scan_explorer_chart(frame, [0.01, 0.1, 1.0], [-2.0, -1.0, 0.0], 0.1, -1.0).to_dict()
    result, _ = _check(browser_site, "slider.html", _chart(spec, "slider"))
    assert result.ok, result.failures
    _, _, driver = browser_site
    binds = driver.execute_script(
        "return Array.from(document.querySelectorAll('.vega-bind')).map(b => b.textContent.replace(/\\s+/g, ' ').trim());"
    )
    assert len(binds) == 2 and "index" not in " ".join(binds), binds
    assert binds[0].startswith("Δ") and "0.01" in binds[0] and "0.1" in binds[0], binds  # radio buttons, uneven
    assert binds[1].startswith("A") and "-1" in binds[1], binds  # a slider showing its value, even
    points = driver.execute_script(
        "return document.querySelectorAll('#mamba-recall-chart-slider g.role-mark path, "
        "#mamba-recall-chart-slider g.role-mark .mark-symbol path').length"
    )
    assert points > 0
