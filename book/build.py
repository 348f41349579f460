"""Build the course as a static HTML site, to read before installing anything.

    ./dev book                                  # every chapter -> book/_build/index.html
    .venv/bin/python book/build.py --chapters 00 03 --out /tmp/site

Each chapter runs top to bottom on a fresh kernel (nbclient: what Run All does in JupyterLab),
with its widgets' state stored, and becomes one page through nbconvert's JupyterLab template:
pictures (SVG, PNG) are embedded in the page, and each widget is drawn as plain HTML from the state
the run left it in (a pass stepper at its first pass with its three tabs, an animation at its last
frame, a progress bar full). A page needs no script and no network: the Jupyter widgets manager
that nbconvert would load from a CDN draws nothing offline, and in a static page a slider whose
picture Python redraws would move and change nothing. ``index.html`` is the contents: each
chapter's title and sections. The numbers in the pages are measurements of the machine that
built the book, so the contents page names that machine and how busy it was.
"""

from __future__ import annotations

import argparse
import datetime
import html
import os
import platform
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
DEFAULT_OUT = ROOT / "book" / "_build"

#: the navigation bar on every chapter page
NAV_STYLE = ("nav.book{font:14px system-ui,sans-serif;padding:.5rem 1rem;border-bottom:1px solid #ddd;"
             "display:flex;gap:1.5rem}")
#: the contents page
INDEX_STYLE = """body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
li{margin:.3rem 0} .sections{color:#555;font-size:.9rem} .machine{color:#555;font-size:.9rem}"""


def chapter_paths(only: list[str] | None) -> list[Path]:
    """The chapters in order; ``only`` keeps those whose number (``"03"``) is listed."""
    paths = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if p.name[:2] in only]
        missing = sorted(set(only) - {p.name[:2] for p in paths})
        if missing:
            raise SystemExit(f"no chapter numbered {', '.join(missing)} in {CHAPTERS}")
    return paths


def headings(nb) -> tuple[str, list[str]]:
    """The chapter's title (its first ``#`` heading) and its ``##`` section headings."""
    title, sections = "", []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if line.startswith("# ") and not title:
                title = line[2:].strip().replace("`", "")
            elif line.startswith("## "):
                sections.append(line[3:].strip().replace("`", ""))
    return title, sections


def execute(path: Path, timeout: int):
    """The chapter as nbclient leaves it after running every cell; a failing cell stops the build."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as err:
        raise SystemExit(f"{path.name}: a cell failed, so the book was not built:\n{err}") from None
    return nb


#: how the widgets drawn as HTML look (``.mw``: minitvm's static widget)
WIDGET_STYLE = (".mw-row{display:flex;gap:.6rem;align-items:center;flex-wrap:wrap}.mw-col>*{margin:.2rem 0}"
                ".mw-control{font:13px system-ui,sans-serif;color:#333}.mw-note{font:12px system-ui,sans-serif;"
                "color:#777}.mw-tab>summary{font:13px system-ui,sans-serif;cursor:pointer;color:#1a5fb4}"
                ".mw-col pre{font-family:var(--jp-code-font-family,monospace);white-space:pre;line-height:1.3}")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_CONTROLS = {"IntSliderModel", "FloatSliderModel", "PlayModel"}  # what only a live kernel moves


def _widget_html(model_id: str, state: dict) -> str:
    """One widget and its children as plain HTML, from the notebook's saved widget state."""
    model = state.get(model_id)
    if model is None:
        return ""
    name, s = model["model_name"], model["state"]
    kids = [_widget_html(c.removeprefix("IPY_MODEL_"), state) for c in s.get("children", [])]
    desc = html.escape(s.get("description") or "")
    if name in ("VBoxModel", "BoxModel", "HBoxModel"):
        return f'<div class="{"mw-row" if name == "HBoxModel" else "mw-col"}">{"".join(kids)}</div>'
    if name == "TabModel":  # every tab, the selected one open
        titles, chosen = s.get("titles") or [], s.get("selected_index") or 0
        return "".join(f'<details class="mw-tab"{" open" if k == chosen else ""}><summary>'
                       f'{html.escape(titles[k] if k < len(titles) else f"tab {k + 1}")}</summary>{kid}</details>'
                       for k, kid in enumerate(kids))
    if name in ("HTMLModel", "HTMLMathModel"):
        return f'<div>{desc + " " if desc else ""}{s.get("value", "")}</div>'
    if name == "LabelModel":
        return f'<span class="mw-control">{html.escape(str(s.get("value", "")))}</span>'
    if name in ("IntSliderModel", "FloatSliderModel"):
        lo, hi, value = s.get("min", 0), s.get("max", 100), s.get("value", 0)
        return (f'<span class="mw-control">{desc} <input type="range" disabled min="{lo}" max="{hi}" '
                f'value="{value}"> {value} (of {lo}–{hi})</span>')
    if name in ("FloatProgressModel", "IntProgressModel"):
        return f'<progress max="{s.get("max", 100)}" value="{s.get("value", 0)}"></progress>'
    if name == "OutputModel":
        return "".join(o.get("data", {}).get("text/html") or f'<pre>{html.escape(o.get("text", ""))}</pre>'
                       for o in s.get("outputs", []))
    return ""  # Play buttons, links, styles, layouts: nothing to see without a kernel


