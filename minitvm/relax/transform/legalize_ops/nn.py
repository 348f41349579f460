"""Legalization of the neural-network operators (``relax.nn.*``), as TVM's
``relax.transform.legalize_ops.nn``: each builds the kernel TVM's LegalizeOps builds, from
the same TOPI pieces."""

from __future__ import annotations

from typing import Any

from .... import te, tir, topi
from ....tir.expr import FloatImm, IntImm
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from ...op.nn.conv import given_out_dtype
from .common import _call_topi_without_attr, register_legalize

# -- convolution -----------------------------------------------------------------------------------

def _conv(name: str) -> Any:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        a = call.attrs
        dl, kl, ol = a["data_layout"], a["kernel_layout"], a["out_layout"]
        if not (dl.isupper() and kl.isupper() and ol.isupper()):
            return call  # as TVM: TOPI has no convolution over blocked (NCHW16c) layouts

        def conv(data: te.Tensor, kernel: te.Tensor) -> te.Tensor:
            out = topi.nn.conv(data, kernel, strides=list(a["strides"]), padding=list(a["padding"]),
                               dilation=list(a["dilation"]), groups=a["groups"], data_layout=dl, kernel_layout=kl,
                               out_dtype=given_out_dtype(a))
            # TVM leaves an out_layout other than the data's unlegalized; a permutation is one transpose
            return out if ol == dl else topi.transpose(out, [dl.index(ch) for ch in ol])
        return bb.call_te(conv, call.args[0], call.args[1], primfunc_name_hint=name)
    return legalize


register_legalize("relax.nn.conv1d", _conv("conv1d"))
register_legalize("relax.nn.conv2d", _conv("conv2d"))
register_legalize("relax.nn.conv3d", _conv("conv3d"))


def _dilate_kernel(kernel: te.Tensor, dilation: list[int]) -> te.Tensor:
    """The kernel with ``d - 1`` zeros between its taps: a transposed convolution dilated by
    ``d`` is the plain one with this kernel (as TVM's legalization does it)."""
    shape = list(kernel.shape[:2]) + [(k - 1) * d + 1 for k, d in zip(kernel.shape[2:], dilation)]

    def tap(*idx: Any) -> Any:
        sp = idx[2:]
        on_tap = [tir.floormod(i, d) == 0 for i, d in zip(sp, dilation) if d != 1]
        value = kernel(*idx[:2], *[i if d == 1 else tir.floordiv(i, d) for i, d in zip(sp, dilation)])
        cond = on_tap[0]
        for c in on_tap[1:]:
            cond = tir.all(cond, c)
        return tir.if_then_else(cond, value, tir.const(0, kernel.dtype))
    return te.compute(shape, tap, name="kernel_dilate")


def _conv_transpose(name: str, kernel_name: str) -> Any:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        a = call.attrs
        dim = len(a["strides"])
        if a["out_layout"] != a["data_layout"] or a["data_layout"] != "NC" + "DHW"[3 - dim:] or \
                a["kernel_layout"] != "IO" + "DHW"[3 - dim:]:
            return call  # as TVM: TOPI's transposed convolution takes NC<spatial> data, an IO<spatial> kernel
        dilation = [int(d) for d in a["dilation"]]

        def conv_transpose(data: te.Tensor, kernel: te.Tensor) -> te.Tensor:
            if any(d != 1 for d in dilation):
                kernel = _dilate_kernel(kernel, dilation)
            return topi.nn.conv_transpose(data, kernel, strides=list(a["strides"]), padding=list(a["padding"]),
                                          output_padding=list(a["output_padding"]), groups=a["groups"],
                                          out_dtype=given_out_dtype(a), kernel_name=kernel_name)
        return bb.call_te(conv_transpose, call.args[0], call.args[1], primfunc_name_hint=name)
    return legalize


register_legalize("relax.nn.conv1d_transpose", _conv_transpose("conv1d_transpose", "kernel"))
register_legalize("relax.nn.conv2d_transpose", _conv_transpose("conv2d_transpose", "kernel_transform"))


# -- pooling ---------------------------------------------------------------------------------------

