"""Hypothesis strategies for differential fuzzing: random programs, schedules and Relax graphs.

A fuzzer invents inputs no one thought of and checks that independent implementations
agree on them.  Here the implementations are the LLVM backend, the reference interpreter
and plain numpy.  Everything this module draws is *data* (frozen dataclasses), not IR:

* :func:`tir_programs` draws a :class:`TirProgram`: one to three stages, each elementwise
  (unary/binary math, casts, broadcasts, transposed reads) or a reduction (sum/max/min over
  one or more axes), chained producer -> consumer through intermediate buffers.
  ``program.build()`` makes the PrimFunc with TE, ``program.reference(arrays)`` computes
  the same thing with numpy.
* :func:`schedule_steps` draws a list of :class:`Step` (a primitive and some integer
  "picks"); :func:`apply_schedule` resolves the picks against the schedule at hand (which
  block, which loop, which factor) and applies each step, checking that a step that raises
  ``ScheduleError`` leaves the schedule untouched.
* :func:`relax_graphs` draws a :class:`RelaxGraph` of supported Relax operators;
  ``graph.build()`` emits it with ``relax.BlockBuilder`` and ``graph.reference(arrays)``
  evaluates it with numpy.

Because the drawn values are plain data, hypothesis prints a failing case readably and
shrinks it to a small one (fewer stages, fewer steps, extent 1, pick 0), and
``tests/fuzz/test_regressions.py`` can keep the shrunk case as an ordinary test.

Values are kept finite on purpose: every expression carries a bound on its magnitude and
the strategies only pick an operator (``exp``, ``*``) when the result stays small, and
discontinuous operators (floor, casts to int) only read inputs, never computed values,
so float rounding differences between backends cannot flip them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import strategies as st

from .. import relax, te, tir
from ..driver import build as build_module
from ..ir import dtype as _dt
from ..ir.structural import assert_structural_equal, structural_equal
from ..relax import op as R
from ..script import from_source
from ..tir import op as _op
from ..tir import semantics as _semantics
from ..tir.function import PrimFunc
from ..tir.op_table import UNARY as OP_TABLE_UNARY
from ..tir.op_table import ElementwiseOp
from ..tir.schedule import ScheduleError
from ..tir.stmt_functor import block_realizes

__all__ = [
    "Load", "Const", "Unary", "Binary", "Stage", "TirProgram", "tir_programs",
    "Step", "PRIMITIVES", "schedule_steps", "apply_schedule",
    "RelaxNode", "RelaxGraph", "relax_graphs",
    "assert_round_trip", "tolerance", "OpCase", "semantics_cases", "check_op_case", "edge_values",
    "SEMANTICS_DTYPES", "CAST_DTYPES",
]

#: loop extents the programs use: 1, small primes and powers of two
EXTENTS = (1, 2, 3, 4, 5, 7, 8, 11, 13, 16)
#: the largest iteration space of one stage (the interpreter runs every point in Python)
MAX_POINTS = 1024
#: the magnitude bound of seeded standard-normal inputs (and of small ints in [-9, 9])
INPUT_BOUND = {"float32": 5.0, "int32": 9.0}
#: a result must stay below this; operators that could exceed it are not drawn
MAX_BOUND = 1e6


# =========================================================================================
# TIR programs
# =========================================================================================

@dataclass(frozen=True)
class Load:
    """Read ``tensor`` at the current grid point: its dim ``d`` reads grid axis ``axes[d]``
    (``None``: the dim has extent 1 and is read at index 0, a broadcast), at index
    ``axis * strides[d] + offsets[d]`` (empty: stride 1, offset 0), so a stage can read a
    window of its producer (a stencil) or every other element (like pooling)."""

    tensor: str
    axes: tuple[int | None, ...]
    offsets: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()

    def stride(self, d: int) -> int:
        return self.strides[d] if self.strides else 1

    def offset(self, d: int) -> int:
        return self.offsets[d] if self.offsets else 0


@dataclass(frozen=True)
class Const:
    """A scalar constant of the program's dtype."""

    value: float | int


@dataclass(frozen=True)
class Unary:
    """``op(arg)``, ``op`` a key of :data:`UNARY`."""

    op: str
    arg: Any


@dataclass(frozen=True)
class Binary:
    """``op(lhs, rhs)``, ``op`` a key of :data:`BINARY`."""

    op: str
    lhs: Any
    rhs: Any


@dataclass(frozen=True)
class Stage:
    """One ``te.compute``: output ``shape`` (the spatial axes of the grid), optional
    reduction axes of ``reduce_extents`` combined by ``reducer``, and the ``body`` read
    at every grid point (grid = spatial axes, then reduction axes)."""

    name: str
    shape: tuple[int, ...]
    reduce_extents: tuple[int, ...]
    reducer: str | None
    body: Any

    @property
    def grid(self) -> tuple[int, ...]:
        return self.shape + self.reduce_extents


@dataclass(frozen=True)
class _Op:
    """An operator in both worlds: how TE builds it, how numpy computes it, and how it
    bounds the magnitude of its result (``None``: not allowed for these argument bounds)."""

    te: Callable[..., Any]
    np: Callable[..., Any]
    bound: Callable[..., float | None]
    dtypes: tuple[str, ...] = ("float32",)
    inputs_only: bool = False  # discontinuous: only applied to input loads
    last_stage_only: bool = False  # may raise: only where every point is computed under any schedule


def _f32(x: Any) -> Any:
    return tir.const(x, "float32")


def _limited(b: float) -> float | None:
    return b if b <= MAX_BOUND else None


UNARY: dict[str, _Op] = {
    "neg": _Op(_op.neg, np.negative, lambda b: b, ("float32", "int32")),
    "abs": _Op(_op.abs, np.abs, lambda b: b, ("float32", "int32")),
    "exp": _Op(_op.exp, np.exp, lambda b: math.exp(b) if b <= 12 else None),
    "tanh": _Op(_op.tanh, np.tanh, lambda b: 1.0),
    "sigmoid": _Op(_op.sigmoid, lambda x: 1 / (1 + np.exp(-x)), lambda b: 1.0),
    "sqrt_abs": _Op(lambda x: _op.sqrt(_op.abs(x)), lambda x: np.sqrt(np.abs(x)), math.sqrt),
    "log1p_abs": _Op(lambda x: _op.log(_op.abs(x) + _f32(1)), lambda x: np.log(np.abs(x) + 1),
                     lambda b: math.log(b + 1)),
    "floor": _Op(_op.floor, np.floor, lambda b: b + 1, inputs_only=True),
    "ceil": _Op(_op.ceil, np.ceil, lambda b: b + 1, inputs_only=True),
    # float -> int32 truncates toward zero, then back to float
    "trunc_via_int": _Op(lambda x: _op.cast(_op.cast(x, "int32"), "float32"), np.trunc, lambda b: b,
                         inputs_only=True),
    # int -> float32 -> int is exact for these magnitudes: checks both conversions
    "via_float": _Op(lambda x: _op.cast(_op.cast(x, "float32"), "int32"), lambda x: x, lambda b: b, ("int32",)),
}

