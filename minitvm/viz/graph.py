"""A picture of a Relax function's dataflow: inputs, constants, one node per binding.

Each binding shows its variable, the operator (or the PrimFunc a ``call_tir`` calls) and the
shape and dtype it produces; edges follow the data.  ``call_tir`` nodes are coloured by the
called PrimFunc's ``op_pattern`` attribute when a pass has set one (elementwise, broadcast,
injective, reduction, out-ewise-fusable, opaque), and functions marked ``Primitive`` (what
FuseOps makes) are drawn as clusters tinted by their pattern (the strongest of their kernels),
each tied by a dotted line to the node that calls it.
"""

from __future__ import annotations

import html
from typing import Any

from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..relax.expr import Call, Constant, SeqExpr, ShapeExpr, Tuple, TupleGetItem, Var, struct_info_of
from ..relax.struct_info import struct_info_text
from .entry import entry_function, is_fused
from .render import Picture

__all__ = ["graph", "graph_dot", "fused_pattern", "is_fused", "PATTERN_COLOURS"]

#: TVM's op pattern kinds, by their number and name
PATTERN_NAMES = {0: "elementwise", 1: "broadcast", 2: "injective", 3: "comm_reduce",
                 4: "out_ewise_fusable", 7: "tuple", 8: "opaque"}
PATTERN_COLOURS = {"elementwise": "#d3f9d8", "broadcast": "#c5f6fa", "injective": "#d0ebff",
                   "comm_reduce": "#ffe8cc", "out_ewise_fusable": "#ffc9c9", "tuple": "#f1f3f5",
                   "opaque": "#e9ecef"}


def _sinfo_text(expr: Any) -> str:

    try:
        sinfo = struct_info_of(expr)
        return struct_info_text(sinfo) if sinfo is not None else ""
    except Exception:  # a picture never fails on an unusual struct info
        return ""


def _small(text: str) -> str:
    return f'<br/><font point-size="10">{html.escape(text)}</font>' if text else ""


def _tir_pattern(mod: IRModule | None, callee: Any) -> int | None:
    """The ``op_pattern`` number AnnotateTIROpPattern gave the PrimFunc ``callee``, if any."""
    if mod is None or not isinstance(callee, GlobalVar) or callee.name_hint not in mod:
        return None
    attr = getattr(mod[callee.name_hint], "attrs", {}).get("op_pattern")
    return int(attr) if attr is not None else None


def fused_pattern(mod: IRModule, func: Any) -> str:
    """The pattern of a fused function: the strongest pattern among the kernels it calls, as in FuseOps."""

    kinds = []
    for block in func.body.blocks if isinstance(func.body, SeqExpr) else ():
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Call) and getattr(value.op, "name", "") == "relax.call_tir":
                kind = _tir_pattern(mod, value.args[0])
                if kind is not None:
                    kinds.append(kind)
    return PATTERN_NAMES.get(max(kinds), "") if kinds else ""


