"""Each operator's mixed-precision policy (TVM's ``TMixedPrecisionPolicy``), read by
``relax.transform.ToMixedPrecision``: 0 "always" (computed in float16, its accumulation in
the pass's ``out_dtype``: matmul, convolutions, attention), 1 "follow" (float16 when its
inputs already are or can be), 2 "never" (float32; an operator with no policy is "never").
The "always" operators also get ``FInferMixedPrecision``: the call again with ``out_dtype``.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op, register_op_attr
from ..expr import Call

__all__ = ["ALWAYS", "FOLLOW", "NEVER"]

ALWAYS, FOLLOW, NEVER = 0, 1, 2

_ALWAYS = ["matmul", "outer", "nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose",
           "nn.conv2d_transpose", "nn.conv3d_transpose", "nn.attention", "nn.attention_bias",
           "nn.attention_var_len"]

# TVM registers these as "follow": elementwise unary and binary operators (comparisons too),
# creation, cast, slicing, reshaping, normalization, pooling and resizing
_FOLLOW = (
    "abs acos acosh asin asinh atan atanh bitwise_not ceil cos cosh exp floor log logical_not "
    "negative round rsqrt sigmoid sign sin sinh square sqrt tan tanh trunc erf isfinite isinf isnan "
    "nn.relu nn.gelu nn.gelu_tanh nn.selu nn.silu "
    "add divide floor_divide log_add_exp multiply power atan2 subtract mod floor_mod equal greater "
    "greater_equal less less_equal not_equal minimum maximum logical_and logical_or logical_xor "
    "bitwise_and bitwise_or bitwise_xor left_shift right_shift "
    "full full_like ones zeros eye arange hamming_window astype strided_slice dynamic_strided_slice "
    "broadcast_to concat expand_dims flatten layout_transform permute_dims reshape split squeeze "
    "stack meshgrid ewise_fma nn.layer_norm nn.group_norm nn.instance_norm nn.rms_norm nn.dropout "
    "nn.batch_flatten nn.max_pool1d nn.max_pool2d nn.max_pool3d nn.avg_pool1d nn.avg_pool2d "
    "nn.avg_pool3d nn.adaptive_avg_pool1d nn.adaptive_avg_pool2d nn.adaptive_avg_pool3d "
    "image.resize2d image.resize3d image.grid_sample image.affine_grid").split()


def _with_out_dtype(call: Call, out_dtype: str) -> Call:
    """The call again, accumulating in ``out_dtype``."""
    return Call(call.op, call.args, {**call.attrs, "out_dtype": out_dtype}, call.sinfo_args)


def policy(op: Any) -> int:
    """The policy of a callee: -1 when it is not an operator (a function or packed call)."""
    if not isinstance(op, Op):
        return -1
    value = op.get_attr("TMixedPrecisionPolicy")
    return NEVER if value is None else value


_REGISTERED = set(Op.list_op_names())  # (imported last by relax.op: every operator is known)
for _name in _ALWAYS:
    if f"relax.{_name}" in _REGISTERED:
        register_op_attr(f"relax.{_name}", "TMixedPrecisionPolicy", ALWAYS)
        register_op_attr(f"relax.{_name}", "FInferMixedPrecision", _with_out_dtype)
for _name in _FOLLOW:
    if f"relax.{_name}" in _REGISTERED:
        register_op_attr(f"relax.{_name}", "TMixedPrecisionPolicy", FOLLOW)
