"""FoldBatchnormToConv2D: an inference-mode BatchNorm after a convolution becomes part of the
convolution's constants.

In inference BatchNorm is a per-channel affine map, ``y[c] = x[c] * s[c] + t[c]`` with
``s = gamma / sqrt(var + eps)`` and ``t = beta - mean * s``.  When ``x`` is a convolution
with a constant weight, scaling the output channel ``c`` is the same as scaling the weight's
filter ``c``::

    batch_norm(conv2d(x, W), gamma, beta, mean, var)[0]
        ==  conv2d(x, W * s[:, None, None, None]) + t[None, :, None, None]

so the BatchNorm kernel (a full read and write of the activation per call) disappears; the
``+ t`` that is left is an elementwise epilogue ``FuseOps`` puts into the convolution's kernel.
A bias added between the convolution and the BatchNorm (``conv2d + b`` then BN) folds the same
way (``b * s + t``).  ``W * s`` and ``t`` are computed here, once, at compile time.

It applies when the weight and all four statistics are constants (``from_exported_program``
binds a model's parameters as constants), the kernel layout is OIHW with the BatchNorm over
axis 1 of NCHW data (or IOHW / OIW ... : the output-channel axis of the weight is found from
the layout), and the convolution's result has no other use (else the convolution would be
computed twice).  The pattern says all but the layouts: a ``relax.dpl`` :class:`PatternContext`
over the bindings, with ``only_used_by`` for "no other use"; TVM's pass of the same name matches it the same way.

The pass is for inference, and like TVM's it reads every matched BatchNorm as inference (the
moving statistics), whatever its ``training`` flag says -- TVM's ``R.nn.batch_norm`` defaults to
``training=True``.  minitvm's default pipeline folds only BatchNorms marked ``training=False``
(:class:`FoldInferenceBatchnormToConv2D`): there a training BatchNorm keeps its batch statistics.

::

    mod = relax.transform.FoldBatchnormToConv2D()(mod)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl import PatternContext, is_const, is_op, is_tuple_get_item, rewrite_bindings, wildcard
from ..expr import Constant, ConstantData, Function, Var, const
from ..op import add
from ._util import keeps_input_dtype, map_functions

__all__ = ["FoldBatchnormToConv2D", "FoldInferenceBatchnormToConv2D"]


def _patterns(inference_only: bool) -> tuple[PatternContext, dict[str, Any]]:
    with PatternContext() as ctx:
        conv_op = is_op("relax.nn.conv1d") | is_op("relax.nn.conv2d") | is_op("relax.nn.conv3d")
        conv = conv_op(wildcard(), is_const())
        biased = is_op("relax.add")(conv, is_const())
        conv_or_biased = conv | biased
        stats = is_const(), is_const(), is_const(), is_const()  # gamma, beta, mean, var
        bn = is_op("relax.nn.batch_norm")(conv_or_biased, *stats)
        out = is_tuple_get_item(bn.has_attr({"training": False}) if inference_only else bn, 0)
        conv.only_used_by(biased)  # the convolution (and its bias add) computed once
        conv_or_biased.only_used_by(bn)
        bn.only_used_by(out)  # the statistics outputs unread
    return ctx, {"conv": conv, "biased": biased, "bn": bn, "out": out}


#: (pattern context, its named patterns): any BatchNorm (TVM's pass), training=False ones only
_ANY, _INFERENCE = _patterns(False), _patterns(True)


def _value(e: Any, bindings: dict[Var, Any]) -> Any:
    return bindings.get(e, e) if isinstance(e, Var) else e


def _numpy(e: Any, bindings: dict[Var, Any]) -> np.ndarray:
    """The constant's array, read-only (not a copy: the fold only reads it)."""
    return np.asarray(_value(e, bindings).data)


def _fold(matchings: dict, bindings: dict[Var, Any], _P: dict[str, Any]) -> dict[Var, Any]:  # noqa: N803
    """``{out: conv(x, W * s) + t}``, or {} when the layouts do not allow it."""
    conv, bn = _value(matchings[_P["conv"]], bindings), _value(matchings[_P["bn"]], bindings)
    gamma, beta, mean, var = (_numpy(a, bindings) for a in bn.args[1:])
    if not bn.attrs.get("scale", True):
        gamma = np.ones_like(gamma)
    if not bn.attrs.get("center", True):
        beta = np.zeros_like(beta)
    scale = (gamma / np.sqrt(var + np.asarray(bn.attrs["epsilon"], dtype=var.dtype))).astype(gamma.dtype)
    shift = (beta - mean * scale).astype(gamma.dtype)
    bias = None
    if _P["biased"] in matchings:
        bias = _numpy(_value(matchings[_P["biased"]], bindings).args[1], bindings)
    folded = _fold_into_conv(conv, bias, scale, shift, int(bn.attrs["axis"]), bindings)
    return {} if folded is None else {matchings[_P["out"]]: folded}


def _fold_into_conv(conv: Any, bias: np.ndarray | None, scale: np.ndarray, shift: np.ndarray, axis: int,
                    bindings: dict[Var, Any]) -> Any:
    """``(conv [+ bias]) * scale + shift`` along ``axis`` as ``conv(x, W * scale) + t``; None
    when the layouts or dtypes do not line up."""
    attrs = conv.attrs
    out_layout = attrs.get("out_layout") or attrs["data_layout"]
    ndim = len(out_layout)
    if axis % ndim != out_layout.index("C") or not keeps_input_dtype(conv):
        return None
    weight = _numpy(conv.args[1], bindings)
    channels, o_axis = scale.shape[0], attrs["kernel_layout"].index("O")
    if weight.dtype != scale.dtype or weight.shape[o_axis] != channels:
        return None
    per_out = [1] * ndim
    per_out[out_layout.index("C")] = channels
    if bias is not None:
        if bias.size != channels or np.broadcast_shapes(bias.shape, tuple(per_out)) != tuple(per_out):
            return None
        shift = bias.reshape(channels) * scale + shift
    w_scale = [1] * weight.ndim
    w_scale[o_axis] = channels
    # (a new array, handed to the constant without another copy)
    new_weight = Constant(ConstantData.adopt((weight * scale.reshape(w_scale)).astype(weight.dtype, copy=False)))
    new_conv = type(conv)(conv.op, [conv.args[0], new_weight], attrs, conv.sinfo_args)
    return add(new_conv, const(shift.reshape(per_out).astype(weight.dtype)))


def _folder(patterns: tuple[PatternContext, dict[str, Any]]) -> Any:
    ctx, named = patterns

    def fold_function(func: Function, mod: IRModule) -> Function:
        if func.attrs.get("Primitive"):
            return func
        return rewrite_bindings(ctx, lambda matchings, bindings: _fold(matchings, bindings, named), func)
    return fold_function


@module_pass(opt_level=0, name="FoldBatchnormToConv2D")
class FoldBatchnormToConv2D:
    """``FoldBatchnormToConv2D()``: ``batch_norm(conv(x, W) [+ b])[0]`` -> ``conv(x, W * s) + t``
    for constant weights and statistics, every BatchNorm read as inference, as TVM's pass (see
    the module docstring).  Run ``DeadCodeElimination`` after it to drop the old convolution
    and BatchNorm."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _folder(_ANY))


@module_pass(opt_level=0, name="FoldInferenceBatchnormToConv2D")
class FoldInferenceBatchnormToConv2D:
    """The default pipeline's :class:`FoldBatchnormToConv2D`: only BatchNorms marked
    ``training=False`` fold (a training one keeps its batch statistics)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _folder(_INFERENCE))
