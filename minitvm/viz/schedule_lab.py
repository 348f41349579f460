"""ScheduleLab: try schedule primitives on a function from dropdowns, see what they do.

Pick a primitive, its block/loop arguments and factors; *apply* runs it, *undo* takes the
last step back.  The lab shows the loop nest (picture and TVMScript), the trace so far as
Python you can copy, and the measured time of the current schedule against the starting
one (GFLOP/s when you give the function's ``flops``).  A primitive that does not apply
shows its ScheduleError text; the lab itself never breaks.

The same lab is driven from Python: ``lab.apply("split", loop="j", factors=[None, 8])``,
``lab.undo()``, ``lab.error``, ``lab.schedule``, ``lab.measure()``.
"""

from __future__ import annotations

import html
import time
from typing import Any

from ..driver import build
from ..driver.build_module import export_name
from ..ir.module import IRModule
from ..testing.tir_builders import random_arguments
from ..tir.function import PrimFunc
from ..tir.schedule import LoopRV, Schedule, ScheduleError
from ..tir.stmt import Block, For
from ..tir.stmt_functor import block_realizes, walk_stmts
from .loop_nest import loop_nest
from .render import svg_html, text_html

__all__ = ["ScheduleLab", "PRIMITIVES"]

#: the primitives the lab offers, with the arguments each takes
PRIMITIVES: dict[str, tuple[str, ...]] = {
    "split": ("loop", "factors"),
    "fuse": ("loop", "loop2"),
    "reorder": ("loops",),
    "parallel": ("loop",),
    "vectorize": ("loop",),
    "unroll": ("loop",),
    "compute_at": ("block", "loop"),
    "reverse_compute_at": ("block", "loop"),
    "compute_inline": ("block",),
    "reverse_compute_inline": ("block",),
    "decompose_reduction": ("block", "loop"),
    "cache_write": ("block", "index", "scope"),
    "cache_read": ("block", "index", "scope"),
    "rfactor": ("loop", "index"),
}