BINARY: dict[str, _Op] = {
    "add": _Op(_op.add, np.add, lambda a, b: _limited(a + b), ("float32", "int32")),
    "sub": _Op(_op.sub, np.subtract, lambda a, b: _limited(a + b), ("float32", "int32")),
    "mul": _Op(_op.mul, np.multiply, lambda a, b: _limited(a * b), ("float32", "int32")),
    "max": _Op(_op.max, np.maximum, max, ("float32", "int32")),
    "min": _Op(_op.min, np.minimum, max, ("float32", "int32")),
    # a denominator of at least 1: no division by (almost) zero
    "div_safe": _Op(lambda a, b: _op.div(a, _op.abs(b) + _f32(1)), lambda a, b: a / (np.abs(b) + 1),
                    lambda a, b: a),
    "select_lt": _Op(lambda a, b: _op.if_then_else(a < b, b - a, a),
                     lambda a, b: np.where(a < b, b - a, a), lambda a, b: _limited(a + b), ("float32", "int32")),
    # integer division and modulo by a positive constant (the rhs is always a Const)
    "floordiv_c": _Op(_op.floordiv, np.floor_divide, lambda a, b: a, ("int32",)),
    "floormod_c": _Op(_op.floormod, np.mod, lambda a, b: b, ("int32",)),
    # ... and by computed values, zero included: then the program must fail in every backend
    # (only in the last stage: inlining a producer into a strided consumer would skip some points)
    "floordiv": _Op(_op.floordiv, lambda a, b: _np_int_division(np.floor_divide, a, b), lambda a, b: a,
                    ("int32",), last_stage_only=True),
    "floormod": _Op(_op.floormod, lambda a, b: _np_int_division(np.mod, a, b), lambda a, b: b,
                    ("int32",), last_stage_only=True),
}