def _pool(pool_type: str, dim: int) -> Any:
    name = f"{pool_type}_pool{dim}d"
    topi_pool = {1: topi.nn.pool1d, 2: topi.nn.pool2d, 3: topi.nn.pool3d}[dim]

    def pool(data: te.Tensor, a: dict) -> te.Tensor:
        return _to_out_layout(topi_pool(
            data, kernel=list(a["pool_size"]), stride=list(a["strides"]), dilation=list(a["dilation"]),
            padding=list(a["padding"]), pool_type=pool_type, ceil_mode=a["ceil_mode"], layout=a["layout"],
            count_include_pad=a["count_include_pad"] if pool_type == "avg" else True), a, name)

    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        return bb.call_te(pool, call.args[0], dict(call.attrs), primfunc_name_hint=name)
    return legalize


def _to_out_layout(out: te.Tensor, a: dict, name: str) -> te.Tensor:
    """The pooled ``out`` (in ``layout``) transposed to ``out_layout``.  TVM's TOPI pools
    in one layout and leaves such a call unlegalized; a permutation is one transpose away,
    a change of blocking (NCHW16c to NCHW) is refused here by name."""
    layout, out_layout = a["layout"], a["out_layout"]
    if out_layout == layout:
        return out
    if sorted(layout) != sorted(out_layout) or not layout.isalpha():
        raise NotImplementedError(f"relax.nn.{name}: legalizing out_layout {out_layout!r} from layout "
                                  f"{layout!r} is not supported (only a permutation of the axes is)")
    return topi.transpose(out, [layout.index(ch) for ch in out_layout])


def _adaptive_pool(dim: int) -> Any:
    spatial = {1: "W", 2: "HW", 3: "DHW"}[dim]
    topi_pool = {1: topi.nn.adaptive_pool1d, 2: topi.nn.adaptive_pool, 3: topi.nn.adaptive_pool3d}[dim]

    def pool(data: te.Tensor, a: dict) -> te.Tensor:
        axes = [ch for ch in a["layout"] if ch.isalpha()]
        size = a["output_size"]
        if size is None:  # the input's own spatial sizes
            size = [data.shape[axes.index(ch)] for ch in spatial]
        return _to_out_layout(topi_pool(data, list(size), "avg", a["layout"]), a, f"adaptive_avg_pool{dim}d")

    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        return bb.call_te(pool, call.args[0], dict(call.attrs), primfunc_name_hint=f"adaptive_avg_pool{dim}d")
    return legalize


for _dim in (1, 2, 3):
    register_legalize(f"relax.nn.max_pool{_dim}d", _pool("max", _dim))
    register_legalize(f"relax.nn.avg_pool{_dim}d", _pool("avg", _dim))
    register_legalize(f"relax.nn.adaptive_avg_pool{_dim}d", _adaptive_pool(_dim))


# -- padding ---------------------------------------------------------------------------------------

@register_legalize("relax.nn.pad")
def _pad(bb: BlockBuilder, call: Call) -> Expr:
    w = call.attrs["pad_width"]
    return bb.call_te(topi.nn.pad, call.args[0], list(w[0::2]), list(w[1::2]), call.attrs["pad_value"],
                      primfunc_name_hint="pad")


# -- activations -----------------------------------------------------------------------------------

for _name, _fn in [("relu", topi.nn.relu), ("gelu", topi.nn.gelu), ("gelu_tanh", topi.nn.gelu_tanh),
                   ("silu", topi.nn.silu)]:
    register_legalize(f"relax.nn.{_name}", _call_topi_without_attr(_fn, _name))


# -- activations with a parameter, softmax ---------------------------------------------------------

@register_legalize("relax.nn.leakyrelu")
def _leakyrelu(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.leaky_relu, call.args[0], call.attrs["alpha"], primfunc_name_hint="leaky_relu")


@register_legalize("relax.nn.softplus")
def _softplus(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.softplus, call.args[0], call.attrs["beta"], call.attrs["threshold"])


@register_legalize("relax.nn.pixel_shuffle")
def _pixel_shuffle(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.pixel_shuffle, call.args[0], upscale_factor=int(call.attrs["upscale_factor"]))


