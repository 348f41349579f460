"""Features of a scheduled candidate, read from its TIR (TVM's ``ms.feature_extractor``).

The cost model learns run time from these numbers, so they describe what makes loop nests fast
on a CPU.  :func:`extract` walks every block with the loops around it and returns one vector
a candidate (:data:`FEATURE_NAMES` names each entry):

* work: ``log2`` of the iterations of the nest and of the arithmetic operations (flops);
* loop shape: number of loops, innermost extent, whether the innermost is vectorized and its
  vector width, product of threaded (``parallel``) extents, product of unrolled extents;
* memory: for each of the innermost 1, 2, 3 and 4 loop levels, ``log2`` of the bytes the
  block's reads and writes touch while those loops run (how much must stay in registers / L1 /
  L2), and the stride in elements of the innermost loop over each access (1 = contiguous,
  0 = reused, larger = gathering);
* arithmetic intensity: flops per byte touched by the whole nest.

Blocks are combined by taking the heaviest block's features and adding the others' work, so
a fused epilogue shows up without swamping the main kernel.  Everything is computed with a
tiny evaluator of affine index expressions (:func:`_eval`), no lowering, so a candidate's
features cost a few milliseconds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tir.expr import Add, BufferLoad, Call, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Sub, Var
from ..tir.functor import post_order_visit
from ..tir.stmt import BlockRealize, BufferStore, For
from ..tir.stmt_functor import block_realizes

__all__ = ["FEATURE_NAMES", "extract", "extract_from_mod", "PerStoreFeature"]

LEVELS = (1, 2, 3, 4)
FEATURE_NAMES: tuple[str, ...] = (
    "log2_iterations", "log2_flops", "n_loops", "innermost_extent", "innermost_vectorized", "vector_width",
    "log2_parallel_extent", "log2_unrolled_extent",
    *[f"log2_bytes_inner{k}" for k in LEVELS],
    "stride_contiguous_frac", "stride_reuse_frac", "stride_gather_frac",
    "arith_intensity", "n_blocks", "log2_other_flops",
)

_ARITH = (Add, Sub, Mul, Min, Max, FloorDiv, FloorMod)


def _eval(e: Any, env: dict) -> int:
    """An integer index expression at a point (``env``: variable -> value; unknown vars are 0)."""
    if isinstance(e, IntImm):
        return int(e.value)
    if isinstance(e, Var):
        return env.get(e, 0)
    if isinstance(e, Cast):
        return _eval(e.value, env)
    if isinstance(e, Add):
        return _eval(e.a, env) + _eval(e.b, env)
    if isinstance(e, Sub):
        return _eval(e.a, env) - _eval(e.b, env)
    if isinstance(e, Mul):
        return _eval(e.a, env) * _eval(e.b, env)
    if isinstance(e, FloorDiv):
        b = _eval(e.b, env)
        return _eval(e.a, env) // b if b else 0
    if isinstance(e, FloorMod):
        b = _eval(e.b, env)
        return _eval(e.a, env) % b if b else 0
    if isinstance(e, Min):
        return min(_eval(e.a, env), _eval(e.b, env))
    if isinstance(e, Max):
        return max(_eval(e.a, env), _eval(e.b, env))
    return 0


def _extent(loop: For) -> int:
    return int(loop.extent.value) if isinstance(loop.extent, IntImm) else 1


def _accesses(realize: BlockRealize) -> list[tuple[Any, tuple, bool]]:
    """(buffer, indices, is_write) of every load and store in the block body."""
    out: list = []
    post_order_visit(realize.block.body, lambda n: out.append((n.buffer, n.indices, False))
                     if isinstance(n, BufferLoad) else
                     out.append((n.buffer, n.indices, True)) if isinstance(n, BufferStore) else None)
    return out


def _flops_per_iteration(realize: BlockRealize) -> int:
    count = [0]
    post_order_visit(realize.block.body, lambda n: count.__setitem__(0, count[0] + 1)
                     if isinstance(n, (*_ARITH, Call)) and str(getattr(n, "dtype", "")).startswith("float") else None)
    return max(count[0], 1)


def _block_features(realize: BlockRealize, loops: list[For]) -> tuple[list[float], float]:
    """The feature vector of one block and its flops."""
    # block iterator values as functions of the loop variables
    env_of = lambda point: {iv.var: _eval(v, point) for iv, v in zip(realize.block.iter_vars, realize.iter_values)}  # noqa: E731
    extents = [_extent(lp) for lp in loops]
    iterations = math.prod(extents) if extents else 1
    flops = iterations * _flops_per_iteration(realize)
    accesses = _accesses(realize)

    def index_at(indices: tuple, point: dict) -> list[int]:
        env = env_of(point)
        return [_eval(i, env) for i in indices]

    zero = {lp.loop_var: 0 for lp in loops}
    # per loop and access: how far one step of the loop moves each index (affine indices)
    strides: list[list[list[int]]] = []
    for lp in loops:
        one = dict(zero)
        one[lp.loop_var] = 1
        strides.append([[b - a for a, b in zip(index_at(idx, zero), index_at(idx, one))] for _, idx, _ in accesses])

    def footprint(inner: int) -> float:
        """Bytes touched while the innermost ``inner`` loops run (one box per access)."""
        total = 0.0
        chosen = range(max(len(loops) - inner, 0), len(loops))
        for k, (buf, idx, _) in enumerate(accesses):
            span = [1] * len(idx)
            for li in chosen:
                for d, s in enumerate(strides[li][k]):
                    span[d] += abs(s) * (extents[li] - 1)
            total += math.prod(span) * _dtype_bytes(buf.dtype)
        return total

    inner_strides = []
    if loops and accesses:
        for k, (buf, idx, _) in enumerate(accesses):
            s = strides[-1][k]
            flat = 0
            mult = 1
            for d in reversed(range(len(idx))):
                flat += s[d] * mult
                dim = buf.shape[d]
                mult *= int(dim.value) if isinstance(dim, IntImm) else 1
            inner_strides.append(abs(flat))
    n_acc = max(len(inner_strides), 1)
    inner = loops[-1] if loops else None
    vec = inner is not None and inner.kind == "vectorized"
    par = math.prod(_extent(lp) for lp in loops if lp.kind == "parallel")
    unr = math.prod(_extent(lp) for lp in loops if lp.kind == "unrolled")
    whole = footprint(len(loops))
    feats = [
        math.log2(iterations), math.log2(flops), len(loops), extents[-1] if extents else 1, float(vec),
        extents[-1] if vec else 1, math.log2(par), math.log2(unr),
        *[math.log2(footprint(k) + 1) for k in LEVELS],
        sum(s == 1 for s in inner_strides) / n_acc, sum(s == 0 for s in inner_strides) / n_acc,
        sum(s > 1 for s in inner_strides) / n_acc,
        flops / max(whole, 1.0),
    ]
    return feats, flops


def _dtype_bytes(dtype: str) -> int:
    bits = int("".join(c for c in dtype if c.isdigit()) or 32)
    return max(bits // 8, 1)


def extract_from_mod(mod: Any) -> np.ndarray:
    """The feature vector of a scheduled module's ``main`` (see :data:`FEATURE_NAMES`)."""
    func = mod["main"]
    per_block = []
    for realize, path in block_realizes(func.body):
        if realize.block.name_hint == "root":
            continue
        loops = [s for s in path if isinstance(s, For)]
        per_block.append(_block_features(realize, loops))
    if not per_block:
        return np.zeros(len(FEATURE_NAMES))
    per_block.sort(key=lambda f: -f[1])
    main, _ = per_block[0]
    others = sum(f for _, f in per_block[1:])
    return np.array([*main, len(per_block), math.log2(others + 1)], dtype="float64")


def extract(candidates: list) -> np.ndarray:
    """One row of features per candidate (``MeasureCandidate`` or ``tir.Schedule`` or IRModule)."""
    rows = []
    for c in candidates:
        mod = getattr(getattr(c, "sch", c), "mod", c)
        rows.append(extract_from_mod(mod))
    return np.array(rows).reshape(len(rows), len(FEATURE_NAMES))


class PerStoreFeature:
    """TVM's feature extractor name: ``extract_from(context, candidates)`` gives one row a candidate."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs:
            raise NotImplementedError(f"PerStoreFeature({', '.join(kwargs)}): minitvm's features are fixed "
                                      "(see feature_extractor.FEATURE_NAMES)")

    def extract_from(self, context: Any, candidates: list) -> list[np.ndarray]:
        return list(extract(candidates))
