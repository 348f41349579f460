"""SplitHostDevice: each GPU kernel launch of a function becomes its own device PrimFunc.

A lowered GPU function mixes host code with kernel launches (``T.launch_thread("blockIdx.x",
8)`` and the code under it).  As TVM's pass of that name, each launch (the outermost
``thread_extent`` statement and everything under it) moves into a new PrimFunc named
``<symbol>_kernel`` (``_kernel_1`` ... for more), whose parameters are the buffers and scalars
it uses and whose attributes say how to launch it:

* ``"tir.kernel_launch_params"``: the thread tags of the launch, outermost first
  (``["blockIdx.y", "blockIdx.x", "threadIdx.x"]``), their extents are the launch's grid and
  block dimensions;
* ``"calling_conv": 2`` (a device kernel launch) and ``"tir.is_global_func": True``.

In the host function the launch is replaced by ``T.tvm_call_packed(name, args..., extents...)``.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.node import replace
from ...transform import module_pass
from ..analysis import vars_used
from ..expr import BufferLoad, Call, IterVar, StringImm, Var
from ..function import PrimFunc
from ..functor import post_order_visit
from ..stmt import Allocate, AttrStmt, BufferStore, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt, seq

__all__ = ["SplitHostDevice", "split_host_device", "launch_dims", "is_thread_launch", "has_thread_launch"]


def is_thread_launch(s: Any) -> bool:
    return isinstance(s, AttrStmt) and isinstance(s.node, IterVar) and s.attr_key in ("thread_extent",
                                                                                      "virtual_thread")


def has_thread_launch(s: Any) -> bool:
    found: list = []
    post_order_visit(s, lambda n: found.append(1) if is_thread_launch(n) else None)
    return bool(found)


def launch_dims(kernel_body: Stmt) -> list[tuple[str, Any, Var]]:
    """The launch's thread axes, outermost first: (tag, extent, variable).  A kernel's launches
    sit at its top (UnifyThreadBinding puts them there), possibly between allocations."""
    dims: list[tuple[str, Any, Var]] = []
    s = kernel_body
    while True:
        if is_thread_launch(s):
            if not any(t == s.node.thread_tag for t, _, _ in dims):
                dims.append((s.node.thread_tag, s.value, s.node.var))
            s = s.body
        elif isinstance(s, (Allocate, LetStmt)):
            s = s.body
        else:
            return dims


class _Splitter:
    def __init__(self, func: PrimFunc, symbol: str):
        self.func, self.symbol = func, symbol
        self.kernels: list[tuple[str, PrimFunc]] = []

    def rewrite(self, s: Stmt) -> Stmt:
        if is_thread_launch(s):
            return self._launch(s)
        if isinstance(s, SeqStmt):
            return seq(*[self.rewrite(c) for c in s.seq])
        if isinstance(s, IfThenElse):
            other = self.rewrite(s.else_case) if s.else_case is not None else None
            return IfThenElse(s.condition, self.rewrite(s.then_case), other)
        if isinstance(s, (Allocate, LetStmt, For, AttrStmt)):
            body = self.rewrite(s.body)
            return s if body is s.body else replace(s, body=body)
        return s

    def _launch(self, s: Stmt) -> Stmt:
        name = f"{self.symbol}_kernel" + (f"_{len(self.kernels)}" if self.kernels else "")
        used = vars_used(s)  # (buffers are leaves: their data variables are added here)
        post_order_visit(s, lambda n: used.add(id(n.buffer.data)) if isinstance(n, (BufferLoad, BufferStore)) else None)
        params: list[Var] = []
        buffer_map: dict = {}
        args: list[Any] = []
        for p in self.func.params:
            buf = self.func.buffer_map.get(p)
            if buf is not None and (id(buf.data) in used or any(id(v) in used for v in vars_used(buf.shape))):
                params.append(p)
                buffer_map[p] = buf
                args.append(buf.data)
            elif buf is None and id(p) in used:
                params.append(p)
                args.append(p)
        known = {id(p) for p in params} | {id(b.data) for b in buffer_map.values()}
        for b in buffer_map.values():
            known |= vars_used(b.shape)
        defined = _defined_inside(s)
        free: list[Var] = []
        seen: set[int] = set()

        def collect(n: Any) -> None:
            if isinstance(n, Var) and id(n) not in known and id(n) not in defined and id(n) not in seen:
                seen.add(id(n))
                free.append(n)

        post_order_visit(s, collect)
        for v in free:  # scalars defined by host code around the launch (a host loop, a let)
            params.append(v)
            args.append(v)
        dims = launch_dims(s)
        attrs = {"global_symbol": name, "target": "cuda", "calling_conv": 2, "tir.is_global_func": True,
                 "tir.kernel_launch_params": [t for t, _, _ in dims], "tir.noalias": True, "tir.lowered": True}
        self.kernels.append((name, PrimFunc(tuple(params), buffer_map, s, None, attrs)))
        call = Call("int32", "tir.tvm_call_packed", (StringImm(name), *args, *[e for _, e, _ in dims]))
        return Evaluate(call)


def _defined_inside(s: Stmt) -> set[int]:
    out: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, For):
            out.add(id(n.loop_var))
        elif isinstance(n, LetStmt):
            out.add(id(n.var))
        elif isinstance(n, Allocate):
            out.add(id(n.buffer.data))
        elif is_thread_launch(n):
            out.add(id(n.node.var))

    post_order_visit(s, visit)
    return out


def split_host_device(mod: IRModule) -> IRModule:
    """``mod`` with every kernel launch outlined into a device PrimFunc (see the module doc)."""
    out = mod
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc) or not has_thread_launch(func.body):
            continue
        symbol = str(func.attrs.get("global_symbol") or gv.name_hint)
        sp = _Splitter(func, symbol)
        host = func.with_body(sp.rewrite(func.body)).with_attr("target", "host")
        out = out.with_function(gv, host)
        for name, kernel in sp.kernels:
            out = out.with_function(name, kernel)
    return out


@module_pass(opt_level=0, name="tir.SplitHostDevice")
class SplitHostDevice:
    """Outline each GPU kernel launch into its own device PrimFunc (TVM's pass of that name)."""

    def transform_module(self, mod: IRModule, ctx: Any) -> IRModule:
        return split_host_device(mod)
