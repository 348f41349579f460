"""Shape and layout operators, tuple access and symbolic sizes."""

from __future__ import annotations

import operator

import numpy as np

from .... import tir
from ... import op as _op
from ...expr import TupleGetItem, const
from ._common import arg_or, norm_dim


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


def _split_at(conv, node, sizes, dim):
    """``x`` cut along ``dim`` into pieces of the given lengths (constants), as a list."""
    ndim = len(conv.shape_of(node.args[0]))
    dim = norm_dim(dim, ndim, str(node.target))
    cuts, total = [], 0
    for size in sizes[:-1]:
        total += int(size)
        cuts.append(total)
    out = conv.bb.emit(_op.split(conv.arg(node.args[0]), cuts if cuts else 1, axis=dim))
    return [conv.bb.emit(TupleGetItem(out, k)) for k in range(len(sizes))]


def split_with_sizes(node, conv):
    """``torch.split(x, [a, b, c], dim)``."""
    return _split_at(conv, node, list(node.args[1]), arg_or(node, 2, "dim", 0))


def _pieces_to_output(node, conv):
    """split / chunk with one size or a count: the piece lengths torch recorded."""
    dim = arg_or(node, 2, "dim", 0)
    ndim = len(conv.shape_of(node.args[0]))
    axis = norm_dim(dim, ndim, str(node.target))
    sizes = [conv._prim(v.shape[axis]) for v in node.meta["val"]]
    for size in sizes:
        if not isinstance(size, int):
            raise ValueError(f"from_exported_program: {node.target} along the symbolic dim {axis} is not supported")
    return _split_at(conv, node, sizes, axis)


def slice_tensor(node, conv):
    """``x[start:end:step]`` along ``dim`` as a strided slice of the length torch recorded (so
    ``end`` may be past the axis or symbolic); a slice of the whole axis is ``x`` itself."""
    x = conv.arg(node.args[0])
    in_shape, out_shape = conv.shape_of(node.args[0]), conv.shape_of(node)
    dim = norm_dim(arg_or(node, 1, "dim", 0), len(in_shape), "aten.slice.Tensor")
    start = conv.arg(arg_or(node, 2, "start", None))
    start = 0 if start is None else start
    step = int(arg_or(node, 4, "step", 1))
    in_len, out_len = in_shape[dim], out_shape[dim]
    if isinstance(start, int) and start == 0 and step == 1 and (
            out_len is in_len or (isinstance(out_len, int) and out_len == in_len)):
        return x
    if isinstance(start, int) and start < 0 and isinstance(in_len, int):
        start = max(start + in_len, 0)
    if not (isinstance(start, int) and start >= 0 and isinstance(out_len, int)):
        raise ValueError(f"from_exported_program: slicing dim {dim} of {node.args[0]} from {start} "
                         f"to a length of {out_len} is not supported (a constant start and length are)")
    end = start + (out_len - 1) * step + 1 if out_len else start
    return conv.bb.emit(_op.strided_slice(x, [dim], [start], [end], [step]))


def select(node, conv):
    """``x.select(dim, i)`` (``x[:, i]``): a take of one index, which drops the dim."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(node.args[1], len(shape), "aten.select.int")
    index = int(conv.arg(node.args[2]))
    if index < 0:
        if not isinstance(shape[dim], int):
            raise ValueError(f"from_exported_program: a negative index into the symbolic dim {dim} is not supported")
        index += shape[dim]
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), const(np.array(index, "int64")), axis=dim))


def index_tensor(node, conv):
    """``x[..., idx, ...]`` with one integer index tensor: a take along that dim."""
    indices = list(node.args[1])
    used = [k for k, idx in enumerate(indices) if idx is not None]
    if len(used) != 1:
        raise ValueError(f"from_exported_program: aten.index.Tensor with {len(used)} index tensors is not "
                         "supported (only one, as in x[idx] or x[:, idx])")
    k = used[0]
    if conv.dtype_of(indices[k]) == "bool":
        raise ValueError("from_exported_program: indexing with a bool mask (a data-dependent shape) is not supported")
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), conv.arg(indices[k]), axis=k))


def index_select(node, conv):
    ndim = len(conv.shape_of(node.args[0]))
    dim = norm_dim(node.args[1], ndim, "aten.index_select")
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), conv.arg(node.args[2]), axis=dim))


def stack(node, conv):
    """``torch.stack(xs, dim)``: each tensor given a new axis, then joined along it."""
    xs = node.args[0]
    ndim = len(conv.shape_of(xs[0])) + 1
    dim = norm_dim(arg_or(node, 1, "dim", 0), ndim, "aten.stack")
    return conv.bb.emit(_op.concat([_op.expand_dims(conv.arg(x), dim) for x in xs], axis=dim))


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
    "aten.squeeze.default": reshape_to_output,
    "aten.split_with_sizes.default": split_with_sizes,
    "aten.split.Tensor": _pieces_to_output,
    "aten.chunk.default": _pieces_to_output,
    "aten.slice.Tensor": slice_tensor,
    "aten.select.int": select,
    "aten.index.Tensor": index_tensor,
    "aten.index_select.default": index_select,
    "aten.stack.default": stack,
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
