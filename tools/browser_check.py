"""Check the built HTML book in a real (headless) browser, fully offline.

Usage::

    python tools/browser_check.py _build/html --toc _toc.yml [--widths 1300,400] [--jobs 2]

Serves ``<html_dir>`` on 127.0.0.1 (random free port), opens every page listed
in the Jupyter Book 1.x ``_toc.yml`` in headless Chromium (selenium 4, system
``/usr/bin/chromium`` + ``/usr/bin/chromedriver``; selenium-manager is never
used) with the network switched off, and checks for each page that

* the HTML file exists and is served with HTTP 200, ``document.readyState``
  reaches ``complete``;
* no request leaves the machine (every request URL is on the local server,
  ``data:``, ``blob:`` or ``about:``) -- read from Chromium's performance log;
* no local request fails (HTTP >= 400 or a network error);
* the browser console has no errors (level SEVERE) and no warning from Vega
  (level WARNING from the vendored Vega scripts, e.g. "Log scale domain includes zero");
* every Altair chart drawn by :mod:`mamba_recall.plots`' offline renderer
  (``div.mamba-recall-chart``) contains an ``<svg>`` or ``<canvas>``, and its svg draws its data: at least one
  item of a Vega mark outside the axes, legends and titles (``g.role-mark``) has a visible size (a bar of no
  height, as bars from 0 on a log axis, does not count);
* every math element (``.math.notranslate`` written by Sphinx) was typeset by
  the vendored MathJax (contains an ``mjx-container``);
* no raw TeX shows in the page's text outside math, code and charts: no ``\\frac``, ``\\ll`` or other
  backslash command, no ``$...$`` pair (a paper's quote whose math was not turned into math);

and then, at each window width of ``--widths`` (default :data:`WIDTHS`: 1300 and 400 pixels; the page is loaded
at the first and the window set to each width in turn):

* no table and no chart is wider than the room it has: its full width must fit
  between its left edge and the right edge of the first ancestor that clips or
  scrolls it (or of the page's article column) -- a reader would otherwise have to
  scroll sideways or would not see the rest. Below 1300 pixels a table may be wider
  than its room if it scrolls sideways inside its own scroll container (the theme's
  ``div.pst-scrollable-table-container``, a notebook output area), which must fit;
* the page itself is not wider than the window (``document.documentElement.scrollWidth``);
* no table column is narrower than its longest word: no word of a cell (text between
  spaces) is split between two letters or digits over lines (as ``overflow-wrap: anywhere``
  does: "errat / um", "sy mb ol"; the browser's own line breaking after a hyphen or at
  punctuation such as ``/`` or ``_`` is allowed), and no word sticks out of its cell;
* no chart text is drawn below :data:`MIN_CHART_FONT_PX` pixels at 1300 pixels, nor below
  :data:`MIN_CHART_FONT_PX_NARROW` at a narrower window (its font size times the scale it is drawn at on the
  screen, read from the text's ``getScreenCTM()``: a wide chart shrunk to the column by CSS draws its 11-pixel
  labels at 4 pixels on a phone). Below 1300 pixels a chart may be wider than its room if it scrolls sideways
  in its own box (``overflow-x: auto`` inside or on ``div.mamba-recall-chart``), which must fit;
* no two texts of a chart overlap (facet titles written over each other): the boxes of its visible ``<text>``
  elements, turned as drawn (rotated axis labels too), may not intersect by more than
  :data:`TEXT_OVERLAP_PX` pixels; a chart drawn on a ``<canvas`` fails (its text cannot be read: the book
  embeds every chart with ``renderer: "svg"``);

and saves a whole-page screenshot of every page at every width into ``--screenshots``
(default ``<html_dir>/../screenshots``), as ``<width>/<page>.png``, for review (captured in
tiles of :data:`SCREENSHOT_TILE_HEIGHT` pixels and joined by :func:`stack_pngs`).

With ``--jobs N``, N browsers check pages at once (one thread each, every page still loaded by one browser from
start to end). Prints one line per page and exits 1 with a summary of all failures (0 if all
pages pass, 2 on a usage/setup error such as missing Chromium).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

CHART_SELECTOR = "div.mamba-recall-chart"
MATH_SELECTOR = ".math.notranslate"
SOURCE_SUFFIXES = (".md", ".ipynb", ".rst", ".myst", ".txt", ".html")
ALLOWED_SCHEMES = ("data", "blob", "about")
# Browser-internal resources (e.g. of the start page); they never touch the network.
INTERNAL_SCHEMES = ("chrome", "chrome-untrusted", "devtools", "chrome-extension")
DEFAULT_CHROMIUM = "/usr/bin/chromium"
DEFAULT_CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL_HINT = "apt-get install chromium chromium-driver"

# Flags that keep Chromium quiet on a closed network and make sure nothing can
# leave the machine: every host name resolves to nothing except 127.0.0.1, and
# all non-loopback traffic goes to a proxy on the (closed) discard port.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
    "--metrics-recording-only",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>;127.0.0.1",
    "--window-size=1300,1000",  # WINDOW_WIDTH
)

#: Widths of the browser window every page is checked at: the issue's reading width and a phone's.
WINDOW_WIDTH = 1300
NARROW_WIDTH = 400
WIDTHS = (WINDOW_WIDTH, NARROW_WIDTH)
#: Height of the window while a page is checked (the screenshot makes it as tall as the page).
WINDOW_HEIGHT = 1000
#: Smallest chart text allowed at :data:`WINDOW_WIDTH` (font size x the scale the svg is drawn at).
MIN_CHART_FONT_PX = 10.0
#: Smallest chart text allowed at a narrower window (a phone's: the chart scrolls in its box rather than shrink).
MIN_CHART_FONT_PX_NARROW = 7.0
#: How far (pixels) two texts of a chart may run into each other before they count as overlapping: the boxes
#: of a text include the font's ascent and descent, so neighbouring lines may touch.
TEXT_OVERLAP_PX = 2.0
#: Height of one screenshot tile; Chromium cannot capture much more than 16384 pixels in one go, so a page
#: is captured in tiles of this height and the tiles are joined into one PNG.
SCREENSHOT_TILE_HEIGHT = 8000


class SetupError(RuntimeError):
    """The check could not run at all (missing browser, bad arguments)."""


# ---------------------------------------------------------------------------
# _toc.yml
# ---------------------------------------------------------------------------


def _strip_suffix(name: str) -> str:
    for suffix in SOURCE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def toc_files(toc: dict) -> list[str]:
    """All ``root`` / ``file:`` entries of a Jupyter Book 1.x toc, in order.

    Handles ``jb-book`` (parts/chapters/sections) and ``jb-article``
    (sections) formats as well as the generic ``subtrees``/``entries`` form;
    ``url:`` and ``glob:`` entries are skipped. Duplicates are dropped.
    """
    found: list[str] = []

    def add(name: Any) -> None:
        if isinstance(name, str) and name.strip():
            name = _strip_suffix(name.strip().lstrip("/"))
            if name not in found:
                found.append(name)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                add(node["file"])
            for key, value in node.items():
                if key in ("file", "url", "glob", "title", "caption", "options"):
                    continue
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if not isinstance(toc, dict) or "root" not in toc:
        raise SetupError("_toc.yml has no 'root:' entry (not a Jupyter Book 1.x toc?)")
    add(toc["root"])
    walk({k: v for k, v in toc.items() if k != "root"})
    return found


def html_page(file_entry: str) -> str:
    """Map a toc ``file:`` entry (with or without suffix) to its HTML path."""
    return _strip_suffix(file_entry).lstrip("/") + ".html"


def load_toc(path: Path) -> list[str]:
    import yaml

    try:
        toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SetupError(f"cannot read toc {path}: {exc}") from exc
    return [html_page(f) for f in toc_files(toc)]


# ---------------------------------------------------------------------------
# Network log analysis
# ---------------------------------------------------------------------------


def is_local_url(url: str, origin: str) -> bool:
    """True if ``url`` stays on the machine: the test server, data:/blob:/about:
    or a browser-internal chrome:// resource."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in ALLOWED_SCHEMES or scheme in INTERNAL_SCHEMES:
        return True
    return url == origin or url.startswith(origin + "/")


