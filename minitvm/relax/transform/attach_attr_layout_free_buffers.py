"""AttachAttrLayoutFreeBuffers: tell each PrimFunc which of its buffers hold weights (TVM's
``relax.transform.AttachAttrLayoutFreeBuffers``).

In a function with ``num_input`` set, the parameters after the first ``num_input`` are
weights, and so is every constant.  Each ``R.call_tir`` gets a copy of its PrimFunc with
``"layout_free_buffers"``: the positions of the arguments that are weights (a schedule may
then rewrite their layout ahead of time).  Copies with the same positions are shared; the
PrimFuncs nothing calls any more are removed (DeadCodeElimination).  A PrimFunc whose calls all
name the same positions gets the attribute itself and keeps its name (minitvm: a kernel's name
is what a profile shows).
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, Function, Tuple
from ..expr_functor import ExprMutator
from .dead_code_elimination import DeadCodeElimination

__all__ = ["AttachAttrLayoutFreeBuffers"]


class _Attacher(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.free: set[int] = set()  # ids of weight expressions
        self.keep: list = []  # keeps those objects alive while their ids are in ``free``
        # PrimFunc -> the weight positions its calls name: collected by a first walk (``signatures``
        # None), then read by the second, which rewrites
        self.seen: dict[GlobalVar, set[tuple[int, ...]]] = {}
        self.signatures: dict[GlobalVar, set[tuple[int, ...]]] | None = None

    def _mark(self, expr: Any) -> None:
        self.free.add(id(expr))
        self.keep.append(expr)

    def visit_function_(self, op: Function) -> Any:
        num_input = (op.attrs or {}).get("num_input")
        if num_input is not None:
            for p in op.params[int(num_input):]:
                self._mark(p)
        return super().visit_function_(op)

    def visit_constant_(self, op: Constant) -> Any:
        self._mark(op)
        return op

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if not (isinstance(call.op, Op) and call.op.name == "relax.call_tir"):
            return call
        gv, args = call.args[0], call.args[1]
        if not isinstance(gv, GlobalVar) or not isinstance(args, Tuple):
            return call
        positions = [i for i, a in enumerate(args.fields) if id(a) in self.free]
        if self.signatures is None:  # the first walk: only note what each call names
            self.seen.setdefault(gv, set()).add(tuple(positions))
            return call
        prim = self.mod[gv].with_attr("layout_free_buffers", positions)
        if len(self.signatures.get(gv, ())) == 1:  # every call agrees: the function keeps its name
            self.builder_.update_func(gv, prim)
            return call
        new_gv = self.builder_.add_func(prim, gv.name_hint)
        return Call(call.op, [new_gv, args, *call.args[2:]], call.attrs, call.sinfo_args)


@module_pass(opt_level=0, name="AttachAttrLayoutFreeBuffers")
class AttachAttrLayoutFreeBuffers:
    """``AttachAttrLayoutFreeBuffers()``: see the module docstring."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        attacher = _Attacher(mod)
        for rewrite in (False, True):
            if rewrite:
                attacher.signatures = attacher.seen
            for gv, func in list(mod.functions.items()):
                if isinstance(func, Function):
                    attacher.free.clear()
                    attacher.keep.clear()
                    new = attacher.visit_expr(func)
                    if rewrite:
                        attacher.builder_.update_func(gv, new)
        return DeadCodeElimination()(attacher.builder_.get())
