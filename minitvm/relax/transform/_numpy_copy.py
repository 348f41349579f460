"""FoldConstant's kernels that only move data (weight layouts, transposes, pads), run with numpy.

Such a kernel (every store a load or a constant, perhaps chosen by a condition: see
``fold_constant._moves_data_only``) computes nothing; what it does is which input element lands
where, and that is integer index arithmetic.  numpy evaluates the loop nest over the whole
iteration space at once (each loop variable an ``arange`` on an axis of its own) and copies the
elements: the same bits as the compiled kernel, without an LLVM build (MobileNetV2's 19 weight
layouts cost LLVM ~0.4 s of CPU, which the compile waited for).

Only the plain shape is taken: perfect nests of serial loops from constants, one block each
(no init, no buffer of its own) storing into an output; loads from inputs only.  Anything
else -- another node, a load or store out of bounds where it would run, an element written
twice or never -- is refused (None), and the kernel is compiled as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tir import expr as E
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt

__all__ = ["copy_with_numpy", "may_copy_with_numpy"]


class _Refused(Exception):
    """The kernel is not one :func:`copy_with_numpy` evaluates exactly."""


_INT_OPS = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.Min: np.minimum, E.Max: np.maximum}
_FLOOR_OPS = {E.FloorDiv: np.floor_divide, E.FloorMod: np.mod}
_TRUNC_OPS = {E.Div: np.floor_divide, E.Mod: np.mod}  # equal to floor's on operands >= 0 (checked)
_CMP_OPS = {E.EQ: np.equal, E.NE: np.not_equal, E.LT: np.less, E.LE: np.less_equal, E.GT: np.greater,
            E.GE: np.greater_equal, E.And: np.logical_and, E.Or: np.logical_or}
_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.Cast, E.Not, E.Select, E.BufferLoad, E.Call)


def _nests(func: PrimFunc) -> list[tuple[list[For], BlockRealize]]:
    """The function's loop nests (outermost loop first) and the block each holds."""
    body = func.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars:  # the root block
        root = body.block
        if root.alloc_buffers or root.match_buffers or root.init is not None:
            raise _Refused
        body = root.body
    found = []
    for stmt in body.seq if isinstance(body, SeqStmt) else (body,):
        loops = []
        while isinstance(stmt, For):
            if (stmt.kind == ForKind.THREAD_BINDING or not isinstance(stmt.min, E.IntImm)
                    or not isinstance(stmt.extent, E.IntImm)):
                raise _Refused
            loops.append(stmt)
            stmt = stmt.body
        if not isinstance(stmt, BlockRealize):
            raise _Refused
        block = stmt.block
        if (not isinstance(block, Block) or block.alloc_buffers or block.match_buffers
                or block.init is not None or not isinstance(block.body, BufferStore)):
            raise _Refused
        found.append((loops, stmt))
    return found


def may_copy_with_numpy(func: PrimFunc) -> bool:
    """Whether ``func``'s shape is one :func:`copy_with_numpy` takes (it may still refuse:
    bounds and coverage are known only from the values)."""
    try:
        nests = _nests(func)
    except _Refused:
        return False
    known = (*_LEAVES, *_INT_OPS, *_FLOOR_OPS, *_TRUNC_OPS, *_CMP_OPS)
    ok = [True]

    def check(n: Any) -> None:
        if isinstance(n, E.PrimExpr) and not isinstance(n, known):
            ok[0] = False

    for _, realize in nests:
        post_order_visit(realize, check)
    return ok[0]


def copy_with_numpy(func: PrimFunc, inputs: list[np.ndarray], outs: list[tuple[tuple, str]]) -> list[np.ndarray] | None:
    """The outputs (shape, dtype each) of ``func`` run on ``inputs``, or None (refused)."""
    buffers = [func.buffer_map.get(p) for p in func.params]
    if len(buffers) != len(inputs) + len(outs) or any(b is None for b in buffers):
        return None
    try:
        for b, a in zip(buffers, inputs):
            _require_fits(b, a.shape, str(a.dtype))
        for b, (shape, dtype) in zip(buffers[len(inputs):], outs):
            _require_fits(b, shape, dtype)
        arrays = dict(zip(buffers, inputs))
        results = {b: _Output(shape, dtype) for b, (shape, dtype) in zip(buffers[len(inputs):], outs)}
        if len(arrays) != len(inputs) or len(results) != len(outs):
            return None
        for loops, realize in _nests(func):
            _run_nest(loops, realize, arrays, results)
    except (_Refused, TypeError, ValueError, IndexError, ZeroDivisionError, FloatingPointError):
        return None
    if not all(r.writes == r.array.size and r.written.all() for r in results.values()):
        return None  # an element written twice (which write wins is the loop order's) or never
    return [results[b].array for b in buffers[len(inputs):]]


class _Output:
    """An output array, which of its elements were written, and how many writes there were (as
    many as elements, every one written: each written once)."""

    def __init__(self, shape: tuple, dtype: str) -> None:
        self.array = np.empty(shape, dtype)
        self.written = np.zeros(self.array.size, np.bool_)
        self.writes = 0


def _require_fits(buffer: Any, shape: tuple, dtype: str) -> None:
    """Refuse a buffer that is not a dense, unoffset array of ``shape`` and ``dtype``."""
    dims = tuple(d.value if isinstance(d, E.IntImm) else None for d in buffer.shape)
    if buffer.strides or not (isinstance(buffer.elem_offset, int) and buffer.elem_offset == 0
                              or isinstance(buffer.elem_offset, E.IntImm) and buffer.elem_offset.value == 0):
        raise _Refused
    if dims != tuple(shape) or buffer.dtype != dtype:
        raise _Refused