def is_auto_favicon(url: str, origin: str) -> bool:
    """The ``/favicon.ico`` Chromium requests by itself when a page names no icon.

    A missing one is not a page error (set ``html.favicon`` to have one)."""
    return url == f"{origin}/favicon.ico"


@dataclass
class NetworkReport:
    requests: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "URL (reason)"
    statuses: dict[str, int] = field(default_factory=dict)  # document URL -> status


def parse_performance_log(entries: Iterable[dict], origin: str) -> NetworkReport:
    """Digest chromedriver ``performance`` log entries (DevTools Network events)."""
    report = NetworkReport()
    urls_by_id: dict[str, str] = {}
    for entry in entries:
        try:
            message = json.loads(entry["message"])["message"]
        except (KeyError, TypeError, ValueError):
            continue
        method = message.get("method", "")
        params = message.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            urls_by_id[params.get("requestId", "")] = url
            report.requests.append(url)
            if not is_local_url(url, origin) and url not in report.external:
                report.external.append(url)
        elif method == "Network.responseReceived":
            response = params.get("response", {})
            url = response.get("url", "")
            status = int(response.get("status", 0) or 0)
            if params.get("type") == "Document":
                report.statuses[url] = status
            if status >= 400 and is_local_url(url, origin) and not is_auto_favicon(url, origin):
                report.failed.append(f"{url} (HTTP {status})")
        elif method == "Network.loadingFailed":
            url = urls_by_id.get(params.get("requestId", ""), "?")
            if is_local_url(url, origin) and not url.startswith(("data:", "blob:")):
                reason = params.get("errorText", "failed")
                if not params.get("canceled"):
                    report.failed.append(f"{url} ({reason})")
    return report


