"""FoldExplicitPadding: a zero ``nn.pad`` of a convolution's spatial dimensions becomes the
convolution's own padding (Relay's pass of this name did the same).

TF-style "same" padding -- MobileNetV2 in transformers pads explicitly before every depthwise
convolution and the stem -- arrives as ``pad`` then ``conv2d(padding=0)``.  ``FuseOps`` puts the
pad after the *producer's* kernel (a 1x1 convolution then writes its whole output a second
time, padded) or leaves it a kernel of its own; either way the activation makes an extra round
trip through memory.  Folded, the consumer convolution reads the unpadded tensor and pads it in
its own prologue, which its schedule can keep in cache::

    y = pad(x, [0, 0, 0, 0, t, b, l, r]);  conv2d(y, W, padding=(p0, p1, p2, p3))
        ->  conv2d(x, W, padding=(p0 + t, p1 + l, p2 + b, p3 + r))

It applies to ``conv1d`` / ``conv2d`` / ``conv3d`` when the pad is constant-mode with value 0,
pads only the layout's spatial axes (not N or C) by non-negative widths.  The pad stays when
something else reads it (``DeadCodeElimination`` drops it otherwise).

::

    mod = relax.transform.FoldExplicitPadding()(mod)
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, Expr, Var
from ..expr_functor import ExprMutator
from ._util import rewrite_with_builder

__all__ = ["FoldExplicitPadding"]

_CONVS = ("relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d")


def _folded_padding(pad: Call, conv: Call) -> tuple[int, ...] | None:
    """The convolution's padding with ``pad``'s widths added, or None when the pad is not a zero
    pad of the spatial axes alone."""
    if pad.attrs["pad_mode"] != "constant" or float(pad.attrs["pad_value"]) != 0.0:
        return None
    layout = conv.attrs["data_layout"]
    width = [int(w) for w in pad.attrs["pad_width"]]
    if len(width) != 2 * len(layout) or min(width) < 0:
        return None
    spatial = [i for i, axis in enumerate(layout) if axis not in "NC"]
    if any(width[2 * i] or width[2 * i + 1] for i, axis in enumerate(layout) if axis in "NC"):
        return None
    dims = len(spatial)
    old = [int(p) for p in conv.attrs["padding"]]  # (befores..., afters...)
    if len(old) != 2 * dims:
        return None
    return (tuple(old[d] + width[2 * a] for d, a in enumerate(spatial))
            + tuple(old[dims + d] + width[2 * a + 1] for d, a in enumerate(spatial)))


class _FoldPad(ExprMutator):
    def visit_call_(self, op: Call) -> Expr:
        call = super().visit_call_(op)
        if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in _CONVS):
            return call
        data = call.args[0]
        pad = self.lookup_binding(data) if isinstance(data, Var) else None
        if not (isinstance(pad, Call) and pad.op == Op.get("relax.nn.pad")):
            return call
        padding = _folded_padding(pad, call)
        if padding is None:
            return call
        return Call(call.op, [pad.args[0], *call.args[1:]], {**call.attrs, "padding": padding}, call.sinfo_args)


@module_pass(opt_level=0, name="FoldExplicitPadding")
class FoldExplicitPadding:
    """``FoldExplicitPadding()``: ``conv(pad(x))`` with a zero pad of the spatial axes ->
    ``conv(x)`` with the pad widths added to its padding (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out, changed = rewrite_with_builder(mod, _FoldPad(mod))
        return out if changed else mod