class ScheduleLab:
    """Interactive schedule of ``func`` (a PrimFunc or a one-function IRModule)."""

    def __init__(self, func: PrimFunc | IRModule, flops: float | None = None, seed: int = 0):
        mod = func if isinstance(func, IRModule) else IRModule({"main": func})
        self.start = mod
        self.flops = flops
        self.steps: list[tuple[str, dict[str, Any]]] = []
        self.error: str | None = None
        self.seed = seed
        self.schedule = Schedule(mod)
        self._baseline: float | None = None
        self._widget: Any = None

    # -- the model ------------------------------------------------------------------------
    def blocks(self) -> list[str]:
        body = self.schedule.mod[self.schedule.func_working_on].body
        return [r.block.name_hint for r, _ in block_realizes(body) if r.block.name_hint != "root"]

    def loops(self) -> list[str]:
        """Loop labels: the loop variable's name, with its block when the name repeats."""
        return [label for label, _ in self._loop_table(self.schedule)]

    @staticmethod
    def _loop_table(sch: Schedule) -> list[tuple[str, For]]:
        body = sch.mod[sch.func_working_on].body
        loops = [s for s, _ in walk_stmts(body) if isinstance(s, For)]
        names = [lp.loop_var.name for lp in loops]
        table = []
        for lp, name in zip(loops, names):
            if names.count(name) > 1:
                first = next((r.block.name_hint for r, _ in block_realizes(lp)), "?")
                name = f"{name} ({first})"
            table.append((name, lp))
        return table

    def _loop(self, sch: Schedule, label: str, fetched: dict[str, list[LoopRV]] | None = None) -> LoopRV:
        for name, lp in self._loop_table(sch):
            if name == label:
                return _recorded_loop(sch, lp, {} if fetched is None else fetched)
        raise ScheduleError(f"there is no loop {label!r}; loops: {[n for n, _ in self._loop_table(sch)]}")

    def _run(self, sch: Schedule, primitive: str, args: dict[str, Any]) -> None:
        if primitive not in PRIMITIVES:
            raise ScheduleError(f"the lab has no primitive {primitive!r}; it has {sorted(PRIMITIVES)}")
        fn = getattr(sch, primitive)
        block = sch.get_block(args["block"]) if "block" in args else None
        fetched: dict[str, list[LoopRV]] = {}  # one get_loops per block and step keeps the trace short

        def loop(label: str) -> LoopRV:
            return self._loop(sch, label, fetched)

        if primitive == "split":
            fn(loop(args["loop"]), factors=_factors(args["factors"]))
        elif primitive == "fuse":
            fn(loop(args["loop"]), loop(args["loop2"]))
        elif primitive == "reorder":
            names = args["loops"].split(",") if isinstance(args["loops"], str) else args["loops"]
            fn(*[loop(n.strip()) for n in names])
        elif primitive in ("parallel", "vectorize", "unroll"):
            fn(loop(args["loop"]))
        elif primitive in ("compute_at", "reverse_compute_at", "decompose_reduction"):
            fn(block, loop(args["loop"]))
        elif primitive in ("compute_inline", "reverse_compute_inline"):
            fn(block)
        elif primitive in ("cache_write", "cache_read"):
            fn(block, int(args.get("index", 0)), args.get("scope", "local"))
        elif primitive == "rfactor":
            fn(loop(args["loop"]), int(args.get("index", 0)))

    def apply(self, primitive: str, **args: Any) -> bool:
        """Apply one primitive; False (and ``self.error`` set) if it does not apply."""
        trial = self.schedule.copy()
        try:
            self._run(trial, primitive, args)
        except (ScheduleError, KeyError, ValueError, TypeError) as err:
            self.error = f"{type(err).__name__}: {err}"
            self._refresh()
            return False
        self.schedule, self.error = trial, None
        self.steps.append((primitive, args))
        self._refresh()
        return True

    def undo(self) -> None:
        """Take the last step back (replaying the ones before it)."""
        if not self.steps:
            return
        self.steps.pop()
        sch = Schedule(self.start)
        for primitive, args in self.steps:
            self._run(sch, primitive, args)
        self.schedule, self.error = sch, None
        self._refresh()

    def trace(self) -> str:
        """The steps so far as Python statements on ``sch`` (``exec`` replays them)."""
        return "\n".join(self.schedule.trace.as_python())

    def measure(self, number: int = 5) -> dict[str, float]:
        """Seconds per call now and at the start (and GFLOP/s when ``flops`` was given)."""

        def seconds(mod: IRModule) -> float:
            name = mod.keys()[0]
            args = random_arguments(mod[name], self.seed)
            fn = build(mod)[export_name(name, mod[name])]  # exported under its global_symbol
            fn(*args)
            start = time.perf_counter()
            for _ in range(number):
                fn(*args)
            return (time.perf_counter() - start) / number

        if self._baseline is None:
            self._baseline = seconds(self.start)
        now = seconds(self.schedule.mod)
        out = {"seconds": now, "start_seconds": self._baseline, "speedup": self._baseline / now}
        if self.flops:
            out["gflops"] = self.flops / now / 1e9
            out["start_gflops"] = self.flops / self._baseline / 1e9
        return out

    # -- the widget -----------------------------------------------------------------------
    def _refresh(self) -> None:
        if self._widget is not None:
            self._widget.refresh()

    def widget(self) -> Any:
        import ipywidgets as w  # ipywidgets is optional: imported when a widget is built

        primitive = w.Dropdown(options=list(PRIMITIVES), value="split", description="primitive")
        block = w.Dropdown(options=self.blocks(), description="block")
        loop = w.Dropdown(options=self.loops(), description="loop")
        loop2 = w.Dropdown(options=self.loops(), description="loop 2")
        text = w.Text(value="None, 8", description="factors")
        apply_b, undo_b, time_b = w.Button(description="apply"), w.Button(description="undo"), \
            w.Button(description="measure")
        message, picture, script, trace, speed = w.HTML(), w.HTML(), w.HTML(), w.HTML(), w.HTML()

        def refresh() -> None:
            block.options, loop.options, loop2.options = self.blocks(), self.loops(), self.loops()
            message.value = (f"<span style='color:#c92a2a'>{html.escape(self.error)}</span>" if self.error
                             else f"{len(self.steps)} step(s) applied")
            after = f"after {len(self.steps)} step(s)" if self.steps else "before any step"
            picture.value = svg_html(lambda: loop_nest(self.schedule.mod), f"loop nest, {after}")
            script.value = text_html(self.schedule.mod.script(), 11)
            trace.value = text_html(self.trace(), 11)

        def on_apply(_: Any) -> None:
            name = primitive.value
            wanted = PRIMITIVES[name]
            args: dict[str, Any] = {}
            if "block" in wanted:
                args["block"] = block.value
            if "loop" in wanted:
                args["loop"] = loop.value
            if "loop2" in wanted:
                args["loop2"] = loop2.value
            if "factors" in wanted:
                args["factors"] = text.value
            if "loops" in wanted:
                args["loops"] = text.value
            if "index" in wanted:
                args["index"] = int(text.value) if text.value.strip().isdigit() else 0
            self.apply(name, **args)

        def on_time(_: Any) -> None:
            m = self.measure()
            rate = (f"{m['gflops']:.1f} GFLOP/s (start {m['start_gflops']:.1f})" if "gflops" in m
                    else f"{m['seconds'] * 1e3:.3f} ms (start {m['start_seconds'] * 1e3:.3f} ms)")
            speed.value = f"<b>{rate}</b>, {m['speedup']:.1f}x the starting schedule"

        apply_b.on_click(on_apply)
        undo_b.on_click(lambda _: self.undo())
        time_b.on_click(on_time)
        tabs = w.Tab(children=[picture, script, trace])
        for i, title in enumerate(("loop nest", "TVMScript", "trace")):
            tabs.set_title(i, title)
        box = w.VBox([w.HBox([primitive, block]), w.HBox([loop, loop2, text]),
                      w.HBox([apply_b, undo_b, time_b]), message, speed, tabs])
        box.refresh = refresh
        box.controls = {"primitive": primitive, "block": block, "loop": loop, "loop2": loop2, "text": text,
                        "apply": apply_b, "undo": undo_b, "measure": time_b, "message": message,
                        "picture": picture, "script": script, "trace": trace, "speed": speed}
        self._widget = box
        refresh()
        return box

    def _ipython_display_(self) -> None:
        from IPython.display import display  # IPython is optional: imported when displaying

        display(self.widget())


def _recorded_loop(sch: Schedule, loop: For, fetched: dict[str, list[LoopRV]]) -> LoopRV:
    """``loop`` fetched through get_block + get_loops, so the trace defines it and replays as Python."""
    names = [r.block.name_hint for r, _ in block_realizes(sch.mod[sch.func_working_on].body)]
    for realize, path in block_realizes(loop):  # path[0] is the loop itself
        if any(isinstance(s, Block) for s in path[1:]):  # get_loops stops at the innermost enclosing block
            continue
        name = realize.block.name_hint
        if names.count(name) != 1:  # get_block needs a unique name
            continue
        if name not in fetched:
            fetched[name] = sch.get_loops(sch.get_block(name))
        found = next((rv for rv in fetched[name] if rv.loop_var is loop.loop_var), None)
        if found is not None:
            return found
    return LoopRV(loop.loop_var, sch.func_working_on)  # no block to reach it by: the trace names it only


def _factors(value: Any) -> list[int | None]:
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        return [None if p in ("None", "none", "-1") else int(p) for p in parts]
    return [None if f is None else int(f) for f in value]



