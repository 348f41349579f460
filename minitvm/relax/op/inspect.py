"""``relax.inspect.*``: a tensor's DLPack fields read at run time (TVM's ``R.Tensor`` accessors).

``A.dtype.type_code``, ``A.dtype.bits``, ``A.dtype.lanes``, ``A.ndim``, ``A.shape[i]``,
``A.strides[i]``, ``A.byte_offset`` and ``A.elem_offset`` on a Relax tensor build these calls;
each returns an ``R.Prim`` of TVM's DLPack field dtype, its value known already when the
tensor's struct info says it.  They legalize to ``R.call_pure_packed`` of the runtime
functions of the same names (TVM writes a PrimFunc reading the DLTensor: the same values).
"""

from __future__ import annotations

from typing import Any

from ...ir.dtype import DataType
from ...ir.op import Op
from ...runtime.registry import register_func
from ...tir.expr import IntImm
from ..expr import Call, PrimValue, struct_info_of
from ..struct_info import PrimStructInfo, StructInfo, StructInfoError, TensorStructInfo
from .base import call_pure_packed
from .registry import make_call, register

__all__ = ["tensor_dtype_code", "tensor_dtype_bits", "tensor_dtype_lanes", "tensor_ndim", "tensor_shape_i",
           "tensor_stride_i", "tensor_byte_offset", "tensor_elem_offset"]

#: op name -> (DLPack field dtype, what the tensor's struct info tells statically)
_FIELDS: dict[str, tuple[str, Any]] = {
    "tensor_dtype_code": ("uint8", lambda t, call: None if t.is_unknown_dtype else int(DataType(t.dtype).type_code)),
    "tensor_dtype_bits": ("uint8", lambda t, call: None if t.is_unknown_dtype else DataType(t.dtype).bits),
    "tensor_dtype_lanes": ("uint16", lambda t, call: None if t.is_unknown_dtype else DataType(t.dtype).lanes),
    "tensor_ndim": ("int32", lambda t, call: None if t.is_unknown_ndim else t.ndim),
    "tensor_shape_i": ("int64", lambda t, call: _static_dim(t, call)),
    "tensor_stride_i": ("int64", lambda t, call: None),
    "tensor_byte_offset": ("uint64", lambda t, call: None),
    "tensor_elem_offset": ("int64", lambda t, call: None),
}


def _static_dim(t: TensorStructInfo, call: Call) -> Any:
    axis = call.args[1] if len(call.args) > 1 else None
    values = t.shape_values
    if values is None or not isinstance(axis, PrimValue) or not isinstance(axis.value, IntImm):
        return None
    i = axis.value.value
    return values[i] if 0 <= i < len(values) else None


def _tensor_arg(call: Call, name: str) -> TensorStructInfo:
    sinfo = struct_info_of(call.args[0])
    if not isinstance(sinfo, TensorStructInfo):
        raise StructInfoError(f"relax.inspect.{name} reads a tensor's DLTensor fields, but its argument has "
                              f"struct info {sinfo}")
    return sinfo


def _make_infer(name: str, dtype: str, known: Any) -> Any:
    def infer(call: Call, ctx: Any) -> StructInfo:
        value = known(_tensor_arg(call, name), call)
        if value is None:
            return PrimStructInfo(dtype)
        return PrimStructInfo(value=value if not isinstance(value, int) else IntImm(dtype, value))

    infer.__doc__ = f"R.Prim({dtype!r}): the tensor's DLPack field, known when its struct info says it."
    return infer


def _legalize(bb: Any, call: Call) -> Any:
    sinfo = struct_info_of(call)
    if isinstance(sinfo, PrimStructInfo) and isinstance(sinfo.value, IntImm):
        return PrimValue(sinfo.value)  # known when compiling: no run-time read
    return call_pure_packed(call.op.name, *call.args, sinfo_args=PrimStructInfo(sinfo.dtype))


for _name, (_dtype, _known) in _FIELDS.items():
    register(f"relax.inspect.{_name}", num_inputs=2 if _name in ("tensor_shape_i", "tensor_stride_i") else 1)(
        _make_infer(_name, _dtype, _known))
    Op.get(f"relax.inspect.{_name}").set_attr("FLegalize", _legalize)
    Op.get(f"relax.inspect.{_name}").set_attr("RequiresArgumentShapes", False)


def tensor_dtype_code(x: Any) -> Call:
    return make_call("relax.inspect.tensor_dtype_code", x)


def tensor_dtype_bits(x: Any) -> Call:
    return make_call("relax.inspect.tensor_dtype_bits", x)


def tensor_dtype_lanes(x: Any) -> Call:
    return make_call("relax.inspect.tensor_dtype_lanes", x)


def tensor_ndim(x: Any) -> Call:
    return make_call("relax.inspect.tensor_ndim", x)


def tensor_shape_i(x: Any, axis: Any) -> Call:
    return make_call("relax.inspect.tensor_shape_i", x, _prim(axis))


def tensor_stride_i(x: Any, axis: Any) -> Call:
    return make_call("relax.inspect.tensor_stride_i", x, _prim(axis))


def tensor_byte_offset(x: Any) -> Call:
    return make_call("relax.inspect.tensor_byte_offset", x)


def tensor_elem_offset(x: Any) -> Call:
    return make_call("relax.inspect.tensor_elem_offset", x)


def _prim(axis: Any) -> Any:
    from ..expr import Expr  # lazy: only to tell a Relax value from a plain index

    if isinstance(axis, Expr):
        if not isinstance(struct_info_of(axis), (PrimStructInfo, type(None))):
            raise TypeError(f"the index of a tensor's shape or strides must be an R.Prim('int64'), got "
                            f"{struct_info_of(axis)}")
        return axis
    return PrimValue(IntImm("int64", int(axis)) if isinstance(axis, int) else axis)


# -- the run-time reads ----------------------------------------------------------------------
def _axis(t: Any, axis: int, what: str) -> int:
    axis = int(axis)
    if not 0 <= axis < len(t.shape):
        raise IndexError(f"relax.inspect.{what}: axis {axis} is out of range for a {len(t.shape)}-d tensor")
    return axis


_RUNTIME = {
    "tensor_dtype_code": lambda t: int(DataType(t.dtype).type_code),
    "tensor_dtype_bits": lambda t: DataType(t.dtype).bits,
    "tensor_dtype_lanes": lambda t: DataType(t.dtype).lanes,
    "tensor_ndim": lambda t: len(t.shape),
    "tensor_shape_i": lambda t, i: int(t.shape[_axis(t, i, "tensor_shape_i")]),
    "tensor_stride_i": lambda t, i: int(t.strides[_axis(t, i, "tensor_stride_i")]),
    "tensor_byte_offset": lambda t: int(t.byte_offset),
    "tensor_elem_offset": lambda t: int(t.byte_offset) // max(1, DataType(t.dtype).bits * DataType(t.dtype).lanes // 8),
}
for _name, _fn in _RUNTIME.items():
    register_func(f"relax.inspect.{_name}", _fn, override=True)
