"""IndexMap: a mapping from one list of indices to another (``lambda i, j: (j, i)``).

Layout primitives (``transform_layout``, ``transform_block_layout``, ``reindex_cache_*``) take
one; a plain Python function is turned into one with :meth:`IndexMap.from_func`, which calls
it on fresh index variables.  An index map applies to indices (``map_indices``), to a buffer
shape (``map_shape``), to an array (``map_tensor``) and, when it is a bijection made of
splits and fusions of its inputs, can be inverted (``inverse``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..arith import Analyzer
from ..arith.linear import LinearSum
from ..ir.node import Node, defines, node, script_printer
from . import expr as _e
from . import op as _op
from .expr import FloorDiv, FloorMod, IntImm, PrimExpr, Range, Var, const, convert
from .functor import StmtExprMutator, substitute
from .op import logical_or

__all__ = ["IndexMap"]


@node
class IndexMap(Node):
    """``initial_indices -> final_indices``, optionally with a known inverse map."""

    initial_indices: tuple = defines()
    final_indices: tuple = ()
    inverse_index_map: Any = None

    #: put in a mapping function's result to split the output axes into groups
    #: (``lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j]``), as ``set_axis_separator`` does
    AXIS_SEPARATOR = "axis_separator"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not all(isinstance(v, Var) for v in self.initial_indices):
            raise TypeError("IndexMap initial_indices must be tir.Var")
        object.__setattr__(self, "final_indices", tuple(convert(e) for e in self.final_indices))
        inv = self.inverse_index_map
        if inv is not None and not isinstance(inv, IndexMap):
            if not callable(inv):
                raise TypeError(f"inverse_index_map must be an IndexMap or a function, got {inv!r}")
            object.__setattr__(self, "inverse_index_map", IndexMap.from_func(inv))

    # -- building ---------------------------------------------------------------------------
    @staticmethod
    def from_func(mapping_function: Callable, ndim: int | None = None,
                  inverse_index_map: "Callable | IndexMap | None" = None, *,
                  index_dtype: str = "int64") -> "IndexMap":
        """The map ``mapping_function`` computes, called on fresh ``index_dtype`` variables
        named after its parameters (``*args`` gets ``ndim`` minus the named ones)."""
        index_map, separators = IndexMap.from_func_with_separators(
            mapping_function, ndim, inverse_index_map, index_dtype=index_dtype)
        if separators:
            raise ValueError("IndexMap.from_func: the mapping function returned IndexMap.AXIS_SEPARATOR; "
                             "use IndexMap.from_func_with_separators for that")
        return index_map

    @staticmethod
    def from_func_with_separators(mapping_function: Callable, ndim: int | None = None,
                                  inverse_index_map: "Callable | IndexMap | None" = None, *,
                                  index_dtype: str = "int64") -> "tuple[IndexMap, list[int]]":
        """``(index_map, axis_separators)``: the positions where the function's result held
        ``IndexMap.AXIS_SEPARATOR`` (counted in output axes) are returned separately."""
        args: list[Var] = []
        kwargs: dict[str, Var] = {}
        var_arg = None
        for name, param in inspect.signature(mapping_function).parameters.items():
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                args.append(Var(name, index_dtype))
            elif param.kind == param.VAR_POSITIONAL:
                var_arg = name
            elif param.kind == param.KEYWORD_ONLY:
                kwargs[name] = Var(name, index_dtype)
            else:
                raise ValueError("an index map's function may not take **kwargs")
        if var_arg is not None:
            if ndim is None:
                raise ValueError("IndexMap.from_func: ndim is needed when the function takes *args")
            args += [Var(f"{var_arg}_{k}", index_dtype) for k in range(ndim - len(args) - len(kwargs))]
        elif ndim is not None and ndim != len(args) + len(kwargs):
            raise ValueError(f"IndexMap.from_func: the function takes {len(args) + len(kwargs)} indices "
                             f"but ndim is {ndim}")
        result = mapping_function(*args, **kwargs)
        finals: list[PrimExpr] = []
        separators: list[int] = []
        for value in (result if isinstance(result, (list, tuple)) else [result]):
            if isinstance(value, str) and value == IndexMap.AXIS_SEPARATOR:
                separators.append(len(finals))
            elif isinstance(value, (PrimExpr, int)):
                finals.append(convert(value) if not isinstance(value, int) else const(value, index_dtype))
            else:
                raise TypeError("an index map's function must return expressions or "
                                f"IndexMap.AXIS_SEPARATOR, got {value!r} ({type(value).__name__})")
        return IndexMap(tuple(args) + tuple(kwargs.values()), tuple(finals), inverse_index_map), separators

    # -- applying ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.initial_indices)

    def is_identity(self) -> bool:
        """The map returns its indices unchanged, in order."""
        return len(self.final_indices) == self.ndim and all(
            e is v for e, v in zip(self.final_indices, self.initial_indices))

    def map_indices(self, indices: list[PrimExpr]) -> list[PrimExpr]:
        """The final indices for the given initial ones (simplified)."""
        indices = [convert(i) for i in indices]
        if len(indices) != self.ndim:
            raise ValueError(f"the index map takes {self.ndim} indices, got {len(indices)}")
        vmap = {v: _cast_like(i, v) for v, i in zip(self.initial_indices, indices)}
        analyzer = Analyzer()
        return [analyzer.simplify(substitute(e, vmap)) for e in self.final_indices]

    def map_shape(self, shape: list[PrimExpr]) -> list[PrimExpr]:
        """The shape a buffer of ``shape`` has after the map (each output's extent)."""

        shape = [convert(s) for s in shape]
        if len(shape) != self.ndim:
            raise ValueError(f"the index map takes {self.ndim} indices, got a shape of {len(shape)}")
        out: list[PrimExpr] = []
        analysis = _IterSplits(self, shape)
        analyzer = Analyzer()
        for v, s in zip(self.initial_indices, shape):
            if isinstance(s, IntImm):
                analyzer.bind(v, Range(const(0, v.dtype), const(s.value, v.dtype)))
        for k, e in enumerate(self.final_indices):
            extent = analysis.output_extent(k)
            if extent is None:
                lo, hi = analyzer.interval(e)
                if lo != 0 or abs(hi) >= 2**62:
                    raise ValueError(f"cannot find the extent of index {e} over the shape {list(shape)}")
                extent = const(hi + 1, e.dtype)
            out.append(analyzer.simplify(extent))
        return out

    def map_tensor(self, arr_src: Any) -> Any:
        """``arr_src`` rearranged into the mapped layout (elements not hit stay zero)."""
        # lazy: only this method needs the runtime (14 modules); tir.IndexMap and Schedule do not
        from ..runtime import ndarray as _nd

        src = _nd.as_numpy(arr_src)
        dst_shape = [int(_as_int(s)) for s in self.map_shape(list(src.shape))]
        grids = np.indices(src.shape).reshape(src.ndim, -1)
        env = {id(v): grids[k] for k, v in enumerate(self.initial_indices)}
        coords = tuple(np.broadcast_to(_eval_numpy(e, env), grids.shape[1:]) for e in self.final_indices)
        dst = np.zeros(dst_shape, dtype=src.dtype)
        dst[coords] = src.reshape(-1)
        return _nd.array(dst)

    def is_equivalent_to(self, other_map: "IndexMap") -> bool:
        """Both maps compute provably the same final indices."""

        if self.ndim != other_map.ndim or len(self.final_indices) != len(other_map.final_indices):
            return False
        analyzer = Analyzer()
        mapped = other_map.map_indices(list(self.initial_indices))
        return all(analyzer.can_prove_equal(a, b) for a, b in zip(self.final_indices, mapped))

    # -- inverting --------------------------------------------------------------------------
    def inverse(self, shape: list) -> "IndexMap":
        """The inverse map over ``shape`` (extents or Ranges); refused unless the map is a
        bijection there (no padding)."""
        inverse, padding = self._inverse(shape)
        if padding is not None:
            raise ValueError(f"the inverse of {self} over {list(shape)} is not bijective: it would "
                             f"contain padding where {padding}")
        return inverse

    def non_surjective_inverse(self, shape: list) -> "tuple[IndexMap, PrimExpr]":
        """``(inverse, padding_predicate)``: the inverse of a map that may pad, and the condition
        under which an output index falls outside ``shape``."""
        inverse, padding = self._inverse(shape)
        return inverse, padding if padding is not None else const(False, "bool")

    def _inverse(self, shape: list) -> "tuple[IndexMap, PrimExpr | None]":
        if self.inverse_index_map is not None:  # given by the user, trusted as TVM trusts it
            return self.inverse_index_map, None
        ranges = [s if isinstance(s, Range) else Range(const(0, _dtype_of(s)), convert(s)) for s in shape]
        if len(ranges) != self.ndim:
            raise ValueError(f"the index map takes {self.ndim} indices, got a shape of {len(ranges)}")
        if any(not (isinstance(r.min, IntImm) and r.min.value == 0) for r in ranges):
            raise NotImplementedError("IndexMap.inverse over ranges that do not start at 0")
        analysis = _IterSplits(self, [r.extent for r in ranges])
        if analysis.error is not None:
            raise ValueError(f"cannot invert {self}: could not parse the mapping as sums of splits "
                             f"of its inputs ({analysis.error})")
        outs = [Var(f"axis{k}", e.dtype) for k, e in enumerate(self.final_indices)]
        exprs = analysis.inverse_exprs(outs)
        analyzer = Analyzer()
        for v, ext in zip(outs, self.map_shape([r.extent for r in ranges])):
            if isinstance(ext, IntImm):
                analyzer.bind(v, Range(const(0, v.dtype), ext))
        exprs = [analyzer.simplify(e) for e in exprs]
        padding = None
        for k, (e, r) in enumerate(zip(exprs, ranges)):
            if analysis.covers_exactly(k, e, r.extent, analyzer):
                continue
            cond = e >= _cast_like(r.extent, e)
            padding = cond if padding is None else logical_or(padding, cond)
        if padding is not None:
            padding = analyzer.simplify(padding)
        return IndexMap(tuple(outs), tuple(exprs)), padding

    # -- printing ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return _lambda_text(self)

    def script(self, **kwargs: Any) -> str:
        """TVMScript text: ``T.index_map(lambda i, j: (j, i))``."""
        inv = self.inverse_index_map
        extra = "" if inv is None else f", inverse_index_map={_lambda_text(inv)}"
        return f"T.index_map({_lambda_text(self)}{extra})"

    def __str__(self) -> str:
        return self.script()

    def _repr_html_(self) -> str:
        return script_printer().to_html(self.script())


def _dtype_of(x: Any) -> str:
    return x.dtype if isinstance(x, PrimExpr) else "int64"


def _as_int(e: Any) -> int:
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, int):
        return e
    raise ValueError(f"{e} is not a constant")


