"""Building tensor expressions: ``placeholder``, ``compute``, ``reduce_axis``, ``var``."""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable

from ..ir import dtype as _dt
from ..ir.deep import deep_on_overflow
from ..tir import op as _op
from ..tir.expr import PrimExpr, Range, SizeVar, Var, const, convert
from ..tir.functor import StmtExprVisitor, post_order_visit
from .reduction import Reduce
from .tensor import ComputeOp, IterVar, PlaceholderOp, ProducerLoad, Tensor, as_shape

__all__ = ["placeholder", "compute", "reduce_axis", "var", "size_var"]

# Variables of the iteration axes te made, so that a compute body using a reduce axis
# outside its reducer, or another compute's axis, is caught with a clear message.
_REDUCE_VARS: weakref.WeakValueDictionary[int, Var] = weakref.WeakValueDictionary()
_AXIS_VARS: weakref.WeakValueDictionary[int, Var] = weakref.WeakValueDictionary()


def _is_reduce_var(v: Var) -> bool:
    return _REDUCE_VARS.get(id(v)) is v


def _is_axis_var(v: Var) -> bool:
    return _AXIS_VARS.get(id(v)) is v


def var(name: str = "tindex", dtype: str = "int32") -> Var:
    """A scalar variable, e.g. a symbolic dimension: ``n = te.var("n")``."""
    return Var(name, _dt.check(dtype))


def size_var(name: str = "size", dtype: str = "int32") -> SizeVar:
    """A variable known to be non-negative (a symbolic shape dimension)."""
    return SizeVar(name, _dt.check(dtype))


