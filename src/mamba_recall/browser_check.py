"""Check the built HTML book in a real (headless) browser, fully offline.

Usage::

    python -m mamba_recall.browser_check _build/html --toc _toc.yml

Serves ``<html_dir>`` on 127.0.0.1 (random free port), opens every page listed
in the Jupyter Book 1.x ``_toc.yml`` in headless Chromium (selenium 4, system
``/usr/bin/chromium`` + ``/usr/bin/chromedriver``; selenium-manager is never
used) with the network switched off, and checks for each page that

* the HTML file exists and is served with HTTP 200, ``document.readyState``
  reaches ``complete``;
* no request leaves the machine (every request URL is on the local server,
  ``data:``, ``blob:`` or ``about:``) -- read from Chromium's performance log;
* no local request fails (HTTP >= 400 or a network error);
* the browser console has no errors (level SEVERE);
* every Altair chart drawn by :mod:`mamba_recall.plots`' offline renderer
  (``div.mamba-recall-chart``) contains an ``<svg>`` or ``<canvas>``;
* every math element (``.math.notranslate`` written by Sphinx) was typeset by
  the vendored MathJax (contains an ``mjx-container``);
* no table and no chart is wider than the room it has: its full width must fit
  between its left edge and the right edge of the first ancestor that clips or
  scrolls it (or of the page's article column), at a 1300-pixel window -- a
  reader would otherwise have to scroll sideways or would not see the rest;

and saves a screenshot of every page (its first :data:`SCREENSHOT_MAX_HEIGHT`
pixels) into ``--screenshots`` (default ``<html_dir>/../screenshots``) for review.

Prints one line per page and exits 1 with a summary of all failures (0 if all
pages pass, 2 on a usage/setup error such as missing Chromium).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
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

#: Width of the browser window (the issue's reading width) and the tallest screenshot kept per page.
WINDOW_WIDTH = 1300
SCREENSHOT_MAX_HEIGHT = 12000


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

# Tables and charts wider than their room: each item's full width (a table's scrollWidth, a chart's drawn
# svg/canvas) against the space from its left edge to the right edge of the nearest ancestor that clips or
# scrolls horizontally, or of the article column.
_OVERFLOW_JS = """
const column = document.querySelector('article.bd-article, main article, article, main') || document.body;
const columnRight = column.getBoundingClientRect().right;
function room(el) {
  let right = columnRight;
  for (let a = el.parentElement; a && a !== column && a !== document.body; a = a.parentElement) {
    const ox = getComputedStyle(a).overflowX;
    if (ox !== 'visible') { const r = a.getBoundingClientRect(); right = Math.min(right, r.left + a.clientWidth); break; }
  }
  return right - el.getBoundingClientRect().left;
}
function label(el, kind, i) {
  if (el.id) return kind + ' #' + el.id;
  const cap = el.querySelector('caption');
  const head = el.querySelector('th');
  const text = (cap || head) ? ' (' + (cap || head).textContent.trim().slice(0, 40) + ')' : '';
  return kind + ' ' + (i + 1) + text;
}
const out = [];
Array.from(column.querySelectorAll('table')).forEach((t, i) => {
  const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
  const space = room(t);
  if (width > space + 2) out.push(label(t, 'table', i) + ': ' + Math.round(width) + ' px wide, room '
                                   + Math.round(space) + ' px');
});
Array.from(column.querySelectorAll(arguments[0])).forEach((c, i) => {
  const drawn = c.querySelector('svg, canvas');
  if (!drawn) return;
  const width = drawn.getBoundingClientRect().width;
  const space = room(c);
  if (width > space + 2) out.push('chart ' + c.id + ': ' + Math.round(width) + ' px wide, room '
                                   + Math.round(space) + ' px');
});
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


def save_screenshot(driver: Any, path: Path) -> None:
    """The page's first :data:`SCREENSHOT_MAX_HEIGHT` pixels at the window's width, as one PNG.

    The viewport is made as tall as the page for the shot (and restored after), so the page is drawn
    exactly as at the checked width; Chromium's capture-beyond-viewport re-lays the page out and can
    shift it sideways in the picture, which would misrepresent what a reader sees."""
    import base64

    height = int(
        driver.execute_script(
            "return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);"
        )
        or 1000
    )
    size = driver.get_window_size()
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WINDOW_WIDTH, "height": min(height, SCREENSHOT_MAX_HEIGHT), "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.set_window_size(size["width"], size["height"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def check_page(
    driver: Any, origin: str, html_dir: Path, page: str, wait_s: float, screenshots: Path | None = None
) -> PageResult:
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
    for item in driver.execute_script(_OVERFLOW_JS, CHART_SELECTOR) or []:
        result.failures.append(f"overflows its container horizontally: {item}")
    if screenshots is not None:
        try:
            save_screenshot(driver, screenshots / Path(page).with_suffix(".png"))
        except Exception as exc:  # a screenshot is for review; its failure is reported, not hidden
            result.failures.append(f"screenshot failed: {type(exc).__name__}: {exc}")

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
    for entry in driver.get_log("browser"):
        message = entry.get("message", "")
        if entry.get("level") == "SEVERE" and not message.startswith(f"{origin}/favicon.ico "):
            message = message.strip()
            if len(message) > 800:
                message = message[:800] + " [...]"
            result.failures.append(f"console error: {message}")
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
) -> list[PageResult]:
    results: list[PageResult] = []
    width = max((len(p) for p in pages), default=10)
    with serve(html_dir) as origin, chromium_driver(chromium, chromedriver) as driver:
        for page in pages:
            res = check_page(driver, origin, html_dir, page, wait_s, screenshots)
            results.append(res)
            status = "ok" if res.ok else f"FAIL ({len(res.failures)})"
            math = f"  math {res.typeset}/{res.math}" if res.math else ""
            print(
                f"{page:<{width}}  charts {res.drawn}/{res.charts}{math}  {res.seconds:4.1f}s  {status}",
                file=out,
                flush=True,
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mamba_recall.browser_check",
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
        help="folder for one screenshot per page (default: <html_dir>/../screenshots)",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    try:
        html_dir = args.html_dir.resolve()
        if not html_dir.is_dir():
            raise SetupError(f"{html_dir} is not a directory (build the book first)")
        pages = load_toc(args.toc)
        screenshots = (args.screenshots or html_dir.parent / "screenshots").resolve()
        results = run_check(
            html_dir,
            pages,
            wait_s=args.wait,
            chromium=args.chromium,
            chromedriver=args.chromedriver,
            screenshots=screenshots,
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