def _cast_like(value: Any, like: PrimExpr) -> PrimExpr:
    value = convert(value) if not isinstance(value, int) else const(value, like.dtype)
    if isinstance(value, IntImm) and value.dtype != like.dtype:
        return const(value.value, like.dtype)
    return value if value.dtype == like.dtype else _op.cast(value, like.dtype)


def _lambda_text(m: IndexMap) -> str:
    params = ", ".join(v.name for v in m.initial_indices)
    body = ", ".join(_expr_text(e) for e in m.final_indices)
    return f"lambda {params}: ({body}{',' if len(m.final_indices) == 1 else ''})"


def _expr_text(e: PrimExpr) -> str:
    return e.script() if hasattr(e, "script") else str(e)


def _eval_numpy(e: PrimExpr, env: dict[int, Any]) -> Any:
    """``e`` evaluated over integer numpy arrays bound to its variables."""

    if isinstance(e, Var):
        return env[id(e)]
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, _e.Cast):
        return _eval_numpy(e.value, env)
    ops = {_e.Add: np.add, _e.Sub: np.subtract, _e.Mul: np.multiply, FloorDiv: np.floor_divide,
           FloorMod: np.mod, _e.Min: np.minimum, _e.Max: np.maximum}
    for cls, fn in ops.items():
        if isinstance(e, cls):
            return fn(_eval_numpy(e.a, env), _eval_numpy(e.b, env))
    raise NotImplementedError(f"IndexMap.map_tensor: cannot evaluate {e} on arrays")