# ---------------------------------------------------------------------------
# Local HTTP server
# ---------------------------------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet; statuses come from the browser's performance log

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1:<free port>; yield the origin URL."""
    handler = functools.partial(_Handler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------
# Browser
# ---------------------------------------------------------------------------


def _find_executable(path: str | None, default: str, names: tuple[str, ...]) -> str:
    candidates = [path] if path else [default, *filter(None, map(shutil.which, names))]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise SetupError(
        f"{names[0]} not found (looked for {', '.join(c for c in candidates if c)}); install it with: {INSTALL_HINT}"
    )


@contextlib.contextmanager
def chromium_driver(chromium: str | None = None, chromedriver: str | None = None):
    """A headless, network-less Chromium driven by the system chromedriver."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SetupError("selenium is not installed: pip install 'selenium>=4.20'") from exc

    browser_path = _find_executable(chromium, DEFAULT_CHROMIUM, ("chromium", "chromium-browser"))
    driver_path = _find_executable(chromedriver, DEFAULT_CHROMEDRIVER, ("chromedriver",))
    # Both paths are explicit, so selenium-manager has nothing to look up;
    # SE_OFFLINE makes sure it would not try to download anything anyway.
    os.environ.setdefault("SE_OFFLINE", "true")

    profile = tempfile.mkdtemp(prefix="mamba-recall-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(executable_path=driver_path, log_output=os.devnull)
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except Exception as exc:
        shutil.rmtree(profile, ignore_errors=True)
        raise SetupError(f"could not start Chromium ({browser_path}) via {driver_path}: {exc}") from exc
    try:
        driver.set_page_load_timeout(30)
        driver.set_script_timeout(30)
        # Leave the start page so its (browser-internal) loads are done with.
        driver.get("about:blank")
        for kind in ("performance", "browser"):
            driver.get_log(kind)
        yield driver
    finally:
        with contextlib.suppress(Exception):
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


_STATE_JS = """
const charts = Array.from(document.querySelectorAll(arguments[0]));
const maths = Array.from(document.querySelectorAll(arguments[1]));
return {
  ready: document.readyState,
  charts: charts.length,
  drawn: charts.filter(e => e.querySelector('svg, canvas')).length,
  errors: charts.map(e => {
      const p = e.querySelector('.mamba-recall-chart-error');
      if (!p) return null;
      const text = p.textContent.trim();
      return text.indexOf(e.id) >= 0 ? text : (e.id + ': ' + text); }).filter(x => x),
  undrawn: charts.filter(e => !e.querySelector('svg, canvas')).map(e => e.id),
  math: maths.length,
  typeset: maths.filter(e => e.querySelector('mjx-container')).length,
  mathjax: typeof window.MathJax === 'object' && !!(window.MathJax.startup
           && window.MathJax.startup.document),
};
"""

# Layout checks at one window width (see check_page); arguments: the chart selector, whether tables may
# scroll inside their own container (the narrow width), and the smallest chart text allowed (0: no check).
_LAYOUT_JS = r"""
const chartSel = arguments[0], narrow = arguments[1], minFont = arguments[2];
const column = document.querySelector('article.bd-article, main article, article, main') || document.body;
const columnRight = column.getBoundingClientRect().right;
const out = {overflow: [], words: [], marks: [], fonts: [], page: null};
function clipAncestor(el) {
  for (let a = el.parentElement; a && a !== column && a !== document.body; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') return a;
  }
  return null;
}
function room(el) {
  let right = columnRight;
  const a = clipAncestor(el);
  if (a) { const r = a.getBoundingClientRect(); right = Math.min(right, r.left + a.clientWidth); }
  return right - el.getBoundingClientRect().left;
}
const scrolls = el => /auto|scroll/.test(getComputedStyle(el).overflowX);
function short(text, n) { text = text.replace(/\s+/g, ' ').trim(); return text.length > n ? text.slice(0, n - 1) + '…' : text; }
function label(el, kind, i) {
  if (el.id) return kind + ' #' + el.id;
  const cap = el.querySelector('caption');
  const head = el.querySelector('th');
  const text = (cap || head) ? ' (' + short((cap || head).textContent, 40) + ')' : '';
  return kind + ' ' + (i + 1) + text;
}
const px = v => Math.round(v);

// 1. Nothing wider than its room; at the narrow width a table may scroll inside its own scroll container
//    (which must fit), and the page itself must never be wider than the window.
const tables = Array.from(column.querySelectorAll('table'));
tables.forEach((t, i) => {
  const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
  const space = room(t);
  if (width <= space + 2) return;
  const box = scrolls(t) ? t : clipAncestor(t);
  if (narrow && box && scrolls(box)) {
    const bw = box.getBoundingClientRect().width, bspace = box === t ? space : room(box);
    if (bw > bspace + 2) out.overflow.push(label(t, 'table', i) + ': its scroll container is ' + px(bw)
                                           + ' px wide, room ' + px(bspace) + ' px');
    return;
  }
  out.overflow.push(label(t, 'table', i) + ': ' + px(width) + ' px wide, room ' + px(space) + ' px');
});
const charts = Array.from(column.querySelectorAll(chartSel));
function ownScroller(drawn, chart) {
  // the box between the chart's svg and the chart's div (or the div itself) that scrolls sideways
  for (let a = drawn.parentElement; a; a = a.parentElement) {
    if (scrolls(a)) return a;
    if (a === chart) break;
  }
  return null;
}
charts.forEach(c => {
  const drawn = c.querySelector('svg, canvas');
  if (!drawn) return;
  const width = drawn.getBoundingClientRect().width;
  const space = room(c);
  if (width <= space + 2) return;
  const box = narrow ? ownScroller(drawn, c) : null;
  if (box) {
    const bw = box.getBoundingClientRect().width, bspace = room(box);
    if (bw > bspace + 2) out.overflow.push('chart ' + c.id + ': its scroll box is ' + px(bw) + ' px wide, room '
                                           + px(bspace) + ' px');
    return;
  }
  out.overflow.push('chart ' + c.id + ': ' + px(width) + ' px wide, room ' + px(space) + ' px');
});
const docWidth = document.documentElement.scrollWidth, winWidth = window.innerWidth;
if (docWidth > winWidth + 2) {
  const culprits = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= winWidth + 2) continue;
    const p = el.parentElement && el.parentElement.getBoundingClientRect();
    if (p && p.right > winWidth + 2) continue;  // only the outermost element that sticks out
    const clip = clipAncestor(el);
    if (clip && clip.getBoundingClientRect().right <= winWidth + 2) continue;  // scrolls inside its box
    culprits.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                  + (el.className && el.className.baseVal === undefined && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '')
                  + ' (right edge ' + px(r.right) + ' px' + (el.textContent.trim() ? ': "' + short(el.textContent, 40) + '"' : '') + ')');
    if (culprits.length >= 3) break;
  }
  out.page = 'the page is ' + docWidth + ' px wide in a ' + winWidth + ' px window (it scrolls sideways)'
             + (culprits.length ? '; sticking out: ' + culprits.join(', ') : '');
}

// 2. No table column narrower than its longest word: no word of any cell (a run of text between spaces) is
//    split between two letters or digits over lines (the browser's own line breaking only breaks a word
//    after a hyphen or at punctuation such as '/' or '|'; "errat|um" or "sy|mb|ol" come from a column squeezed
//    below its word by `overflow-wrap: anywhere` / `word-break: break-all`), and none sticks out of its cell.
const alnum = /[\p{L}\p{N}]/u;
const skipTags = /^(SCRIPT|STYLE|MJX-CONTAINER|SVG|MATH|TEMPLATE)$/i;
const displayCache = new Map();
function blockOf(node, cell) {
  for (let e = node.parentElement; e && e !== cell; e = e.parentElement) {
    let d = displayCache.get(e);
    if (d === undefined) { d = getComputedStyle(e).display; displayCache.set(e, d); }
    if (!d.startsWith('inline') && d !== 'contents') return e;
  }
  return cell;
}
function cellText(cell) {
  // The cell's text with a line break wherever words cannot continue (another block, <br>, math), and
  // where each text node starts in it.
  const segs = [];
  let text = '', lastBlock = null;
  (function walk(el) {
    for (const n of Array.from(el.childNodes)) {
      if (n.nodeType === 3) {
        if (!n.data) continue;
        const block = blockOf(n, cell);
        if (lastBlock && block !== lastBlock) text += '\n';
        lastBlock = block;
        segs.push([n, text.length]);
        text += n.data;
      } else if (n.nodeType === 1) {
        if (n.tagName === 'BR' || skipTags.test(n.tagName)) { text += '\n'; continue; }
        walk(n);
      }
    }
  })(cell);
  return [text, segs];
}
function at(segs, offset, end) {
  // The text node and offset of character `offset` (of the position just after it when `end`).
  let i = 0;
  while (i + 1 < segs.length && (end ? segs[i + 1][1] < offset : segs[i + 1][1] <= offset)) i++;
  return [segs[i][0], Math.min(offset - segs[i][1], segs[i][0].data.length)];
}
function rectsOf(segs, s, e) {
  const range = document.createRange();
  const [n0, o0] = at(segs, s, false), [n1, o1] = at(segs, e, true);
  range.setStart(n0, o0);
  range.setEnd(n1, o1);
  return Array.from(range.getClientRects()).filter(r => r.width > 0.5);
}
function splitBetweenLetters(text, segs, s, e) {
  let prev = null;
  for (let i = s; i < e; i++) {
    const r = rectsOf(segs, i, i + 1)[0];
    if (!r) continue;
    if (prev && r.top >= prev[1].bottom - 2 && alnum.test(text[prev[0]]) && alnum.test(text[i])) return true;
    prev = [i, r];
  }
  return false;
}
tables.forEach((t, ti) => {
  let bad = 0;
  const first = [];
  const header = t.rows.length ? Array.from(t.rows[0].cells).map(c => short(c.textContent, 30)) : [];
  for (const row of Array.from(t.rows)) {
    for (const cell of Array.from(row.cells)) {
      if (!cell.getClientRects().length) continue;
      const [text, segs] = cellText(cell);
      if (!segs.length) continue;
      const cs = getComputedStyle(cell), cr = cell.getBoundingClientRect();
      const left = cr.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft);
      const right = cr.right - parseFloat(cs.borderRightWidth) - parseFloat(cs.paddingRight);
      const wordRe = /\S+/g;
      let m;
      while ((m = wordRe.exec(text))) {
        const s = m.index, e = s + m[0].length;
        const rects = rectsOf(segs, s, e);
        if (!rects.length) continue;
        const lo = Math.min(...rects.map(r => r.left)), hi = Math.max(...rects.map(r => r.right));
        const outside = lo < left - 1 || hi > right + 1;
        const lines = rects.some(r => r.top >= rects[0].bottom - 2);
        const split = lines && splitBetweenLetters(text, segs, s, e);
        if (!split && !outside) continue;
        bad++;
        if (first.length < 3) {
          const wide = rects.reduce((a, r) => a + r.width, 0);
          const col = header[cell.cellIndex] ? ' (' + header[cell.cellIndex] + ')' : '';
          first.push('column ' + (cell.cellIndex + 1) + col + ' is ' + px(right - left) + ' px, its word "'
                     + short(m[0], 40) + '" (' + px(wide) + ' px) '
                     + (split ? 'is split between letters over lines' : 'sticks out of the cell'));
        }
      }
    }
  }
  if (bad) out.words.push(label(t, 'table', ti) + ': ' + bad + ' word(s) wider than their column: ' + first.join('; '));
});

// 3. Every chart draws its data (a Vega mark outside axes, legends and titles with an item of visible
//    size) and, when asked, no chart text is drawn below minFont pixels.
charts.forEach(c => {
  const svg = c.querySelector('svg');
  if (!svg || !svg.getClientRects().length) return;
  const marks = Array.from(svg.querySelectorAll('g.role-mark'))
      .filter(g => !g.closest('.role-axis, .role-legend, .role-title'));
  let items = 0, visible = 0;
  for (const g of marks) {
    for (const item of Array.from(g.children)) {
      items++;
      // visible: a shape with an area, or a stroked line (a rule, a flat line) with a length; a bar of no
      // height (a log axis drawing bars from 0) is not
      let b;
      try { b = item.getBBox(); } catch (err) { continue; }
      if (b.width > 0 && b.height > 0) { visible++; continue; }
      if (!(b.width > 0 || b.height > 0)) continue;
      const st = getComputedStyle(item);
      if (st.stroke && st.stroke !== 'none' && parseFloat(st.strokeWidth) > 0) visible++;
    }
  }
  if (!visible) out.marks.push('chart ' + c.id + ': no data mark drawn (' + marks.length + ' mark group(s), '
                               + items + ' item(s), none with a visible size)');
  if (!(minFont > 0)) return;
  const texts = chartTexts(svg);
  let least = Infinity, what = '', at = 1;
  for (const [t, , scale] of texts) {
    const size = parseFloat(getComputedStyle(t).fontSize) * scale;
    if (size < least) { least = size; what = t.textContent; at = scale; }
  }
  if (least < minFont) out.fonts.push('chart ' + c.id + ': text "' + short(what, 30) + '" drawn at '
      + least.toFixed(1) + ' px (scaled to ' + at.toFixed(2) + '), below ' + minFont + ' px');
});
return out;
"""

# The chart text helpers shared by the layout and the overlap checks (prepended to both scripts).
_CHART_TEXT_JS = r"""
function chartTexts(svg) {
  // [element, its box's four corners on the screen, the scale it is drawn at] for every visible, non-empty
  // <text> of a chart's svg (Vega hides labels that would collide with opacity 0)
  const found = [];
  for (const t of Array.from(svg.querySelectorAll('text'))) {
    if (!t.textContent.trim()) continue;
    if (t.checkVisibility && !t.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    let b, m;
    try { b = t.getBBox(); m = t.getScreenCTM(); } catch (err) { continue; }
    if (!m || !(b.width > 0) || !(b.height > 0)) continue;
    const corners = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
        .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
    found.push([t, corners, Math.sqrt(Math.abs(m.a * m.d - m.b * m.c))]);
  }
  return found;
}
function overlapDepth(p, q) {
  // how far two convex polygons run into each other (the least overlap of their projections over the edges'
  // normals; 0 when an axis separates them)
  let depth = Infinity;
  for (const poly of [p, q]) {
    for (let i = 0; i < poly.length; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % poly.length];
      const len = Math.hypot(x2 - x1, y2 - y1);
      if (!len) continue;
      const nx = (y2 - y1) / len, ny = (x1 - x2) / len;
      const a = p.map(([x, y]) => x * nx + y * ny), b = q.map(([x, y]) => x * nx + y * ny);
      const o = Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b));
      if (o <= 0) return 0;
      depth = Math.min(depth, o);
    }
  }
  return depth;
}
"""

# The page's text checks (once per page): chart texts that overlap, charts drawn on a canvas, raw TeX outside
# math. Arguments: the chart selector and the overlap allowed (pixels).
_TEXT_JS = r"""
const chartSel = arguments[0], allowed = arguments[1];
const column = document.querySelector('article.bd-article, main article, article, main') || document.body;
const out = {overlaps: [], canvas: [], tex: []};
function short(text, n) { text = text.replace(/\s+/g, ' ').trim(); return text.length > n ? text.slice(0, n - 1) + '…' : text; }
for (const c of Array.from(column.querySelectorAll(chartSel))) {
  const svg = c.querySelector('svg');
  if (!svg) { if (c.querySelector('canvas')) out.canvas.push(c.id); continue; }
  const texts = chartTexts(svg);
  const boxes = texts.map(([, q]) => [Math.min(...q.map(p => p[0])), Math.max(...q.map(p => p[0])),
                                      Math.min(...q.map(p => p[1])), Math.max(...q.map(p => p[1]))]);
  const pairs = [];
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a[1] <= b[0] + allowed || b[1] <= a[0] + allowed || a[3] <= b[2] + allowed || b[3] <= a[2] + allowed) continue;
      const d = overlapDepth(texts[i][1], texts[j][1]);
      if (d > allowed) pairs.push('"' + short(texts[i][0].textContent, 30) + '" and "' + short(texts[j][0].textContent, 30)
                                  + '" (' + d.toFixed(0) + ' px)');
    }
  }
  if (pairs.length) out.overlaps.push('chart ' + c.id + ': ' + pairs.length + ' pair(s) of texts drawn over each other: '
                                      + pairs.slice(0, 3).join('; '));
}
// Raw TeX: a backslash command (\frac, \ll) or a $...$ pair in the text a reader sees, outside math (MathJax's
// output and Sphinx's math elements), code, charts and notebook inputs.
const skip = 'script, style, code, pre, kbd, samp, textarea, svg, mjx-container, .math, .MathJax, '
             + '.cell_input, .highlight, ' + chartSel;
const texRe = /\\[A-Za-z]{2,}|\\[{}]|\$[^$\n]{1,300}\$/;
const blocks = new Map();
const walker = document.createTreeWalker(column, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const parent = n.parentElement;
  if (!parent || parent.closest(skip) || !n.data.trim()) continue;
  const block = parent.closest('p, li, td, th, dd, dt, h1, h2, h3, h4, h5, h6, blockquote, figcaption, summary, div') || column;
  blocks.set(block, (blocks.get(block) || '') + n.data);
}
for (const [block, text] of blocks) {
  const m = texRe.exec(text);
  if (!m) continue;
  const from = Math.max(0, m.index - 30);
  out.tex.push('"' + short((from ? '…' : '') + text.slice(from, m.index + m[0].length + 30), 90) + '"');
}
return out;
"""


@dataclass
class PageResult:
    page: str
    charts: int = 0
    drawn: int = 0
    math: int = 0
    typeset: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _png_chunks(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos = 8
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        yield kind, data[pos + 8 : pos + 8 + length]
        pos += 12 + length


_PNG_BYTES_PER_PIXEL = {0: 1, 2: 3, 4: 2, 6: 4}  # 8-bit grey, RGB, grey + alpha, RGBA


def stack_pngs(tiles: list[bytes]) -> bytes:
    """Join PNG images of the same width and pixel format top to bottom into one PNG (no image library).

    Each tile's filtered scanlines are copied as they are, except its first row, which PNG filters against
    an all-zero row above it: that row is unfiltered and stored raw (filter 0), so it does not refer to the
    last row of the tile above it. Raises ValueError on anything but 8-bit non-interlaced grey/RGB(A) tiles
    of one format."""
    header: bytes | None = None
    width = height = 0
    rows: list[bytes] = []
    for tile in tiles:
        ihdr = b""
        idat = []
        for kind, body in _png_chunks(tile):
            if kind == b"IHDR":
                ihdr = body
            elif kind == b"IDAT":
                idat.append(body)
        w, h, depth, color, _comp, _filt, interlace = struct.unpack(">IIBBBBB", ihdr)
        if depth != 8 or interlace or color not in _PNG_BYTES_PER_PIXEL:
            raise ValueError(f"unsupported PNG tile (bit depth {depth}, colour type {color}, interlace {interlace})")
        if header is None:
            header, width = ihdr[8:], w
        elif ihdr[8:] != header or w != width:
            raise ValueError("PNG tiles differ in width or pixel format")
        bpp = _PNG_BYTES_PER_PIXEL[color]
        stride = 1 + w * bpp
        raw = zlib.decompress(b"".join(idat))
        if len(raw) != stride * h:
            raise ValueError("truncated PNG tile")
        if h:
            kind, line = raw[0], bytearray(raw[1:stride])
            if kind in (1, 3, 4):  # Sub, Average, Paeth against a zero row above
                for i in range(bpp, len(line)):
                    left = line[i - bpp]
                    line[i] = (line[i] + (left >> 1 if kind == 3 else left)) & 0xFF
            elif kind not in (0, 2):
                raise ValueError(f"bad PNG filter type {kind}")
            rows.append(b"\x00" + bytes(line))
            rows.append(raw[stride:])
        height += h
    if header is None:
        raise ValueError("no tiles")

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">II", width, height) + header
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 1))  # level 1: a third of level 6's time, 8 % larger
        + chunk(b"IEND", b"")
    )


