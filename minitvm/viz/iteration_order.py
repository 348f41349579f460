"""The order in which a kernel touches the elements of a buffer, Halide-style.

``iteration_order(func)`` runs the function in the reference interpreter with a trace,
records when each element of the output (or any buffer) is first written (or read), and
draws the buffer as a grid coloured by that time: early = dark blue, late = yellow.  In
Jupyter it shows a Play button and a slider that replay the visit step by step; a naive
and a tiled matmul look visibly different — rows sweep across versus tiles filling in.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..ir.module import IRModule
from ..target.interpreter import run_prim_func
from ..testing.tir_builders import random_arguments
from ..tir.function import PrimFunc
from .entry import entry_function

__all__ = ["iteration_order", "IterationOrder"]

#: a few stops of a perceptually ordered colour map (viridis-like), early -> late
_STOPS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]


def _colour(t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(_STOPS) - 1)
    k = min(int(t), len(_STOPS) - 2)
    f = t - k
    r, g, b = (round(a + (c - a) * f) for a, c in zip(_STOPS[k], _STOPS[k + 1]))
    return f"#{r:02x}{g:02x}{b:02x}"


class IterationOrder:
    """First-touch times of one buffer's elements; draws itself as a grid."""

    def __init__(self, buffer: str, shape: tuple[int, int], order: list[tuple[int, int]], kind: str):
        self.buffer, self.shape, self.order, self.kind = buffer, shape, order, kind
        self.time = np.full(shape, -1, dtype=np.int64)
        for step, (i, j) in enumerate(order):
            self.time[i, j] = step

    @property
    def steps(self) -> int:
        return len(self.order)

    def svg(self, upto: int | None = None, cell: int = 12) -> str:
        """The grid after ``upto`` first touches (all of them by default)."""
        upto = self.steps if upto is None else max(0, min(upto, self.steps))
        rows, cols = self.shape
        size = max(2, min(cell, 480 // max(rows, cols, 1)))
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * size}" height="{rows * size}">']
        total = max(self.steps - 1, 1)
        for i in range(rows):
            for j in range(cols):
                t = int(self.time[i, j])
                fill = _colour(t / total) if 0 <= t < upto else "#f1f3f5"
                parts.append(f'<rect x="{j * size}" y="{i * size}" width="{size}" height="{size}" '
                             f'fill="{fill}" stroke="#ffffff" stroke-width="0.5"/>')
        parts.append("</svg>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        title = html.escape(f"first {self.kind} of {self.buffer} {self.shape}: dark = early, yellow = late")
        return f"<div><div style='font-family:sans-serif;font-size:12px'>{title}</div>{self.svg()}</div>"

    def widget(self, frames: int = 60) -> Any:
        """Play button + slider replaying the visit (ipywidgets)."""
        import ipywidgets as w  # ipywidgets is optional: imported when a widget is built

        step = max(1, self.steps // frames)
        play = w.Play(min=0, max=self.steps, step=step, interval=100, value=self.steps)
        slider = w.IntSlider(min=0, max=self.steps, step=step, value=self.steps,
                             description="touched", continuous_update=True)
        w.jslink((play, "value"), (slider, "value"))
        picture = w.HTML(self.svg())

        def redraw(change: dict) -> None:
            picture.value = self.svg(change["new"])

        slider.observe(redraw, names="value")
        return w.VBox([w.HBox([play, slider]), picture])

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display  # IPython is optional: imported when displaying

        try:
            display(self.widget())
        except ImportError:  # no ipywidgets: the static picture
            display(HTML(self._repr_html_()))


def _as_grid(index: Any, shape: tuple[int, ...]) -> tuple[int, int]:
    """Lay an n-d index out on 2-D: the last axis across, the others down."""
    if isinstance(index, int):
        index = np.unravel_index(index, shape)
    index = tuple(int(i) for i in index)
    if len(index) == 1:
        return 0, index[0]
    row = int(np.ravel_multi_index(index[:-1], shape[:-1]))
    return row, index[-1]


def iteration_order(func: PrimFunc | IRModule, buffer: str | None = None, kind: str = "write",
                    name: str | None = None, max_elements: int = 1 << 16) -> IterationOrder:
    """Record when each element of ``buffer`` (default: the last parameter) is first touched.

    ``kind`` is "write" or "read".  Keep shapes small (the interpreter runs every iteration).
    """

    if kind not in ("write", "read"):
        raise ValueError(f"iteration_order: kind must be 'write' or 'read', got {kind!r}")
    func = entry_function(func, "tir", name, "viz.iteration_order")
    buffers = {b.name: b for b in func.buffer_map.values()}
    target = buffer or func.buffers[-1].name
    if target not in buffers:
        raise ValueError(f"iteration_order: no buffer parameter named {target!r}; have {sorted(buffers)}")
    shape = tuple(int(s) for s in buffers[target].shape)
    if int(np.prod(shape)) > max_elements:
        raise ValueError(f"iteration_order: {target} has {int(np.prod(shape))} elements; use a smaller "
                         f"shape (at most {max_elements}) — the interpreter visits every iteration")
    grid = (int(np.prod(shape[:-1])) if len(shape) > 1 else 1, shape[-1])
    seen: set[tuple[int, int]] = set()
    order: list[tuple[int, int]] = []

    def record(event: str, buf: str, index: Any) -> None:
        if event == kind and buf == target:
            cell = _as_grid(index, shape)
            if cell not in seen:
                seen.add(cell)
                order.append(cell)

    run_prim_func(func, random_arguments(func, seed=0), trace=record)
    return IterationOrder(target, grid, order, kind)
