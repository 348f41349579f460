"""Reductions: ``te.sum``, ``te.max``, ``te.min`` and custom ones from ``te.comm_reducer``.

``te.sum(A[i, k], axis=k)`` builds a :class:`Reduce` expression: a commutative combiner
(``x + y``), its identity (``0``), the values it combines and the reduce axes.  A
reduction is the whole body of a compute; ``te.create_prim_func`` turns it into a block
with ``T.init()`` storing the identity and an update ``Y[v] = combine(Y[v], value)``.

Called with two expressions instead of an axis, ``te.max(a, b)`` is the element-wise
maximum, as in TVM.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

from ..ir.node import Node, defines, node
from ..tir import op as _op
from ..tir.expr import Add, IterVar, Max, Min, Mul, PrimExpr, Sub, Var, const, convert
from ..tir.functor import StmtExprMutator

__all__ = ["CommReducer", "Reduce", "comm_reducer", "sum", "max", "min"]


@node
class CommReducer(Node):
    """A commutative reducer: ``result`` combines ``lhs`` and ``rhs``; ``identity_element``
    is its neutral value.  Each field is a tuple (one entry per combined value)."""

    lhs: tuple = defines()  # the combiner's parameters: bound here, as a lambda's
    rhs: tuple = defines()
    result: tuple = ()
    identity_element: tuple = ()

    def __repr__(self) -> str:
        return f"CommReducer({list(self.result)}, identity={list(self.identity_element)})"

    def __call__(self, a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        """Combine the values ``a`` (accumulated) and ``b`` (new), one per component."""
        vmap = dict(zip(self.lhs, a)) | dict(zip(self.rhs, b))
        return tuple(_FoldingSubstitute(vmap).visit(r) for r in self.result)


class _FoldingSubstitute(StmtExprMutator):
    """Substitute, then rebuild the arithmetic around what changed with TIR's folding
    operators, as if the combiner had been written on the values: ``x + y`` with ``y := 0``
    is ``x``, not ``x + 0`` (which TVMScript would print and parse back as ``x``)."""

    _FOLDING = {Add: _op.add, Sub: _op.sub, Mul: _op.mul, Min: _op.min, Max: _op.max}

    def __init__(self, vmap: dict):
        self.vmap = {id(k): v for k, v in vmap.items()}

    def visit(self, n: Any) -> Any:
        if isinstance(n, Var):
            return self.vmap.get(id(n), n)
        new = super().visit(n)
        rebuild = self._FOLDING.get(type(n))
        return rebuild(new.a, new.b) if rebuild is not None and new is not n else new


@node
class Reduce(PrimExpr):
    """``combiner`` over ``source`` for every point of ``axis`` where ``condition`` holds.

    With several components (an arg-max keeps an index and a value) each output is a
    ``Reduce`` sharing combiner, source and axes, told apart by ``value_index``.
    """

    combiner: CommReducer
    source: tuple
    axis: tuple
    condition: PrimExpr
    value_index: int = 0
    init: tuple = ()

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.source[self.value_index].dtype

    def __repr__(self) -> str:
        axes = ", ".join(iv.var.name for iv in self.axis)
        return f"Reduce({self.combiner!r}, {list(self.source)}, axis=[{axes}])"


def _as_axes(axis: Any, who: str) -> tuple[IterVar, ...]:
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if not axes:
        raise ValueError(f"{who}: the axis list is empty; pass te.reduce_axis(...) objects")
    for a in axes:
        if not isinstance(a, IterVar):
            raise TypeError(f"{who}: axis must be a reduce axis made by te.reduce_axis, got {a!r}")
        if a.iter_type != IterVar.CommReduce:
            raise ValueError(f"{who}: axis {a.var.name} is a spatial axis; reduce over "
                             "te.reduce_axis(...) objects")
    if len({id(a.var) for a in axes}) != len(axes):
        raise ValueError(f"{who}: an axis appears twice in {[a.var.name for a in axes]}")
    return axes


class _Reducer:
    """The callable ``te.comm_reducer`` returns (``te.sum``, ``te.max`` ...)."""

    def __init__(self, fcombine: Callable, fidentity: Callable, name: str):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def __repr__(self) -> str:
        return f"<te reducer {self.name}>"

    def _combiner(self, dtypes: tuple[str, ...], multi: bool) -> CommReducer:
        lhs = tuple(Var("x" if not multi else f"x{i}", d) for i, d in enumerate(dtypes))
        rhs = tuple(Var("y" if not multi else f"y{i}", d) for i, d in enumerate(dtypes))
        if multi:
            result = self.fcombine(lhs, rhs)
            identity = self.fidentity(*dtypes)
        else:
            result = (self.fcombine(lhs[0], rhs[0]),)
            identity = (self.fidentity(dtypes[0]),)
        result, identity = tuple(result), tuple(identity)
        if len(result) != len(dtypes) or len(identity) != len(dtypes):
            raise ValueError(f"te.{self.name}: fcombine and fidentity must give {len(dtypes)} values, "
                             f"got {len(result)} and {len(identity)}")
        result = tuple(_op.cast(convert(r, d), d) for r, d in zip(result, dtypes))
        identity = tuple(_op.cast(convert(e, d), d) for e, d in zip(identity, dtypes))
        return CommReducer(lhs, rhs, result, identity)

    def __call__(self, expr: Any, axis: Any = None, where: Any = None, init: Any = None,
                 *args: Any) -> Any:
        if axis is None:
            raise TypeError(f"te.{self.name}(expr, axis=...) needs a reduce axis "
                            f"(or two expressions for the element-wise {self.name})")
        if not isinstance(axis, (IterVar, list, tuple)):
            # te.max(a, b, c ...): element-wise, folded left to right
            values = [expr, axis] + ([] if where is None else [where]) \
                + ([] if init is None else [init]) + list(args)
            if builtins.any(isinstance(v, IterVar) and v.iter_type == IterVar.CommReduce
                            for v in values[2:]):
                raise TypeError(f"te.{self.name}: pass the reduce axis as the second argument")
            return self._direct(values)
        if args:
            raise TypeError(f"te.{self.name} takes expr, axis, where and init; got extra {args!r}")
        axes = _as_axes(axis, f"te.{self.name}")
        multi = isinstance(expr, (list, tuple))
        source = tuple(convert(e) for e in (expr if multi else (expr,)))
        if builtins.any(isinstance(s, Reduce) for s in source):
            raise ValueError(f"te.{self.name}: a reduction inside a reduction is not supported; "
                             "compute the inner one as its own tensor")
        condition = const(True, "bool") if where is None else convert(where)
        if condition.dtype != "bool":
            raise TypeError(f"te.{self.name}: where= must be a bool condition, got {condition.dtype}")
        combiner = self._combiner(tuple(s.dtype for s in source), multi)
        if init is None:
            inits: tuple = ()
        else:
            inits = tuple(init) if isinstance(init, (list, tuple)) else (init,)
            if len(inits) != len(source):
                raise ValueError(f"te.{self.name}: init has {len(inits)} values for {len(source)} sources")
            inits = tuple(_op.cast(convert(v, s.dtype), s.dtype) for v, s in zip(inits, source))
        outs = tuple(Reduce(combiner, source, axes, condition, i, inits) for i in range(len(source)))
        return outs if multi else outs[0]

    def _direct(self, values: list) -> PrimExpr:
        acc = values[0]
        for v in values[1:]:
            acc = self.fcombine(acc, v)
        return acc


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce") -> _Reducer:
    """A reducer from ``fcombine(x, y)`` and ``fidentity(dtype)`` (TVM's ``te.comm_reducer``).

    For a reducer of several values (an arg-max), ``fcombine(xs, ys)`` takes and returns
    tuples and ``fidentity(*dtypes)`` returns a tuple; call it with a tuple of expressions.
    """
    return _Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: _op.add(x, y), lambda t: const(0, t), name="sum")  # noqa: A001
max = comm_reducer(lambda x, y: _op.max(x, y), _op.min_value, name="max")  # noqa: A001
min = comm_reducer(lambda x, y: _op.min(x, y), _op.max_value, name="min")  # noqa: A001
