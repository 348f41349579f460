"""A picture of a TensorIR loop nest: loops as boxes with their extent and kind, blocks at
their place with the buffer regions they read and write.

A chain of loops of one kind, each the only statement of the one above (what ``T.grid`` writes),
is one box, ``for i, j, k in 16 × 16 × 16``; statements in sequence are drawn one below the
other; long lists of regions in a block's note are wrapped: the picture stays narrow enough that
its text is readable at the notebook's width.

``loop_nest(func)`` returns a ``graphviz.Digraph``; Jupyter shows it as SVG.  The DOT text
(``loop_nest(func).source``) is plain and stable, so tests compare it as golden text.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ..ir.module import IRModule
from ..tir.function import PrimFunc
from ..tir.stmt import Allocate, BlockRealize, For, ForKind, IfThenElse, SeqStmt
from .entry import entry_function
from .render import Picture

__all__ = ["loop_nest", "loop_nest_dot"]

#: fill colours by loop kind: what a learner should notice first
KIND_COLOURS = {
    ForKind.SERIAL: "#eef2f7",
    ForKind.PARALLEL: "#ffd8a8",
    ForKind.VECTORIZED: "#b2f2bb",
    ForKind.UNROLLED: "#d0bfff",
    ForKind.THREAD_BINDING: "#ffc9c9",
}


def _text(node: Any) -> str:
    """Short text of an expression for a picture: integer constants as plain numbers
    (``8``, not ``T.int64(8)``: the dtype is noise in a drawing)."""
    try:
        text = node.script()
    except Exception:  # a picture must not fail on a node the printer cannot show alone
        return repr(node)
    return _TYPED_INT.sub(r"\1", text)


_TYPED_INT = re.compile(r"T\.u?int(?:8|16|32|64)\((-?\d+)\)")


def _region_text(region: Any) -> str:
    dims = []
    for r in region.region:
        lo = _text(r.min)
        if _text(r.extent) == "1":
            dims.append(lo)
        else:
            dims.append(f"{lo}:{_text(r.min + r.extent)}")
    return f"{region.buffer.name}[{', '.join(dims)}]"


#: characters on one line of a block's note before its list wraps
NOTE_WIDTH = 52


def _wrapped(items: list[str], width: int = NOTE_WIDTH) -> str:
    """``items`` joined by ", ", broken onto new lines (HTML-escaped) before one passes ``width``."""
    lines, line = [], ""
    for item in items:
        if line and len(line) + 2 + len(item) > width:
            lines.append(line + ",")
            line = item
        else:
            line = f"{line}, {item}" if line else item
    lines.append(line)
    return "<br/>&#160;&#160;".join(html.escape(x) for x in lines)


def _loop_chain(loop: For) -> list[For]:
    """``loop`` and the loops of the same kind nested directly in it, one inside the other."""
    chain = [loop]
    while (isinstance(chain[-1].body, For) and chain[-1].body.kind == loop.kind
           and loop.kind != ForKind.THREAD_BINDING):
        chain.append(chain[-1].body)
    return chain


class _DotWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def node(self, label: str, **attrs: str) -> str:
        name = f"n{self.count}"
        self.count += 1
        extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
        self.lines.append(f'  {name} [label=<{label}>{extra}]')
        return name

    def edge(self, a: str, b: str) -> None:
        self.lines.append(f"  {a} -> {b}")

    def walk(self, stmt: Any, parent: str | None) -> None:
        if isinstance(stmt, SeqStmt):
            # statements in sequence are drawn one below the other (an invisible edge from the
            # last box of one to the first of the next), in program order: side by side, a few
            # loop nests made the picture too wide to read at the notebook's width
            previous_last = None
            for s in stmt.seq:
                first = self.count
                self.walk(s, parent)
                if self.count == first:
                    continue
                if previous_last is not None:
                    self.lines.append(f"  n{previous_last} -> n{first} [style=invis]")
                previous_last = self.count - 1
            return
        if isinstance(stmt, For):
            chain = _loop_chain(stmt)
            kind = "" if stmt.kind == ForKind.SERIAL else f" <i>{stmt.kind}</i>"
            if stmt.kind == ForKind.THREAD_BINDING and stmt.thread_binding:  # the GPU axis it runs on
                kind = f" <i>{html.escape(str(stmt.thread_binding))}</i>"
            names = html.escape(", ".join(loop.loop_var.name for loop in chain))
            extents = html.escape(" × ".join(_text(loop.extent) for loop in chain))
            label = f"<b>for {names}</b> in {extents}{kind}"
            me = self.node(label, shape="box", style="filled,rounded",
                           fillcolor=KIND_COLOURS.get(stmt.kind, "#eef2f7"))
            if parent:
                self.edge(parent, me)
            self.walk(chain[-1].body, me)
            return
        if isinstance(stmt, BlockRealize):
            block = stmt.block
            if block.name_hint == "root":
                self.walk(block.body, parent)
                return
            reads = _wrapped(["reads " + _region_text(r) for r in block.reads[:1]]
                             + [_region_text(r) for r in block.reads[1:]]) if block.reads else "reads -"
            writes = _wrapped(["writes " + _region_text(w) for w in block.writes[:1]]
                              + [_region_text(w) for w in block.writes[1:]]) if block.writes else "writes -"
            init = " (with init)" if block.init is not None else ""
            bindings = _wrapped([f"{iv.var.name}={_text(v)}" for iv, v in zip(block.iter_vars, stmt.iter_values)])
            label = (f'<b>block {html.escape(block.name_hint)}</b>{init}<br/>'
                     f'<font point-size="10">{bindings}<br/>{reads}<br/>{writes}</font>')
            me = self.node(label, shape="note", style="filled", fillcolor="#fff9db")
            if parent:
                self.edge(parent, me)
            inner = block.body
            if not isinstance(inner, (BlockRealize, For, SeqStmt)):
                return
            self.walk(inner, me)
            return
        if isinstance(stmt, (Allocate,)):
            self.walk(stmt.body, parent)
            return
        if isinstance(stmt, IfThenElse):
            me = self.node(f"if {html.escape(_text(stmt.condition))}", shape="diamond")
            if parent:
                self.edge(parent, me)
            self.walk(stmt.then_case, me)
            if stmt.else_case is not None:
                self.walk(stmt.else_case, me)
            return
        me = self.node(html.escape(type(stmt).__name__), shape="plaintext")
        if parent:
            self.edge(parent, me)


def loop_nest_dot(func: PrimFunc | IRModule, name: str | None = None) -> str:
    """The DOT text of :func:`loop_nest`."""
    func = entry_function(func, "tir", name, "viz.loop_nest")
    writer = _DotWriter()
    writer.walk(func.body, None)
    body = "\n".join(writer.lines)
    return ("digraph loop_nest {\n  rankdir=TB\n  node [fontname=\"Helvetica\" fontsize=12]\n"
            f"{body}\n}}\n")


def loop_nest(func: PrimFunc | IRModule, name: str | None = None, title: str | None = None) -> Picture:
    """A picture of the loop nest of ``func`` (or of function ``name`` of a module), fitted to
    the notebook's width, with ``title`` above it (e.g. "before" / "after split")."""
    import graphviz  # graphviz is optional: imported when a picture is drawn

    return Picture(graphviz.Source(loop_nest_dot(func, name)), title)
