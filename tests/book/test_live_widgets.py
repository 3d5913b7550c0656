"""The explorers in a real Jupyter: JupyterLab on 127.0.0.1, one notebook per chapter opened in headless
Chromium, run whole (Run All), then one control of the explorer moved; its output must change (and hold no
traceback), and no cell may end in an error.

What a person sees is checked, not only that an output changed: every chart of the notebook must be drawn
by JupyterLab (an SVG or canvas with data marks, not only axes) when it opens with its saved outputs, after
Run All, and in the explorer before and after the control moves; no element of class
``mamba-recall-chart-error`` may appear, and the browser console must hold no error.

The notebooks are copied into a temporary folder first (JupyterLab autosaves what it runs; ``book/`` keeps
its committed outputs). Skipped, with the reason printed, where Chromium / chromedriver or JupyterLab are
absent (``apt-get install chromium chromium-driver``; ``pip install -e '.[test]'``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

import browser_check  # tools/ (on the path through conftest)
from mamba_recall.paths import REPO_ROOT

pytestmark = pytest.mark.live

# (notebook, the control to move, how, then the button to press or None). "select": choose the next option of
# a dropdown; "slide": one step right on a slider (keyboard).
# Split in two halves, this file's and ``test_live_widgets_b.py``'s, so that pytest-xdist (``--dist loadfile``)
# runs them on two processes, each with its own JupyterLab.
EXPLORERS_A = [
    ("book/00_selective_scan/03_explorer.ipynb", "A", "slide", None),
    ("book/01_gradient_dynamics/02_mechanism_one_key.ipynb", "regime", "select", None),
    ("book/03_selectivity/04_mqar_constructions.ipynb", "κ", "slide", None),
]
EXPLORERS_B = [
    ("book/02_hashing_scaling/03_mechanism.ipynb", "N", "slide", "train"),
    ("book/04_primacy_recency/02_long_term_channels.ipynb", "window", "select", None),
    ("book/05_synthesis/01_four_theories.ipynb", "N", "select", "train"),
]
EXPLORERS = EXPLORERS_A + EXPLORERS_B
RUN_TIMEOUT_S = 420  # one notebook, Run All (the slowest ci notebook takes about a minute on 2 cores)
REDRAW_TIMEOUT_S = 180  # an explorer's redraw (the Chapter 1 one trains 400 steps)
# How long a redrawn output must stay the same, with the kernel idle, to count as the redraw's end: a control
# and a button send two messages, and the kernel is idle for a moment between them.
REDRAW_HOLD_S = 1.0


def _missing() -> str | None:
    for name, default in (
        ("chromium", browser_check.DEFAULT_CHROMIUM),
        ("chromedriver", browser_check.DEFAULT_CHROMEDRIVER),
    ):
        if not (os.access(default, os.X_OK) or shutil.which(name)):
            return f"{name} not found (apt-get install chromium chromium-driver)"
    try:
        import jupyterlab  # noqa: F401
        import selenium  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]')"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = _missing()
    if reason:
        print(f"live-widget test skipped: {reason}")
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("lab")
    for nb, *_ in EXPLORERS:
        (root / nb).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / nb, root / nb)
    port, token = _free_port(), "mamba-recall-live-test"
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(root / ".settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / ".workspaces"),
        "JUPYTER_CONFIG_DIR": str(root / ".config"),
        "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
        "MAMBA_RECALL_SCORECARD_DIR": str(root / ".scorecard"),
    }
    log = open(root / "jupyterlab.log", "w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=",
            "--LabApp.extension_manager=readonly",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"JupyterLab did not start; see {root / 'jupyterlab.log'}:\n"
                        + (root / "jupyterlab.log").read_text()[-3000:]
                    )
                time.sleep(0.5)
        with browser_check.chromium_driver() as driver:
            driver.set_script_timeout(60)
            yield driver, base, token, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


_OPEN_JS = """
if (!window.jupyterapp) return false;
return Array.from(window.jupyterapp.shell.widgets('main')).some(w => w.content && w.sessionContext
  && w.content.widgets && w.content.widgets.length > 0);
"""

# the notebook is the current widget once a cell has been clicked (headless Chromium gives no window focus)
_BUSY_JS = """
const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
if (!w || !w.content || !w.sessionContext || !w.sessionContext.session) return 'loading';
const kernel = w.sessionContext.session.kernel;
if (!kernel || kernel.status !== 'idle') return 'busy';
const prompts = Array.from(document.querySelectorAll('.jp-Notebook .jp-InputArea-prompt')).map(e => e.textContent);
return prompts.some(p => p.indexOf('*') >= 0) ? 'busy' : 'idle';
"""

# Run All through JupyterLab's command, whose promise settles when the last cell has finished executing.
_RUN_ALL_JS = """
window.mambaRecallRunAll = 'running';
window.jupyterapp.commands.execute('notebook:run-all-cells').then(
  ok => { window.mambaRecallRunAll = ok ? 'done' : 'failed'; },
  err => { window.mambaRecallRunAll = 'error: ' + err; });
