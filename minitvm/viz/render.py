"""Graphviz pictures as HTML for widgets: SVG that fits its panel, or a note saying why there is none."""

from __future__ import annotations

import html
from typing import Any, Callable

__all__ = ["svg_html"]


def svg_html(draw: Callable[[], Any]) -> str:
    """The SVG of the graphviz source ``draw()`` returns, shrunk to fit its panel's width.

    Any failure (no ``dot`` program, nothing to draw) becomes a one-line note, so a widget
    never breaks over a picture.
    """
    try:
        svg = draw().pipe(format="svg").decode()
    except Exception as err:  # the note names the cause; the text panels still show
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"<i>(no picture: {html.escape(first)})</i>"
    # graphviz sizes the picture in points; a wide graph would overflow the widget, so let it scale down
    return svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)