def _set_viewport(driver: Any, width: int, height: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": int(width), "height": int(height), "deviceScaleFactor": 1, "mobile": False},
    )


_SETTLE_JS = """
const done = arguments[arguments.length - 1];
const finite = (a) => a.playState === "running" && isFinite(a.effect?.getComputedTiming().endTime ?? Infinity);
requestAnimationFrame(() => requestAnimationFrame(() => {
  const running = document.getAnimations().filter(finite);
  Promise.all(running.map((a) => a.finished.catch(() => null)))
    .then(() => requestAnimationFrame(() => requestAnimationFrame(() => done(running.length))));
}));
"""


def _settle(driver: Any) -> None:
    """Wait until the page has been laid out and painted at the current viewport: two animation frames, then the
    end of every finite CSS transition and animation that the resize started (the theme slides its sidebar out of
    view when the window narrows: checked or photographed before it ends, the page is drawn half-way, its text
    pushed off the left edge), then two frames more."""
    with contextlib.suppress(Exception):
        driver.execute_async_script(_SETTLE_JS)


_HEIGHT_JS = "return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);"


def save_screenshot(driver: Any, path: Path, width: int = WINDOW_WIDTH) -> int:
    """The whole page at ``width`` as one PNG (returns its height in pixels).

    The viewport is made as tall as the page for the shot (and set back to ``width`` x
    :data:`WINDOW_HEIGHT` after), so the page is drawn exactly as at the checked width; Chromium's
    capture-beyond-viewport re-lays the page out and can shift it sideways in the picture, which would
    misrepresent what a reader sees. The page is captured in tiles of :data:`SCREENSHOT_TILE_HEIGHT`
    pixels (one capture cannot be much taller than 16384 pixels) joined by :func:`stack_pngs`."""
    import base64

    height = int(driver.execute_script(_HEIGHT_JS) or WINDOW_HEIGHT)
    try:
        for _ in range(3):  # a taller viewport can change the page's height (min-height: 100vh)
            _set_viewport(driver, width, height)
            _settle(driver)
            new = int(driver.execute_script(_HEIGHT_JS) or height)
            if new == height:
                break
            height = new
        tiles = []
        for top in range(0, height, SCREENSHOT_TILE_HEIGHT):
            clip = {"x": 0, "y": top, "width": width, "height": min(SCREENSHOT_TILE_HEIGHT, height - top), "scale": 1}
            # optimizeForSpeed: Chromium's fast PNG encoding (about a third less time, files a quarter larger)
            shot = driver.execute_cdp_cmd(
                "Page.captureScreenshot", {"format": "png", "clip": clip, "optimizeForSpeed": True}
            )
            tiles.append(base64.b64decode(shot["data"]))
    finally:
        _set_viewport(driver, width, WINDOW_HEIGHT)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_bytes(stack_pngs(tiles) if len(tiles) > 1 else tiles[0])
    except ValueError:  # tiles this module cannot join: keep them numbered beside each other
        for i, tile in enumerate(tiles, 1):
            path.with_name(f"{path.stem}.{i:02d}{path.suffix}").write_bytes(tile)
    return height


