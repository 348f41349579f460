"""``./dev book``: the chapters run and become a static site, opened here in a real browser.

One chapter (chapter 0, the quickest) is built, as ``./dev book --chapters 00`` does; the contents
page must link every built page, and each page must show its chapter with the outputs of its run
(the printed verdict of its speed comparison, its pictures drawn at a readable size, its widgets
drawn from their saved state without any script: chapter 0's pass stepper at its first pass, with
its tabs) and raise no script error. ``./dev book`` with no arguments builds every chapter the same way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright
from test_browser import CHROMIUM_FLAGS, chromium  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def test_the_book_builds_and_every_page_opens(chromium, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build.py"), "--chapters", "00", "--out", str(site)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            # a request the page cannot make offline (a script from a CDN) is a console error
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto((site / "index.html").as_uri())
            links = page.eval_on_selector_all("ol a", "els => els.map(e => [e.textContent, e.href])")
            assert [title for title, _ in links] == ["Chapter 0 — The whole flow in one sitting"], links
            assert "load" in page.inner_text(".machine")
            for title, href in links:
                page.goto(href)
                assert page.inner_text("h1").startswith(title)
                text = page.inner_text("body")
                assert "verdict:" in text and "max difference:" in text, "the page lacks its run's outputs"
                sizes = page.eval_on_selector_all(".jp-OutputArea-output svg, .jp-OutputArea-output img",
                                                  "els => els.map(e => e.getBoundingClientRect().width)")
                assert sizes and min(sizes) > 100, f"pictures missing or drawn too small: {sizes}"
                assert page.locator("nav.book a", has_text="contents").count() == 1
                # the pass stepper, drawn as HTML: its header, its three tabs, the pipeline's first IR
                assert "1/5: LegalizeOps" in text, "the pass stepper's saved state is not drawn"
                assert page.locator(".mw-tab > summary").all_inner_texts()[:3] == ["IR after", "what changed",
                                                                                   "picture"]
                assert not page.locator("script[type='application/vnd.jupyter.widget-view+json']").count()
        finally:
            browser.close()
    assert not errors, errors
