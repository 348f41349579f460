"""AlterOpLayout: a convolution with a constant weight gets the x86 kernel that wants its
weight in blocks of output channels, and the weight is re-laid out once, here, at compile time.

A kernel is fastest when its operands are laid out for its inner loop.  The vectorized
convolution of ``topi.x86.conv2d_nchw_packed`` multiplies one input value by ``ob`` (16)
output channels' weights at once, so it wants those 16 weights next to each other:
``W_packed[o // 16, c, kh, kw, o % 16]`` instead of PyTorch's ``W[o, c, kh, kw]``.  Doing that
transpose in every call would cost a full pass over the weight per inference; since the weight
is a constant, this pass does it once and stores the packed constant in the module (TVM gets the
same effect from ``AlterOpLayout`` + ``FoldConstant``, or ``LiftTransformParams`` when the
weights are function parameters)::

    conv2d(x, W)   ->   call_tir(conv2d, (x, W_packed))      # W_packed computed by numpy, now

The activations keep their NCHW layout, so nothing else in the graph changes.  It applies to
``relax.nn.conv2d`` with NCHW data, an OIHW constant float32 weight, a number of output
channels (per group) that is a multiple of 8 (a vector of 8 or 16 lanes) and at least
``MIN_REDUCTION`` multiply-adds per output value, and that
is not a 1x1, stride-1, unpadded convolution (a matmul over the pixels, tiled as one by the
default schedule); a 1x1 unpadded one with a stride above 1 (ResNet's downsampling shortcuts)
becomes a strided slice of the pixels it keeps and that pointwise convolution.  Other
convolutions keep the generic kernel.  ``relax.nn.conv1d`` (NCW data,
an OIW weight) under the same conditions gets the same kernel over one row
(``topi.x86.conv1d_ncw_packed``; the generic one was a scalar loop per output: wav2vec2's
16 -> 16 stride-2 conv at batch 8 88 -> 14 us, its 4-group 32 -> 32 position conv 75 -> 14,
AVX2).  An NCHW ``relax.nn.max_pool2d`` whose windows overlap along the rows gets
``topi.x86.max_pool2d_separable`` (the window's rows reduced first, shared by consecutive output
rows; see ``topi.x86.separable_max_pool2d`` for when).

::

    mod = relax.transform.AlterOpLayout()(mod)   # then LegalizeOps ... DefaultCPUSchedule
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import topi
from ...ir.module import IRModule
from ...ir.op import Op
from ...topi.utils import const_int
from ...transform import PassContext, module_pass
from .. import op as relax_op
from ..expr import Call, Constant, ConstantData, Expr, Var
from ..expr_functor import ExprMutator
from ..op.nn.conv import given_out_dtype
from ..op.registry import OpPattern
from ._util import keeps_input_dtype, rewrite_with_builder

__all__ = ["AlterOpLayout", "MIN_REDUCTION"]

#: pack only convolutions with at least this many multiply-adds per output (in channels x window),
#: 1-d and 2-d, on every vector unit: below it the packed tile's write-back outweighs the
#: reduction.  The generic kernel wastes lanes on odd widths and (1-d) is a scalar loop per
#: output.  Measured on Zen 4 (AVX2), one thread: MNIST's 1 -> 32 conv (9 per output) 320 ->
#: 291 us for the model at batch 8, mobilenet_tf_same 119 -> 107 us.  On AVX-512 (Xeon, 2
#: threads) this was 64 while the packed kernel transposed every tile on its way back; with row
#: tiles, 8 measured faster there too (whole models interleaved in one process, quiet):
#: resnet_small b8 0.87-0.91x (its 27-MAC stem was 6% of peak), mlc_mnist b1 0.92x, MobileNetV2
#: b1 0.97x, the rest 0.97-1.03x; wav2vec2's audio encoder (1-d: 10, 40 and 48 per output) at
#: batch 8 408 -> 158 us median (load ~3.4)
MIN_REDUCTION = 8


def _pointwise(attrs: dict, weight_shape: tuple, data_shape: Any) -> bool:
    """A 1x1, stride-1, unpadded convolution over a static plane: a matmul over the pixels, which
    the default schedule's ``schedule_conv2d_1x1`` tiles in NCHW without a packed weight (the
    packed kernel transposes every tile on its way back: 0.6x its time on MobileNetV2's 144 -> 24
    at 56 x 56; at 14 x 14 and 7 x 7, with two-vector tiles of pixels and the partial ones
    peeled, 0.75-0.9x the packed kernel's 7-column tiles -- e.g. 96 -> 576 at 14 x 14 394 ->
    284 us, one kernel, AVX2)."""
    plane = [const_int(d) for d in (data_shape or ())[2:]]
    return tuple(weight_shape[2:]) == (1, 1) and all(int(v) == 1 for v in attrs["strides"]) and \
        not any(int(v) for v in attrs["padding"]) and len(plane) == 2 and None not in plane


def _strided_pointwise(attrs: dict, weight_shape: tuple, data_shape: Any) -> bool:
    """A 1x1, unpadded, undilated, ungrouped convolution with a stride above 1 over a static plane
    (ResNet's downsampling shortcuts): the same as a pointwise convolution of the input's kept
    pixels (a strided slice), which :func:`_pointwise` hands to ``schedule_conv2d_1x1`` -- the
    packed kernel's tile instead loads each pixel's input value alone, at the stride, and
    transposes every tile on its way back."""
    return any(int(v) > 1 for v in attrs["strides"]) and all(int(v) == 1 for v in attrs["dilation"]) \
        and int(attrs["groups"]) == 1 and _pointwise({**attrs, "strides": (1, 1)}, weight_shape, data_shape)


#: the convolutions with a packed x86 kernel: op -> (data and kernel layouts, weight packing, kernel);
#: a 1-d one is the 2-d kernel over one row
_PACKED = {
    "relax.nn.conv2d": (("NCHW", "OIHW"), topi.x86.pack_conv2d_weight, topi.x86.conv2d_nchw_packed),
    "relax.nn.conv1d": (("NCW", "OIW"), topi.x86.pack_conv1d_weight, topi.x86.conv1d_ncw_packed),
}


class _ConvLayout(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        #: the call_tir of each packed kernel built so far, by what its PrimFunc depends on (a
        #: static input, the packed weight's shape, the attributes): a model's repeated layers
        #: (ResNet-18: 17 packed convolutions, 8 distinct) build their TE kernel once, where
        #: call_te made and hashed the same PrimFunc again for ``add_func`` to find it in the module
        self.kernels: dict[tuple, Call] = {}

    def visit_call_(self, op: Call) -> Expr:
        call = super().visit_call_(op)
        if isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.nn.max_pool2d":
            return self._max_pool2d(call)
        packed_kernel = _PACKED.get(call.op.name) if isinstance(call, Call) and isinstance(call.op, Op) else None
        if packed_kernel is None:
            return call
        layouts, pack, kernel = packed_kernel
        a = call.attrs
        weight = call.args[1]
        if isinstance(weight, Var):
            weight = self.lookup_binding(weight)
        if not isinstance(weight, Constant) or (a["data_layout"], a["kernel_layout"]) != layouts or \
                (a.get("out_layout") or layouts[0]) != layouts[0] or not keeps_input_dtype(call):
            return call
        w = np.asarray(weight.data)  # (read-only, not a copy: packing copies)
        groups = int(a["groups"])
        if call.op.name == "relax.nn.conv2d" and w.dtype == "float32" and call.args[0].struct_info.dtype == "float32" \
                and _strided_pointwise(a, w.shape, call.args[0].struct_info.shape_values):
            # (subsample first: the 1x1 convolution is then a pointwise one over the kept pixels)
            plane = call.args[0].struct_info.shape_values[2:]
            kept = self.builder_.emit(relax_op.strided_slice(call.args[0], axes=[2, 3], begin=[0, 0],
                                                             end=[int(d) for d in plane],
                                                             strides=[int(s) for s in a["strides"]]))
            return relax_op.nn.conv2d(kept, call.args[1], strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                                      groups=1, data_layout="NCHW", kernel_layout="OIHW",
                                      out_dtype=given_out_dtype(a))
        # (in groups, a block of output channels must lie in one: a group's channels whole vectors)
        if w.dtype != "float32" or call.args[0].struct_info.dtype != "float32" or (w.shape[0] // groups) % 8 or \
                w[0].size < MIN_REDUCTION or \
                _pointwise(a, w.shape, call.args[0].struct_info.shape_values):
            return call
        # (an image stem on AVX-512: one vector of channels, tiled along its output rows)
        block = topi.x86.stem_block(w.shape, a["strides"], a["padding"], a["dilation"],
                                    call.args[0].struct_info.shape_values[-1], groups) \
            if call.op.name == "relax.nn.conv2d" and call.args[0].struct_info.shape_values else None
        packed = pack(w, groups=groups) if block is None else pack(w, block, groups=groups)
        packed = Constant(ConstantData.adopt(packed))
        kwargs = {"groups": groups, "strides": [int(s) for s in a["strides"]],
                  "padding": [int(p) for p in a["padding"]], "dilation": [int(d) for d in a["dilation"]],
                  "primfunc_name_hint": call.op.name.rsplit(".", 1)[1]}
        data = call.args[0].struct_info
        key = None if data.static_shape is None else \
            (kernel, data.static_shape, data.dtype, packed.struct_info.static_shape, packed.struct_info.dtype,
             repr(kwargs))
        built = self.kernels.get(key) if key is not None else None
        if built is not None:
            return relax_op.call_tir(built.args[0], [call.args[0], packed], built.sinfo_args[0])
        built = self.builder_.call_te(kernel, call.args[0], packed, **kwargs)
        if key is not None:
            self.kernels[key] = built
        return built

    def _max_pool2d(self, call: Call) -> Expr:
        """An NCHW ``max_pool2d`` -> ``topi.x86.max_pool2d_separable`` (the window's rows, then its
        columns), when it applies (:func:`topi.x86.separable_max_pool2d`)."""
        a, sinfo = call.attrs, call.args[0].struct_info
        if not topi.x86.separable_max_pool2d(
                sinfo.shape_values, sinfo.dtype, a["pool_size"], a["strides"], a["padding"], a["dilation"],
                a["ceil_mode"], a["layout"], a["out_layout"] or a["layout"]):
            return call
        return self.builder_.call_te(topi.x86.max_pool2d_separable, call.args[0], [int(k) for k in a["pool_size"]],
                                     [int(s) for s in a["strides"]], [int(p) for p in a["padding"]],
                                     primfunc_name_hint="max_pool2d",
                                     # (fused as the generic pool is: a window reduction, not a copy)
                                     primfunc_attrs={"op_pattern": int(OpPattern.OUT_ELEMWISE_FUSABLE)})


@module_pass(opt_level=0, name="AlterOpLayout")
class AlterOpLayout:
    """``AlterOpLayout()``: NCHW/OIHW ``conv2d`` (NCW/OIW ``conv1d``) with a constant weight -> the x86 packed-weight
    kernel, its weight packed at compile time; an NCHW ``max_pool2d`` of overlapping windows -> the
    separable x86 kernel (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out, changed = rewrite_with_builder(mod, _ConvLayout(mod))
        return out if changed else mod