def placeholder(shape: Any, dtype: str | None = None, name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` and ``dtype`` (float32 unless given)."""
    dtype = _dt.check(dtype or "float32")
    return PlaceholderOp(name, as_shape(shape), dtype).output(0)


def reduce_axis(dom: Any, name: str = "rv", thread_tag: str = "") -> IterVar:
    """A reduction axis over ``dom = (begin, end)`` (or a ``Range``): ``te.reduce_axis((0, n), "k")``."""
    if thread_tag:
        raise NotImplementedError(f"te.reduce_axis(thread_tag={thread_tag!r}): minitvm's iteration variables "
                                  "carry no thread tag")
    if isinstance(dom, Range):
        rng = dom
    else:
        try:
            begin, end = dom
        except (TypeError, ValueError):
            raise TypeError(f"reduce_axis: dom must be (begin, end) or a Range, got {dom!r}") from None
        begin, end = convert(begin), convert(end)
        if not (_dt.is_int(begin.dtype) and _dt.is_int(end.dtype)):
            raise TypeError(f"reduce_axis {name}: bounds must be integers, got {dom!r}")
        rng = Range(begin, _op.sub(end, begin))
    iv = IterVar(rng, Var(name, rng.extent.dtype), IterVar.CommReduce)
    _REDUCE_VARS[id(iv.var)] = iv.var
    return iv


def _arg_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        raise TypeError(f"compute {name!r}: fcompute must be a function of the output indices") from None
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        if len(positional) > ndim:
            raise ValueError(f"compute: shape has {ndim} dims but fcompute takes at least "
                             f"{len(positional)} arguments ({', '.join(positional)})")
        return positional + [f"i{d}" for d in range(len(positional), ndim)]
    if len(positional) != ndim:
        raise ValueError(
            f"compute: shape has {ndim} dim{'s' if ndim != 1 else ''} but fcompute takes "
            f"{len(positional)} argument{'s' if len(positional) != 1 else ''}"
            + (f" ({', '.join(positional)})" if positional else "")
            + f" in te.compute named {name!r}"
        )
    return positional


@deep_on_overflow  # pure: a deep body is walked again on a deep thread
def compute(shape: Any, fcompute: Callable, name: str = "compute", tag: str = "",
            attrs: dict | None = None, varargs_names: list[str] | None = None) -> Tensor | tuple[Tensor, ...]:
    """A tensor of ``shape`` whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` may return a tuple of expressions: the compute then has several outputs
    (over one domain) and a tuple of tensors is returned.
    """
    shape = as_shape(shape)
    names = _arg_names(fcompute, len(shape), name)
    if varargs_names is not None:
        if len(varargs_names) != len(shape):
            raise ValueError(f"compute {name!r}: varargs_names has {len(varargs_names)} names "
                             f"for {len(shape)} dims")
        names = list(varargs_names)
    axis = tuple(IterVar(Range(const(0, dim.dtype), dim), Var(n, dim.dtype), IterVar.DataPar)
                 for n, dim in zip(names, shape))
    for iv in axis:
        _AXIS_VARS[id(iv.var)] = iv.var

    result = fcompute(*(iv.var for iv in axis))
    if isinstance(result, Tensor):
        raise TypeError(f"compute {name!r}: fcompute returned the tensor {result.name}; "
                        f"return an element of it, e.g. {result.name}[i, j]")
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if not values:
        raise ValueError(f"compute {name!r}: fcompute returned no values")
    body = []
    for v in values:
        try:
            body.append(convert(v))
        except TypeError:
            raise TypeError(f"compute {name!r}: fcompute must return an expression, got {v!r}") from None

    reduce_axes = _check_body(name, axis, body)
    op = ComputeOp(name, tag, attrs or {}, axis, reduce_axes, tuple(body))
    outputs = tuple(op.output(i) for i in range(op.num_outputs))
    return outputs[0] if len(outputs) == 1 else outputs


def _check_body(name: str, axis: tuple[IterVar, ...], body: list[PrimExpr]) -> tuple[IterVar, ...]:
    """Check reductions and iteration variables of a compute body; return its reduce axes."""
    reduces = [b for b in body if isinstance(b, Reduce)]
    reduce_axes: tuple[IterVar, ...] = ()
    if reduces:
        if len(reduces) != len(body):
            raise ValueError(f"compute {name!r}: either every output is a reduction or none is")
        first = reduces[0]
        for r in reduces[1:]:
            if not (r.combiner is first.combiner and r.source is first.source and r.axis is first.axis):
                raise ValueError(f"compute {name!r}: several reduction outputs must come from one "
                                 "reducer call over a tuple of values")
        reduce_axes = first.axis
    spatial = {id(iv.var) for iv in axis}
    for b in body:
        _BodyChecker(name, spatial).visit(b)
    for rv in reduce_axes:
        uses = _vars_in(rv.dom, spatial)
        if uses:
            raise ValueError(f"compute {name!r}: the range of reduce axis {rv.var.name} depends on "
                             f"{', '.join(uses)}; give it a fixed range and restrict it "
                             "with where=")
    return reduce_axes


def _vars_in(n: Any, among: set[int]) -> list[str]:
    """Names of the variables of ``n`` whose ids are in ``among`` (each once)."""
    found: dict[str, None] = {}
    post_order_visit(n, lambda x: found.setdefault(x.name) if isinstance(x, Var) and id(x) in among else None)
    return list(found)


class _BodyChecker(StmtExprVisitor):
    """Finds reductions below the top of a body and iteration variables out of place."""

    def __init__(self, name: str, spatial: set[int]):
        self.name, self.spatial = name, spatial
        self.reducing: set[int] = set()
        self.top = True

    def visit(self, n: Any) -> None:
        top, self.top = self.top, False
        if isinstance(n, Reduce):
            if not top:
                raise ValueError(
                    f"compute {self.name!r}: a reduction (te.sum/te.max/te.min) must be the whole "
                    "body of a compute, not part of a larger expression; compute it as its own "
                    "tensor and use that tensor")
            self.reducing = {id(iv.var) for iv in n.axis}
            self.visit((n.source, n.condition, n.init))
            self.reducing = set()
            return
        super().visit(n)

    def visit_producer_load_(self, n: ProducerLoad) -> None:
        self.visit(n.indices)  # not into the producer: it was checked when it was built

    def visit_var_(self, v: Var) -> None:
        if _is_reduce_var(v) and id(v) not in self.reducing:
            raise ValueError(
                f"compute {self.name!r}: reduce axis {v.name} is used outside a reducer; "
                f"wrap the expression in te.sum/te.max/te.min(..., axis={v.name})"
                + (" and list it in that reducer's axis" if self.reducing else ""))
        if _is_axis_var(v) and id(v) not in self.spatial:
            raise ValueError(f"compute {self.name!r}: uses the index {v.name} of another compute; "
                             "use the arguments of this compute's fcompute")

    visit_size_var_ = visit_var_
