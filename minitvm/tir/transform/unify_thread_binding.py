"""UnifyThreadBinding: one variable per thread axis of a kernel, its loops at the launch.

After ``bind`` a kernel may bind several loops to the same axis: the window sum's compute
loop and its cooperative-fetch loop both run on ``threadIdx.x``. On a GPU there is one
``threadIdx.x`` per thread, so (as TVM's pass of the same name) every loop bound to a tag is
replaced by a single variable for that tag, and the thread loops of a kernel are emitted
once, outermost, at the kernel's launch (its first thread-bound loop): what was

    for i_0 in T.thread_binding(8, "blockIdx.x"):
        for i_1 in T.thread_binding(128, "threadIdx.x"):
            for ax0_0 in range(2):
                for ax0_1 in T.thread_binding(128, "threadIdx.x"): ...

becomes ``blockIdx.x`` and ``threadIdx.x`` loops around a body where ``ax0_1`` is
``threadIdx_x``.  Loops bound to one tag must have the same extent (TVM's ValueError).
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir.node import replace
from ..expr import Cast, IntImm, IterVar, PrimExpr, Var, const
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import AttrStmt, For, ForKind, Stmt
from .function_pass import prim_func_pass

__all__ = ["UnifyThreadBinding", "unify_thread_binding"]


class _Unifier(StmtExprMutator):
    def __init__(self) -> None:
        self.block_depth = 0  # how many blockIdx loops (or the launch) we are inside
        self.by_tag: dict[str, tuple[Var, PrimExpr, PrimExpr]] = {}
        self.launch: list[str] = []
        self.subst: dict[int, PrimExpr] = {}
        self.ana = Analyzer()

    def visit_var_(self, v: Var) -> PrimExpr:
        return self.subst.get(id(v), v)

    def visit_for_(self, n: For) -> Stmt:
        if n.kind != ForKind.THREAD_BINDING:
            return self.visit_children(n)
        body = self._unify(n.thread_binding, n.loop_var, n.min, n.extent, n.body)
        if n.annotations:  # the annotations stay: on the loop in their place, else on a unit loop (as TVM)
            if isinstance(body, For):
                return replace(body, annotations=dict(n.annotations))
            zero = const(0, n.loop_var.dtype)
            body = For(Var("var", n.loop_var.dtype), zero, IntImm(n.loop_var.dtype, 1), ForKind.SERIAL, body,
                       None, dict(n.annotations))
        return body

    def visit_attr_stmt_(self, n: AttrStmt) -> Stmt:
        # a T.launch_thread in block-level TIR becomes a thread loop like the others
        if n.attr_key not in ("thread_extent", "virtual_thread") or not isinstance(n.node, IterVar):
            return self.visit_children(n)
        return self._unify(n.node.thread_tag, n.node.var, const(0, n.value.dtype), n.value, n.body)

    def _unify(self, tag: str, old: Var, lo: PrimExpr, extent: PrimExpr, inner: Stmt) -> Stmt:
        launch = self.block_depth == 0
        if launch:
            self.by_tag, self.launch = {}, []
        depth = self.block_depth
        if tag.startswith("blockIdx.") or launch:
            self.block_depth += 1
        entry = self.by_tag.get(tag)
        if entry is None:
            entry = self.by_tag[tag] = (Var(tag.replace(".", "_"), extent.dtype), lo, extent)
            self.launch.append(tag)
        elif not self.ana.can_prove_equal(entry[2], extent) or not self.ana.can_prove_equal(entry[1], lo):
            raise ValueError(f"All loops that are bound to `{tag}` should have the same extent. However, there "
                             f"are two loops with extent {entry[2]} and {extent}, which are not equal "
                             f"(loop {old.name})")
        var = entry[0]
        self.subst[id(old)] = var if var.dtype == old.dtype else Cast(old.dtype, var)
        body = self.visit(inner)
        self.block_depth = depth
        if not launch:
            return body
        for t in reversed(self.launch):
            v, start, ext = self.by_tag[t]
            body = For(v, start, ext, ForKind.THREAD_BINDING, body, t)
        return body


def unify_thread_binding(body: Any) -> Any:
    """``body`` with one variable per thread tag per kernel, its loops at the launch."""
    return _Unifier().visit(body)


@prim_func_pass(opt_level=0, name="tir.UnifyThreadBinding")
class UnifyThreadBinding:
    """One variable per GPU thread axis in each kernel, its loop at the kernel's launch."""

    def transform_function(self, func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        body = unify_thread_binding(func.body)
        return func if body is func.body else func.with_body(body)