@register_legalize("relax.nn.prelu")
def _prelu(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.prelu, call.args[0], call.args[1], call.attrs["axis"], primfunc_name_hint="prelu")


@register_legalize("relax.nn.softmax")
def _softmax(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.softmax, call.args[0], call.attrs["axis"], primfunc_name_hint="softmax")


@register_legalize("relax.nn.log_softmax")
def _log_softmax(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.log_softmax, call.args[0], call.attrs["axis"], primfunc_name_hint="log_softmax")


# -- normalization ---------------------------------------------------------------------------------

@register_legalize("relax.nn.batch_norm")
def _batch_norm(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.nn.batch_norm, *call.args, axis=a["axis"], epsilon=a["epsilon"],
                      center=a["center"], scale=a["scale"], training=a.get("training", False),
                      momentum=a.get("momentum", 0.1), primfunc_name_hint="batch_norm")


@register_legalize("relax.nn.layer_norm")
def _layer_norm(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    if not a["scale"]:
        raise NotImplementedError("relax.nn.layer_norm with scale=False has no legalization (TVM's has none)")
    return bb.call_te(topi.nn.layer_norm, call.args[0], call.args[1], call.args[2] if a["center"] else None,
                      axis=list(a["axes"]), epsilon=a["epsilon"], primfunc_name_hint="layer_norm")


@register_legalize("relax.nn.rms_norm")
def _rms_norm(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.nn.rms_norm, call.args[0], call.args[1], axis=list(call.attrs["axes"]),
                      epsilon=call.attrs["epsilon"], primfunc_name_hint="rms_norm")


@register_legalize("relax.nn.group_norm")
def _group_norm(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    data, gamma, beta = call.args
    return bb.call_te(topi.nn.group_norm, data, gamma if a["scale"] else None, beta if a["center"] else None,
                      a["num_groups"], a["channel_axis"], list(a["axes"]), a["epsilon"],
                      primfunc_name_hint="group_norm")


# -- dropout ---------------------------------------------------------------------------------------

@register_legalize("relax.nn.dropout")
def _dropout(bb: BlockBuilder, call: Call) -> Expr:
    def dropout(x: te.Tensor) -> list[te.Tensor]:
        return [topi.identity(x), topi.full_like(x, 1)]
    return bb.call_te(dropout, call.args[0], primfunc_name_hint="dropout")


# -- losses ----------------------------------------------------------------------------------------

def _as_dtype(value: IntImm | FloatImm | int, dtype: str) -> FloatImm:
    return FloatImm(dtype, float(value.value if isinstance(value, (IntImm, FloatImm)) else value))


@register_legalize("relax.nn.cross_entropy_with_logits")
def _cross_entropy_with_logits(bb: BlockBuilder, call: Call) -> Expr:
    def cross_entropy(x: te.Tensor, y: te.Tensor) -> te.Tensor:
        loss = topi.multiply(topi.sum(topi.multiply(x, y)), _as_dtype(-1.0, x.dtype))
        if x.ndim > 1:  # averaged over the batch
            n = x.shape[0]
            loss = topi.divide(loss, _as_dtype(n, x.dtype) if isinstance(n, IntImm) else topi.utils.as_expr(n, x.dtype))
        return loss
    return bb.call_te(cross_entropy, call.args[0], call.args[1], primfunc_name_hint="cross_entropy_with_logits")


@register_legalize("relax.nn.nll_loss")
def _nll_loss(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    if len(call.args) == 3:
        return bb.call_te(topi.nn.nll_loss, *call.args, reduction=a["reduction"], ignore_index=a["ignore_index"],
                          primfunc_name_hint="nll_loss")

    # (TVM's kernel keeps this helper's name)
    def nll_loss_without_weight(pred: te.Tensor, targets: te.Tensor, reduction: str, ignore_index: int) -> te.Tensor:
        classes = pred.shape[1] if pred.ndim > 1 else pred.shape[0]
        ones = topi.full([classes], pred.dtype, 1.0)
        return topi.nn.nll_loss(pred, targets, ones, reduction, ignore_index)
    return bb.call_te(nll_loss_without_weight, call.args[0], call.args[1], reduction=a["reduction"],
                      ignore_index=a["ignore_index"])
