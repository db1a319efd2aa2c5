"""The profiling notebook's profiler in a real browser: JupyterLab on 127.0.0.1, headless Chromium
driven by Selenium, the notebook's imports and its profiler cells run (nbmake runs the whole
notebook), the profiler's controls changed and its button pressed; its plot and its table must
appear in the page (on a CPU: the PyTorch path and the loop timed, the kernel checked, each
labelled). Screenshots go to the test's tmp_path (printed).

Needs Debian's ``chromium`` and ``chromium-driver`` (``/usr/bin``) and selenium. ``.ci/run``
installs the browser when it is missing and sets ``RLT_BROWSER_TEST=required``, so in CI a missing
browser fails this test; elsewhere it is skipped with the reason."""
from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
# Chromium as root on a closed network: no sandbox, no background connections to refuse.
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,1000"]

pytestmark = pytest.mark.xdist_group("browser")


def _need_browser():
    """Skip (fail where CI requires it) without selenium or Debian's chromium."""
    try:
        import selenium  # noqa: F401
        missing = next((f"{p} is missing (Debian packages chromium and chromium-driver)"
                        for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()), None)
    except ImportError:
        missing = "selenium is not installed"
    if missing and os.environ.get("RLT_BROWSER_TEST") == "required":
        pytest.fail(f"RLT_BROWSER_TEST=required but {missing}")
    if missing:
        pytest.skip(f"browser test: {missing}")


def _wait(what: str, timeout: float, probe):
    """``probe()`` until it returns something truthy; a clear failure, never a hang. An element
    that the page re-rendered while the probe read it (stale) is a "not yet"."""
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = probe()
        except StaleElementReferenceException:
            got = None
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture
def lab(tmp_path):
    """``jupyter lab`` serving a copy of the notebook (autosave must not write into the repo),
    with the repository's committed results beside it; yields (base URL, token)."""
    _need_browser()
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    _profiler_cells(ROOT / "notebooks" / "08_profiling.ipynb", course / "notebooks" / "08_profiling.ipynb")
    (course / "benchmarks").symlink_to(ROOT / "benchmarks")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
         "--LabApp.expose_app_in_browser=True"],  # window.jupyterapp: run cells through Lab's own commands
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def up():
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited ({proc.returncode}): {(tmp_path / 'lab.log').read_text()[-2000:]}")
        try:
            return urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).status == 200
        except OSError:
            return False

    try:
        _wait("jupyter lab to answer", 90, up)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _profiler_cells(src: Path, dst: Path):
    """A copy of the notebook with two code cells: the first (the imports) and the one that makes
    the profiler (``profile.profiler(``)."""
    import nbformat

    nb = nbformat.read(src, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells = [code[0], next(c for c in code if "profile.profiler(" in c.source)]
    nbformat.write(nb, dst)


# The notebook panel (the headless window has no focus, so not shell.currentWidget).
_PANEL = "const nb = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.sessionContext);"


def test_profiler_runs_in_a_browser(lab, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, token = lab
    gpu = torch.cuda.is_available()  # the notebook's kernel runs on this machine too
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'chromium'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    shots = []

    def shot(name):
        shots.append(tmp_path / f"{name}.png")
        driver.save_screenshot(str(shots[-1]))

    try:
        driver.set_script_timeout(30)
        driver.get(f"{url}/lab/tree/notebooks/08_profiling.ipynb?token={token}")
        _wait("the notebook's kernel", 120, lambda: driver.execute_script(
            f"if (!window.jupyterapp) return false; {_PANEL} "
            "return !!(nb && nb.sessionContext.session && nb.sessionContext.session.kernel);"))
        shot("1-opened")
        driver.execute_script(f"{_PANEL} window.jupyterapp.shell.activateById(nb.id); "
                              "window.jupyterapp.commands.execute('notebook:run-all-cells');")

        def ran():  # every code cell has an execution count and the kernel is idle
            status, pending = driver.execute_script(
                f"{_PANEL} const cells = nb.content.widgets.filter(c => c.model.type === 'code'); return ["
                "nb.sessionContext.session.kernel.status, cells.filter(c => c.model.executionCount === null"
                " || c.promptNode.textContent.includes('*')).length];")
            return status == "idle" and pending == 0

        _wait("every cell to run", 240, ran)
        shot("2-all-cells-run")
        errors = driver.find_elements(By.CSS_SELECTOR, "[data-mime-type='application/vnd.jupyter.error']")
        assert not errors, f"a cell raised: {errors[0].text[:2000]}"

        run = _wait("the profiler's run button", 30, lambda: [
            b for b in driver.find_elements(By.CSS_SELECTOR, "button.jupyter-button") if b.text == "run"])[0]
        widget = run.find_element(By.XPATH, "ancestor::div[contains(@class, 'widget-vbox')][last()]")

        def control(label):
            return [s for s in widget.find_elements(By.TAG_NAME, "select")
                    if label in s.find_element(By.XPATH, "..").text]

        if gpu:  # B × T from two dropdowns; T = 16, a shape the first run did not use
            steps = control("steps T")
            assert steps, "no 'steps T' control in the profiler"
            Select(steps[0]).select_by_visible_text("16")
            wanted = [rf"^{impl}\s+\d+\s+16\s+[\d.e+-]+\s" for impl in ("triton", "torch", "loop")]
        else:  # the shapes to time, a list; 256×1024 alone, a shape the first run did not use
            shapes = control("B × T")
            assert shapes, "no 'B × T' control in the profiler"
            Select(shapes[0]).deselect_all()
            Select(shapes[0]).select_by_visible_text("256×1024")
            wanted = [rf"^{impl}\s+256\s+1024\s+[\d.e+-]+\s" for impl in ("loop", "torch")]
            wanted.append(r"^triton\s+\d+\s+\d+\s+n/a\s")  # the kernel: checked, not timed
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", run)
        run.click()

        def table():  # the rows the button's run printed
            text = "\n".join(e.text for e in widget.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output pre"))
            return all(re.search(w, text, re.M) for w in wanted) and text

        text = _wait("the profiler's table for the shape picked", 120, table)
        plots = widget.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output img")
        assert plots and all(p.size["width"] > 300 and p.size["height"] > 100 for p in plots), "no plot in the widget"
        if not gpu:  # the CPU's labels travel with the rows: real timings, the kernel's correctness run
            flat = " ".join(text.split())
            assert "real timing" in flat and "correctness run of the Triton interpreter" in flat, text
        shot("3-profiler-after-run")
    finally:
        print("screenshots:", *shots)
        driver.quit()