class _Graph:
    def __init__(self, mod: IRModule | None):
        self.mod = mod
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}
        self.count = 0
        self.fused_calls: list[tuple[str, str]] = []  # (call node, fused function it calls)

    def node(self, label: str, indent: str = "  ", **attrs: str) -> str:
        name = f"n{self.count}"
        self.count += 1
        extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
        self.lines.append(f"{indent}{name} [label=<{label}>{extra}]")
        return name

    def source(self, expr: Any) -> str | None:
        """The node an argument comes from (creating one for constants)."""

        if isinstance(expr, Var):
            return self.ids.get(id(expr))
        if isinstance(expr, Constant):
            shape = "x".join(str(s) for s in expr.data.shape) if hasattr(expr, "data") else ""
            return self.node(f"const {html.escape(shape)}", shape="box", style="dashed")
        if isinstance(expr, ShapeExpr):
            return None
        if isinstance(expr, Tuple):
            return None
        return None

    def call_label(self, call: Any) -> tuple[str, str]:
        """(label, fill colour) of a call."""

        op = call.op
        if isinstance(op, Op) and op.name in ("relax.call_tir", "relax.call_dps_packed"):
            callee = call.args[0]
            name = callee.name_hint if isinstance(callee, GlobalVar) else getattr(callee, "global_symbol", "?")
            number = _tir_pattern(self.mod, callee)
            pattern = PATTERN_NAMES.get(number, "") if number is not None else ""
            kind = "call_tir" if op.name == "relax.call_tir" else "call_dps_packed"
            label = f"{kind} <b>{html.escape(name)}</b>" + (f"<br/><i>{pattern}</i>" if pattern else "")
            return label, PATTERN_COLOURS.get(pattern, "#ffffff")
        if isinstance(op, Op):
            return f"<b>{html.escape(op.name.replace('relax.', ''))}</b>", "#ffffff"
        name = getattr(op, "name_hint", type(op).__name__)
        if self.mod is not None and isinstance(op, GlobalVar) and name in self.mod and is_fused(self.mod[name]):
            pattern = fused_pattern(self.mod, self.mod[name])
            tag = f"<br/><i>fused, {pattern}</i>" if pattern else "<br/><i>fused</i>"
            return f"call <b>{html.escape(name)}</b>{tag}", PATTERN_COLOURS.get(pattern, "#fff3bf")
        return f"call <b>{html.escape(name)}</b>", "#fff3bf"

    def function(self, func: Any, indent: str = "  ") -> None:

        for p in func.params:
            label = f"<b>{html.escape(p.name_hint)}</b>{_small(_sinfo_text(p))}"
            self.ids[id(p)] = self.node(label, indent, shape="ellipse", style="filled", fillcolor="#e7f5ff")
        body = func.body
        blocks = body.blocks if isinstance(body, SeqExpr) else ()
        for block in blocks:
            for binding in block.bindings:
                var, value = binding.var, binding.value
                if isinstance(value, Call):
                    label, fill = self.call_label(value)
                    args = value.args[1:] if "call_" in label else value.args
                    if args and isinstance(args[0], Tuple):
                        args = args[0].fields
                elif isinstance(value, TupleGetItem):
                    label, fill, args = f"[{value.index}]", "#f1f3f5", (value.tuple_value,)
                elif isinstance(value, Tuple):
                    label, fill, args = "tuple", "#f1f3f5", value.fields
                elif isinstance(value, Var):
                    label, fill, args = html.escape(value.name_hint), "#f8f9fa", (value,)
                else:
                    label, fill, args = html.escape(type(value).__name__), "#f8f9fa", ()
                text = f"{html.escape(var.name_hint)} = {label}{_small(_sinfo_text(var))}"
                me = self.node(text, indent, shape="box", style="filled,rounded", fillcolor=fill)
                self.ids[id(var)] = me
                if "<i>fused" in label:
                    self.fused_calls.append((me, value.op.name_hint))
                for a in args:
                    src = self.source(a)
                    if src is not None:
                        self.lines.append(f"{indent}{src} -> {me}")
        result = body.body if isinstance(body, SeqExpr) else body
        out = self.node("output", indent, shape="doublecircle", width="0.3", fontsize="10")
        fields = result.fields if isinstance(result, Tuple) else (result,)
        for f in fields:
            src = self.source(f)
            if src is not None:
                self.lines.append(f"{indent}{src} -> {out}")


def graph_dot(mod_or_func: Any, name: str | None = None) -> str:
    """The DOT text of :func:`graph` (stable; tests compare it)."""

    mod = mod_or_func if isinstance(mod_or_func, IRModule) else None
    func = entry_function(mod_or_func, "relax", name, "viz.graph")
    g = _Graph(mod)
    g.function(func)
    if mod is not None:
        _fused_clusters(g, mod)
    body = "\n".join(g.lines)
    head = 'digraph relax {\n  rankdir=TB\n  node [fontname="Helvetica" fontsize=12]\n'
    if g.fused_calls:  # edges may end at a cluster's border (lhead)
        head += "  compound=true\n"
    return f"{head}{body}\n}}\n"


def _fused_clusters(g: _Graph, mod: IRModule) -> None:
    """Draw the fused functions (attrs Primitive) as clusters tinted by their pattern, each tied to its call."""
    first_node: dict[str, str] = {}
    for gv, f in mod.items():
        if not is_fused(f):
            continue
        pattern = fused_pattern(mod, f)
        tint = PATTERN_COLOURS.get(pattern, "#f8f9fa") + "66"  # the pattern's colour, faint, behind the nodes
        title = html.escape(gv.name_hint) + (f" ({pattern})" if pattern else "")
        g.lines.append(f"  subgraph cluster_{gv.name_hint} {{")
        g.lines.append(f'    label="{title}" fontname="Helvetica" style="rounded,dashed,filled" fillcolor="{tint}"')
        first_node[gv.name_hint] = f"n{g.count}"
        g.function(f, indent="    ")
        g.lines.append("  }")
    for call, name in g.fused_calls:
        if name in first_node:
            g.lines.append(f'  {call} -> {first_node[name]} [lhead="cluster_{name}" style="dotted" '
                           'arrowhead="none" color="#868e96"]')


def graph(mod_or_func: Any, name: str | None = None, title: str | None = None) -> Picture:
    """A graphviz picture of a Relax function's dataflow: ``name`` in a module, else its entry
    (``main``, or the only function FuseOps did not make; see :mod:`minitvm.viz.entry`);
    fitted to the notebook's width, with ``title`` above it."""
    import graphviz  # graphviz is optional: imported when a picture is drawn

    return Picture(graphviz.Source(graph_dot(mod_or_func, name)), title)
