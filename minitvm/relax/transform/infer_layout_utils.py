"""Layouts as ConvertLayout reasons about them (TVM's ``relax/transform/infer_layout_utils``).

A layout is a string of axis names: an upper-case letter is a whole (primal) axis, a number
and a lower-case letter a block of that axis (``NCHW4c``: C split into C // 4 and c = C % 4).
A tensor's layout *decision* names its axes by where they were in the original tensor:
``ABCD`` is the initial layout of a 4-d tensor, ``ACDB`` says it is now stored NHWC-wise
(original axis B, the channels, last), ``ABCD4b`` that B is blocked by 4.  A nested layout
(for tuples) is a list of those; :data:`UNKNOWN` is the decision for a tensor of unknown rank
or a non-tensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...tir import expr as _t
from ...tir.index_map import IndexMap
from ..expr import Constant, Expr, Tuple, Var, struct_info_of
from ..op._utils import const_dim
from ..op.layout import layout_axes, primal_values, shape_to_primal, spread_to_layout
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["UNKNOWN", "InferLayoutOutput", "initial_layout", "initial_nlayout", "get_nlayout",
           "layout_axes", "ndim_primal", "is_packed", "transpose_like", "transpose_sub_layout_like",
           "find_axis", "follow_decision", "forward_index_map", "can_prove_layout_transform"]

#: the decision for a tensor of unknown rank (or anything that is not a tensor)
UNKNOWN = "unknown_dim"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class InferLayoutOutput:
    """What an operator's layout rule decides: the layouts its tensor arguments must come in,
    the layouts of its results, its new attributes, and arguments to replace (index -> expr)."""

    input_layouts: list
    output_layouts: list
    new_attrs: Any
    new_args: dict = field(default_factory=dict)


def layout_names(layout: str) -> str:
    """The axis letters alone (``NCHW4c`` -> ``NCHWc``): position k is the tensor's axis k."""
    return "".join(name for name, _ in layout_axes(layout))


def ndim_primal(layout: str) -> int:
    return sum(1 for ch in layout if ch.isupper())


def is_packed(layout: str) -> bool:
    """Some axis is blocked (``NCHW4c``): not a plain reordering of whole axes."""
    return layout != UNKNOWN and any(ch.islower() for ch in layout)


def initial_layout(ndim: int) -> str:
    if not 0 <= ndim <= 26:
        raise ValueError(f"ConvertLayout handles tensors of up to 26 dimensions, got {ndim}")
    return _LETTERS[:ndim]


def initial_decision(ndim: int) -> str:
    return UNKNOWN if ndim == -1 else initial_layout(ndim)


def initial_nlayout_of_sinfo(sinfo: StructInfo) -> Any:
    if isinstance(sinfo, TupleStructInfo):
        return [initial_nlayout_of_sinfo(f) for f in sinfo.fields]
    if isinstance(sinfo, TensorStructInfo):
        return initial_decision(sinfo.ndim)
    return UNKNOWN


def initial_nlayout(expr: Expr) -> Any:
    """The layout ``expr`` has when nobody moved its axes (nested for tuples)."""
    return initial_nlayout_of_sinfo(struct_info_of(expr))


def get_nlayout(var_layouts: dict, expr: Expr) -> Any:
    """The current layout of ``expr``: a variable's as recorded, a constant's initial one."""
    if isinstance(expr, Tuple):
        return [get_nlayout(var_layouts, f) for f in expr.fields]
    if isinstance(expr, Var):
        return var_layouts[expr] if expr in var_layouts else initial_nlayout(expr)
    if isinstance(expr, Constant):
        return initial_layout(len(expr.data.shape))
    return initial_nlayout(expr) if isinstance(struct_info_of(expr), TupleStructInfo) else UNKNOWN


def has_unknown(nlayout: Any) -> bool:
    if isinstance(nlayout, list):
        return any(has_unknown(x) for x in nlayout)
    return nlayout == UNKNOWN


def transpose_like(inp: str, src: str, dst: str) -> str:
    """``inp`` reordered the way ``dst`` reorders ``src`` (all of the same length)."""
    s, d = layout_names(src), layout_names(dst)
    if not (len(s) == len(d) == len(inp)):
        raise ValueError(f"transpose_like: layouts {inp!r}, {src!r}, {dst!r} must have the same size")
    return "".join(inp[s.index(ch)] for ch in d)


def transpose_sub_layout_like(ref: str, src: str, desired: str) -> str:
    """``desired`` written in the axis names of ``ref`` (``ref`` names ``src``'s axes), blocks
    kept: (``ABCD``, ``NCHW``, ``NHWC4c``) -> ``ACDB4b``."""
    out = []
    for ch in desired:
        if ch.isupper():
            out.append(ref[src.index(ch)])
        elif ch.isdigit():
            out.append(ch)
        elif ch.islower():
            out.append(ref[src.index(ch.upper())].lower())
    return "".join(out)


def find_axis(layout: str, axis: int) -> int:
    """Where the original axis ``axis`` is in ``layout`` (blocks' digits ignored)."""
    n = len(layout_axes(layout))  # as TVM: a negative axis counts the blocks too
    axis = (axis + n) % n
    return layout_names(layout).find(_LETTERS[axis])


def follow_decision(src: str, dst_ndim: int) -> str:
    """The decision for a ``dst_ndim`` tensor that broadcasts with one laid out ``src`` (the
    leading new axes stay where they are)."""
    src_ndim = len(src)
    if src_ndim == dst_ndim:
        return src
    if src_ndim > dst_ndim:
        raise ValueError(f"cannot broadcast a layout of {src_ndim} dimensions to {dst_ndim}")
    extra = dst_ndim - src_ndim
    return initial_layout(extra) + "".join(chr(ord(ch) + extra) if ch.isalpha() else ch for ch in src)


# -- bijective layouts: index maps and shapes ------------------------------------------------------

def forward_index_map(src: str, dst: str) -> IndexMap:
    """The index map from a tensor laid out ``src`` to ``dst`` (int32 indices ``i0, i1 ...``,
    as TVM's ConvertLayout writes them)."""
    n = len(layout_axes(src))
    idx = [_t.Var(f"i{k}", "int32") for k in range(n)]
    primal = primal_values(src, idx, lambda outer, f, inner: outer * _t.IntImm("int32", f) + inner)
    final = spread_to_layout(dst, primal, lambda v, f: (_t.FloorDiv(v, _t.IntImm("int32", f)),
                                               _t.FloorMod(v, _t.IntImm("int32", f))))
    return IndexMap(tuple(idx), tuple(final))


def can_prove_layout_transform(src: str, dst: str, shape: list) -> bool:
    """A tensor of ``shape`` (laid out ``src``) goes to ``dst`` and back unchanged: every
    blocked axis's constant extent divides by its block."""
    try:
        if len(layout_axes(src)) != len(shape):
            return False
        primal = shape_to_primal(src, shape)
        for name, factor in layout_axes(dst):
            if name.islower():
                extent = const_dim(primal[name.upper()])
                if extent is not None and extent % factor:
                    return False
            elif name not in primal:
                return False
        return True
    except (ValueError, KeyError):
        return False