def _np_int_division(fn: Callable, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's integer division, raising where TIR's meaning is an error (a zero divisor)."""
    if np.any(np.broadcast_to(b, np.broadcast_shapes(np.shape(a), np.shape(b))) == 0):
        raise _semantics.IntegerDivisionByZero("integer division by zero")
    return fn(a, b)

_CONST_RHS = ("floordiv_c", "floormod_c")
REDUCERS = {"sum": (te.sum, np.sum), "max": (te.max, np.max), "min": (te.min, np.min)}


@dataclass(frozen=True)
class TirProgram:
    """A random tensor program: ``inputs`` (name, shape) and ``stages`` computed in order;
    the last stage is the output, the others become intermediate ``alloc_buffer``s."""

    dtype: str
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    stages: tuple[Stage, ...]

    def build(self) -> PrimFunc:
        """The PrimFunc (parameters: the inputs, then the output) built with TE."""
        tensors = {name: te.placeholder(shape, self.dtype, name=name) for name, shape in self.inputs}
        for stage in self.stages:
            tensors[stage.name] = _te_stage(stage, tensors, self.dtype)
        last = self.stages[-1].name
        return te.create_prim_func([tensors[name] for name, _ in self.inputs] + [tensors[last]])

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Seeded inputs, never zeros: standard normal floats, ints in [-9, 9]."""
        rng = np.random.default_rng(seed)
        if self.dtype == "int32":
            return [rng.integers(-9, 10, size=shape).astype("int32") for _, shape in self.inputs]
        return [rng.standard_normal(shape).astype("float32") for _, shape in self.inputs]

    def reference(self, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, float]:
        """numpy's output for ``arrays``, and the largest magnitude of any intermediate value
        (the scale float tolerances are relative to)."""
        wide = "int64" if self.dtype == "int32" else "float64"
        values = {name: np.asarray(a).astype(wide) for (name, _), a in zip(self.inputs, arrays)}
        scale = [max([0.0] + [float(np.max(np.abs(a))) for a in values.values() if a.size])]
        for stage in self.stages:
            out = _np_stage(stage, values, scale)
            # intermediate buffers hold the program's dtype: round like the compiled code does
            values[stage.name] = out.astype(self.dtype).astype(wide)
        return values[self.stages[-1].name].astype(self.dtype), scale[0]


def _te_expr(e: Any, tensors: dict, idx: Sequence[Any], dtype: str) -> Any:
    if isinstance(e, Load):
        return tensors[e.tensor][tuple(0 if a is None else _affine(idx[a], e.stride(d), e.offset(d))
                                       for d, a in enumerate(e.axes))]
    if isinstance(e, Const):
        return tir.const(e.value, dtype)
    if isinstance(e, Unary):
        return UNARY[e.op].te(_te_expr(e.arg, tensors, idx, dtype))
    return BINARY[e.op].te(_te_expr(e.lhs, tensors, idx, dtype), _te_expr(e.rhs, tensors, idx, dtype))


def _affine(i: Any, stride: int, offset: int) -> Any:
    """``i * stride + offset``, written without the identity parts."""
    i = i * stride if stride != 1 else i
    return i + offset if offset else i


def _te_stage(stage: Stage, tensors: dict, dtype: str) -> Any:
    if stage.reducer is None:
        return te.compute(stage.shape, lambda *i: _te_expr(stage.body, tensors, i, dtype), name=stage.name)
    ks = [te.reduce_axis((0, e), f"k{n}") for n, e in enumerate(stage.reduce_extents)]
    reduce = REDUCERS[stage.reducer][0]
    return te.compute(stage.shape, lambda *i: reduce(_te_expr(stage.body, tensors, list(i) + ks, dtype),
                                                     axis=ks), name=stage.name)


def _np_load(load: Load, arr: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    """The value of ``load`` at every grid point, as an array of shape ``grid``."""
    picked = arr[tuple(0 if a is None else slice(load.offset(d), load.offset(d) + load.stride(d) * (grid[a] - 1) + 1,
                                                 load.stride(d))
                       for d, a in enumerate(load.axes))]
    kept = [a for a in load.axes if a is not None]
    picked = np.transpose(picked, np.argsort(kept)) if kept else picked
    shape = [grid[a] if a in kept else 1 for a in range(len(grid))]
    return np.broadcast_to(picked.reshape(shape), grid)


def _np_expr(e: Any, values: dict, grid: tuple[int, ...], scale: list[float]) -> np.ndarray:
    if isinstance(e, Load):
        out = _np_load(e, values[e.tensor], grid)
    elif isinstance(e, Const):
        out = np.full(grid, e.value, "int64" if isinstance(e.value, int) else "float64")
    elif isinstance(e, Unary):
        out = UNARY[e.op].np(_np_expr(e.arg, values, grid, scale))
    else:
        out = BINARY[e.op].np(_np_expr(e.lhs, values, grid, scale), _np_expr(e.rhs, values, grid, scale))
    if out.size:
        scale[0] = max(scale[0], float(np.max(np.abs(out))))
    return out


def _np_stage(stage: Stage, values: dict, scale: list[float]) -> np.ndarray:
    body = np.broadcast_to(_np_expr(stage.body, values, stage.grid, scale), stage.grid)
    if stage.reducer is None:
        return np.array(body)
    axes = tuple(range(len(stage.shape), len(stage.grid)))
    return np.asarray(REDUCERS[stage.reducer][1](body, axis=axes))


# -- drawing programs ---------------------------------------------------------------------

def _extents(draw: Any, rank: int, budget: int) -> tuple[int, ...]:
    """``rank`` extents whose product stays within ``budget``."""
    out = []
    for _ in range(rank):
        allowed = [e for e in EXTENTS if e <= budget]
        e = draw(st.sampled_from(allowed))
        out.append(e)
        budget //= e
    return tuple(out)


def _broadcast_load(draw: Any, name: str, grid: tuple[int, ...]) -> tuple[Load, tuple[int, ...]]:
    """A fresh input read along a random subset of the grid axes, in random order, with
    possibly an extra extent-1 dim: a broadcast (and maybe a transposed) operand."""
    axes: list[int | None] = draw(st.lists(st.sampled_from(range(len(grid))), unique=True, max_size=len(grid))
                                  if grid else st.just([]))
    if draw(st.booleans()):
        axes.insert(draw(st.integers(0, len(axes))), None)
    return Load(name, tuple(axes)), tuple(1 if a is None else grid[a] for a in axes)


def _leaf_op(draw: Any, expr: tuple[Any, float, bool], dtype: str) -> tuple[Any, float, bool]:
    """Maybe wrap ``(expr, bound, is_input_load)`` in a unary operator allowed there."""
    e, b, is_input = expr
    names = [n for n, o in UNARY.items() if dtype in o.dtypes and (is_input or not o.inputs_only)
             and o.bound(b) is not None]
    if not draw(st.booleans()):
        return expr
    name = draw(st.sampled_from(names))
    return Unary(name, e), UNARY[name].bound(b), False


def _combine(draw: Any, lhs: tuple, rhs: tuple, dtype: str, last: bool) -> tuple[Any, float, bool]:
    """A binary operator over two expressions (``last``: in the last stage)."""
    names = [n for n, o in BINARY.items() if dtype in o.dtypes and n not in _CONST_RHS
             and (last or not o.last_stage_only) and o.bound(lhs[1], rhs[1]) is not None]
    name = draw(st.sampled_from(names)) if names else "max"
    return Binary(name, lhs[0], rhs[0]), BINARY[name].bound(lhs[1], rhs[1]), False


def _body(draw: Any, leaves: list[tuple[Any, float, bool]], dtype: str, last: bool) -> tuple[Any, float]:
    """An expression tree using every leaf once (plus maybe a constant), smallest first."""
    items = [_leaf_op(draw, leaf, dtype) for leaf in leaves]
    if draw(st.booleans()):
        value = draw(st.sampled_from([2, -3, 5] if dtype == "int32" else [0.5, -1.5, 3.0]))
        items.insert(draw(st.integers(0, len(items))), (Const(value), abs(value), False))
    while len(items) > 1:
        k = draw(st.integers(0, len(items) - 2))
        items[k:k + 2] = [_combine(draw, items[k], items[k + 1], dtype, last)]
    e, b, _ = items[0]
    if dtype == "int32" and draw(st.booleans()):
        name = draw(st.sampled_from(_CONST_RHS))
        c = draw(st.sampled_from([1, 3, 4, 7]))
        e, b = Binary(name, e, Const(c)), BINARY[name].bound(b, c)
    e, b, _ = _leaf_op(draw, (e, b, False), dtype)
    return e, b


@st.composite
def tir_programs(draw: Any, dtypes: Sequence[str] = ("float32", "int32"), max_stages: int = 3) -> TirProgram:
    """A random well-typed :class:`TirProgram` (see the module docstring)."""
    dtype = draw(st.sampled_from(dtypes))
    inputs: list[tuple[str, tuple[int, ...]]] = []
    stages: list[Stage] = []
    bounds: dict[str, float] = {}
    n_stages = draw(st.integers(1, max_stages))
    for s in range(n_stages):
        name = "out" if s == n_stages - 1 else f"T{s}"
        stage, new_inputs, bound = _draw_stage(draw, name, stages[-1] if stages else None,
                                               bounds, dtype, len(inputs))
        inputs += new_inputs
        stages.append(stage)
        bounds[name] = bound
    return TirProgram(dtype, tuple(inputs), tuple(stages))


def _input_name(k: int) -> str:
    return "ABCDEFGHJKLMNPQRSUVW"[k]


def _draw_grid(draw: Any, prev: Stage | None) -> tuple[tuple[int, ...], tuple[int, ...], list[Load]]:
    """Spatial and reduction extents of a stage, and the reads of the previous stage's output."""
    reduce = draw(st.booleans())
    if prev is None:
        spatial = _extents(draw, draw(st.integers(0 if reduce else 1, 3)), MAX_POINTS)
        budget = MAX_POINTS // max(1, math.prod(spatial))
        return spatial, _extents(draw, draw(st.integers(1, 2)), budget) if reduce else (), []
    # the consumer iterates over a permutation of the producer's dims (each maybe read through
    # a window or a stride, so it has fewer points), reducing the last few
    windows = [_draw_window(draw, e) for e in prev.shape]
    extents = [(e - span - 1) // stride + 1 for e, (stride, span) in zip(prev.shape, windows)]
    order = draw(st.permutations(range(len(prev.shape))))
    n_reduce = draw(st.integers(1, len(order))) if reduce and order else 0
    kept, reduced = order[:len(order) - n_reduce], order[len(order) - n_reduce:]
    spatial = [extents[d] for d in kept]
    new_axis = draw(st.booleans()) and math.prod(prev.shape) * 16 <= MAX_POINTS
    position = draw(st.integers(0, len(spatial))) if new_axis else None
    if new_axis:  # broadcast the producer along a new axis
        spatial.insert(position, draw(st.sampled_from(EXTENTS)))
    grid_axis = {}
    for g, d in enumerate(kept):
        grid_axis[d] = g + (1 if new_axis and g >= position else 0)
    for g, d in enumerate(reduced):
        grid_axis[d] = len(spatial) + g
    axes = tuple(grid_axis[d] for d in range(len(prev.shape)))
    strides = tuple(stride for stride, _ in windows)
    taps = {tuple(0 for _ in windows)}  # one read at the window's start, maybe one more inside it
    if draw(st.booleans()):
        taps.add(tuple(draw(st.integers(0, span)) for _, span in windows))
    loads = [Load(prev.name, axes, tap if any(tap) else (), strides if any(s != 1 for s in strides) else ())
             for tap in sorted(taps)]
    return tuple(spatial), tuple(extents[d] for d in reduced), loads


def _draw_window(draw: Any, extent: int) -> tuple[int, int]:
    """How a consumer reads one producer dim of ``extent``: (stride, window span); mostly
    (1, 0), the plain elementwise read."""
    if extent == 1 or not draw(st.booleans()):
        return 1, 0
    span = draw(st.integers(0, min(2, extent - 1)))
    return draw(st.sampled_from([1, 2])), span


def _draw_stage(draw: Any, name: str, prev: Stage | None, bounds: dict, dtype: str,
                n_inputs: int) -> tuple[Stage, list, float]:
    spatial, reduce_extents, prev_loads = _draw_grid(draw, prev)
    grid = spatial + reduce_extents
    leaves, new_inputs = [], []
    if prev_loads:
        leaves += [(load, bounds[prev.name], False) for load in prev_loads]
    else:  # the main input covers the whole grid, its dims in a random order
        axes = tuple(draw(st.permutations(range(len(grid)))))
        new_inputs.append((_input_name(n_inputs), tuple(grid[a] for a in axes)))
        leaves.append((Load(new_inputs[0][0], axes), INPUT_BOUND[dtype], True))
    for _ in range(draw(st.integers(0, 2))):
        load, shape = _broadcast_load(draw, _input_name(n_inputs + len(new_inputs)), grid)
        new_inputs.append((load.tensor, shape))
        leaves.append((load, INPUT_BOUND[dtype], True))
    body, bound = _body(draw, leaves, dtype, last=name == "out")
    reducer = draw(st.sampled_from(sorted(REDUCERS))) if reduce_extents else None
    if reducer == "sum":
        bound *= math.prod(reduce_extents)
    if bound > MAX_BOUND:  # a sum that could grow too large: take the max instead
        reducer, bound = "max", bound / math.prod(reduce_extents)
    return Stage(name, spatial, reduce_extents, reducer, body), new_inputs, bound


def tolerance(dtype: str, scale: float) -> dict:
    """``assert_allclose`` tolerances: exact for ints; for floats relative to the largest
    intermediate magnitude, since sums reassociated by a schedule round differently."""
    if dtype.startswith("int"):
        return {"rtol": 0, "atol": 0}
    return {"rtol": 1e-4, "atol": 1e-4 * max(1.0, scale)}


# =========================================================================================
# The semantics table, row by row
# =========================================================================================

#: the dtypes :func:`semantics_cases` draws (float16 aside: LLVM may keep excess precision)
SEMANTICS_DTYPES = ("bool", "int8", "int32", "int64", "uint8", "uint32", "float32", "float64")
#: the dtypes casts are drawn from: a cast rounds once, so float16 has no excess precision to keep
CAST_DTYPES = SEMANTICS_DTYPES + ("float16",)


def edge_values(dtype: str, n: int, seed: int, shift_amounts: bool = False) -> np.ndarray:
    """``n`` seeded values of ``dtype``, about half of them edges: 0, +-1, the type's extremes,
    NaN, infinities, signed zeros, floats too large for any int (``shift_amounts``: integers
    around the shift range [0, bits), the negative ones too)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if _dt.is_float(dtype):
        edges = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 1e30, 255.5, -129.0]
        common = rng.standard_normal(n) * rng.choice([1.0, 100.0], n)
    else:
        info = np.iinfo(dtype)
        if shift_amounts:
            bits = np.dtype(dtype).itemsize * 8
            edges = [bits, bits - 1, bits + 1, 0, 2 * bits] + ([-1, -bits] if info.min < 0 else [])
            common = rng.integers(0, bits, n)
        else:
            edges = [0, 1, info.max, info.min, info.max - 1] + ([-1, info.min + 1] if info.min < 0 else [])
            common = rng.integers(max(info.min, -100), min(info.max, 100) + 1, n)
    picked = np.where(rng.random(n) < 0.5, rng.choice(np.array(edges, dtype="float64" if _dt.is_float(dtype)
                                                                else "int64"), n), common)
    with np.errstate(over="ignore"):  # the large edges are infinite in float16
        return picked.astype(dtype)


@dataclass(frozen=True)
class OpCase:
    """One row of :data:`minitvm.tir.semantics.ROWS` (or a cast, ``row == "cast"`` to ``to``) on
    ``n`` seeded values of ``dtype``, the loop ``vectorized`` or serial."""

    row: str
    dtype: str
    seed: int
    n: int = 16
    vectorized: bool = False
    to: str = ""

    def semantics(self) -> Any:
        return _ROWS_BY_NAME[self.row] if self.row != "cast" else None

    def operand_dtypes(self) -> list[str]:
        if self.row == "cast":
            return [self.dtype]
        row = self.semantics()
        if row.node is not None and row.node.__name__ == "Select":
            return ["bool", self.dtype, self.dtype]
        return [self.dtype] * row.arity

    def result_dtype(self) -> str:
        return self.to if self.row == "cast" else self.semantics().result_dtype(self.dtype)

    def inputs(self) -> list[np.ndarray]:
        shifts = self.row.startswith("shift")
        return [edge_values(d, self.n, self.seed + k, shift_amounts=shifts and k == 1)
                for k, d in enumerate(self.operand_dtypes())]

    def expression(self, operands: Sequence[Any]) -> Any:
        """The operation on ``operands``, built without folding (as a node or a call)."""
        if self.row == "cast":
            return tir.Cast(self.to, operands[0])
        row = self.semantics()
        if row.node is not None:
            return row.node(*operands)
        if row.llvm_intrin is not None:  # T.call_llvm_pure_intrin(dtype, "llvm.fma", ...)
            return tir.Call(row.result_dtype(self.dtype), _semantics.LLVM_PURE_INTRIN,
                            (tir.StringImm(row.llvm_intrin),) + tuple(operands))
        return tir.Call(row.result_dtype(self.dtype), row.op, tuple(operands))

    def folded(self, inputs: Sequence[np.ndarray]) -> np.ndarray:
        """The constant folder's answer, element by element (raises what it raises)."""
        out = []
        for values in zip(*inputs):
            values = [v.item() for v in values]
            if self.row == "cast":
                out.append(_semantics.cast_value(values[0], self.dtype, self.to))
            else:
                out.append(self.semantics().fold(self.dtype, *values))
        return np.array(out).astype(self.result_dtype()) if out else np.zeros(0, self.result_dtype())

    def build(self) -> PrimFunc:
        """``out[i] = op(A0[i], A1[i], ...)``; its loop vectorized when ``vectorized``."""
        args = [te.placeholder((self.n,), d, name=f"A{k}") for k, d in enumerate(self.operand_dtypes())]
        out = te.compute((self.n,), lambda i: self.expression([a[i] for a in args]), name="out")
        func = te.create_prim_func(args + [out])
        if not self.vectorized:
            return func
        sch = tir.Schedule(func)
        sch.vectorize(sch.get_loops(sch.get_block("out"))[0])
        return sch.mod["main"]


_ROWS_BY_NAME = {row.name: row for row in _semantics.ROWS}


def check_op_case(case: OpCase) -> None:
    """The folder, the interpreter and LLVM (scalar or vector code) agree on ``case``: the same
    values (bit for bit, NaN included, except the math intrinsics' last bits), or the same error."""
    inputs = case.inputs()
    try:
        want: Any = case.folded(inputs)
    except ZeroDivisionError as err:
        want = err
    func = case.build()
    for target in ("python", "llvm"):
        fn = _build_for(func, target)
        out = np.zeros(case.n, case.result_dtype())
        if isinstance(want, Exception):
            try:
                fn(*inputs, out)
            except RuntimeError as err:
                assert "division by zero" in str(err), f"{target}: {err}"
                continue
            raise AssertionError(f"{target} computed {out} where the folder raised {want!r} ({case})")
        fn(*inputs, out)
        _assert_same(out, want, case, target)


def _build_for(func: PrimFunc, target: str) -> Callable[..., None]:
    lib = build_module(func, target=target)
    return lambda *arrays: lib["main"](*arrays)


def _assert_same(got: np.ndarray, want: np.ndarray, case: OpCase, target: str) -> None:
    message = f"{target} differs from the folder on {case}\ninputs: {case.inputs()}"
    row = case.semantics()
    if row is not None and row.op is not None and row.kinds == _semantics.FLOAT_ONLY and row.result is None:
        # math intrinsics: LLVM's float32 exp/tanh/erf approximations and libm differ in the last bits
        np.testing.assert_allclose(got, want, rtol=2e-6 if case.dtype == "float32" else 1e-12,
                                   atol=1e-6 if case.dtype == "float32" else 1e-12, err_msg=message)
        return
    np.testing.assert_array_equal(got, want, err_msg=message)
    if _dt.is_float(str(got.dtype)):  # signed zeros (min/max, casts) too
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=message)


@st.composite
def semantics_cases(draw: Any) -> OpCase:
    """A random :class:`OpCase`: any row of the semantics table (or a cast) on any dtype it
    takes, seeded edge-heavy data, scalar or vector code."""
    names = sorted(_ROWS_BY_NAME) + ["cast"]
    name = draw(st.sampled_from(names))
    seed = draw(st.integers(0, 2**16))
    vectorized = draw(st.booleans())
    n = draw(st.sampled_from([4, 8, 16]))
    if name == "cast":
        src, dst = draw(st.sampled_from(CAST_DTYPES)), draw(st.sampled_from(CAST_DTYPES))
        return OpCase("cast", src, seed, n, vectorized, to=dst)
    row = _ROWS_BY_NAME[name]
    dtypes = [d for d in SEMANTICS_DTYPES if row.takes(d)]
    return OpCase(name, draw(st.sampled_from(dtypes)), seed, n, vectorized)


# =========================================================================================
# Schedules
# =========================================================================================

#: the primitives :func:`schedule_steps` draws from
PRIMITIVES = ("split", "fuse", "reorder", "parallel", "vectorize", "unroll", "compute_at",
              "reverse_compute_at", "compute_inline", "reverse_compute_inline", "cache_read",
              "cache_write", "decompose_reduction", "rfactor")


@dataclass(frozen=True)
class Step:
    """One schedule primitive; ``picks`` choose its arguments, each taken modulo the
    number of choices there are when the step is applied (block, loop, factor ...)."""

    primitive: str
    picks: tuple[int, ...]


def schedule_steps(max_steps: int = 6) -> st.SearchStrategy[list[Step]]:
    """A list of up to ``max_steps`` random :class:`Step`."""
    picks = st.tuples(*[st.integers(0, 63)] * 5)
    return st.lists(st.builds(Step, st.sampled_from(PRIMITIVES), picks), max_size=max_steps)


def _block_names(sch: Any, reductions_only: bool = False) -> list[str]:
    return [r.block.name_hint for r, _ in block_realizes(sch.mod[sch.func_working_on].body)
            if r.block.name_hint != "root" and (r.block.init is not None or not reductions_only)]


def _choose(items: Sequence[Any], pick: int) -> Any:
    return items[pick % len(items)]


@dataclass
class _Site:
    """Where a step applies: the schedule, the chosen block (name and reference), its loops,
    every block name in program order, and the step's picks."""

    sch: Any
    name: str
    block: Any
    loops: list
    blocks: list[str]
    picks: tuple[int, ...]

    def loop_name(self, loop: Any) -> str:
        return self.sch.get(loop).loop_var.name


_Call = tuple[str, Callable[[], Any]] | None  # (description, thunk), or None: nothing to apply to


def _inline(kind: str, at: _Site) -> _Call:
    return f"{kind}({at.name})", lambda: getattr(at.sch, kind)(at.block)


def _cache(kind: str, at: _Site) -> _Call:
    blk = at.sch.get(at.block)
    regions = blk.reads if kind == "cache_read" else blk.writes
    if not regions:
        return None
    index, scope = at.picks[1] % len(regions), _choose(("global", "local"), at.picks[2])
    return f"{kind}({at.name}, {index}, {scope!r})", lambda: getattr(at.sch, kind)(at.block, index, scope)


def _compute_location(kind: str, at: _Site) -> _Call:
    # a producer moves under a later block's loop, a consumer under an earlier one's
    k = at.blocks.index(at.name)
    others = at.blocks[k + 1:] if kind == "compute_at" else at.blocks[:k]
    if not others:
        return None
    targets = at.sch.get_loops(at.sch.get_block(_choose(others, at.picks[2])))
    if not targets:
        return None
    loop, preserve = _choose(targets, at.picks[3]), bool(at.picks[4] % 2)
    return (f"{kind}({at.name}, {at.loop_name(loop)}, preserve_unit_loops={preserve})",
            lambda: getattr(at.sch, kind)(at.block, loop, preserve_unit_loops=preserve))


def _split(kind: str, at: _Site) -> _Call:
    loop, p = _choose(at.loops, at.picks[1]), at.picks
    f, g = 1 + p[2] % 8, 1 + p[4] % 4  # factors up to 8: many do not divide the extent
    factors = _choose(([None, f], [f, None], [None, f, g]), p[3])
    return f"split({at.loop_name(loop)}, {factors})", lambda: at.sch.split(loop, factors)


def _loop_kind(kind: str, at: _Site) -> _Call:
    loop = _choose(at.loops, at.picks[1])
    return f"{kind}({at.loop_name(loop)})", lambda: getattr(at.sch, kind)(loop)


def _decompose(kind: str, at: _Site) -> _Call:
    loop = _choose(at.loops, at.picks[1])
    return f"decompose_reduction({at.name}, {at.loop_name(loop)})", lambda: at.sch.decompose_reduction(at.block, loop)


def _rfactor(kind: str, at: _Site) -> _Call:
    loop, writes = _choose(at.loops, at.picks[1]), at.sch.get(at.block).writes
    axis = at.picks[2] % (len(writes[0].buffer.shape) + 1) if writes else 0
    return f"rfactor({at.loop_name(loop)}, {axis})", lambda: at.sch.rfactor(loop, axis)


def _fuse(kind: str, at: _Site) -> _Call:
    if len(at.loops) < 2:
        return None
    start = at.picks[1] % (len(at.loops) - 1)
    chosen = at.loops[start:start + 2 + at.picks[2] % min(2, len(at.loops) - start - 1)]
    return f"fuse({', '.join(map(at.loop_name, chosen))})", lambda: at.sch.fuse(*chosen)


def _reorder(kind: str, at: _Site) -> _Call:
    if len(at.loops) < 2:
        return None
    pool, chosen = list(at.loops), []  # 2 or 3 distinct loops in a drawn order
    for q in at.picks[1:2 + min(2, len(at.loops) - 1)]:
        chosen.append(pool.pop(q % len(pool)))
    return f"reorder({', '.join(map(at.loop_name, chosen))})", lambda: at.sch.reorder(*chosen)


#: how each primitive finds its arguments, and whether it needs loops around the block
_RESOLVERS: dict[str, tuple[Callable[[str, _Site], _Call], bool]] = {
    "compute_inline": (_inline, False), "reverse_compute_inline": (_inline, False),
    "cache_read": (_cache, False), "cache_write": (_cache, False),
    "compute_at": (_compute_location, False), "reverse_compute_at": (_compute_location, False),
    "split": (_split, True), "parallel": (_loop_kind, True), "vectorize": (_loop_kind, True),
    "unroll": (_loop_kind, True), "decompose_reduction": (_decompose, True), "rfactor": (_rfactor, True),
    "fuse": (_fuse, True), "reorder": (_reorder, True),
}


def _resolve(sch: Any, step: Step) -> _Call:
    """The call ``step`` stands for on ``sch`` now, with a description; ``None`` when there
    is nothing to apply it to (no loops, a single loop to fuse ...)."""
    blocks = _block_names(sch)
    if not blocks:
        return None
    # rfactor and decompose_reduction act on reduction blocks: pick one of those if any
    reductions = _block_names(sch, reductions_only=True) if step.primitive in ("rfactor", "decompose_reduction") else []
    name = _choose(reductions or blocks, step.picks[0])
    block = sch.get_block(name)
    at = _Site(sch, name, block, sch.get_loops(block), blocks, step.picks)
    resolver, needs_loops = _RESOLVERS[step.primitive]
    return None if needs_loops and not at.loops else resolver(step.primitive, at)


def apply_schedule(sch: Any, steps: Sequence[Step], refused: list[str] | None = None) -> list[str]:
    """Apply ``steps`` to ``sch`` in order; returns what was applied.  A step whose
    primitive raises ``ScheduleError`` is skipped, after checking it changed nothing (and
    appended to ``refused``, when given, with the error)."""

    applied = []
    for step in steps:
        call = _resolve(sch, step)
        if call is None:
            continue
        what, run = call
        before, trace_len = sch.mod, len(sch.trace)
        try:
            run()
        except ScheduleError as err:
            _check_unchanged(sch, before, trace_len, what, err)
            if refused is not None:
                refused.append(f"{what}: {err}")
            continue
        applied.append(what)
    return applied


def _check_unchanged(sch: Any, before: Any, trace_len: int, what: str, err: Exception) -> None:
    if sch.mod is not before or not structural_equal(sch.mod, before):
        raise AssertionError(f"{what} raised ScheduleError ({err}) but changed the module")
    if len(sch.trace) != trace_len:
        raise AssertionError(f"{what} raised ScheduleError ({err}) but added to the trace")


# =========================================================================================
# Relax graphs
# =========================================================================================

@dataclass(frozen=True)
class RelaxNode:
    """One value of a graph: ``op`` (a key of :data:`RELAX_OPS`, or ``"param"`` /
    ``"const"``) applied to earlier values ``args`` with hashable ``attrs``."""

    op: str
    args: tuple[int, ...] = ()
    attrs: tuple = ()


@dataclass(frozen=True)
class _RelaxOp:
    """A Relax operator: ``emit(bb, R, args, attrs)`` builds it, ``np(args, attrs)``
    computes it, ``bound(arg_bounds, arg_shapes, attrs)`` bounds its magnitude."""

    emit: Callable[..., Any]
    np: Callable[..., Any]
    bound: Callable[..., float]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=["float64"])(x) if x.size else x


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def _unary(name: str, fn: Callable, bound: Callable[[float], float]) -> _RelaxOp:
    return _RelaxOp(lambda bb, R, a, at: getattr(R, name)(a[0]) if hasattr(R, name) else getattr(R.nn, name)(a[0]),
                    lambda a, at: fn(a[0]), lambda b, s, at: bound(b[0]))


def _binary(name: str, fn: Callable, bound: Callable[[float, float], float]) -> _RelaxOp:
    return _RelaxOp(lambda bb, R, a, at: getattr(R, name)(a[0], a[1]), lambda a, at: fn(a[0], a[1]),
                    lambda b, s, at: bound(b[0], b[1]))


def _emit_div_safe(bb: Any, R: Any, a: list, at: tuple) -> Any:
    den = bb.emit(R.add(bb.emit(R.abs(a[1])), relax.const(np.float32(1))))
    return R.divide(a[0], den)


def _emit_where_less(bb: Any, R: Any, a: list, at: tuple) -> Any:
    return R.where(bb.emit(R.less(a[0], a[1])), bb.emit(R.subtract(a[1], a[0])), a[0])


def _reduce(name: str, fn: Callable) -> _RelaxOp:
    """``attrs = (axes or None, keepdims)``."""
    def bound(b: list, s: list, at: tuple) -> float:
        axes = range(len(s[0])) if at[0] is None else at[0]
        return b[0] * math.prod(s[0][a] for a in axes) if name == "sum" else b[0]
    return _RelaxOp(lambda bb, R, a, at: getattr(R, name)(a[0], axis=None if at[0] is None else list(at[0]),
                                                           keepdims=at[1]),
                    lambda a, at: fn(a[0], axis=at[0], keepdims=at[1]), bound)


def _relax_const(data: np.ndarray) -> Any:
    return relax.const(data)


def _emit_split_item(bb: Any, R: Any, a: list, at: tuple) -> Any:
    return relax.TupleGetItem(bb.emit(R.split(a[0], at[0], at[1])), at[2])


def _gamma_beta(at: tuple) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(at[2])
    return rng.uniform(0.5, 1, at[1]).astype("float32"), rng.uniform(-1, 1, at[1]).astype("float32")


def _emit_layer_norm(bb: Any, R: Any, a: list, at: tuple) -> Any:
    gamma, beta = _gamma_beta(at)
    return R.nn.layer_norm(a[0], _relax_const(gamma), _relax_const(beta), list(at[0]))


def _np_layer_norm(x: np.ndarray, at: tuple) -> np.ndarray:
    axes, (gamma, beta) = at[0], _gamma_beta(at)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    shape = [x.shape[d] if d in axes else 1 for d in range(x.ndim)]
    return (x - mean) / np.sqrt(var + 1e-5) * gamma.reshape(shape) + beta.reshape(shape)


def _np_strided_slice(x: np.ndarray, at: tuple) -> np.ndarray:
    axis, begin, end, stride = at
    index = [slice(None)] * x.ndim
    index[axis] = slice(begin, end, stride)
    return x[tuple(index)]


RELAX_OPS: dict[str, _RelaxOp] = {
    "exp": _unary("exp", np.exp, lambda b: math.exp(b) if b <= 12 else math.inf),
    "tanh": _unary("tanh", np.tanh, lambda b: 1.0),
    "sigmoid": _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), lambda b: 1.0),
    "abs": _unary("abs", np.abs, lambda b: b),
    "negative": _unary("negative", np.negative, lambda b: b),
    "relu": _unary("relu", lambda x: np.maximum(x, 0), lambda b: b),
    "gelu": _unary("gelu", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), lambda b: b),
    "silu": _unary("silu", lambda x: x / (1 + np.exp(-x)), lambda b: b),
    "sqrt_abs": _RelaxOp(lambda bb, R, a, at: R.sqrt(bb.emit(R.abs(a[0]))), lambda a, at: np.sqrt(np.abs(a[0])),
                         lambda b, s, at: math.sqrt(b[0])),
    "add": _binary("add", np.add, lambda a, b: a + b),
    "subtract": _binary("subtract", np.subtract, lambda a, b: a + b),
    "multiply": _binary("multiply", np.multiply, lambda a, b: a * b),
    "maximum": _binary("maximum", np.maximum, max),
    "minimum": _binary("minimum", np.minimum, max),
    "divide_safe": _RelaxOp(_emit_div_safe, lambda a, at: a[0] / (np.abs(a[1]) + 1), lambda b, s, at: b[0]),
    "where_less": _RelaxOp(_emit_where_less, lambda a, at: np.where(a[0] < a[1], a[1] - a[0], a[0]),
                           lambda b, s, at: b[0] + b[1]),
    "matmul": _RelaxOp(lambda bb, R, a, at: R.matmul(a[0], a[1]), lambda a, at: np.matmul(a[0], a[1]),
                       lambda b, s, at: b[0] * b[1] * s[1][-2 if len(s[1]) > 1 else 0]),
    "reshape": _RelaxOp(lambda bb, R, a, at: R.reshape(a[0], list(at[0])), lambda a, at: a[0].reshape(at[0]),
                        lambda b, s, at: b[0]),
    "permute_dims": _RelaxOp(lambda bb, R, a, at: R.permute_dims(a[0], list(at[0])),
                             lambda a, at: np.transpose(a[0], at[0]), lambda b, s, at: b[0]),
    "expand_dims": _RelaxOp(lambda bb, R, a, at: R.expand_dims(a[0], at[0]),
                            lambda a, at: np.expand_dims(a[0], at[0]), lambda b, s, at: b[0]),
    "squeeze": _RelaxOp(lambda bb, R, a, at: R.squeeze(a[0], at[0]), lambda a, at: np.squeeze(a[0], at[0]),
                        lambda b, s, at: b[0]),
    "strided_slice": _RelaxOp(lambda bb, R, a, at: R.strided_slice(a[0], [at[0]], [at[1]], [at[2]], [at[3]]),
                              lambda a, at: _np_strided_slice(a[0], at), lambda b, s, at: b[0]),
    "sum": _reduce("sum", np.sum),
    "mean": _reduce("mean", np.mean),
    "max": _reduce("max", np.max),
    "min": _reduce("min", np.min),
    "softmax": _RelaxOp(lambda bb, R, a, at: R.nn.softmax(a[0], at[0]), lambda a, at: _softmax(a[0], at[0]),
                        lambda b, s, at: 1.0),
    "log_softmax": _RelaxOp(lambda bb, R, a, at: R.nn.log_softmax(a[0], at[0]),
                            lambda a, at: _log_softmax(a[0], at[0]), lambda b, s, at: 2 * b[0] + 5),
    "concat": _RelaxOp(lambda bb, R, a, at: R.concat(list(a), at[0]), lambda a, at: np.concatenate(a, at[0]),
                       lambda b, s, at: max(b)),
    "flatten": _RelaxOp(lambda bb, R, a, at: R.flatten(a[0]), lambda a, at: a[0].reshape(-1), lambda b, s, at: b[0]),
    "broadcast_to": _RelaxOp(lambda bb, R, a, at: R.broadcast_to(a[0], list(at[0])),
                             lambda a, at: np.broadcast_to(a[0], at[0]), lambda b, s, at: b[0]),
    # attrs (axis, indices): the indices are an int64 constant
    "take": _RelaxOp(lambda bb, R, a, at: R.take(a[0], _relax_const(np.array(at[1], "int64")), at[0]),
                     lambda a, at: np.take(a[0], at[1], axis=at[0]), lambda b, s, at: b[0]),
    # attrs (sections, axis, index): one part of R.split
    "split_item": _RelaxOp(_emit_split_item, lambda a, at: np.split(a[0], at[0], axis=at[1])[at[2]],
                           lambda b, s, at: b[0]),
    # attrs (flat pad widths: before and after of each dim)
    "pad": _RelaxOp(lambda bb, R, a, at: R.nn.pad(a[0], list(at[0])),
                    lambda a, at: np.pad(a[0], list(zip(at[0][::2], at[0][1::2]))), lambda b, s, at: b[0]),
    # attrs (axes, shape of gamma and beta, seed of gamma and beta)
    "layer_norm": _RelaxOp(_emit_layer_norm, lambda a, at: _np_layer_norm(a[0], at),
                           lambda b, s, at: math.sqrt(math.prod(at[1])) + 1),
}