def _console_problems(entries: Iterable[dict], origin: str) -> list[str]:
    """Console errors (level SEVERE, except Chromium's own favicon request) and every warning Vega logs
    (level WARNING from the vendored Vega scripts, e.g. ``"WARN" "Log scale domain includes zero"``)."""
    found = []
    for entry in entries:
        message = entry.get("message", "").strip()
        level = entry.get("level")
        if level == "SEVERE" and not message.startswith(f"{origin}/favicon.ico "):
            kind = "console error"
        elif level == "WARNING" and ("/vendor/vega" in message or '"WARN"' in message):
            kind = "Vega warning"
        else:
            continue
        if len(message) > 800:
            message = message[:800] + " [...]"
        found.append(f"{kind}: {message}")
    return found


def check_layout(driver: Any, width: int) -> list[str]:
    """The layout checks of the page as drawn now, at a ``width``-pixel window (see the module docstring)."""
    narrow = width < WINDOW_WIDTH
    least = MIN_CHART_FONT_PX_NARROW if narrow else MIN_CHART_FONT_PX
    found = driver.execute_script(_CHART_TEXT_JS + _LAYOUT_JS, CHART_SELECTOR, narrow, least) or {}
    failures = [f"overflows its container horizontally: {item}" for item in found.get("overflow", [])]
    if found.get("page"):
        failures.append(found["page"])
    failures += [f"column narrower than its longest word: {item}" for item in found.get("words", [])]
    failures += [f"chart data not drawn: {item}" for item in found.get("marks", [])]
    failures += [f"chart text too small: {item}" for item in found.get("fonts", [])]
    return failures


