"""A small builder for hand-written TIR kernels (loops, lets, scratch buffers, stores).

The paged-attention kernels loop over lengths read from buffers (a sequence's pages), which TE's
compute cannot say, and this floor may not import the TVMScript parser; so they are written as
TIR statements through this builder::

    kb = KernelBuilder("add_one")
    n = kb.size("n")
    a, b = kb.buffer("A", (n,)), kb.buffer("B", (n,))
    with kb.loop("i", n) as i:
        kb.store(b, (i,), a[i] + 1.0)
    func = kb.func()
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from .....tir.buffer import Buffer, decl_buffer
from .....tir.expr import PrimExpr, Var, const
from .....tir.function import PrimFunc
from .....tir.stmt import Allocate, BufferStore, Evaluate, For, IfThenElse, LetStmt, seq

__all__ = ["KernelBuilder"]


class KernelBuilder:
    """Collects parameters and statements of one PrimFunc; ``func()`` returns it."""

    def __init__(self, name: str):
        self.name = name
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self._frames: list[list[tuple]] = [[]]

    # -- parameters ------------------------------------------------------------------------------
    def buffer(self, name: str, shape: tuple, dtype: str = "float32") -> Buffer:
        """A tensor parameter of ``shape`` (symbolic dims are :meth:`size` variables)."""
        handle = Var(f"{name}_handle", "handle")
        buf = decl_buffer(shape, dtype, name)
        self.params.append(handle)
        self.buffer_map[handle] = buf
        return buf

    def scalar(self, name: str, dtype: str) -> Var:
        """A scalar parameter (``sm_scale: T.float32``)."""
        var = Var(name, dtype)
        self.params.append(var)
        return var

    @staticmethod
    def size(name: str, dtype: str = "int32") -> Var:
        """A symbolic dimension, bound from the shape of the buffer that first uses it."""
        return Var(name, dtype)

    # -- statements ------------------------------------------------------------------------------
    def _emit(self, item: tuple) -> None:
        self._frames[-1].append(item)

    def store(self, buf: Buffer, indices: tuple, value: Any) -> None:
        value = const(value, buf.dtype) if isinstance(value, (int, float)) else value
        index = tuple(const(i, "int32") if isinstance(i, int) else i for i in indices)
        self._emit(("stmt", BufferStore(buf, value, index)))

    def evaluate(self, value: PrimExpr) -> None:
        self._emit(("stmt", Evaluate(value)))

    def let(self, name: str, value: PrimExpr) -> Var:
        """``name = value`` for the statements that follow in the current scope."""
        var = Var(name, value.dtype)
        self._emit(("let", var, value))
        return var

    def local(self, name: str, shape: tuple, dtype: str = "float32") -> Buffer:
        """A scratch buffer live for the statements that follow in the current scope."""
        buf = decl_buffer(shape, dtype, name)
        self._emit(("alloc", buf))
        return buf

    @contextmanager
    def loop(self, name: str, extent: Any, kind: str = "serial") -> Iterator[Var]:
        extent = const(extent, "int32") if isinstance(extent, int) else extent
        var = Var(name, extent.dtype)
        self._frames.append([])
        yield var
        body = self._close()
        self._emit(("stmt", For(var, const(0, extent.dtype), extent, kind, body)))

    @contextmanager
    def if_(self, cond: PrimExpr) -> Iterator[None]:
        self._frames.append([])
        yield
        self._emit(("stmt", IfThenElse(cond, self._close())))

    def _close(self) -> Any:
        items = self._frames.pop()
        body: list = []
        for item in reversed(items):  # a let or an allocation scopes everything after it
            if item[0] == "stmt":
                body.insert(0, item[1])
                continue
            rest = seq(*body) if body else Evaluate(const(0, "int32"))
            body = [LetStmt(item[1], item[2], rest) if item[0] == "let" else Allocate(item[1], rest)]
        return seq(*body) if body else Evaluate(const(0, "int32"))

    def func(self, attrs: dict | None = None) -> PrimFunc:
        """The PrimFunc (marked scheduled: default schedules leave hand-written kernels alone)."""
        if len(self._frames) != 1:
            raise RuntimeError(f"KernelBuilder {self.name!r}: func() inside an open loop or if")
        body = self._close()
        self._frames = [[]]
        base = {"global_symbol": self.name, "tir.noalias": True, "tir.is_scheduled": True}
        return PrimFunc(tuple(self.params), dict(self.buffer_map), body, None, {**base, **(attrs or {})})
