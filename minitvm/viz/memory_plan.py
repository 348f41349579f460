"""A picture of tensor lifetimes and the storage each one lives in, after ``StaticPlanBlockMemory``.

One row per allocated tensor; the time axis is the function's calls in order (kernels, library
functions, operators).  A tensor's bar runs from the call that first uses it (writes it) to the
last call that reads it -- to the end when the function returns it.  Bars of one colour share
one storage (``R.memory.alloc_storage``): their lifetimes never overlap, which is why they may
share it.  Grey, hatched bars are tensors with memory of their own (``R.builtin.alloc_tensor``:
a returned tensor, or one the planner could not place).

    lowered = relax.transform.StaticPlanBlockMemory()(relax.transform.CallTIRRewrite()(
        relax.transform.ToNonDataflow()(relax.get_pipeline("zero")(mod))))
    viz.memory_plan(lowered)       # shows the picture in Jupyter; .svg() is the text
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from ..ir.module import GlobalVar, IRModule
from ..relax.expr import Call, ExternFunc, SeqExpr, ShapeExpr, Var
from ..relax.expr_functor import ExprVisitor
from ..relax.op.memory import ALLOC_STORAGE, ALLOC_TENSOR, MEMORY_ALLOC_TENSOR
from .entry import entry_function

__all__ = ["memory_plan", "MemoryPlanPicture", "TensorLife", "Storage"]

# a storage's colour, by its number (repeats after ten)
_COLOURS = ["#4c6ef5", "#f76707", "#2f9e44", "#ae3ec9", "#e03131", "#1098ad", "#f59f00", "#7048e8",
            "#d6336c", "#5c940d"]
_OWN = "#adb5bd"
_VIEW_OPS = ("relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset")
_MAX_WIDTH = 880


@dataclass
class Storage:
    """One ``R.memory.alloc_storage``: its variable, size in bytes and the tensors placed in it."""

    name: str
    nbytes: int | None
    dtype: str
    tensors: list[str] = field(default_factory=list)


@dataclass
class TensorLife:
    """One allocated tensor: its name (the variable that names it in the program), the storage
    it lives in (None: its own memory), shape, dtype, and the first and last call using it."""

    name: str
    alloc: str
    storage: str | None
    shape: tuple
    dtype: str
    first: int = -1
    last: int = -1
    returned: bool = False


class MemoryPlanPicture:
    """Tensor lifetimes and storages of one function; shows itself as SVG in Jupyter."""

    def __init__(self, function: str, steps: list[str], tensors: list[TensorLife], storages: list[Storage]):
        self.function = function
        self.steps = steps
        self.tensors = tensors
        self.storages = storages

    @property
    def num_storages(self) -> int:
        return len(self.storages)

    def __repr__(self) -> str:
        return (f"<MemoryPlanPicture of {self.function}: {len(self.tensors)} tensors, {len(self.storages)} storages, "
                f"{len(self.steps)} calls>")

    def __str__(self) -> str:
        lines = [f"{self.function}: {_count(len(self.tensors), 'tensor')} in {_count(len(self.storages), 'storage')} "
                 f"(+ {sum(t.storage is None for t in self.tensors)} with memory of their own)"]
        for s in self.storages:
            size = f"{s.nbytes} bytes" if s.nbytes is not None else "symbolic size"
            lines.append(f"  {s.name} ({size}): {', '.join(s.tensors)}")
        for t in self.tensors:
            span = f"calls {t.first}..{'end' if t.returned else t.last}" if t.first >= 0 else "never used"
            lines.append(f"  {t.name}: {t.storage or 'own memory'}, {span}")
        return "\n".join(lines)

    # -- drawing ----------------------------------------------------------------------------------
    def svg(self) -> str:
        """The picture as SVG text, at most ~880 px wide."""
        n_steps = max(len(self.steps), 1)
        label_w = 170
        row_h, top = 22, 104  # room for the slanted call names under the title
        col_w = max(12, min(64, (_MAX_WIDTH - label_w - 20) // (n_steps + 1)))
        width = label_w + col_w * (n_steps + 1) + 20
        legend_top = top + row_h * len(self.tensors) + 14
        height = legend_top + 18 * (len(self.storages) + 1) + 8
        colour = {s.name: _COLOURS[i % len(_COLOURS)] for i, s in enumerate(self.storages)}
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
               '<defs><pattern id="own" width="6" height="6" patternUnits="userSpaceOnUse" '
               'patternTransform="rotate(45)"><rect width="6" height="6" fill="#dee2e6"/>'
               f'<line x1="0" y1="0" x2="0" y2="6" stroke="{_OWN}" stroke-width="3"/></pattern></defs>',
               f'<text x="4" y="16" font-size="13" font-weight="bold">tensor lifetimes in {_esc(self.function)}: '
               f'{_count(len(self.tensors), "tensor")}, {_count(len(self.storages), "storage")}</text>']
        # the calls, as column headings (slanted so that long kernel names fit)
        for k, name in enumerate(self.steps):
            x = label_w + col_w * k + col_w / 2
            out.append(f'<line x1="{x}" y1="{top - 4}" x2="{x}" y2="{legend_top - 10}" stroke="#e9ecef"/>')
            out.append(f'<text x="{x}" y="{top - 8}" font-size="10" transform="rotate(-35 {x} {top - 8})">'
                       f'{k}: {_esc(_short(name, 20))}</text>')
        end_x = label_w + col_w * n_steps + col_w / 2
        out.append(f'<text x="{end_x}" y="{top - 8}" font-size="10" fill="#868e96" '
                   f'transform="rotate(-35 {end_x} {top - 8})">return</text>')
        for r, t in enumerate(self.tensors):
            y = top + r * row_h
            fill = colour.get(t.storage, "url(#own)") if t.storage else "url(#own)"
            shape = "×".join(str(d) for d in t.shape)
            out.append(f'<text x="4" y="{y + 15}">{_esc(t.name)}</text>')
            out.append(f'<text x="{label_w - 6}" y="{y + 15}" font-size="10" fill="#868e96" text-anchor="end">'
                       f'{_esc(shape)} {_esc(t.dtype)}</text>')
            if t.first < 0:
                continue
            last = n_steps if t.returned else t.last
            x0 = label_w + col_w * t.first + 3
            x1 = label_w + col_w * last + col_w - 3
            tip = f"{t.name}: {t.storage or 'own memory'}, calls {t.first}..{'return' if t.returned else t.last}"
            out.append(f'<rect x="{x0}" y="{y + 3}" width="{max(x1 - x0, 4)}" height="{row_h - 6}" rx="4" '
                       f'fill="{fill}" stroke="#495057" stroke-width="0.5"><title>{_esc(tip)}</title></rect>')
            text = t.storage or "own"
            if x1 - x0 > 7 * len(text):
                colour_text = "#ffffff" if t.storage else "#343a40"
                out.append(f'<text x="{x0 + 5}" y="{y + 15}" font-size="10" fill="{colour_text}">{_esc(text)}</text>')
        # the legend: each storage, its size and its tensors
        for i, s in enumerate(self.storages):
            y = legend_top + 18 * i
            size = f"{s.nbytes} B" if s.nbytes is not None else "symbolic size"
            out.append(f'<rect x="4" y="{y}" width="14" height="12" rx="2" fill="{colour[s.name]}"/>')
            out.append(f'<text x="24" y="{y + 10}">{_esc(s.name)} ({size}): '
                       f'{_esc(_short(", ".join(s.tensors), 100))}</text>')
        y = legend_top + 18 * len(self.storages)
        own = [t.name for t in self.tensors if t.storage is None]
        out.append(f'<rect x="4" y="{y}" width="14" height="12" rx="2" fill="url(#own)"/>')
        out.append(f'<text x="24" y="{y + 10}">own memory (not shared): {_esc(_short(", ".join(own), 100)) or "none"}'
                   '</text>')
        out.append("</svg>")
        return "".join(out)

    def _repr_svg_(self) -> str:
        return self.svg()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def memory_plan(mod: IRModule | Any, func_name: str | None = None) -> MemoryPlanPicture:
    """The lifetimes of ``func_name``'s tensors (default: ``main``, else the only function) in a
    module after ``StaticPlanBlockMemory`` (or any module where tensors are allocated explicitly)."""
    func = entry_function(mod, "relax", func_name, "memory_plan")
    name = func_name or (func.attrs.get("global_symbol") if func.attrs else None) or "main"
    bindings = list(_bindings(func.body))

    steps: list[str] = []
    tensors: list[TensorLife] = []
    storages: dict[Any, Storage] = {}
    holds: dict[Any, set[int]] = {}  # variable -> the tensors (indexes) its value may be

    def held(expr: Any) -> set[int]:
        return set().union(*(holds.get(v, set()) for v in _vars_in(expr)))

    for b in bindings:
        value = b.value
        op_name = value.op.name if isinstance(value, Call) and hasattr(value.op, "name") else None
        if op_name == ALLOC_STORAGE:
            size = value.args[0]
            nbytes = None
            if isinstance(size, ShapeExpr) and len(size.values) == 1 and hasattr(size.values[0], "value"):
                nbytes = int(size.values[0].value)
            storages[b.var] = Storage(b.var.name_hint, nbytes, str(getattr(value.args[3], "value", "")))
            continue
        if op_name in (ALLOC_TENSOR, MEMORY_ALLOC_TENSOR):
            storage = storages.get(value.args[0]) if op_name == MEMORY_ALLOC_TENSOR else None
            sinfo = b.var.struct_info
            shape = tuple(int(d) if hasattr(d, "value") else d for d in getattr(getattr(sinfo, "shape", None),
                                                                                  "values", ()) or ())
            tensors.append(TensorLife(b.var.name_hint, b.var.name_hint, storage.name if storage else None,
                                      shape, str(getattr(sinfo, "dtype", ""))))
            if storage is not None:
                storage.tensors.append(b.var.name_hint)
            holds[b.var] = {len(tensors) - 1}
            continue
        is_call = isinstance(value, Call) and (isinstance(value.op, (GlobalVar, ExternFunc)) or
                                               (op_name is not None and op_name not in _VIEW_OPS))
        if is_call:
            step = len(steps)
            steps.append(_call_name(value))
            for i in held(value):
                t = tensors[i]
                t.first = step if t.first < 0 else t.first
                t.last = step
            continue
        # an alias (lv0 = alloc), a view, a tuple ...: the variable stands for what it holds
        mine = held(value)
        holds[b.var] = mine
        if isinstance(value, Var) and len(mine) == 1:
            t = tensors[next(iter(mine))]
            if t.name == t.alloc:  # name a tensor after the program's variable, not the allocation
                t.name = b.var.name_hint
    for i in held(_body_result(func.body)):
        tensors[i].returned = True
        if tensors[i].first < 0:
            tensors[i].first = len(steps)
    if not tensors and steps:
        raise ValueError(
            "memory_plan: this function allocates no tensors explicitly; draw the module after the "
            "lowering passes: relax.transform.StaticPlanBlockMemory()(relax.transform.CallTIRRewrite()("
            "relax.transform.ToNonDataflow()(mod)))")
    for s in storages.values():  # the storage lists the tensors by their program names
        s.tensors = [t.name for t in tensors if t.storage == s.name]
    return MemoryPlanPicture(name, steps, tensors, list(storages.values()))


def _bindings(expr: Any):
    if isinstance(expr, SeqExpr):
        for block in expr.blocks:
            yield from block.bindings


def _body_result(expr: Any) -> Any:
    return expr.body if isinstance(expr, SeqExpr) else expr


def _call_name(call: Any) -> str:
    op = call.op
    if isinstance(op, GlobalVar):
        return op.name_hint
    if isinstance(op, ExternFunc):
        return op.global_symbol
    name = getattr(op, "name", None) or getattr(op, "name_hint", "call")
    if name == "relax.call_tir" and call.args and isinstance(call.args[0], GlobalVar):
        return call.args[0].name_hint
    return name.removeprefix("relax.")


def _vars_in(expr: Any) -> list[Any]:
    found: list[Any] = []

    class _Vars(ExprVisitor):
        def visit_var_(self, op: Any) -> None:
            found.append(op)

        def visit_dataflow_var_(self, op: Any) -> None:
            found.append(op)

    _Vars().visit_expr(expr)
    return found