def check_text(driver: Any) -> list[str]:
    """The page's text checks, once per page (see the module docstring): chart texts drawn over each other, charts
    on a canvas, raw TeX outside math."""
    found = driver.execute_script(_CHART_TEXT_JS + _TEXT_JS, CHART_SELECTOR, TEXT_OVERLAP_PX) or {}
    failures = [f"chart text overlaps: {item}" for item in found.get("overlaps", [])]
    failures += [
        f"chart drawn on a canvas (its text cannot be checked; embed it with renderer 'svg'): {item}"
        for item in found.get("canvas", [])
    ]
    tex = found.get("tex", [])
    if tex:
        more = f" (and {len(tex) - 3} more)" if len(tex) > 3 else ""
        failures.append(f"raw TeX outside math in {len(tex)} place(s): " + "; ".join(tex[:3]) + more)
    return failures


def check_page(
    driver: Any,
    origin: str,
    html_dir: Path,
    page: str,
    wait_s: float,
    screenshots: Path | None = None,
    widths: Iterable[int] = WIDTHS,
) -> PageResult:
    """Load ``page`` at the first of ``widths`` and check it; then, on the same loaded page, set the window
    to each width in turn, check the layout there and save a whole-page screenshot into
    ``screenshots/<width>/<page>.png``. Layout failures are prefixed with the width they occur at."""
    widths = list(widths)
    result = PageResult(page)
    start = time.monotonic()
    if not (html_dir / page).is_file():
        result.failures.append(f"page missing: {html_dir / page} does not exist")
        return result
    url = f"{origin}/{page}"
    # Drain logs left over from the previous page.
    for kind in ("performance", "browser"):
        with contextlib.suppress(Exception):
            driver.get_log(kind)
    _set_viewport(driver, widths[0], WINDOW_HEIGHT)
    try:
        driver.get(url)
    except Exception as exc:  # timeout, crash
        result.failures.append(f"page did not load: {type(exc).__name__}: {exc}")
        return result

    deadline = time.monotonic() + wait_s
    state: dict = {}
    while True:
        state = driver.execute_script(_STATE_JS, CHART_SELECTOR, MATH_SELECTOR) or {}
        done = (
            state.get("ready") == "complete"
            and state.get("drawn", 0) + len(state.get("errors", [])) >= state.get("charts", 0)
            and state.get("typeset", 0) >= state.get("math", 0)
        )
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    # Let late requests/console messages arrive.
    time.sleep(0.2)

    result.charts, result.drawn = state.get("charts", 0), state.get("drawn", 0)
    result.math, result.typeset = state.get("math", 0), state.get("typeset", 0)
    if state.get("ready") != "complete":
        result.failures.append(f"document.readyState is {state.get('ready')!r} after {wait_s:g} s")
    for message in state.get("errors", []):
        result.failures.append(f"chart error: {message}")
    if result.drawn < result.charts:
        missing = [i for i in state.get("undrawn", []) if not any(i in m for m in state.get("errors", []))]
        if missing:
            result.failures.append(f"chart not drawn within {wait_s:g} s (no <svg>/<canvas>): {', '.join(missing)}")
    if result.typeset < result.math:
        why = "" if state.get("mathjax") else " (MathJax not loaded)"
        result.failures.append(f"math not typeset: {result.typeset}/{result.math}{why}")
    result.failures += check_text(driver)
    for i, width in enumerate(widths):
        if i:
            _set_viewport(driver, width, WINDOW_HEIGHT)
            _settle(driver)
        result.failures += [f"[{width} px] {failure}" for failure in check_layout(driver, width)]
        if screenshots is not None:
            try:
                save_screenshot(driver, screenshots / str(width) / Path(page).with_suffix(".png"), width)
            except Exception as exc:  # a screenshot is for review; its failure is reported, not hidden
                result.failures.append(f"[{width} px] screenshot failed: {type(exc).__name__}: {exc}")

    net = parse_performance_log(driver.get_log("performance"), origin)
    status = net.statuses.get(url)
    if status is None:
        result.failures.append("no document response recorded for the page")
    elif status != 200:
        result.failures.append(f"page served with HTTP {status}")
    for ext in net.external:
        result.failures.append(f"request leaves the machine: {ext}")
    for failed in net.failed:
        result.failures.append(f"request failed: {failed}")
    result.failures += _console_problems(driver.get_log("browser"), origin)
    result.seconds = time.monotonic() - start
    return result


