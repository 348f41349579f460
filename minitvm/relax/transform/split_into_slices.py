"""SplitIntoSlices: a split whose every part flows into a copy becomes one slice per part.

GPT-2's attention computes query, key and value in one matmul and splits its columns in three;
each part is then viewed as heads and transposed.  A split is a kernel of its own (its outputs
are a tuple, which FuseOps, as TVM's, does not fuse forward through three different paths): it
copies every part out, and each part's transpose copies it again.  A slice has one output, so
it fuses into the copy that reads it -- each transpose then reads its columns straight from the
matmul's result, and one copy of the whole tensor is gone.  (A minitvm rewrite; TVM keeps the
split.)  It applies only where it pays: a static split, read only through its parts, each part
read only by injective or element-wise operators (a reshape, a transpose, an add), which take a
slice in for free; otherwise each part's slice would be a kernel where the split was one.

::

    mod = relax.transform.SplitIntoSlices()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...topi.transform import split_pieces
from ...transform import PassContext, module_pass
from ..analysis.remove_unused import remove_all_unused
from ..expr import Call, Function, TupleGetItem, Var, VarBinding, struct_info_of
from ..op import strided_slice
from ..op.registry import OpPattern
from ..struct_info import TensorStructInfo
from ._util import DataflowAwareMutator, map_functions, readers

__all__ = ["SplitIntoSlices"]


def _part_bounds(split: Call) -> list[tuple[int, int]] | None:
    """Each part's [begin, end) along the split axis (as ``topi.split`` cuts it), when the
    input's length there is known."""
    sinfo = struct_info_of(split.args[0])
    shape = sinfo.static_shape if isinstance(sinfo, TensorStructInfo) else None
    if shape is None:
        return None
    length = shape[split.attrs["axis"] % len(shape)]
    return [(b, b + n) for b, n in split_pieces(length, split.attrs["indices_or_sections"])]


def _fuses_a_slice(reader: Any) -> bool:
    """Whether ``reader`` is an operator that computes from a slice as from any tensor, in its
    own kernel (injective or element-wise: the slice fuses into it)."""
    if not isinstance(reader, Call) or not isinstance(reader.op, Op):
        return False
    pattern = reader.op.get_attr("TOpPattern")
    return pattern is not None and int(pattern) <= int(OpPattern.INJECTIVE)


class _Slicer(DataflowAwareMutator):
    """``part = split(x)[i]`` -> ``part = strided_slice(x, axis, begin_i, end_i)`` for the
    splits :meth:`_sliceable` accepts; the splits nothing reads any more are removed afterwards."""

    def __init__(self, func: Function) -> None:
        super().__init__()
        self.readers = readers(func)
        bindings = [b for block in getattr(func.body, "blocks", ()) for b in block.bindings]
        self.bound_to = {id(b.value): b.var for b in bindings if isinstance(b, VarBinding)}
        self.parts: dict[Var, tuple[Any, int, list[tuple[int, int]]]] = {}  # split -> (input, axis, bounds)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if self.in_dataflow and self._sliceable(binding.var, value):
            # the split itself stays until nothing reads it (then remove_all_unused drops it)
            self.parts[binding.var] = (self.visit_expr(value.args[0]), value.attrs["axis"], _part_bounds(value))
        elif isinstance(value, TupleGetItem) and value.tuple_value in self.parts:
            x, axis, bounds = self.parts[value.tuple_value]
            begin, end = bounds[value.index]
            sliced = strided_slice(x, [axis], [begin], [end], assume_inbound=True)
            self.builder_.emit_normalized(VarBinding(binding.var, sliced))
            return
        super().visit_var_binding_(binding)

    def _sliceable(self, var: Var, value: Any) -> bool:
        """A static split read only through its parts, each part only by operators a slice fuses into."""
        if not (isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "relax.split"
                and _part_bounds(value) is not None):
            return False
        parts = self.readers.get(var, [])
        if not parts or not all(isinstance(p, TupleGetItem) and id(p) in self.bound_to for p in parts):
            return False
        return all(self.readers.get(self.bound_to[id(p)]) and all(
            _fuses_a_slice(r) for r in self.readers[self.bound_to[id(p)]]) for p in parts)


def _slice_splits(func: Function, mod: IRModule) -> Function:
    if func.attrs.get("Primitive"):
        return func
    new = _Slicer(func).visit_expr(func)
    return func if new is func else remove_all_unused(new)


@module_pass(opt_level=0, name="SplitIntoSlices")
class SplitIntoSlices:
    """``SplitIntoSlices()``: a split whose parts all flow into injective or element-wise
    operators becomes one ``strided_slice`` per part (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _slice_splits)
