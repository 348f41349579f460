"""PassStepper: run a pipeline once, then step through it pass by pass.

``viz.PassStepper(mod, pipeline)`` runs the passes under a recording instrument.  A slider
picks a pass; the widget shows the pass's name and time, the IR after it, what it changed
(a side-by-side diff against the IR before it) and a picture (the Relax dataflow graph, or
the loop nest of a TIR function).  Everything is also reachable from Python
(``stepper.records``, ``stepper.show(k)``), which is how the tests drive it.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from ..ir.module import IRModule
from ..relax.expr import Function
from ..transform import PassContext, PassRecordingInstrument, Sequential
from .diff import diff
from .entry import entry_name, is_fused
from .graph import graph
from .loop_nest import loop_nest
from .render import svg_html, text_html

__all__ = ["PassStepper"]


def _entry_relax_function(mod: IRModule) -> str | None:
    """The Relax function a picture shows (:func:`viz.entry.entry_name`); when several could
    be and none is ``main``, the first of them rather than no picture."""
    try:
        return entry_name(mod, "relax", what="PassStepper")
    except ValueError:
        funcs = [(gv.name_hint, f) for gv, f in mod.items() if isinstance(f, Function)]
        entries = [name for name, f in funcs if not is_fused(f)]
        return (entries or [name for name, _ in funcs] or [None])[0]


def _picture_svg(mod: IRModule, title: str) -> str:
    """The dataflow graph of the entry Relax function (e.g. ``main`` or ``forward``), else a TIR loop nest."""
    entry = _entry_relax_function(mod)
    return svg_html(lambda: graph(mod, entry) if entry is not None else loop_nest(mod), title)


class PassStepper:
    """Step through the passes of ``pipeline`` applied to ``mod`` (a widget in Jupyter)."""

    def __init__(self, mod: IRModule, pipeline: Any, opt_level: int = 2):
        if isinstance(pipeline, Sequence) and not isinstance(pipeline, Sequential):
            pipeline = Sequential(list(pipeline), name="steps")
        recorder = PassRecordingInstrument()
        with PassContext(opt_level=opt_level, instruments=[recorder]):
            self.result = pipeline(mod)
        self.initial = mod
        # one step per pass of the pipeline: passes that run inside one of them (FoldConstant
        # builds kernels through the TIR lowering passes) belong to that step
        depth = 1 if isinstance(pipeline, Sequential) else 0
        self.records = [r for r in recorder.records if r.depth == depth]
        self._widget: Any = None

    def __len__(self) -> int:
        return len(self.records)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.records]

    def ir_after(self, k: int) -> IRModule:
        return self.records[k].after

    def diff(self, k: int) -> Any:
        r = self.records[k]
        return diff(r.before, r.after, labels=(f"before {r.name}", f"after {r.name}"))

    def summary(self) -> str:
        lines = [f"{'#':>3}  {'pass':32s} {'ms':>8}  changed"]
        for k, r in enumerate(self.records):
            lines.append(f"{k:>3}  {r.name:32s} {r.seconds * 1e3:8.2f}  {'yes' if r.changed else 'no'}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def _panel_html(self, k: int) -> str:
        r = self.records[k]
        head = (f"<b>{k + 1}/{len(self)}: {html.escape(r.name)}</b> — {r.seconds * 1e3:.2f} ms"
                + ("" if r.changed else " — <i>no change</i>"))
        return head

    def show(self, k: int) -> dict[str, str]:
        """What the widget shows for pass ``k``: header, IR text, diff HTML and picture SVG."""
        r = self.records[k]
        return {"header": self._panel_html(k), "ir": r.after.script(), "diff": self.diff(k)._repr_html_(),
                "picture": _picture_svg(r.after, f"after {r.name}")}

    def widget(self) -> Any:
        import ipywidgets as w  # ipywidgets is optional: imported when a widget is built

        if not self.records:
            return w.HTML("<i>no pass ran</i>")
        slider = w.IntSlider(min=0, max=len(self) - 1, value=0, description="pass", continuous_update=False)
        header, ir, changes, picture = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        tabs = w.Tab(children=[ir, changes, picture])
        for i, title in enumerate(("IR after", "what changed", "picture")):
            tabs.set_title(i, title)

        def render(k: int) -> None:
            view = self.show(k)
            header.value = view["header"]
            ir.value = text_html(view["ir"])
            changes.value = view["diff"]
            picture.value = view["picture"]

        slider.observe(lambda change: render(change["new"]), names="value")
        render(0)
        self._widget = w.VBox([slider, header, tabs])
        self._widget.slider, self._widget.header = slider, header  # handles for tests
        self._widget.panels = (ir, changes, picture)
        return self._widget

    def _ipython_display_(self) -> None:
        from IPython.display import display  # IPython is optional: imported when displaying

        display(self.widget())