def run_check(
    html_dir: Path,
    pages: list[str],
    *,
    wait_s: float = 10.0,
    chromium: str | None = None,
    chromedriver: str | None = None,
    out=sys.stdout,
    screenshots: Path | None = None,
    widths: Iterable[int] = WIDTHS,
    jobs: int = 1,
) -> list[PageResult]:
    """Check ``pages`` (in :func:`check_page`'s way) with ``jobs`` browsers at once, each taking the next page left;
    a line per page as it is done, and the results in the order of ``pages``."""
    if jobs < 1:
        raise SetupError(f"--jobs needs at least 1 browser, not {jobs}")
    widths = list(widths)
    results: dict[str, PageResult] = {}
    width = max((len(p) for p in pages), default=10)
    left = list(reversed(pages))
    lock = threading.Lock()

    def worker(origin: str, driver: Any) -> None:
        while True:
            with lock:
                if not left:
                    return
                page = left.pop()
            res = check_page(driver, origin, html_dir, page, wait_s, screenshots, widths)
            status = "ok" if res.ok else f"FAIL ({len(res.failures)})"
            math = f"  math {res.typeset}/{res.math}" if res.math else ""
            with lock:
                results[page] = res
                print(
                    f"{page:<{width}}  charts {res.drawn}/{res.charts}{math}  {res.seconds:4.1f}s  {status}",
                    file=out,
                    flush=True,
                )

    with serve(html_dir) as origin, contextlib.ExitStack() as stack:
        drivers = [stack.enter_context(chromium_driver(chromium, chromedriver)) for _ in range(min(jobs, len(pages)))]
        if len(drivers) <= 1:
            for driver in drivers:
                worker(origin, driver)
        else:
            with concurrent.futures.ThreadPoolExecutor(len(drivers)) as pool:
                for done in [pool.submit(worker, origin, driver) for driver in drivers]:
                    done.result()
    return [results[page] for page in pages]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/browser_check.py",
        description="Open every page of the built book in offline headless Chromium "
        "and check that it loads without errors or external requests and that "
        "all Altair charts and math render.",
    )
    parser.add_argument("html_dir", type=Path, help="built HTML folder, e.g. _build/html")
    parser.add_argument("--toc", type=Path, default=Path("_toc.yml"), help="the book's _toc.yml (default: ./_toc.yml)")
    parser.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait for charts/math per page (default 10)"
    )
    parser.add_argument("--chromium", help=f"Chromium binary (default {DEFAULT_CHROMIUM})")
    parser.add_argument("--chromedriver", help=f"chromedriver binary (default {DEFAULT_CHROMEDRIVER})")
    parser.add_argument(
        "--screenshots",
        type=Path,
        default=None,
        help="folder for a whole-page screenshot of every page at every width, "
        "<folder>/<width>/<page>.png (default: <html_dir>/../screenshots)",
    )
    parser.add_argument(
        "--widths",
        default=",".join(map(str, WIDTHS)),
        help=f"window widths in pixels to check every page at, comma-separated (default {','.join(map(str, WIDTHS))})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="browsers checking pages at once, each in a thread of its own (default 1; make test: its JOBS)",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    try:
        html_dir = args.html_dir.resolve()
        if not html_dir.is_dir():
            raise SetupError(f"{html_dir} is not a directory (build the book first)")
        pages = load_toc(args.toc)
        try:
            widths = [int(w) for w in args.widths.split(",") if w.strip()]
        except ValueError as exc:
            raise SetupError(f"--widths must be integers separated by commas, not {args.widths!r}") from exc
        if not widths or min(widths) < 200:
            raise SetupError(f"--widths needs widths of at least 200 px, not {args.widths!r}")
        screenshots = (args.screenshots or html_dir.parent / "screenshots").resolve()
        results = run_check(
            html_dir,
            pages,
            wait_s=args.wait,
            chromium=args.chromium,
            chromedriver=args.chromedriver,
            screenshots=screenshots,
            widths=widths,
            jobs=args.jobs,
        )
    except SetupError as exc:
        print(f"browser_check: error: {exc}", file=sys.stderr)
        return 2

    failed = [r for r in results if not r.ok]
    charts = sum(r.charts for r in results)
    drawn = sum(r.drawn for r in results)
    elapsed = time.monotonic() - started
    if failed:
        print(f"screenshots of every page: {screenshots}")
        print(f"\n{len(failed)} of {len(results)} pages FAILED ({drawn}/{charts} charts drawn, {elapsed:.1f}s):")
        for res in failed:
            for failure in res.failures:
                print(f"  {res.page}: {failure}")
        return 1
    print(f"screenshots of every page: {screenshots}")
    print(f"\nall {len(results)} pages ok ({drawn}/{charts} charts drawn, {elapsed:.1f}s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
