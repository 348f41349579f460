"""RemoveRedundantReshape: drop the operations that do not change their input.

An exported model is full of them: ``reshape`` to the shape the tensor already has,
``broadcast_to`` its own shape, ``astype`` to its own dtype, ``permute_dims`` with the axes in
order -- each one a kernel call that copies a tensor into a new one of the same contents.
This pass replaces such a call by its input, and a ``reshape`` of a ``reshape`` by one
``reshape`` of the original tensor (the middle shape never matters).  As TVM's pass of the
same name (which does the two reshape cases), it is one ``relax.dpl`` pattern and a rewriter;
``rewrite_call`` then folds the ``y = x`` aliases left behind.

::

    mod = relax.transform.RemoveRedundantReshape()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..dpl import DFPattern, is_op, rewrite_call, wildcard
from ..expr import Function, struct_info_of
from ..op import reshape
from ..op.registry import make_call
from ..struct_info import TensorStructInfo
from ._util import map_functions

__all__ = ["RemoveRedundantReshape"]

_x = wildcard()
#: a copy that is the identity when its output has its input's struct info
_copy = (is_op("relax.reshape") | is_op("relax.broadcast_to") | is_op("relax.astype"))(_x, varg_default_wildcard=True)
_transpose = is_op("relax.permute_dims")(_x)
_inner_reshape = is_op("relax.reshape")(_x, wildcard())
_reshape_of_reshape = is_op("relax.reshape")(_inner_reshape, wildcard())
#: an activation between a reshape and the reshape back (a dense layer's ``(tokens, features)``
#: viewed as ``(1, tokens, features)`` for GELU, then flattened again for the next one)
_UNARY_ELEMENTWISE = ("relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu", "relax.nn.relu", "relax.sigmoid",
                      "relax.tanh")
_y = wildcard()
_activations = [is_op(name)(is_op("relax.reshape")(_y, wildcard())) for name in _UNARY_ELEMENTWISE]
_reshaped_activation = is_op("relax.reshape")(_activations[0], wildcard())
for _activation in _activations[1:]:
    _reshaped_activation = _reshaped_activation | is_op("relax.reshape")(_activation, wildcard())
_PATTERN = _reshaped_activation | _reshape_of_reshape | _copy | _transpose


def _rewrite(expr: Any, m: dict[DFPattern, Any]) -> Any:
    # ``expr`` may be a variable bound to the matched call (the matcher looks through bindings):
    # read the call itself from the matches
    activation = next((m[a] for a in _activations if a in m), None)
    if activation is not None:  # reshape(f(reshape(y, s1)), shape of y) -> f(y): f fuses with y's producer
        y = m[_y]
        if not _same_tensor_type(struct_info_of(y), struct_info_of(expr)):
            return expr
        return make_call(activation.op.name, y, attrs=activation.attrs)
    x = m[_x]
    if _inner_reshape in m:  # reshape(reshape(x, s1), s2) -> reshape(x, s2)
        return reshape(x, m[_reshape_of_reshape].args[1])
    if _transpose in m:
        axes = m[_transpose].attrs.get("axes")
        return x if axes is not None and list(axes) == list(range(struct_info_of(x).ndim)) else expr
    return x if _same_tensor_type(struct_info_of(x), struct_info_of(m[_copy])) else expr


def _same_tensor_type(a: Any, b: Any) -> bool:
    """Same dtype and the same known shape (an unknown shape may differ)."""
    return (isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo) and a.dtype == b.dtype
            and a.shape_values is not None and b.shape_values is not None
            and len(a.shape_values) == len(b.shape_values) and structural_equal(a.shape_values, b.shape_values))


def _remove(func: Function, mod: IRModule) -> Function:
    return func if func.attrs.get("Primitive") else rewrite_call(_PATTERN, _rewrite, func)


@module_pass(opt_level=0, name="RemoveRedundantReshape")
class RemoveRedundantReshape:
    """``RemoveRedundantReshape()``: no-op reshape / broadcast_to / astype / permute_dims -> their
    input, reshape of reshape -> one reshape (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _remove)
