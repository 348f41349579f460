"""Graphviz pictures as HTML for widgets: SVG that fits its panel, or a note saying why there is none."""

from __future__ import annotations

import functools
import html
from typing import Any, Callable

__all__ = ["svg_html", "fitting_source"]


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
    return _fit(svg)


def _fit(svg: str) -> str:
    # graphviz sizes the picture in points; a wide graph would overflow its panel, so let it scale down
    return svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)


def fitting_source(dot: str) -> Any:
    """A ``graphviz.Source`` for ``dot`` that a notebook shows shrunk to the cell's width.

    JupyterLab shows ``image/svg+xml`` output at its natural size, so a wide graph ran past
    the right edge of the notebook; the ``text/html`` form added here is the same SVG inline,
    allowed to scale down (JupyterLab prefers HTML to SVG).  Everything else is graphviz's.
    """
    return _fitting_class()(dot)


@functools.cache
def _fitting_class() -> type:
    import graphviz

    class FittingSource(graphviz.Source):
        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict:
            bundle = super()._repr_mimebundle_(include, exclude, **kwargs)
            svg = bundle.get("image/svg+xml")
            if svg is not None and "text/html" not in set(exclude or ()):
                bundle["text/html"] = _fit(svg)
            return bundle

    FittingSource.__name__ = FittingSource.__qualname__ = "Source"
    return FittingSource
