"""Every chapter, run in JupyterLab in a real browser: it runs top to bottom on a fresh kernel
without errors, and no output is wider than the notebook panel (the only run of the chapters in
the test suite).

For each notebook in ``chapters/``: open it in JupyterLab in headless Chromium (Debian's
``chromium``, as in ``test_browser.py``; the app loads once per test process and each chapter
opens in it, on a kernel of its own: loading JupyterLab took ~5 s a chapter), Run All, wait
until every cell has run, then scroll through it a screen at a time and measure each output
area on the way (JupyterLab lays out only what is near the screen): its content must fit its
width (a picture too wide to scale may scroll inside its own box, which does not widen the
output), and no SVG picture may draw its text smaller than
``MIN_TEXT_PX`` once scaled to the panel (measured on the rendered text, so a picture shrunk to
fit fails too).  No cell may fail or write to stderr, and every printed
speed ``verdict:`` must follow from its own numbers (``tests/verdicts.py``).  The screens go to
``test-output/browser/chapters/<chapter>_NN.jpg`` for a person to look at (JPEG: a third of a PNG's
encoding time per screen, and the text stays readable).

The chapter run is the committed one (``tests/committed.py``): a learner's edits and saved outputs
in this clone are theirs.  When the cells in the working tree differ from the commit, a warning
says so (an author's uncommitted edit is not what ran).
"""

from __future__ import annotations

import base64
import shutil
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from committed import committed_paths, committed_text, materialise
from playwright.sync_api import sync_playwright
from test_browser import CHROMIUM_FLAGS, OUTPUT, Clock, _wait_for_idle_kernel, chromium, serve  # noqa: F401
from verdicts import verdict_problems

CHAPTERS = committed_paths("chapters", "[0-9][0-9]_*.ipynb")
CHAPTER_BUDGET_S = 240  # the slowest chapter runs in under a minute on two quiet cores

#: JavaScript: the outputs whose content is wider than the output area, with their widths (of the
#: ``[element, index]`` pairs given: those on screen)
_OVERFLOWING = """(outputs) => {
  const out = [];
  outputs.forEach(([el, k]) => {
    if (el.scrollWidth > el.clientWidth + 2) {
      const cell = el.closest('.jp-Cell');
      const prompt = cell ? cell.querySelector('.jp-InputPrompt') : null;
      out.push(`${prompt ? prompt.innerText.trim() : '#' + k}: content ${el.scrollWidth} px in ${el.clientWidth} px`);
    }
  });
  return out;
}"""

#: the smallest text a picture may draw, in CSS px after its scaling to the panel
MIN_TEXT_PX = 9

#: JavaScript: the outputs (of the ``[element, index]`` pairs given) whose SVG text is drawn smaller
#: than MIN_TEXT_PX once scaled (a picture wider than the panel is shrunk to fit; its labels shrink
#: with it)
_SMALL_TEXT = """(outputs, minPx) => {
  const out = [];
  outputs.forEach(([el, k]) => {
    let smallest = Infinity;
    el.querySelectorAll('svg text').forEach(t => {
      const box = t.getBoundingClientRect(), m = t.getScreenCTM();
      if (!m || box.width === 0 || !t.textContent.trim()) return;  // hidden (another tab) or empty
      const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px < smallest) smallest = px;
    });
    if (smallest < minPx) {
      const cell = el.closest('.jp-Cell');
      const prompt = cell ? cell.querySelector('.jp-InputPrompt') : null;
      out.push(`${prompt ? prompt.innerText.trim() : '#' + k}: text drawn at ${smallest.toFixed(1)} px`);
    }
  });
  return out;
}"""