def _has_controls(model_id: str, state: dict) -> bool:
    model = state.get(model_id, {})
    return model.get("model_name") in _CONTROLS or any(
        _has_controls(c.removeprefix("IPY_MODEL_"), state) for c in model.get("state", {}).get("children", []))


def static_widgets(nb) -> int:
    """Replace every widget output by its saved state drawn as HTML, and drop the state (the page
    then loads no widget manager); returns how many widgets were drawn."""
    widgets = nb.metadata.pop("widgets", {})
    state = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    drawn = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(_WIDGET_VIEW)
            if view is None:
                continue
            body = _widget_html(view["model_id"], state)
            if body and _has_controls(view["model_id"], state):
                body += ('<div class="mw-note">A widget, shown as this run left it: in JupyterLab '
                         "(<code>./dev lab</code>) its controls step through the rest.</div>")
            out["data"] = {"text/html": body,
                           "text/plain": out["data"].get("text/plain", "")}
            drawn += 1
    return drawn


def _nav(pages: list[tuple[str, str]], k: int) -> str:
    links = ['<a href="index.html">contents</a>']
    if k > 0:
        links.insert(0, f'<a href="{pages[k - 1][0]}">&larr; {html.escape(pages[k - 1][1])}</a>')
    if k + 1 < len(pages):
        links.append(f'<a href="{pages[k + 1][0]}">{html.escape(pages[k + 1][1])} &rarr;</a>')
    return f'<nav class="book">{"".join(links)}</nav>'


def page_html(nb, nav: str) -> str:
    """One chapter as a page of nbconvert's JupyterLab template, the navigation bar on top."""
    from nbconvert import HTMLExporter

    static_widgets(nb)
    exporter = HTMLExporter(template_name="lab")
    exporter.embed_images = True
    body, _ = exporter.from_notebook_node(nb)
    # the template's require.js and MathJax come from a CDN; no chapter uses either (no widget
    # manager, no math), and offline each is a failed request: the page loads nothing from the net
    body = re.sub(r'<script src="https?://[^"]*">\s*</script>', "", body)
    style = f"<style>{NAV_STYLE}{WIDGET_STYLE}</style>"
    return re.sub(r"(<body[^>]*>)", lambda m: f"{m.group(1)}{style}{nav}", body, count=1)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def index_html(entries: list[tuple[str, str, list[str]]], built: str) -> str:
    items = "".join(
        f'<li><a href="{href}">{html.escape(title)}</a>'
        f'<div class="sections">{html.escape(" · ".join(sections))}</div></li>'
        for href, title, sections in entries)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>minitvm — the course</title>"
            f"<style>{INDEX_STYLE}</style></head><body><h1>minitvm — the course</h1>"
            "<p>A compact deep-learning compiler that mirrors Apache TVM, taught chapter by chapter. "
            "Every page below was run top to bottom when the book was built; to run it yourself, "
            "clone the repository and type <code>./dev lab</code>.</p>"
            f"<ol start='0'>{items}</ol><p class='machine'>{html.escape(built)}</p></body></html>")


def build(out: Path, only: list[str] | None = None, timeout: int = 900) -> list[Path]:
    """Run and convert the chapters into ``out``; returns the pages written, contents first."""
    out.mkdir(parents=True, exist_ok=True)
    load_before, start = os.getloadavg()[0], time.monotonic()
    done = []  # (file name, title, sections, notebook)
    for path in chapter_paths(only):
        print(f"running {path.name} ...", flush=True)
        nb = execute(path, timeout)
        title, sections = headings(nb)
        done.append((path.with_suffix(".html").name, title or path.stem, sections, nb))
    pages = [(name, title) for name, title, _, _ in done]
    written = []
    for k, (name, _, _, nb) in enumerate(done):
        (out / name).write_text(page_html(nb, _nav(pages, k)), encoding="utf-8")
        written.append(out / name)
    built = (f"Built {datetime.date.today().isoformat()} in {time.monotonic() - start:.0f} s on {machine()}, "
             f"load {load_before:.1f} before and {os.getloadavg()[0]:.1f} after: the times in the pages are "
             "that machine's, at that load.")
    index = out / "index.html"
    index.write_text(index_html([(n, t, s) for n, t, s, _ in done], built), encoding="utf-8")
    print(f"the book: {index}")
    return [index, *written]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the chapters as a static HTML site.")
    parser.add_argument("--chapters", nargs="+", metavar="NN", help="only these chapters (e.g. 00 03)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one cell may run (default 900)")
    args = parser.parse_args(argv)
    build(args.out, args.chapters, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
