"""VerifyLowered: check a function is in the lowered form code generators accept, then
mark it with ``attrs["tir.lowered"] = True``.

The lowered form (what LLVM codegen and the interpreter's fast path rely on):

* statements: ``SeqStmt``, ``For`` (serial, parallel, vectorized, unrolled), ``IfThenElse``,
  ``LetStmt``, ``AssertStmt``, ``Evaluate``, ``Allocate`` of a 1-D buffer, ``BufferStore``;
* every ``BufferLoad``/``BufferStore`` has one int32/int64 index into a 1-D buffer whose
  ``data`` variable is a parameter buffer's or an enclosing ``Allocate``'s; a stored value
  has the buffer's dtype;
* GPU kernels: ``AttrStmt`` "thread_extent" launching a thread axis (``T.launch_thread``, it
  defines the thread variable) and barriers ``T.tvm_storage_sync("shared")``;
* calls are the float intrinsics (``tir.exp`` ...) or ``tir.if_then_else``;
* every variable is defined: a scalar parameter, a symbolic shape of a parameter buffer,
  or a loop or let variable in scope.
"""

from __future__ import annotations

from typing import Any

from ...ir.node import Node
from ..buffer import Buffer
from ..expr import BufferLoad, Call, IterVar, Let, PrimExpr, Var
from ..function import PrimFunc
from ..functor import StmtExprVisitor
from ..op import INTRINSICS
from ..stmt import Allocate, AssertStmt, AttrStmt, BufferStore, Evaluate, For, ForKind, IfThenElse, LetStmt, SeqStmt
from .function_pass import prim_func_pass

__all__ = ["VerifyLowered", "lowered_form_errors"]

# tir.ret is let through so that codegen refuses it by name (NotImplementedError)
ALLOWED_CALLS = frozenset({f"tir.{name}" for name in INTRINSICS}
                          | {"tir.if_then_else", "tir.likely", "tir.call_extern", "tir.call_llvm_pure_intrin",
                             "tir.ret", "tir.tvm_storage_sync", "tir.address_of", "tir.prefetch",
                             # a packed call and the array records of its arguments (codegen/packed_call.py)
                             "tir.tvm_call_packed", "tir.tvm_stack_make_array", "tir.tvm_stack_make_shape"})
ALLOWED_LOOP_KINDS = (ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED)
_ALLOWED_STMTS = (SeqStmt, For, IfThenElse, LetStmt, AssertStmt, Evaluate, Allocate, BufferStore, AttrStmt)


class _Checker(StmtExprVisitor):
    def __init__(self, func: PrimFunc):
        self.errors: list[str] = []
        self.defined: set[int] = set()
        self.data_vars: set[int] = set()
        for param in func.params:
            self.defined.add(id(param))
        for buffer in func.buffer_map.values():
            self.data_vars.add(id(buffer.data))
            for extent in buffer.shape:
                if isinstance(extent, Var):
                    self.defined.add(id(extent))

    def visit(self, n: Any) -> None:
        if isinstance(n, (tuple, list)):
            for x in n:
                self.visit(x)
            return
        if isinstance(n, Node) and not isinstance(n, (PrimExpr, Buffer, *_ALLOWED_STMTS)):
            self.errors.append(f"{type(n).__name__} is not allowed in lowered TIR")
            return
        super().visit(n)

    def _scoped(self, var: Var, *parts: Any) -> None:
        self.defined.add(id(var))
        try:
            self.visit(parts)
        finally:
            self.defined.discard(id(var))

    def visit_var_(self, n: Var) -> None:
        # a buffer's data pointer used as a value (T.call_packed(..., A.data), an array record)
        if id(n) not in self.defined and id(n) not in self.data_vars:
            self.errors.append(f"variable {n.name} is used but not defined")

    visit_size_var_ = visit_var_

    def visit_for_(self, n: For) -> None:
        if n.kind not in ALLOWED_LOOP_KINDS:
            self.errors.append(f"loop {n.loop_var.name} has kind {n.kind!r}, expected one of "
                               f"{', '.join(ALLOWED_LOOP_KINDS)}")
        self.visit((n.min, n.extent))
        self._scoped(n.loop_var, n.body)

    def visit_attr_stmt_(self, n: AttrStmt) -> None:
        if n.attr_key != "thread_extent" or not isinstance(n.node, IterVar):
            self.errors.append(f"AttrStmt {n.attr_key!r} is not allowed in lowered TIR (only GPU thread "
                               "launches, \"thread_extent\")")
            return
        self.visit(n.value)
        if id(n.node.var) in self.defined:  # a thread axis launched again inside its own launch
            self.visit(n.body)
        else:
            self._scoped(n.node.var, n.body)

    def visit_let_stmt_(self, n: LetStmt) -> None:
        self.visit(n.value)
        self._scoped(n.var, n.body)

    def visit_let_(self, n: Let) -> None:
        self.visit(n.value)
        self._scoped(n.var, n.body)

    def visit_allocate_(self, n: Allocate) -> None:
        if n.buffer.ndim != 1:
            self.errors.append(f"Allocate of {n.buffer.name} has {n.buffer.ndim} dimensions, expected 1")
        self.visit(n.buffer.shape)
        self.data_vars.add(id(n.buffer.data))
        try:
            self.visit(n.body)
        finally:
            self.data_vars.discard(id(n.buffer.data))

    def _check_access(self, buffer: Buffer, indices: tuple, what: str) -> None:
        if buffer.ndim != 1 or len(indices) != 1:
            self.errors.append(f"{what} of {buffer.name} uses {len(indices)} indices on a "
                               f"{buffer.ndim}-D buffer; lowered TIR has flat 1-D accesses")
        for index in indices:
            if index.dtype not in ("int32", "int64"):
                self.errors.append(f"{what} of {buffer.name} has an index of dtype {index.dtype}; "
                                   "indices are int32 or int64")
        if id(buffer.data) not in self.data_vars:
            self.errors.append(f"{what} of {buffer.name}: its data {buffer.data.name} is neither a "
                               "parameter's nor allocated around the access")
        self.visit(indices)

    def visit_buffer_load_(self, n: BufferLoad) -> None:
        self._check_access(n.buffer, n.indices, "load")

    def visit_buffer_store_(self, n: BufferStore) -> None:
        self._check_access(n.buffer, n.indices, "store")
        if n.value.dtype != n.buffer.dtype:
            self.errors.append(f"store of a {n.value.dtype} value into {n.buffer.name}, a "
                               f"{n.buffer.dtype} buffer")
        self.visit(n.value)

    def visit_call_(self, n: Call) -> None:
        if n.op not in ALLOWED_CALLS:
            self.errors.append(f"call of {n.op} is not supported in lowered TIR")
        self.visit(n.args)


def lowered_form_errors(func: PrimFunc) -> list[str]:
    """Every way ``func`` breaks the lowered-form contract (empty if it keeps it)."""
    checker = _Checker(func)
    checker.visit(func.body)
    return checker.errors


@prim_func_pass(opt_level=0, name="tir.VerifyLowered")
class VerifyLowered:
    """Raise if a function is not in lowered form; otherwise mark it ``tir.lowered``."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        errors = lowered_form_errors(func)
        if errors:
            name = func.attrs.get("global_symbol", "a PrimFunc")
            listing = "\n  ".join(dict.fromkeys(errors))
            raise ValueError(f"{name} is not in lowered form:\n  {listing}")
        return func if func.attrs.get("tir.lowered") is True else func.with_attr("tir.lowered", True)