return 0;
"""

# The notebook's kernel shut down once its test has seen what it needs (it would hold its memory until the end).
_SHUTDOWN_JS = """
const done = arguments[arguments.length - 1];
window.jupyterapp.serviceManager.sessions.shutdownAll().then(() => done(true), () => done(false));
"""

_ERRORS_JS = """
const nb = window.jupyterapp.shell.currentWidget.content;
const errors = [];
for (let i = 0; i < nb.model.cells.length; i++) {
  const cell = nb.model.cells.get(i);
  if (cell.type !== 'code') continue;
  for (const out of cell.outputs.toJSON()) {
    if (out.output_type === 'error') errors.push(`cell ${i}: ${out.ename}: ${out.evalue}`);
  }
}
return errors;
"""

_CELL_JS = "return document.querySelectorAll('.jp-Notebook .jp-Cell')[arguments[0]];"

# Every chart JupyterLab renders under ``root`` (the notebook, or one cell): whether it has an SVG or canvas and
# how many data marks it draws (mark items outside axes, legends and titles); and the chart-error elements.
_CHARTS_JS = """
const root = arguments[0] || document.querySelector('.jp-Notebook');
const charts = Array.from(root.querySelectorAll('.jp-RenderedVegaLite, .jp-RenderedVega5')).map(el => {
  const svg = el.querySelector('svg');
  const canvas = el.querySelector('canvas');
  let marks = 0;
  if (svg) {
    for (const g of svg.querySelectorAll('g.role-mark')) {
      if (!g.closest('.role-axis, .role-legend, .role-title') && g.children.length > 0) marks += g.children.length;
    }
  } else if (canvas) {
    marks = canvas.width > 0 && canvas.height > 0 ? 1 : 0;
  }
  return {drawn: !!(svg || canvas), marks: marks, text: el.textContent.slice(0, 300)};
});
const errors = Array.from(root.querySelectorAll('.mamba-recall-chart-error')).map(e => e.textContent);
return {charts: charts, errors: errors};
"""


def _charts(driver, root=None) -> dict:
    return driver.execute_script(_CHARTS_JS, root)


def _all_drawn(state: dict) -> bool:
    return all(c["drawn"] and c["marks"] > 0 for c in state["charts"])


def _saved_chart_count(path: Path) -> int:
    from mamba_recall.plots import JSON_MIMETYPE, VEGA_JSON_MIMETYPE

    cells = nbformat.read(path, as_version=4).cells
    return sum(
        1
        for c in cells
        for o in c.get("outputs", [])
        if JSON_MIMETYPE in o.get("data", {}) or VEGA_JSON_MIMETYPE in o.get("data", {})
    )


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


#: How often a wait polls the page (seconds).
POLL_S = 0.25


def _wait(predicate, timeout: float, what: str, hold: float = 0.0):
    """Poll ``predicate`` every :data:`POLL_S` seconds until it has held for ``hold`` seconds on end (0: the first
    time it holds; a state that can flicker, such as an idle kernel between two messages, is given a hold)."""
    deadline = time.monotonic() + timeout
    since = None
    while True:
        now = time.monotonic()
        if predicate():
            since = now if since is None else since
            if now - since >= hold:
                return
        else:
            since = None
        if now > deadline:
            raise AssertionError(f"timed out after {timeout:g} s: {what}")
        time.sleep(POLL_S)


def _explorer_cell(path: Path) -> int:
    cells = nbformat.read(path, as_version=4).cells
    hits = [i for i, c in enumerate(cells) if c.cell_type == "code" and "explorer(" in c.source]
    assert hits, f"{path} has no explorer cell"
    return hits[-1]


def _control(cell, description: str):
    from selenium.webdriver.common.by import By

    for box in cell.find_elements(By.CSS_SELECTOR, ".widget-inline-hbox"):
        labels = box.find_elements(By.CSS_SELECTOR, ".widget-label")
        if labels and labels[0].text.strip() == description:
            return box
    found = [e.text for e in cell.find_elements(By.CSS_SELECTOR, ".widget-inline-hbox .widget-label")]
    raise AssertionError(f"no control {description!r} in the explorer (controls: {found})")


def _output_text(cell) -> str:
    from selenium.webdriver.common.by import By

    outs = cell.find_elements(By.CSS_SELECTOR, ".widget-output")
    assert outs, "the explorer shows no output area"
    return outs[-1].get_attribute("innerHTML")


@pytest.mark.parametrize("notebook, control, how, button", EXPLORERS_A, ids=[e[0].split("/")[1] for e in EXPLORERS_A])
def test_explorer_redraws_when_a_control_moves(lab, notebook, control, how, button):
    check_explorer(lab, notebook, control, how, button)


def check_explorer(lab, notebook, control, how, button):
    """Open ``notebook`` in JupyterLab, Run All, move ``control`` (and press ``button``), and check what is drawn."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    driver, base, token, root = lab
    start = time.monotonic()
    driver.get_log("browser")  # start with an empty console log
    driver.get(f"{base}/lab/tree/{notebook}?token={token}&reset")
    _wait(lambda: driver.execute_script(_OPEN_JS), 120, f"{notebook} did not open")
    saved = _saved_chart_count(root / notebook)
    _wait(
        lambda: len(_charts(driver)["charts"]) >= saved and _all_drawn(_charts(driver)),
        60,
        f"{notebook}: the {saved} charts of its saved outputs were not drawn ({_charts(driver)})",
    )
    driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")[0].click()
    _wait(lambda: driver.execute_script(_BUSY_JS) == "idle", 120, f"{notebook}: no idle kernel")
    opened = time.monotonic()
    driver.execute_script(_RUN_ALL_JS)
    _wait(
        lambda: (
            driver.execute_script("return window.mambaRecallRunAll;") != "running"
            and driver.execute_script(_BUSY_JS) == "idle"
        ),
        RUN_TIMEOUT_S,
        f"{notebook}: Run All did not finish",
    )
    ran = time.monotonic()
    status = driver.execute_script("return window.mambaRecallRunAll;")
    assert status in ("done", "failed"), f"{notebook}: Run All could not run: {status}"
    errors = driver.execute_script(_ERRORS_JS)
    assert errors == [], f"{notebook}: cells ended in errors: {errors}"
    _wait(
        lambda: len(_charts(driver)["charts"]) >= saved and _all_drawn(_charts(driver)),
        60,
        f"{notebook}: after Run All not every chart was drawn ({_charts(driver)})",
    )

    index = _explorer_cell(root / notebook)
    cell = driver.execute_script(_CELL_JS, index)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)
    _wait(
        lambda: len(cell.find_elements(By.CSS_SELECTOR, ".widget-inline-hbox")) > 0,
        60,
        f"{notebook}: the explorer's controls were not drawn",
    )
    # the explorer's first drawing is asynchronous: its output must stay the same a while, the kernel idle, before it
    # is taken as what the control has to change
    seen = [None]

    def settled() -> bool:
        last, seen[0] = seen[0], _output_text(cell)
        return seen[0] == last and driver.execute_script(_BUSY_JS) == "idle"

    _wait(settled, 60, f"{notebook}: the explorer's first output did not settle", hold=REDRAW_HOLD_S)
    before = _output_text(cell)
    explorer_charts = len(_charts(driver, cell)["charts"])
    if explorer_charts:
        _wait(lambda: _all_drawn(_charts(driver, cell)), 60, f"{notebook}: the explorer's chart was not drawn")
    box = _control(cell, control)
    if how == "select":
        select = Select(box.find_element(By.CSS_SELECTOR, "select"))
        current = select.first_selected_option.text
        options = [o.text for o in select.options]
        select.select_by_visible_text(options[(options.index(current) + 1) % len(options)])
    else:
        handle = box.find_element(By.CSS_SELECTOR, ".noUi-handle")
        driver.execute_script("arguments[0].focus();", handle)
        handle.send_keys(Keys.ARROW_RIGHT)
    if button is not None:
        buttons = [b for b in cell.find_elements(By.CSS_SELECTOR, "button") if b.text.strip() == button]
        assert buttons, f"{notebook}: no {button!r} button"
        buttons[0].click()
    moved = time.monotonic()
    _wait(
        lambda: _output_text(cell) != before and driver.execute_script(_BUSY_JS) == "idle",
        REDRAW_TIMEOUT_S,
        f"{notebook}: the explorer's output did not change after moving {control!r}",
        hold=REDRAW_HOLD_S,
    )
    after = _output_text(cell)
    assert after.strip() and "Traceback" not in after, f"{notebook}: the redraw failed: {after[:2000]}"
    if explorer_charts:
        _wait(
            lambda: len(_charts(driver, cell)["charts"]) >= explorer_charts and _all_drawn(_charts(driver, cell)),
            60,
            f"{notebook}: after moving {control!r} the explorer's chart was not drawn ({_charts(driver, cell)})",
        )
    state = _charts(driver)
    assert state["errors"] == [], f"{notebook}: chart errors on the page: {state['errors']}"
    console = _console_errors(driver)
    assert console == [], f"{notebook}: browser console errors: {console}"
    driver.execute_async_script(_SHUTDOWN_JS)
    end = time.monotonic()
    print(
        f"{notebook}: {end - start:.0f} s (open and saved charts {opened - start:.0f} s, Run All {ran - opened:.0f} s,"
        f" redraw {end - moved:.0f} s)"
    )
