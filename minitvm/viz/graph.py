"""A picture of a Relax function's dataflow: inputs, constants, one node per binding.

Each binding shows its variable, the operator (or the PrimFunc a ``call_tir`` calls) and the
shape and dtype it produces; edges follow the data.  ``call_tir`` nodes are coloured by the
called PrimFunc's ``op_pattern`` attribute when a pass has set one (elementwise, broadcast,
injective, reduction, out-ewise-fusable, opaque), and functions marked ``Primitive`` (what
FuseOps makes) are drawn as clusters.
"""

from __future__ import annotations

import html
from typing import Any

from ..ir.module import GlobalVar, IRModule

__all__ = ["graph", "graph_dot", "PATTERN_COLOURS"]

#: TVM's op pattern kinds, by their number and name
PATTERN_NAMES = {0: "elementwise", 1: "broadcast", 2: "injective", 3: "comm_reduce",
                 4: "out_ewise_fusable", 7: "tuple", 8: "opaque"}
PATTERN_COLOURS = {"elementwise": "#d3f9d8", "broadcast": "#c5f6fa", "injective": "#d0ebff",
                   "comm_reduce": "#ffe8cc", "out_ewise_fusable": "#ffc9c9", "tuple": "#f1f3f5",
                   "opaque": "#e9ecef"}


def _sinfo_text(expr: Any) -> str:
    from ..relax.expr import struct_info_of
    from ..relax.struct_info import struct_info_text

    try:
        sinfo = struct_info_of(expr)
        return struct_info_text(sinfo) if sinfo is not None else ""
    except Exception:  # a picture never fails on an unusual struct info
        return ""


def _small(text: str) -> str:
    return f'<br/><font point-size="10">{html.escape(text)}</font>' if text else ""


class _Graph:
    def __init__(self, mod: IRModule | None):
        self.mod = mod
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}
        self.count = 0

    def node(self, label: str, indent: str = "  ", **attrs: str) -> str:
        name = f"n{self.count}"
        self.count += 1
        extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
        self.lines.append(f"{indent}{name} [label=<{label}>{extra}]")
        return name

    def source(self, expr: Any) -> str | None:
        """The node an argument comes from (creating one for constants)."""
        from ..relax.expr import Constant, ShapeExpr, Tuple, Var

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
        from ..ir.op import Op

        op = call.op
        if isinstance(op, Op) and op.name in ("relax.call_tir", "relax.call_dps_packed"):
            callee = call.args[0]
            name = callee.name_hint if isinstance(callee, GlobalVar) else getattr(callee, "global_symbol", "?")
            pattern = ""
            if self.mod is not None and isinstance(callee, GlobalVar) and callee.name_hint in self.mod:
                attr = getattr(self.mod[callee.name_hint], "attrs", {}).get("op_pattern")
                pattern = PATTERN_NAMES.get(int(attr), "") if attr is not None else ""
            kind = "call_tir" if op.name == "relax.call_tir" else "call_dps_packed"
            label = f"{kind} <b>{html.escape(name)}</b>" + (f"<br/><i>{pattern}</i>" if pattern else "")
            return label, PATTERN_COLOURS.get(pattern, "#ffffff")
        if isinstance(op, Op):
            return f"<b>{html.escape(op.name.replace('relax.', ''))}</b>", "#ffffff"
        return f"call <b>{html.escape(getattr(op, 'name_hint', type(op).__name__))}</b>", "#fff3bf"

    def function(self, func: Any, indent: str = "  ") -> None:
        from ..relax.expr import Call, SeqExpr, Tuple, TupleGetItem, Var

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


def graph_dot(mod_or_func: Any, name: str = "main") -> str:
    """The DOT text of :func:`graph` (stable; tests compare it)."""
    from ..relax.expr import Function

    mod = mod_or_func if isinstance(mod_or_func, IRModule) else None
    func = mod[name] if mod is not None else mod_or_func
    if not isinstance(func, Function):
        raise TypeError(f"viz.graph draws Relax functions; {name!r} is a {type(func).__name__}")
    g = _Graph(mod)
    g.function(func)
    if mod is not None:  # fused functions (attrs Primitive) as clusters, after the main graph
        for gv, f in mod.items():
            if isinstance(f, Function) and f.attrs and f.attrs.get("Primitive"):
                g.lines.append(f"  subgraph cluster_{gv.name_hint} {{")
                g.lines.append(f'    label="{html.escape(gv.name_hint)}" style="rounded,dashed"')
                g.function(f, indent="    ")
                g.lines.append("  }")
    body = "\n".join(g.lines)
    return ('digraph relax {\n  rankdir=TB\n  node [fontname="Helvetica" fontsize=12]\n'
            f"{body}\n}}\n")


def graph(mod_or_func: Any, name: str = "main") -> Any:
    """A graphviz picture of a Relax function's dataflow (``name`` in a module)."""
    import graphviz

    return graphviz.Source(graph_dot(mod_or_func, name))