def _run_nest(loops: list[For], realize: BlockRealize, arrays: dict, results: dict) -> None:
    """One nest's stores, every iteration at once (each loop variable on an axis of its own)."""
    depth = len(loops)
    env: dict = {}
    for axis, loop in enumerate(loops):
        shape = [1] * depth
        shape[axis] = loop.extent.value
        start = loop.min.value
        env[loop.loop_var] = np.arange(start, start + loop.extent.value, dtype=np.int64).reshape(shape)
    full = tuple(loop.extent.value for loop in loops)
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        env[iv.var] = _value(value, env, arrays, True)
    mask = _value(realize.predicate, env, arrays, True)
    mask = True if np.all(mask) else np.broadcast_to(np.asarray(mask, dtype=bool), full)
    store = realize.block.body
    if store.buffer not in results or getattr(store, "predicate", None) is not None:
        raise _Refused
    out = results[store.buffer]
    flat = np.broadcast_to(_flat_index(store.indices, out.array.shape, env, arrays, mask), full)
    value = np.broadcast_to(_value(store.value, env, arrays, mask), full)
    if value.dtype != out.array.dtype:
        raise _Refused
    flat, value = (flat.reshape(-1), value.reshape(-1)) if mask is True else (flat[mask], value[mask])
    out.array.reshape(-1)[flat] = value
    out.written[flat] = True
    out.writes += flat.size


def _flat_index(indices: tuple, shape: tuple, env: dict, arrays: dict, mask: Any) -> Any:
    """The row-major offset of ``indices`` into ``shape`` (refused out of bounds where ``mask``
    holds; elsewhere clipped into bounds, an element not used)."""
    if len(indices) != len(shape):
        raise _Refused
    flat: Any = np.int64(0)
    for i, n in zip(indices, shape):
        idx = _value(i, env, arrays, mask)
        if not np.issubdtype(np.asarray(idx).dtype, np.integer):
            raise _Refused
        if mask is True:
            if np.min(idx) < 0 or np.max(idx) >= n:
                raise _Refused
        else:
            if np.any(((idx < 0) | (idx >= n)) & mask):
                raise _Refused
            idx = np.clip(idx, 0, n - 1)
        flat = flat * n + idx
    return flat


def _value(e: Any, env: dict, arrays: dict, mask: Any) -> Any:
    """``e`` over the iteration space (``mask``: where its value is used)."""
    if isinstance(e, E.Var):
        if e not in env:
            raise _Refused
        return env[e]
    if isinstance(e, E.IntImm):
        return np.int64(e.value) if e.dtype != "bool" else np.bool_(e.value)
    if isinstance(e, E.FloatImm):
        return np.array(e.value, dtype=e.dtype)  # (TypeError: a dtype numpy lacks)
    if isinstance(e, E.BufferLoad):
        return _load(e, env, arrays, mask)
    if isinstance(e, E.Call):
        if e.op != "tir.if_then_else" or len(e.args) != 3:
            raise _Refused
        cond = _value(e.args[0], env, arrays, mask)
        return np.where(cond, _value(e.args[1], env, arrays, mask & cond),
                        _value(e.args[2], env, arrays, mask & np.logical_not(cond)))
    if isinstance(e, E.Select):  # both sides evaluated
        return np.where(_value(e.condition, env, arrays, mask), _value(e.true_value, env, arrays, mask),
                        _value(e.false_value, env, arrays, mask))
    if isinstance(e, E.Not):
        return np.logical_not(_value(e.a, env, arrays, mask))
    if isinstance(e, E.Cast):
        if not (e.dtype.startswith("int") and (e.value.dtype.startswith("int") or e.value.dtype == "bool")):
            raise _Refused  # (indices are int64 here; a bool is 0 or 1)
        return np.asarray(_value(e.value, env, arrays, mask)).astype(np.int64)
    return _binary(e, env, arrays, mask)


def _binary(e: Any, env: dict, arrays: dict, mask: Any) -> Any:
    op = type(e)
    if op in _CMP_OPS:
        return _CMP_OPS[op](_value(e.a, env, arrays, mask), _value(e.b, env, arrays, mask))
    if not (e.dtype.startswith("int") and op in {**_INT_OPS, **_FLOOR_OPS, **_TRUNC_OPS}):
        raise _Refused  # arithmetic on values, or a node not known here
    a, b = _value(e.a, env, arrays, mask), _value(e.b, env, arrays, mask)
    if op in _INT_OPS:
        return _INT_OPS[op](a, b)
    if np.any((b == 0) & mask):
        raise _Refused
    if op in _TRUNC_OPS and (np.any((a < 0) & mask) or np.any((b < 0) & mask)):
        raise _Refused
    b = np.where(b == 0, 1, b)  # (where the value is not used)
    return (_FLOOR_OPS.get(op) or _TRUNC_OPS[op])(a, b)


def _load(e: E.BufferLoad, env: dict, arrays: dict, mask: Any) -> Any:
    """``buffer[indices]`` where ``mask`` holds; elsewhere any element (not used)."""
    if e.buffer not in arrays or e.predicate is not None:
        raise _Refused
    data = arrays[e.buffer]
    return data.reshape(-1).take(_flat_index(e.indices, data.shape, env, arrays, mask))