#: JavaScript: resolves once the page has drawn twice after a scroll (the windowed notebook lays out
#: the cells that came near the screen on the first frame, their outputs draw on the next)
_LAID_OUT = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(
  () => setTimeout(done, 50))))"""

#: JavaScript: the notebook's scrolling element
_SCROLLER = "document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer')"

#: JavaScript: whether the end of the notebook is on screen
_AT_END = f"""() => {{ const el = {_SCROLLER};
  return el.scrollTop + el.clientHeight >= el.scrollHeight - 2; }}"""

#: JavaScript: the output areas that reach into the notebook's visible part, as ``[element, index
#: among all outputs]`` pairs.  The walk measures each screen's own outputs only: every output is on
#: some screen (the screens overlap), and the windowed notebook also lays out cells just off screen,
#: which measured on every screen cost a third of the walk
_ON_SCREEN = f"""() => {{
  const view = {_SCROLLER}.getBoundingClientRect();
  return Array.from(document.querySelectorAll('.jp-Cell .jp-OutputArea-output'))
    .map((el, k) => [el, k])
    .filter(([el]) => {{ const r = el.getBoundingClientRect(); return r.bottom > view.top && r.top < view.bottom; }});
}}"""

#: JavaScript: one screen of the walk in one round trip to the browser — scroll to the screen,
#: wait until it is laid out, then measure (about 230 screens a run: each round trip counts)
_SCREEN = f"""async ([top, minPx]) => {{
  const scroller = {_SCROLLER};
  scroller.scrollTop = top;
  await ({_LAID_OUT})();
  const outputs = ({_ON_SCREEN})();
  return {{overflowing: ({_OVERFLOWING})(outputs), unreadable: ({_SMALL_TEXT})(outputs, minPx),
           atEnd: ({_AT_END})()}};
}}"""

_RUNNING = """() => Array.from(document.querySelectorAll('.jp-InputPrompt'))
  .filter(p => p.innerText.includes('*')).length"""

#: JavaScript: error and stderr outputs (a chapter has none), their first 300 characters
_ERRORS = """() => Array.from(document.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
  .map(e => e.innerText.slice(0, 300))"""


#: JavaScript: the text of every output, in order
_TEXT = """() => Array.from(document.querySelectorAll('.jp-Cell .jp-OutputArea-output'))
  .map(e => e.innerText).join('\\n')"""


#: JavaScript: open a notebook in the running JupyterLab (as the file browser does) and resolve
#: once its panel is shown, alone in the main area (the Launcher an empty area gets is closed)
_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const widget = await app.commands.execute('docmanager:open', {path});
  await widget.context.ready;
  await widget.revealed;
  app.shell.activateById(widget.id);
  for (const other of Array.from(app.shell.widgets('main'))) if (other !== widget) other.dispose();
}"""

#: JavaScript: close every document, unsaved (a chapter's run is not kept), so the next chapter's
#: outputs are the only ones on the page
_CLOSE_ALL = """() => {
  for (const widget of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (widget.context) widget.context.model.dirty = false;
    widget.dispose();
  }
}"""


def _open_lab(browser, lab):
    """A page with JupyterLab loaded in a workspace of its own (the server's default one would
    reopen whatever was open last), no document open: the app loads once for all the chapters of
    this process, each chapter then opens in it as a learner opens it from the file browser."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    clock = Clock(CHAPTER_BUDGET_S)
    page.goto(f"{lab.url}/lab/workspaces/chapter-runs?reset&token={lab.token}", timeout=clock.ms())
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=clock.ms())
    page.evaluate("() => window.jupyterapp.restored")
    return page


def _run_all(page, lab, chapter: Path) -> None:
    clock = Clock(CHAPTER_BUDGET_S)
    page.evaluate(_OPEN, chapter.name)
    page.locator(".jp-Notebook").first.wait_for(state="visible", timeout=clock.ms())
    _wait_for_idle_kernel(lab, page, clock)
    page.locator(".jp-Notebook").first.click()
    # the command's promise settles once every cell has run (evaluate waits for it); the prompts
    # are checked too, in case a cell is still shown running
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    while page.evaluate(_RUNNING):
        if time.monotonic() > clock.deadline:
            raise AssertionError(f"{chapter.name} did not finish running in {CHAPTER_BUDGET_S} s")
        page.wait_for_timeout(200)
    page.evaluate(_LAID_OUT)
    page.wait_for_timeout(500)  # the last outputs and widgets render


def _sources(text: str) -> list[str]:
    return [cell.source for cell in nbformat.reads(text, as_version=4).cells]


def _committed_copy(chapter: Path, dest: Path) -> Path:
    """The chapter as committed, written under ``dest``; warns when the working tree's cells differ."""
    if chapter.exists() and _sources(chapter.read_text(encoding="utf-8")) != _sources(committed_text(chapter)):
        warnings.warn(f"{chapter.name} has uncommitted edits to its cells: the committed version runs "
                      "here (commit to test the edit)", stacklevel=2)
    (copy,) = materialise([chapter], dest)
    return copy


@pytest.fixture(scope="module")
def chapter_lab(tmp_path_factory):
    """One JupyterLab server for all the chapters this process runs (each on its own fresh kernel)."""
    with serve(tmp_path_factory.mktemp("chapters"), []) as server:
        yield server


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: F811
    """One headless Chromium for all the chapters this process runs."""
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def lab_pages(browser, chapter_lab):
    """The page JupyterLab runs in, shared by the chapters; a chapter that fails leaves it to be
    replaced (``pages[0] = None``), so the next chapter starts on a page in a known state."""
    pages = [None]
    yield pages
    if pages[0] is not None:
        pages[0].close()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_chapter_outputs_fit_the_notebook_panel(chapter_lab, browser, lab_pages, tmp_path, chapter):
    shots = OUTPUT / "chapters"
    shots.mkdir(parents=True, exist_ok=True)
    shutil.copy(_committed_copy(chapter, tmp_path / "committed"), chapter_lab.root / chapter.name)
    if lab_pages[0] is None:
        lab_pages[0] = _open_lab(browser, chapter_lab)
    page, finished = lab_pages[0], False
    try:
        for old in [*shots.glob(f"{chapter.stem}_*.jpg"), *shots.glob(f"{chapter.stem}_*.png")]:
            old.unlink()  # this run's screens, and the PNG ones earlier versions of this test saved
        start = time.perf_counter()
        _run_all(page, chapter_lab, chapter)
        # the "under a minute" budget is watched in the CI log (pytest -s or -rA), not asserted
        print(f"{chapter.name}: ran in {time.perf_counter() - start:.1f} s")
        overflowing, unreadable = _scroll_through(page, shots / chapter.stem)
        errors = page.evaluate(_ERRORS)
        contradictions = verdict_problems(page.evaluate(_TEXT))
        page.evaluate(_CLOSE_ALL)
        finished = True
    finally:
        if not finished:
            page.close()
            lab_pages[0] = None
        chapter_lab.shut_down_kernels()
    assert not errors, f"{chapter.name}: a cell failed or wrote to stderr: {errors[0]}"
    assert not contradictions, f"{chapter.name}: a printed verdict contradicts its numbers: {contradictions}"
    assert not unreadable, (f"{chapter.name}: pictures whose text is drawn under {MIN_TEXT_PX} px at the panel's "
                            f"width (see {shots}/{chapter.stem}_NN.jpg): {sorted(unreadable)}")
    assert not overflowing, (f"{chapter.name}: outputs wider than the notebook panel (see "
                             f"{shots}/{chapter.stem}_NN.jpg): {sorted(overflowing)}")


def _scroll_through(page, stem: Path, max_screens: int = 60) -> tuple[set[str], set[str]]:
    """Screens of the notebook from top to bottom; the overflowing outputs and those whose
    pictures draw text too small to read, met on the way."""
    overflowing: set[str] = set()
    unreadable: set[str] = set()
    # Chromium's own capture, told to favour speed: the same JPEG as page.screenshot, without
    # Playwright's per-shot preparations (about half the time per screen)
    devtools = page.context.new_cdp_session(page)
    step = page.evaluate(f"() => {_SCROLLER}.clientHeight - 60")
    for k in range(max_screens):
        screen = page.evaluate(_SCREEN, [k * step, MIN_TEXT_PX])
        overflowing |= set(screen["overflowing"])
        unreadable |= set(screen["unreadable"])
        shot = devtools.send("Page.captureScreenshot", {"format": "jpeg", "quality": 85, "optimizeForSpeed": True})
        Path(f"{stem}_{k:02d}.jpg").write_bytes(base64.b64decode(shot["data"]))
        if screen["atEnd"]:
            # the windowed notebook guesses the height of cells it has not laid out yet, and the
            # end moves once it lays them out: the end is where it stays
            page.wait_for_timeout(500)
            if page.evaluate(_AT_END):
                break
    return overflowing, unreadable
