"""Graphviz pictures as HTML: SVG that fits the notebook (or a widget's panel), or a note saying
why there is none.

A notebook shows a bare ``graphviz.Source`` at its natural size, so a wide loop nest runs off
the right edge.  :class:`Picture` wraps the source: it still pipes, renders and exposes
``.source`` like graphviz's object, but displays as HTML that scales the SVG down to the panel
width, and keeps a picture too wide to read at that scale at full size inside its own box
that scrolls sideways.
"""

from __future__ import annotations

import html
import re
from typing import Any, Callable

__all__ = ["svg_html", "text_html", "Picture"]

#: widest natural SVG (in px) still scaled down to the panel; wider ones scroll instead, since
#: at less than about half size their labels are too small to read
MAX_SCALED_PX = 1800
_PT_TO_PX = 4 / 3


def _width_px(svg: str) -> float | None:
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)(pt|px)?"', svg)
    if not m:
        return None
    return float(m.group(1)) * (_PT_TO_PX if m.group(2) in (None, "pt") else 1.0)


def fit_svg(svg: str) -> str:
    """``svg`` made to fit the panel: scaled to its width, or, when very wide, in a scroll box."""
    width = _width_px(svg)
    if width is not None and width > MAX_SCALED_PX:
        return f'<div style="max-width:100%;overflow-x:auto">{svg}</div>'
    return svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)


def svg_html(draw: Callable[[], Any], title: str | None = None) -> str:
    """The SVG of the graphviz source ``draw()`` returns, fitted to its panel, under ``title``.

    Any failure (no ``dot`` program, nothing to draw) becomes a one-line note, so a widget
    never breaks over a picture.
    """
    head = f'<div style="font-weight:bold;margin:4px 0">{html.escape(title)}</div>' if title else ""
    try:
        svg = draw().pipe(format="svg").decode()
    except Exception as err:  # the note names the cause; the text panels still show
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"{head}<i>(no picture: {html.escape(first)})</i>"
    return head + fit_svg(svg)


def text_html(text: str, font_px: int = 12) -> str:
    """``text`` (IR, a trace) as a block that keeps its lines and scrolls sideways in its panel."""
    return (f"<pre style='font-size:{font_px}px;max-width:100%;overflow-x:auto'>"
            f"{html.escape(text)}</pre>")


class Picture:
    """A graphviz picture that fits the notebook; everything else is the ``graphviz.Source``'s
    (``.source``, ``.pipe(format=...)``, ``.render(...)``)."""

    def __init__(self, source: Any, title: str | None = None):
        self.graphviz = source
        self.title = title

    def __getattr__(self, name: str) -> Any:
        return getattr(self.graphviz, name)

    def _repr_html_(self) -> str:
        return svg_html(lambda: self.graphviz, self.title)