@dataclass(frozen=True)
class RelaxGraph:
    """A random Relax function ``main``: the ``"param"`` nodes are its parameters (float32,
    shape ``attrs[0]``), ``"const"`` nodes are seeded constants, ``outputs`` what it returns
    (one value, or a tuple of several)."""

    nodes: tuple[RelaxNode, ...]
    outputs: tuple[int, ...]

    @property
    def param_shapes(self) -> list[tuple[int, ...]]:
        return [n.attrs[0] for n in self.nodes if n.op == "param"]

    def build(self) -> Any:
        """The IRModule, emitted with ``relax.BlockBuilder`` inside one dataflow block."""

        params = {k: relax.Var(f"x{k}", relax.TensorStructInfo(list(n.attrs[0]), "float32"))
                  for k, n in enumerate(self.nodes) if n.op == "param"}
        bb = relax.BlockBuilder()
        with bb.function("main", list(params.values())):
            with bb.dataflow():
                values: dict[int, Any] = dict(params)
                for k, n in enumerate(self.nodes):
                    if n.op == "const":
                        values[k] = relax.const(_const_data(n.attrs))
                    elif n.op != "param":
                        values[k] = bb.emit(RELAX_OPS[n.op].emit(bb, R, [values[a] for a in n.args], n.attrs))
                outs = [values[k] for k in self.outputs]
                out = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
            bb.emit_func_output(out)
        return bb.get()

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s).astype("float32") for s in self.param_shapes]

    def reference(self, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """numpy's outputs for the parameters ``arrays`` and the largest intermediate magnitude."""
        given = iter(arrays)
        values: list[np.ndarray] = []
        for n in self.nodes:
            if n.op == "param":
                v = np.asarray(next(given), "float64")
            elif n.op == "const":
                v = _const_data(n.attrs).astype("float64")
            else:  # float32 storage between operators, like the compiled code
                v = np.asarray(RELAX_OPS[n.op].np([values[a] for a in n.args], n.attrs))
                v = v.astype("float32").astype("float64")
            values.append(v)
        scale = max([1.0] + [float(np.max(np.abs(v))) for v in values if v.size])
        return [values[k].astype("float32") for k in self.outputs], scale


def _const_data(attrs: tuple) -> np.ndarray:
    shape, seed = attrs
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


# -- drawing graphs -------------------------------------------------------------------------

#: the largest tensor a graph holds
MAX_ELEMENTS = 256


class _GraphDraft:
    """The graph being drawn: its nodes with their shapes and magnitude bounds."""

    def __init__(self, draw: Any):
        self.draw = draw
        self.nodes: list[RelaxNode] = []
        self.shapes: list[tuple[int, ...]] = []
        self.bounds: list[float] = []

    def add(self, node: RelaxNode, shape: tuple[int, ...], bound: float) -> int:
        self.nodes.append(node)
        self.shapes.append(tuple(shape))
        self.bounds.append(bound)
        return len(self.nodes) - 1

    def leaf(self, shape: tuple[int, ...]) -> int:
        """A new parameter or constant of ``shape``."""
        if self.draw(st.booleans()):
            return self.add(RelaxNode("param", (), (tuple(shape),)), shape, 5.0)
        seed = self.draw(st.integers(0, 2**16))
        return self.add(RelaxNode("const", (), (tuple(shape), seed)), shape, 1.0)

    def op(self, name: str, args: Sequence[int], attrs: tuple = ()) -> int | None:
        """Add ``name`` unless its result would be too large (then ``None``)."""
        bound = RELAX_OPS[name].bound([self.bounds[a] for a in args], [self.shapes[a] for a in args], attrs)
        if bound > MAX_BOUND:
            return None
        probe = RELAX_OPS[name].np([np.zeros(self.shapes[a]) for a in args], attrs)
        if np.size(probe) > MAX_ELEMENTS:
            return None
        return self.add(RelaxNode(name, tuple(args), attrs), np.shape(probe), bound)


def _relax_shape(draw: Any, max_rank: int = 3) -> tuple[int, ...]:
    rank = draw(st.integers(1, max_rank))
    return _extents(draw, rank, MAX_ELEMENTS // 2)


def _broadcast_partner(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix of it, some dims set to 1, maybe a
    new leading dim (only on the full rank: a leading dim must line up with nothing)."""
    keep = draw(st.integers(0, len(shape)))
    out = [1 if draw(st.booleans()) else d for d in shape[len(shape) - keep:]]
    if keep == len(shape) and draw(st.booleans()) and math.prod(shape) * 3 <= MAX_ELEMENTS:
        out.insert(0, draw(st.sampled_from([1, 3])))
    return tuple(out)


def _factorize(draw: Any, total: int) -> tuple[int, ...]:
    """A random shape with ``total`` elements (rank 1 to 3)."""
    primes, n, p = [], total, 2
    while n > 1:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    rank = draw(st.integers(1, 3))
    dims = [1] * rank
    for q in primes:
        dims[draw(st.integers(0, rank - 1))] *= q
    return tuple(dims)


def _table_unary(row: ElementwiseOp) -> _RelaxOp:
    """A float row of the operator table (minitvm.tir.op_table) on its input clipped into the row's
    domain, so that any input is valid; it is bounded by the largest magnitude numpy's reference
    takes there."""
    lo, hi = row.domain
    peak = float(np.max(np.abs(row.reference(np.linspace(lo, hi, 1001)))))
    return _RelaxOp(lambda bb, R, a, at: getattr(R, row.name)(bb.emit(R.clip(a[0], lo, hi))),
                    lambda a, at: row.reference(np.clip(a[0], lo, hi)), lambda b, s, at: peak)


#: the float math rows of the operator table: a new row is fuzzed without an edit here
_TABLE_UNARY = {f"table_{row.name}": _table_unary(row) for row in OP_TABLE_UNARY if row.dtypes == "float"}
RELAX_OPS.update(_TABLE_UNARY)


def _draw_unary(draft: _GraphDraft, x: int) -> int | None:
    names = ["exp", "tanh", "sigmoid", "abs", "negative", "relu", "gelu", "silu", "sqrt_abs", "table"]
    name = draft.draw(st.sampled_from(names))
    if name == "table":  # one choice among the others, so the rows do not crowd out relu & co
        name = draft.draw(st.sampled_from(sorted(_TABLE_UNARY)))
    return draft.op(name, [x])


def _draw_binary(draft: _GraphDraft, x: int) -> int | None:
    """A broadcasting binary operator with a new parameter or constant, on either side."""
    y = draft.leaf(_broadcast_partner(draft.draw, draft.shapes[x]))
    pair = [x, y] if draft.draw(st.booleans()) else [y, x]
    names = ["add", "subtract", "multiply", "maximum", "minimum", "divide_safe", "where_less"]
    return draft.op(draft.draw(st.sampled_from(names)), pair)


def _draw_matmul(draft: _GraphDraft, x: int) -> int | None:
    shape, n = draft.shapes[x], draft.draw(st.sampled_from([1, 3, 4]))
    other = (shape[-1], n) if len(shape) == 1 or draft.draw(st.booleans()) else shape[:-2] + (shape[-1], n)
    return draft.op("matmul", [x, draft.leaf(other)])


def _draw_reshape(draft: _GraphDraft, x: int) -> int | None:
    if draft.draw(st.booleans()):
        return draft.op("flatten", [x])
    return draft.op("reshape", [x], (_factorize(draft.draw, math.prod(draft.shapes[x])),))


def _draw_permute_dims(draft: _GraphDraft, x: int) -> int | None:
    rank = len(draft.shapes[x])
    return draft.op("permute_dims", [x], (tuple(draft.draw(st.permutations(range(rank)))),)) if rank >= 2 else None


def _draw_expand_or_squeeze(draft: _GraphDraft, x: int) -> int | None:
    shape, draw = draft.shapes[x], draft.draw
    ones = [d for d in range(len(shape)) if shape[d] == 1]
    if ones and len(shape) >= 2 and draw(st.booleans()):
        return draft.op("squeeze", [x], (draw(st.sampled_from(ones)),))
    return draft.op("expand_dims", [x], (draw(st.integers(-len(shape) - 1, len(shape))),))


def _draw_broadcast_to(draft: _GraphDraft, x: int) -> int | None:
    """Grow the extent-1 dims (and maybe add a leading one)."""
    draw = draft.draw
    target = tuple(draw(st.sampled_from([1, 2, 3])) if d == 1 else d for d in draft.shapes[x])
    if draw(st.booleans()):
        target = (draw(st.sampled_from([1, 2])),) + target
    return draft.op("broadcast_to", [x], (target,))


def _draw_slice(draft: _GraphDraft, x: int) -> int | None:
    """strided_slice, take or one part of split along a random axis."""
    shape, draw = draft.shapes[x], draft.draw
    if not shape:
        return None
    axis = draw(st.integers(0, len(shape) - 1))
    kind = draw(st.sampled_from(["strided_slice", "take", "split"]))
    if kind == "take":
        indices = tuple(draw(st.lists(st.integers(0, shape[axis] - 1), min_size=1, max_size=4)))
        return draft.op("take", [x], (axis, indices))
    if kind == "split":
        # not 1 section: LegalizeOps turns R.split(x, 1) into a tensor, not a 1-tuple (reported)
        choices = [d for d in (2, 3) if shape[axis] % d == 0]
        if not choices:
            return None
        sections = draw(st.sampled_from(choices))
        return draft.op("split_item", [x], (sections, axis, draw(st.integers(0, sections - 1))))
    begin = draw(st.integers(0, shape[axis] - 1))
    end = draw(st.integers(begin + 1, shape[axis]))
    return draft.op("strided_slice", [x], (axis, begin, end, draw(st.sampled_from([1, 2]))))


def _draw_pad(draft: _GraphDraft, x: int) -> int | None:
    widths = tuple(draft.draw(st.integers(0, 2)) for _ in range(2 * len(draft.shapes[x])))
    return draft.op("pad", [x], (widths,)) if draft.shapes[x] else None


def _random_axes(draw: Any, rank: int) -> tuple[int, ...]:
    return tuple(sorted(draw(st.lists(st.integers(0, rank - 1), min_size=1, unique=True))))


def _draw_reduce(draft: _GraphDraft, x: int) -> int | None:
    rank, draw = len(draft.shapes[x]), draft.draw
    if rank == 0:  # LegalizeOps fails on reducing a 0-d tensor (te.sum with no axis; reported)
        return None
    axes = None if draw(st.booleans()) else _random_axes(draw, rank)
    return draft.op(draw(st.sampled_from(["sum", "mean", "max", "min"])), [x], (axes, draw(st.booleans())))


def _draw_normalize(draft: _GraphDraft, x: int) -> int | None:
    """softmax, log_softmax or layer_norm (seeded gamma and beta)."""
    shape, draw = draft.shapes[x], draft.draw
    if not shape:
        return None
    kind = draw(st.sampled_from(["softmax", "log_softmax", "layer_norm"]))
    if kind != "layer_norm":
        return draft.op(kind, [x], (draw(st.integers(-len(shape), len(shape) - 1)),))
    axes = _random_axes(draw, len(shape))
    return draft.op("layer_norm", [x], (axes, tuple(shape[a] for a in axes), draw(st.integers(0, 2**16))))


def _draw_concat(draft: _GraphDraft, x: int) -> int | None:
    shape, draw = draft.shapes[x], draft.draw
    if not shape:
        return None
    axis = draw(st.integers(0, len(shape) - 1))
    other = shape[:axis] + (draw(st.sampled_from([1, 2, 3])),) + shape[axis + 1:]
    y = x if draw(st.booleans()) else draft.leaf(other)
    return draft.op("concat", [x, y], (axis,))


#: how each kind of operator is drawn, given the value it applies to
_RELAX_DRAWS: dict[str, Callable[[_GraphDraft, int], int | None]] = {
    "unary": _draw_unary, "binary": _draw_binary, "matmul": _draw_matmul, "reshape": _draw_reshape,
    "permute_dims": _draw_permute_dims, "expand_or_squeeze": _draw_expand_or_squeeze,
    "broadcast_to": _draw_broadcast_to, "slice": _draw_slice, "pad": _draw_pad, "reduce": _draw_reduce,
    "normalize": _draw_normalize, "concat": _draw_concat,
}


def _draw_relax_op(draft: _GraphDraft, x: int) -> int | None:
    """One operator applied to value ``x`` (with new operands as needed); ``None`` if the
    drawn kind does not fit ``x`` (a matmul of a scalar, a result too large ...)."""
    kind = draft.draw(st.sampled_from(sorted(_RELAX_DRAWS)))
    if not draft.shapes[x] and kind == "matmul":
        return None
    return _RELAX_DRAWS[kind](draft, x)


@st.composite
def relax_graphs(draw: Any, max_ops: int = 5) -> RelaxGraph:
    """A random :class:`RelaxGraph`: a chain of up to ``max_ops`` operators from a parameter,
    each mostly reading the latest value, returning the last value (sometimes with another)."""
    draft = _GraphDraft(draw)
    shape = _relax_shape(draw)
    current = draft.add(RelaxNode("param", (), (shape,)), shape, 5.0)
    computed: list[int] = []
    for _ in range(draw(st.integers(1, max_ops))):
        x = current if not computed or draw(st.booleans()) else draw(st.sampled_from(computed))
        made = _draw_relax_op(draft, x)
        if made is not None:
            computed.append(made)
            current = made
    if not computed:  # every draw was rejected: fall back to one simple operator
        computed.append(draft.op("tanh", [current]))
    outputs = (computed[-1],)
    if len(computed) > 1 and draw(st.booleans()):
        outputs = (computed[-1], draw(st.sampled_from(computed[:-1])))
    return RelaxGraph(tuple(draft.nodes), outputs)


# =========================================================================================
# Printer/parser round trip
# =========================================================================================

def assert_round_trip(mod_or_func: Any) -> None:
    """``parse(print(x))`` must be structurally equal to ``x`` (a PrimFunc or an IRModule);
    large constants are printed in full (``show_meta``) so that the text holds everything."""

    text = mod_or_func.script(show_meta=True)
    try:
        again = from_source(text, data_only=True)  # printed text parses as data, as a database's does
    except Exception as e:  # a printer bug is a failure to report, with the text
        raise AssertionError(f"the printed TVMScript does not parse back: {e}\n{text}") from e
    assert_structural_equal(again, mod_or_func)
