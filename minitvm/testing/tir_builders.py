"""Build TensorIR by hand, without the TVMScript parser: small helpers and a few kernels.

The helpers mirror TVMScript's shapes, so a kernel reads much like its TVMScript::

    C = buffer("C", (16, 16))
    body = grid((16, 16, 16), lambda i, j, k: block(
        "C", [("S", 16, i), ("S", 16, j), ("R", 16, k)],
        init=lambda vi, vj, vk: store(C, (vi, vj), 0.0),
        body=lambda vi, vj, vk: store(C, (vi, vj), C[vi, vj] + A[vi, vk] * B[vk, vj])))
    func = prim_func("mm", [A, B, C], body)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import tir
from ..tir import op as _op
from ..tir.analysis import get_block_read_write_region
from ..tir.buffer import Buffer, decl_buffer
from ..tir.expr import IterVar, PrimExpr, Range, Var, const, convert
from ..tir.function import PrimFunc
from ..tir.stmt import Block, BlockRealize, BufferStore, For, ForKind, Stmt, seq

__all__ = ["buffer", "store", "grid", "block", "prim_func", "random_arguments", "mm_relu",
           "broadcast_add", "conv2d_int64", "batch_matmul_relu", "softmax", "KERNELS"]

_AXIS_KINDS = {"S": IterVar.DataPar, "R": IterVar.CommReduce}
_LOOP_NAMES = "ijklmnpq"


def buffer(name: str, shape: Sequence[Any], dtype: str = "float32") -> Buffer:
    """``T.Buffer(shape, dtype)`` named ``name``."""
    return decl_buffer(tuple(shape), dtype, name)


def store(buf: Buffer, indices: Sequence[Any], value: Any) -> BufferStore:
    """``buf[indices] = value`` (a Python number adopts the buffer's dtype)."""
    return BufferStore(buf, convert(value, buf.dtype) if not isinstance(value, PrimExpr) else value,
                       tuple(convert(i) for i in indices))


def grid(extents: Sequence[Any], body: Callable[..., Stmt], names: str | Sequence[str] | None = None,
         kind: str = ForKind.SERIAL) -> Stmt:
    """``for i, j, ... in T.grid(*extents): body(i, j, ...)``."""
    names = list(names or _LOOP_NAMES[:len(extents)])
    loop_vars = [Var(name, "int32") for name in names]
    stmt = body(*loop_vars)
    for var, extent in reversed(list(zip(loop_vars, extents))):
        stmt = For(var, const(0), convert(extent), kind, stmt)
    return stmt


def block(name: str, axes: Sequence[tuple[str, Any, Any]], body: Callable[..., Stmt],
          init: Callable[..., Stmt] | None = None, alloc_buffers: Sequence[Buffer] = (),
          predicate: Any = True) -> BlockRealize:
    """``with T.block(name)``: ``axes`` are ``(kind, extent, value)`` with kind "S" or "R"
    (``T.axis.remap("SSR", [i, j, k])`` is ``[("S", 16, i), ("S", 16, j), ("R", 16, k)]``);
    ``body`` and ``init`` get the block's iteration variables."""
    iter_vars, values = [], []
    for position, (kind, extent, value) in enumerate(axes):
        value = convert(value)
        var_name = "v" + (value.name if isinstance(value, Var) else str(position))
        var = Var(var_name, value.dtype)
        iter_vars.append(IterVar(Range(const(0, value.dtype), convert(extent, value.dtype)), var,
                                 _AXIS_KINDS[kind]))
        values.append(value)
    loop_vars = [iv.var for iv in iter_vars]
    draft = Block(name, tuple(iter_vars), tuple(alloc_buffers), (), (), (),
                  None if init is None else init(*loop_vars), body(*loop_vars))
    reads, writes = get_block_read_write_region(draft)
    final = Block(name, draft.iter_vars, draft.alloc_buffers, (), tuple(reads), tuple(writes),
                  draft.init, draft.body)
    return BlockRealize(tuple(values), convert(predicate), final)


def prim_func(name: str, args: Sequence[Buffer | Var], body: Stmt | Sequence[Stmt],
              alloc_buffers: Sequence[Buffer] = ()) -> PrimFunc:
    """A PrimFunc whose body sits in a root block, as TVMScript builds it."""
    params, buffer_map = [], {}
    for arg in args:
        if isinstance(arg, Buffer):
            handle = Var(f"{arg.name}_handle", "handle")
            params.append(handle)
            buffer_map[handle] = arg
        else:
            params.append(arg)
    if not isinstance(body, Stmt):
        body = seq(*body)
    root = Block("root", body=body, alloc_buffers=tuple(alloc_buffers))
    return PrimFunc(tuple(params), buffer_map, BlockRealize((), const(True), root),
                    attrs={"global_symbol": name, "tir.noalias": True})


def random_arguments(func: PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """One random array per buffer parameter (never zeros): normal floats, small ints."""
    rng = np.random.default_rng(seed)
    arrays = []
    for buf in func.buffers:
        shape = tuple(int(s) for s in buf.shape)
        if buf.dtype.startswith("float"):
            arrays.append(rng.standard_normal(shape).astype(buf.dtype))
        elif buf.dtype == "bool":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(rng.integers(-9, 10, size=shape).astype(buf.dtype))
    return arrays


# -- kernels used by tests and chapters ---------------------------------------------------


def mm_relu(n: int = 16, m: int = 16, k: int = 16, dtype: str = "float32") -> PrimFunc:
    """``C = relu(A @ B)`` in two blocks; the matmul is a reduction with an init."""
    A, B, C = buffer("A", (n, k), dtype), buffer("B", (k, m), dtype), buffer("C", (n, m), dtype)
    Y = buffer("Y", (n, m), dtype)
    matmul = grid((n, m, k), lambda i, j, r: block(
        "Y", [("S", n, i), ("S", m, j), ("R", k, r)],
        init=lambda vi, vj, vk: store(Y, (vi, vj), 0.0),
        body=lambda vi, vj, vk: store(Y, (vi, vj), Y[vi, vj] + A[vi, vk] * B[vk, vj])),
        names="ijk")
    relu = grid((n, m), lambda i, j: block(
        "C", [("S", n, i), ("S", m, j)],
        body=lambda vi, vj: store(C, (vi, vj), _op.max(Y[vi, vj], const(0.0, dtype)))))
    return prim_func("mm_relu", [A, B, C], [matmul, relu], alloc_buffers=[Y])


def broadcast_add(n: int = 8, m: int = 12, dtype: str = "float32") -> PrimFunc:
    """``C[i, j] = A[i, j] + B[j]``."""
    A, B, C = buffer("A", (n, m), dtype), buffer("B", (m,), dtype), buffer("C", (n, m), dtype)
    body = grid((n, m), lambda i, j: block(
        "C", [("S", n, i), ("S", m, j)],
        body=lambda vi, vj: store(C, (vi, vj), A[vi, vj] + B[vj])))
    return prim_func("broadcast_add", [A, B, C], body)


def conv2d_int64(batch: int = 1, in_channels: int = 2, size: int = 6, out_channels: int = 3,
                 kernel: int = 3) -> PrimFunc:
    """A valid (no padding) NCHW convolution on int64 data."""
    out_size = size - kernel + 1
    X = buffer("X", (batch, in_channels, size, size), "int64")
    W = buffer("W", (out_channels, in_channels, kernel, kernel), "int64")
    Out = buffer("Out", (batch, out_channels, out_size, out_size), "int64")
    extents = (batch, out_channels, out_size, out_size, in_channels, kernel, kernel)
    body = grid(extents, lambda b, co, h, w, ci, rh, rw: block(
        "conv", [("S", batch, b), ("S", out_channels, co), ("S", out_size, h), ("S", out_size, w),
                 ("R", in_channels, ci), ("R", kernel, rh), ("R", kernel, rw)],
        init=lambda vb, vco, vh, vw, vci, vrh, vrw: store(Out, (vb, vco, vh, vw), const(0, "int64")),
        body=lambda vb, vco, vh, vw, vci, vrh, vrw: store(
            Out, (vb, vco, vh, vw),
            Out[vb, vco, vh, vw] + X[vb, vci, vh + vrh, vw + vrw] * W[vco, vci, vrh, vrw])),
        names=["b", "co", "h", "w", "ci", "rh", "rw"])
    return prim_func("conv2d", [X, W, Out], body)


def batch_matmul_relu(batch: int = 2, n: int = 8, m: int = 6, k: int = 5) -> PrimFunc:
    """``C[b] = relu(A[b] @ B[b])``."""
    A, B = buffer("A", (batch, n, k)), buffer("B", (batch, k, m))
    C, Y = buffer("C", (batch, n, m)), buffer("Y", (batch, n, m))
    matmul = grid((batch, n, m, k), lambda b, i, j, r: block(
        "Y", [("S", batch, b), ("S", n, i), ("S", m, j), ("R", k, r)],
        init=lambda vb, vi, vj, vk: store(Y, (vb, vi, vj), 0.0),
        body=lambda vb, vi, vj, vk: store(Y, (vb, vi, vj),
                                          Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj])),
        names="bijk")
    relu = grid((batch, n, m), lambda b, i, j: block(
        "C", [("S", batch, b), ("S", n, i), ("S", m, j)],
        body=lambda vb, vi, vj: store(C, (vb, vi, vj), _op.max(Y[vb, vi, vj], const(0.0)))),
        names="bij")
    return prim_func("batch_matmul_relu", [A, B, C], [matmul, relu], alloc_buffers=[Y])


def softmax(n: int = 4, m: int = 10, dtype: str = "float32") -> PrimFunc:
    """Row-wise softmax in three blocks: row max, sum of exponentials, normalize."""
    A, Out = buffer("A", (n, m), dtype), buffer("Out", (n, m), dtype)
    row_max, row_sum = buffer("row_max", (n,), dtype), buffer("row_sum", (n,), dtype)
    max_block = grid((n, m), lambda i, j: block(
        "row_max", [("S", n, i), ("R", m, j)],
        init=lambda vi, vj: store(row_max, (vi,), _op.min_value(dtype)),
        body=lambda vi, vj: store(row_max, (vi,), _op.max(row_max[vi], A[vi, vj]))))
    sum_block = grid((n, m), lambda i, j: block(
        "row_sum", [("S", n, i), ("R", m, j)],
        init=lambda vi, vj: store(row_sum, (vi,), 0.0),
        body=lambda vi, vj: store(row_sum, (vi,), row_sum[vi] + tir.exp(A[vi, vj] - row_max[vi]))))
    norm_block = grid((n, m), lambda i, j: block(
        "Out", [("S", n, i), ("S", m, j)],
        body=lambda vi, vj: store(Out, (vi, vj), tir.exp(A[vi, vj] - row_max[vi]) / row_sum[vi])))
    return prim_func("softmax", [A, Out], [max_block, sum_block, norm_block],
                     alloc_buffers=[row_max, row_sum])


#: every example kernel, by name (each builder takes only optional size arguments)
KERNELS = {"mm_relu": mm_relu, "broadcast_add": broadcast_add, "conv2d_int64": conv2d_int64,
           "batch_matmul_relu": batch_matmul_relu, "softmax": softmax}