# -- the iterator analysis behind inverse and map_shape -----------------------------------------


@dataclass
class _Split:
    """``(x // lower) % extent`` of input ``x`` (``extent`` None: the rest of ``x``)."""

    index: int
    lower: int
    extent: int | None


class _IterSplits:
    """Each final index as a fused sum of splits of the initial indices: ``sum(scale * split)``
    with scales 1, e0, e0*e1 ...; ``error`` says why a map does not have that form."""

    def __init__(self, m: IndexMap, shape: list[PrimExpr]):
        self.m, self.shape = m, [convert(s) for s in shape]
        self.error: str | None = None
        self.outputs: list[list[tuple[int, _Split]] | None] = []  # per output: (scale, split), inner first
        for e in m.final_indices:
            terms, why = self._parse(e)
            if terms is None:
                self.error = self.error or why
            self.outputs.append(terms)
        if self.error is None:
            self.error = self._check_tiling()

    def _input(self, e: PrimExpr) -> int | None:
        for k, v in enumerate(self.m.initial_indices):
            if e is v:
                return k
        return None

    def _atom(self, e: PrimExpr) -> _Split | None:
        k = self._input(e)
        if k is not None:
            return _Split(k, 1, None)
        if isinstance(e, FloorDiv) and isinstance(e.b, IntImm):
            inner = self._atom(e.a)
            if inner is not None and inner.extent is None:
                return _Split(inner.index, inner.lower * e.b.value, None)
            if inner is not None and inner.extent % e.b.value == 0:
                return _Split(inner.index, inner.lower * e.b.value, inner.extent // e.b.value)
        if isinstance(e, FloorMod) and isinstance(e.b, IntImm):
            inner = self._atom(e.a)
            if inner is not None and (inner.extent is None or inner.extent % e.b.value == 0):
                return _Split(inner.index, inner.lower, e.b.value)
        return None

    def _parse(self, e: PrimExpr) -> tuple[list[tuple[int, _Split]] | None, str]:
        lin = LinearSum.from_expr(e)
        if lin.constant != 0:
            return None, f"{e} has a constant offset"
        terms = []
        for term, coeff in lin.terms:
            atom = self._atom(term)
            if atom is None or coeff <= 0:
                return None, f"{term} is not a split of an input index"
            terms.append((coeff, atom))
        terms.sort(key=lambda t: t[0])
        expected = 1
        for k, (scale, split) in enumerate(terms):
            extent = self.split_extent(split)
            if scale != expected or (extent is None and k != len(terms) - 1):
                return None, f"the terms of {e} are not a fusion of splits"
            expected = None if extent is None else scale * extent
        return terms, ""

    def split_extent(self, split: _Split) -> int | None:
        if split.extent is not None:
            return split.extent
        n = self.shape[split.index]
        return -(-n.value // split.lower) if isinstance(n, IntImm) else None

    def _split_extent_expr(self, split: _Split) -> PrimExpr:
        n = self.shape[split.index]
        ext = self.split_extent(split)
        if ext is not None:
            return const(ext, self.m.final_indices[0].dtype if self.m.final_indices else n.dtype)

        return n if split.lower == 1 else _op.floordiv(n + (split.lower - 1), split.lower)

    def _check_tiling(self) -> str | None:
        per_input: dict[int, list[_Split]] = {}
        for terms in self.outputs:
            for _, split in terms or ():
                per_input.setdefault(split.index, []).append(split)
        for k, v in enumerate(self.m.initial_indices):
            splits = sorted(per_input.get(k, []), key=lambda s: s.lower)
            n = self.shape[k]
            if not splits:
                if isinstance(n, IntImm) and n.value == 1:
                    continue
                return f"input {v.name} is not used"
            lower = 1
            for s in splits:
                if s.lower != lower:
                    return f"the splits of input {v.name} overlap or leave gaps"
                ext = self.split_extent(s)
                if ext is None:
                    if s is not splits[-1]:
                        return f"the splits of input {v.name} overlap"
                    break
                lower *= ext
        return None

    def output_extent(self, k: int) -> PrimExpr | None:
        terms = self.outputs[k]
        if terms is None:
            return None
        dtype = self.m.final_indices[k].dtype
        if not terms:
            return const(1, dtype)
        scale, split = terms[-1]
        return _cast_like(self._split_extent_expr(split), const(0, dtype)) * scale if scale != 1 \
            else _cast_like(self._split_extent_expr(split), const(0, dtype))

    def inverse_exprs(self, outs: list[Var]) -> list[PrimExpr]:
        pieces: dict[int, list[tuple[int, PrimExpr]]] = {}
        for y, terms in zip(outs, self.outputs):
            for j, (scale, split) in enumerate(terms or ()):
                value: PrimExpr = y if scale == 1 else _op.floordiv(y, scale)
                if j != len(terms) - 1:
                    value = _op.floormod(value, self.split_extent(split))
                pieces.setdefault(split.index, []).append((split.lower, value))
        exprs = []
        for k, v in enumerate(self.m.initial_indices):
            total: PrimExpr | None = None
            for lower, value in pieces.get(k, []):
                value = _cast_like(value, v) if value.dtype != v.dtype else value
                term = value if lower == 1 else value * lower
                total = term if total is None else total + term
            exprs.append(total if total is not None else const(0, v.dtype))
        return exprs

    def covers_exactly(self, k: int, e: PrimExpr, extent: PrimExpr, analyzer: Any) -> bool:
        """Input ``k``'s inverse expression ``e`` never reaches ``extent`` (no padding there)."""
        if isinstance(extent, IntImm):
            return analyzer.interval(e)[1] < extent.value
        # a symbolic extent is covered exactly only when it is never split
        splits = [s for terms in self.outputs for _, s in terms or () if s.index == k]
        return all(s.lower == 1 and s.extent is None for s in splits)


# -- helpers for the schedule primitives that take an index map ----------------------------------


def as_index_map(index_map: "IndexMap | Callable", ndim: int, index_dtype: str,
                 allow_separators: bool = False) -> "tuple[IndexMap, list[int]]":
    """``(IndexMap, axis_separators)`` from an IndexMap or a function of ``ndim`` indices
    (a function gets ``index_dtype`` variables, as TVM gives it the block's index type)."""
    if isinstance(index_map, IndexMap):
        result, seps = index_map, []
    elif callable(index_map):
        result, seps = IndexMap.from_func_with_separators(index_map, ndim, index_dtype=index_dtype)
    else:
        raise TypeError(f"an index map is an IndexMap or a function of the indices, got {index_map!r}")
    if seps and not allow_separators:
        raise ValueError("IndexMap.AXIS_SEPARATOR is only allowed in transform_layout's index map")
    return result, seps


def substitute_indices(m: IndexMap, indices: list[PrimExpr]) -> list[PrimExpr]:
    """``m``'s final indices for ``indices`` (unsimplified); a map written over another index
    type is first rewritten in the indices' type, so no casts appear."""

    if len(indices) != m.ndim:
        raise ValueError(f"the index map takes {m.ndim} indices, got {len(indices)}")
    dtype = indices[0].dtype if indices else None
    finals = list(m.final_indices)
    if dtype is not None and any(v.dtype != dtype for v in m.initial_indices):
        old = {v.dtype for v in m.initial_indices}

        class _Retype(StmtExprMutator):
            def visit_int_imm_(self, n: IntImm) -> IntImm:
                return const(n.value, dtype) if n.dtype in old else n

        fresh = {v: Var(v.name, dtype) for v in m.initial_indices}
        finals = [_Retype().visit(substitute(e, fresh)) for e in finals]
        params = [fresh[v] for v in m.initial_indices]
    else:
        params = list(m.initial_indices)
    return [substitute(e, dict(zip(params, indices))) for e in finals]
