"""The one real-browser test of the widgets: JupyterLab headless, the demo notebook in Chromium.

A fixture starts JupyterLab on a free port in a temporary root holding a copy of
``browser_demo.ipynb``, with its own Jupyter config/data/runtime/settings folders so the user's
are not touched.  Playwright (sync API) drives Debian's ``chromium`` (never ``playwright
install``): Run All, then the fused graph must show as an SVG picture and the pass stepper's
slider must render; moving the slider (keyboard) to FuseOps must change the IR text shown, and
the stepper's picture tab must show the two fused functions as clusters.  Screenshots
(``pass_stepper.png``, ``pass_stepper_picture.png``) go to ``test-output/browser/`` and to the
test's ``tmp_path``; on failure a screenshot, the page's text and the server log go there, and
the message says where.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect, sync_playwright

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NOTEBOOK = "browser_demo.ipynb"
OUTPUT = ROOT / "test-output" / "browser"
#: launch flags for chromium in a container: no sandbox, no GPU, nothing talking to the network
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
SERVER_START_S = 40  # JupyterLab on two busy cores starts in about 5 s
STEP_MS = 30_000  # the longest single wait in the page (kernel start + the notebook's cells)
PAGE_BUDGET_S = 70  # all waits in the page together: with the server, the test stays under 2 minutes


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium; the test fails (not skips) without it, saying how to get it."""
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (no `chromium` on PATH): `./dev setup` installs it "
                    "(apt-get install -y chromium); the browser test of the widgets needs it")
    return path


def _free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Clock:
    """What is left of the page's time budget, handed out one wait at a time."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def ms(self) -> int:
        """Milliseconds for the next wait: STEP_MS, or less when the budget runs out (at least 1 s)."""
        return max(1000, min(STEP_MS, int((self.deadline - time.monotonic()) * 1000)))


class Lab:
    """A running JupyterLab server: its base URL, token, the folder it serves and its log file."""

    def __init__(self, url: str, token: str, root: Path, log: Path, proc: subprocess.Popen):
        self.url, self.token, self.root, self.log, self.proc = url, token, root, log, proc

    def api(self, path: str, method: str = "GET") -> object:
        """The server's REST answer to ``method path`` (JSON decoded; None for an empty answer)."""
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read().decode()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """Stop every kernel, so the next notebook starts on a fresh one and memory is given back."""
        for session in self.api("/api/sessions"):
            self.api(f"/api/sessions/{session['id']}", method="DELETE")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _jupyter_env(base: Path) -> dict[str, str]:
    """Environment with private Jupyter folders, so the user's settings and runtime are untouched."""
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")):
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / sub)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    # no news toast over the page: the user setting fetchNews of the notification extension
    news = base / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True, exist_ok=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return env


def _wait_for_server(lab: Lab) -> None:
    """Until the server answers /api/status; fails with its log if it exits or stays silent."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {lab.proc.returncode}:\n{lab.log_tail()}")
        try:
            lab.api("/api/status")
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer {lab.url}/api/status within {SERVER_START_S} s:\n{lab.log_tail()}")


@contextlib.contextmanager
def serve(tmp_path: Path, notebooks: list[Path]):
    """JupyterLab, headless, on a free port, serving temporary copies of ``notebooks`` (the
    project root on PYTHONPATH, as ``./dev lab`` has it)."""
    root = tmp_path / "root"
    root.mkdir()
    for nb in notebooks:
        shutil.copy(nb, root / nb.name)
    env = _jupyter_env(tmp_path / "jupyter")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           # window.jupyterapp: Run All through JupyterLab's own command, as the Run menu does
           "--LabApp.expose_app_in_browser=True"]
    if os.geteuid() == 0:  # CI runs as root; JupyterLab refuses root without this
        cmd.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Lab(f"http://127.0.0.1:{port}", token, root, log, proc)
    try:
        _wait_for_server(server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a temporary copy of the demo notebook."""
    with serve(tmp_path, [HERE / NOTEBOOK]) as server:
        yield server


def _wait_for_idle_kernel(lab: Lab, page, clock: Clock) -> None:
    """Run All only once the notebook's kernel has started and is idle."""
    deadline = time.monotonic() + clock.ms() / 1000
    kernels: object = []
    while time.monotonic() < deadline:
        try:
            kernels = lab.api("/api/kernels")
        except OSError as err:  # the server may answer 500 while the kernel is still starting: ask again
            kernels = f"{type(err).__name__}: {err}"
        if isinstance(kernels, list) and any(k.get("execution_state") == "idle" for k in kernels):
            return
        page.wait_for_timeout(300)
    raise AssertionError(f"no idle kernel in time; /api/kernels says {kernels}")


