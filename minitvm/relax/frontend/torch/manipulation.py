"""Shape and layout operators, tuple access and symbolic sizes."""

from __future__ import annotations

import operator

from .... import tir
from ... import op as _op
from ...expr import TupleGetItem


def permute(node, conv):
    return conv.bb.emit(_op.permute_dims(conv.arg(node.args[0]), [int(d) for d in node.args[1]]))


def t(node, conv):
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    return x if ndim < 2 else conv.bb.emit(_op.permute_dims(x, [1, 0]))


def transpose(node, conv):
    ndim = len(conv.shape_of(node.args[0]))
    axes = list(range(ndim))
    d0, d1 = int(node.args[1]) % ndim, int(node.args[2]) % ndim
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return conv.bb.emit(_op.permute_dims(conv.arg(node.args[0]), axes))


def reshape_to_output(node, conv):
    """view / reshape / flatten / unsqueeze / squeeze: a reshape to the shape torch recorded
    for the result (so symbolic sizes need no arithmetic on the arguments)."""
    return conv.bb.emit(_op.reshape(conv.arg(node.args[0]), conv.shape_of(node)))


def expand(node, conv):
    return conv.bb.emit(_op.broadcast_to(conv.arg(node.args[0]), conv.shape_of(node)))


def cat(node, conv):
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    return conv.bb.emit(_op.concat([conv.arg(a) for a in node.args[0]], axis=int(dim)))


def _reduce(fn):
    def convert(node, conv):
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        axis = None if dims is None else [int(d) for d in dims]
        return conv.bb.emit(fn(conv.arg(node.args[0]), axis=axis, keepdims=bool(keepdim)))
    return convert


def getitem(node, conv):
    src, index = conv.arg(node.args[0]), int(node.args[1])
    if isinstance(src, (tuple, list)):
        value = src[index]
        if value is None:
            raise ValueError(f"from_exported_program: output {index} of {node.args[0].target} is not supported "
                             "(only its first output is)")
        return value
    return conv.bb.emit(TupleGetItem(src, index))


def sym_size(node, conv):
    """``aten.sym_size.int``: the size as a tir expression (used by other converters' arguments)."""
    return conv.shape_of(node.args[0])[int(node.args[1])]


def _sym_arith(fn):
    """Python arithmetic on symbolic sizes (``operator.mul`` of two ``sym_size`` results ...)."""
    def convert(node, conv):
        return fn(*(conv.arg(a) for a in node.args))
    return convert


def no_op(node, conv):
    """Runtime assertions torch records about sizes: nothing to compute."""
    return None


CONVERTERS = {
    "aten.permute.default": permute,
    "aten.t.default": t,
    "aten.transpose.int": transpose,
    "aten.view.default": reshape_to_output,
    "aten.reshape.default": reshape_to_output,
    "aten._unsafe_view.default": reshape_to_output,
    "aten.flatten.using_ints": reshape_to_output,
    "aten.unsqueeze.default": reshape_to_output,
    "aten.squeeze.dim": reshape_to_output,
    "aten.squeeze.dims": reshape_to_output,
    "aten.expand.default": expand,
    "aten.cat.default": cat,
    "aten.mean.dim": _reduce(_op.mean),
    "aten.sum.dim_IntList": _reduce(_op.sum),
    "getitem": getitem,
    "aten.sym_size.int": sym_size,
    "mul": _sym_arith(operator.mul),
    "add": _sym_arith(operator.add),
    "sub": _sym_arith(operator.sub),
    "floordiv": _sym_arith(lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else tir.floordiv(a, b)),
    "mod": _sym_arith(lambda a, b: a % b if isinstance(a, int) and isinstance(b, int) else tir.floormod(a, b)),
    "aten._assert_scalar.default": no_op,
    "aten.sym_constrain_range_for_size.default": no_op,
    "aten._assert_tensor_metadata.default": no_op,
}