def _drive(page, lab: Lab, shots: list[Path]) -> None:
    """Open the notebook, run all cells, check the picture and the slider, move it, screenshot."""
    clock = Clock(PAGE_BUDGET_S)
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}", timeout=clock.ms())
    page.locator(".jp-Notebook").first.wait_for(state="visible", timeout=clock.ms())
    _wait_for_idle_kernel(lab, page, clock)
    page.locator(".jp-Notebook").first.click()  # the notebook panel must be current for Run All
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    # viz.graph displays as HTML holding the SVG, scaled to the notebook panel
    picture = page.locator(".jp-RenderedHTMLCommon svg").first
    picture.wait_for(state="visible", timeout=clock.ms())
    assert "fused_matmul_add_relu (out_ewise_fusable)" in picture.inner_html(), \
        "the picture is not the fused graph with its clusters"
    box = picture.bounding_box()
    panel = page.locator(".jp-Notebook").first.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 200, f"the graph picture is {box}"
    assert panel and box["x"] + box["width"] <= panel["x"] + panel["width"] + 1, \
        f"the graph picture ({box}) is wider than the notebook panel ({panel})"

    slider = page.locator(".jp-OutputArea-output .widget-slider").first
    slider.wait_for(state="visible", timeout=clock.ms())
    header = page.locator(".jp-OutputArea-output .widget-html-content b").first
    ir = page.locator(".jp-OutputArea-output .widget-tab pre").first  # the 'IR after' panel
    expect(header).to_contain_text("LegalizeOps", timeout=clock.ms())
    expect(ir).to_contain_text("R.call_tir(cls.matmul", timeout=clock.ms())
    before = ir.inner_text()

    handle = slider.locator(".noUi-handle").first
    for _ in range(3):  # LegalizeOps -> AnnotateTIROpPattern -> FoldConstant -> FuseOps
        handle.focus()
        handle.press("ArrowRight")
    expect(header).to_contain_text("FuseOps", timeout=clock.ms())
    expect(ir).to_contain_text("def fused_matmul_add_relu", timeout=clock.ms())
    assert ir.inner_text() != before, "moving the slider did not change the IR shown"
    # the screenshot shows the stepper from its slider down: header and the IR after FuseOps
    slider.evaluate("element => element.scrollIntoView({block: 'start'})")
    for shot in shots:
        page.screenshot(path=str(shot), full_page=True)

    # the stepper's picture tab: the entry function with the two fused functions as clusters
    page.locator(".jp-OutputArea-output .widget-tab .lm-TabBar-tab", has_text="picture").first.click()
    clusters = page.locator(".jp-OutputArea-output .widget-tab svg g.cluster")
    clusters.first.wait_for(state="visible", timeout=clock.ms())
    assert clusters.count() == 2, f"the stepper's picture after FuseOps has {clusters.count()} clusters, not 2"
    slider.evaluate("element => element.scrollIntoView({block: 'start'})")
    for shot in shots:
        page.screenshot(path=str(shot.with_name("pass_stepper_picture.png")), full_page=True)


def _save_failure(page, where: list[Path]) -> list[str]:
    """Screenshot and page text of a failed run; returns the paths written."""
    saved = []
    for folder in where:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(folder / "failure.png"), full_page=True)
            saved.append(str(folder / "failure.png"))
        except Exception as err:  # a dead page: keep going, the text may still come
            saved.append(f"(no screenshot: {err})")
        try:
            (folder / "failure.txt").write_text(page.inner_text("body"))
            saved.append(str(folder / "failure.txt"))
        except Exception as err:
            saved.append(f"(no page text: {err})")
    return saved


def test_demo_notebook_runs_and_the_pass_stepper_moves(chromium, lab, tmp_path):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shots = [OUTPUT / "pass_stepper.png", tmp_path / "pass_stepper.png"]
    for name in ("pass_stepper.png", "pass_stepper_picture.png", "failure.png", "failure.txt", "jupyterlab.log"):
        (OUTPUT / name).unlink(missing_ok=True)  # what is there after the run is from this run
    failure = None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(10_000)  # reads of elements the waits have already found
            try:
                _drive(page, lab, shots)
            except (AssertionError, PlaywrightError, OSError) as err:
                saved = _save_failure(page, [OUTPUT, tmp_path])
                shutil.copy(lab.log, OUTPUT / "jupyterlab.log")  # the server's side of the story
                saved.append(str(OUTPUT / "jupyterlab.log"))
                failure = (f"browser test of the demo notebook failed: {err}\nsaved for diagnosis: {saved}\n"
                           f"JupyterLab log (tail):\n{lab.log_tail(15)}")
        finally:
            browser.close()
    if failure:
        pytest.fail(failure)
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"the screenshot {shot} is nearly empty"
