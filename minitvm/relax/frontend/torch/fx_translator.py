"""``from_fx``: a ``torch.fx.GraphModule`` (from ``torch.fx.symbolic_trace``) as a Relax IRModule.

An fx graph calls modules (``self.fc1``), torch functions and tensor methods rather than ATen
operators.  Each supported call is restated as the ATen call it stands for (``nn.Linear`` is
``aten.linear``, ``x.view(...)`` is ``aten.view``) and converted by the same converter table
as ``from_exported_program``.  fx graphs carry no shapes, so the module runs once on random
inputs of the given shapes and every node keeps its value's shape and dtype; values that are
not tensors (``x.size(0)``, arithmetic on it) become Python constants.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ....ir.module import IRModule
from ....tir.op_table import ELEMENTWISE, ElementwiseOp
from ... import op as _op
from ...expr import Expr, Var, const
from ...struct_info import TensorStructInfo
from .exported_program import CONVERTERS, ExportedProgramConverter

__all__ = ["from_fx"]

#: an fx call restated as an ATen call: ``(converter, node, args, kwargs, module) -> (name, args, kwargs)``
Adapter = Callable[[Any, Any, tuple, dict, Any], tuple[str, tuple, dict]]


class _AtenCall:
    """An fx call restated as an ATen call; converters read it as they read an fx node."""

    def __init__(self, target: str, args: tuple, kwargs: dict, node: Any):
        self.target, self.args, self.kwargs = target, tuple(args), dict(kwargs)
        self.meta, self.name = node.meta, node.name

    def __str__(self) -> str:
        return self.target


def _p(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    """Argument ``index`` (or keyword ``name``) of an fx call, else ``default``."""
    return args[index] if len(args) > index else kwargs.get(name, default)


def _same(aten: str) -> Adapter:
    """A call whose arguments are already the ATen op's positional arguments."""
    return lambda conv, node, args, kwargs, mod: (aten, args, kwargs)


def _unary(aten: str) -> Adapter:
    return lambda conv, node, args, kwargs, mod: (aten, args[:1], {})


def _with_dim(aten: str) -> Adapter:
    """softmax / log_softmax: ``(x, dim)``."""
    def adapt(conv, node, args, kwargs, mod):
        dim = _p(args, kwargs, 1, "dim")
        if dim is None:
            raise ValueError("softmax without dim is not supported")
        return aten, (args[0], dim, False), {}
    return adapt


def _reduce(aten_dim: str, aten_all: str) -> Adapter:
    """mean / sum with or without ``dim``."""
    def adapt(conv, node, args, kwargs, mod):
        dim = _p(args, kwargs, 1, "dim")
        if dim is None:
            return aten_all, args[:1], {}
        dims = [dim] if isinstance(dim, int) else list(dim)
        return aten_dim, (args[0], dims, _p(args, kwargs, 2, "keepdim", False)), {}
    return adapt


def _gelu(conv, node, args, kwargs, mod):
    return "aten.gelu.default", args[:1], {"approximate": _p(args, kwargs, 1, "approximate", "none")}


def _hardtanh(lo: float | None = None, hi: float | None = None) -> Adapter:
    """hardtanh(x, min_val, max_val); relu6 is hardtanh(x, 0, 6)."""
    def adapt(conv, node, args, kwargs, mod):
        low = lo if lo is not None else _p(args, kwargs, 1, "min_val", -1.0)
        high = hi if hi is not None else _p(args, kwargs, 2, "max_val", 1.0)
        return "aten.hardtanh.default", (args[0], low, high), {}
    return adapt


def _flatten(conv, node, args, kwargs, mod):
    return "aten.flatten.using_ints", args[:1], {}


def _shape_method(aten: str) -> Adapter:
    """view / reshape / expand: converted from the recorded output shape."""
    return lambda conv, node, args, kwargs, mod: (aten, args[:1], {})


def _dim_method(aten: str) -> Adapter:
    """unsqueeze / squeeze: the tensor and its ``dim`` (positional or keyword; squeeze may have none)."""
    def adapt(conv, node, args, kwargs, mod):
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        return aten, (args[0],) if dim is None else (args[0], dim), {}
    return adapt


def _permute(conv, node, args, kwargs, mod):
    dims = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:]
    return "aten.permute.default", (args[0], list(dims or kwargs["dims"])), {}


def _to(conv, node, args, kwargs, mod):
    import torch  # torch is optional and heavy: imported on first use

    dtype = kwargs.get("dtype") or next((a for a in args[1:] if isinstance(a, torch.dtype)), None)
    return "aten._to_copy.default", args[:1], {"dtype": dtype}


def _cast(dtype_name: str) -> Adapter:
    def adapt(conv, node, args, kwargs, mod):
        import torch  # torch is optional and heavy: imported on first use
        return "aten._to_copy.default", args[:1], {"dtype": getattr(torch, dtype_name)}
    return adapt


def _getitem(conv, node, args, kwargs, mod):
    """``pieces[k]`` of a tuple of tensors (``x.chunk(...)[1]``), ``x[index_tensor]``, or
    ``x[1:, 0, None, ...]`` of a tensor with constant ints and slices."""
    if isinstance(conv.values.get(args[0]), (tuple, list)):
        return "getitem", args, {}
    import torch.fx  # torch is optional and heavy: imported on first use

    if isinstance(args[1], torch.fx.Node) and _has_tensor(conv.values.get(args[1])):  # x[positions]
        return "aten.index.Tensor", (args[0], [args[1]]), {}
    index = args[1] if isinstance(args[1], tuple) else (args[1],)
    for item in index:
        if not (item is None or item is Ellipsis or isinstance(item, int) or (
                isinstance(item, slice) and all(v is None or isinstance(v, int)
                                                for v in (item.start, item.stop, item.step)))):
            raise ValueError(f"indexing a tensor with {item!r} is not supported "
                             "(only ints, constant slices, None and ...); use from_exported_program")
    return _TENSOR_INDEX, (args[0], index), {}


_TENSOR_INDEX = "fx.tensor_getitem"


def _tensor_index(node, conv):
    """``x[index]``: one strided slice per sliced or indexed axis, then a reshape to the
    recorded result shape (which drops int-indexed axes and adds the None ones)."""

    x, index = conv.arg(node.args[0]), node.args[1]
    ndim = len(conv.shape_of(node.args[0]))
    specified = sum(1 for item in index if item is not None and item is not Ellipsis)
    axis, axes, begins, ends, steps = 0, [], [], [], []
    for item in index:
        if item is Ellipsis:
            axis += ndim - specified
        elif item is None:
            continue
        elif isinstance(item, int):
            axes.append(axis)
            begins.append(item)
            ends.append(item + 1 if item != -1 else 2 ** 62)
            steps.append(1)
            axis += 1
        else:
            axes.append(axis)
            begins.append(0 if item.start is None else item.start)
            ends.append(2 ** 62 if item.stop is None else item.stop)
            steps.append(1 if item.step is None else item.step)
            axis += 1
    out = conv.bb.emit(_op.strided_slice(x, axes, begins, ends, steps)) if axes else x
    return conv.bb.emit(_op.reshape(out, conv.shape_of(node)))


def _masked_fill(conv, node, args, kwargs, mod):
    return "aten.masked_fill.Scalar", (args[0], _p(args, kwargs, 1, "mask"), _p(args, kwargs, 2, "value")), {}


def _named(aten: str, *names: str, defaults: tuple = ()) -> Adapter:
    """A functional call (``F.layer_norm(x, shape, weight=w)``) restated positionally in the
    order ``names`` of the ATen op; trailing arguments not given take ``defaults``."""
    def adapt(conv, node, args, kwargs, mod):
        unknown = set(kwargs) - set(names)
        if unknown:
            raise ValueError(f"{aten}: keyword(s) {sorted(unknown)} are not supported")
        tail = dict(zip(names[len(names) - len(defaults):], defaults))
        values = [_p(args, kwargs, i, name, tail.get(name)) for i, name in enumerate(names)]
        return aten, tuple(values), {}
    return adapt


def _conv_function(aten: str) -> Adapter:
    """``torch.conv1d/conv2d`` as the graphs of ``torch.compile`` call them; ``padding="same"``
    is the ATen ``.padding`` overload."""
    default = _named(aten + ".default", "input", "weight", "bias", "stride", "padding", "dilation", "groups",
                     defaults=(None, 1, 0, 1, 1))

    def adapt(conv, node, args, kwargs, mod):
        target, values, _ = default(conv, node, args, kwargs, mod)
        return (aten + ".padding" if isinstance(values[4], str) else target), values, {}
    return adapt


def _batch_norm_function(conv, node, args, kwargs, mod):
    """``F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)``
    in ATen's order ``(x, weight, bias, running_mean, running_var, training, momentum, eps)``."""
    x, mean, var, w, b, training, momentum, eps = (
        _p(args, kwargs, i, name, d) for i, (name, d) in enumerate(
            [("input", None), ("running_mean", None), ("running_var", None), ("weight", None), ("bias", None),
             ("training", False), ("momentum", 0.1), ("eps", 1e-5)]))
    if training:
        raise ValueError("batch_norm in training mode is not supported; call model.eval()")
    return "aten.batch_norm.default", (x, w, b, mean, var, False, momentum, eps), {}


def _max_pool_function(conv, node, args, kwargs, mod):
    if _p(args, kwargs, 6, "return_indices", False):
        raise ValueError("max_pool2d(return_indices=True) is not supported")
    kernel = _p(args, kwargs, 1, "kernel_size")
    return "aten.max_pool2d.default", (args[0], kernel, _p(args, kwargs, 2, "stride") or kernel,
                                       _p(args, kwargs, 3, "padding", 0), _p(args, kwargs, 4, "dilation", 1),
                                       _p(args, kwargs, 5, "ceil_mode", False)), {}


def _avg_pool_function(conv, node, args, kwargs, mod):
    target, values, _ = _named("aten.avg_pool2d.default", "input", "kernel_size", "stride", "padding", "ceil_mode",
                               "count_include_pad", "divisor_override",
                               defaults=(None, 0, False, True, None))(conv, node, args, kwargs, mod)
    if values[6] is not None:
        raise ValueError("avg_pool2d(divisor_override=...) is not supported")
    return target, (values[0], values[1], values[2] or values[1], *values[3:6]), {}


_pad = _named("aten.pad.default", "input", "pad", "mode", "value", defaults=("constant", None))


def _compare(aten: str) -> Adapter:
    """``a != b``: the ``.Tensor`` overload when both sides are tensors, else ``.Scalar``."""
    def adapt(conv, node, args, kwargs, mod):
        tensors = all(_has_tensor(conv.values.get(a)) for a in args)
        return f"{aten}.{'Tensor' if tensors else 'Scalar'}", args, {}
    return adapt


def _addmm(conv, node, args, kwargs, mod):
    """``torch.addmm(bias, m1, m2, beta=, alpha=)`` (GPT-2's Conv1D)."""
    scale = {k: kwargs[k] for k in ("beta", "alpha") if k in kwargs}
    return "aten.addmm.default", (_p(args, kwargs, 0, "input"), _p(args, kwargs, 1, "mat1"),
                                  _p(args, kwargs, 2, "mat2")), scale


def _where(conv, node, args, kwargs, mod):
    """``torch.where(cond, x, y)``, either side a tensor or a Python number; the one-argument
    form (``nonzero``) has a data-dependent shape and is refused."""
    values = [_p(args, kwargs, i, name) for i, name in enumerate(("condition", "input", "other"))]
    if values[1] is None or values[2] is None:
        raise ValueError("torch.where(condition) (indices of the true elements) is not supported")
    x_t, y_t = (_has_tensor(conv.values.get(v)) for v in values[1:])
    overload = {(True, True): "self", (True, False): "ScalarOther", (False, True): "ScalarSelf",
                (False, False): "Scalar"}[(x_t, y_t)]
    return f"aten.where.{overload}", tuple(values), {}


def _split(conv, node, args, kwargs, mod):
    """``x.split(size, dim)`` / ``torch.split``: equal pieces or a list of lengths."""
    size = _p(args, kwargs, 1, "split_size_or_sections", kwargs.get("split_size"))
    dim = _p(args, kwargs, 2, "dim", 0)
    if isinstance(size, int):
        return "aten.split.Tensor", (args[0], size, dim), {}
    return "aten.split_with_sizes.default", (args[0], list(size), dim), {}


def _gather(conv, node, args, kwargs, mod):
    return "aten.gather.default", (args[0], _p(args, kwargs, 1, "dim"), _p(args, kwargs, 2, "index")), {}


def _type(conv, node, args, kwargs, mod):
    """``x.type(torch.float32)``; a type given as a string (``"torch.FloatTensor"``) is refused."""
    import torch  # torch is optional and heavy: imported on first use

    dtype = _p(args, kwargs, 1, "dtype")
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"x.type({dtype!r}) is not supported (only a torch.dtype)")
    return "aten._to_copy.default", args[:1], {"dtype": dtype}


_CONSTANT = "fx.constant"
#: torch's functions whose value only their constant arguments fix (``*_like``: and the shape of
#: their input); the recorder keeps a copy of the value each made
_FACTORIES = ("zeros", "ones", "full", "empty", "tensor", "scalar_tensor", "eye", "linspace")
_LIKE_FACTORIES = ("zeros_like", "ones_like", "full_like", "empty_like")


def _factory(shape_of_input: bool = False) -> Adapter:
    """``torch.zeros(...)``, ``torch.tensor([...])``, ``torch.full_like(x, v)``: a value fixed
    by its constant arguments (or, for ``*_like``, by its input's static shape), so the value
    recorded on this call is the constant (one build per shape keeps it right)."""
    def adapt(conv, node, args, kwargs, mod):
        import torch.fx  # torch is optional and heavy: imported on first use

        operands = list(args[1:] if shape_of_input else args) + list(kwargs.values())
        flat = [a for o in operands for a in (o if isinstance(o, (list, tuple)) else [o])]
        if any(isinstance(a, torch.fx.Node) for a in flat):
            raise ValueError(f"{node.target}: an argument computed in the graph is not supported "
                             "(only constant values)")
        return _CONSTANT, (), {}
    return adapt


def _constant(node, conv):
    return const(conv.folded[node.name].detach().cpu().contiguous().numpy())


#: in-place arithmetic ``x += y`` (``operator.iadd``) and ``x.add_(y)``: converted as the plain op,
#: the result then stands for ``x`` in the rest of the graph (as TVM's from_fx)
_INPLACE_FUNCTIONS = {operator.iadd: "aten.add.Tensor", operator.isub: "aten.sub.Tensor",
                      operator.imul: "aten.mul.Tensor", operator.itruediv: "aten.div.Tensor"}
_INPLACE_METHODS = {"add_": "aten.add.Tensor", "sub_": "aten.sub.Tensor", "mul_": "aten.mul.Tensor",
                    "div_": "aten.div.Tensor"}


def _inplace(aten: str) -> Adapter:
    """A graph-local in-place op; refused where the change would be seen outside the value's
    own later uses: on a graph input or weight, or on memory another live value views."""
    def adapt(conv, node, args, kwargs, mod):
        if len(args) != 2 or kwargs:
            raise ValueError(f"in-place {_call_name(node)} with arguments {args[2:]} {sorted(kwargs)} "
                             "is not supported")
        _check_private(conv, node, args[0])
        return aten, args, {}
    return adapt


def _call_name(node: Any) -> str:
    return node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))


def _check_private(conv: Any, node: Any, target: Any) -> None:
    import torch  # torch is optional and heavy: imported on first use

    value = conv.values.get(target)
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"in-place {_call_name(node)} on a value that is not a tensor")
    storage = value.untyped_storage().data_ptr()
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    for other, seen in conv.values.items():
        if not isinstance(seen, torch.Tensor) or order[other] >= order[node] or other is target:
            continue
        if seen.untyped_storage().data_ptr() != storage:
            continue
        if other.op in ("placeholder", "get_attr") or any(order[u] > order[node] for u in other.users):
            raise ValueError(f"in-place {_call_name(node)} on {target.name}, which shares memory with {other.name} "
                             "(a graph input, a weight or a view used later): the change would be lost")
    if target.op in ("placeholder", "get_attr"):
        raise ValueError(f"in-place {_call_name(node)} on the graph input {target.name}: the change would be lost")


def _functional_adapters() -> dict[Any, Adapter]:
    """The functions ``torch.compile`` leaves in its graphs where ``symbolic_trace`` leaves
    module calls (dynamo inlines ``nn.Conv2d.forward`` into ``torch.conv2d(x, weight, ...)``)."""
    import torch  # torch is optional and heavy: imported on first use
    import torch.nn.functional as F  # torch is optional and heavy: imported on first use

    return {
        torch.conv1d: _conv_function("aten.conv1d"), torch.conv2d: _conv_function("aten.conv2d"),
        F.conv1d: _conv_function("aten.conv1d"), F.conv2d: _conv_function("aten.conv2d"),
        F.batch_norm: _batch_norm_function, F.max_pool2d: _max_pool_function,
        F.layer_norm: _named("aten.layer_norm.default", "input", "normalized_shape", "weight", "bias", "eps",
                             defaults=(None, None, 1e-5)),
        F.group_norm: _named("aten.group_norm.default", "input", "num_groups", "weight", "bias", "eps",
                             defaults=(None, None, 1e-5)),
        F.embedding: lambda conv, node, args, kwargs, mod: (
            "aten.embedding.default", (_p(args, kwargs, 1, "weight"), args[0]), {}),
        F.avg_pool2d: _avg_pool_function,
        F.adaptive_avg_pool2d: _named("aten.adaptive_avg_pool2d.default", "input", "output_size"),
        F.hardswish: _unary("aten.hardswish.default"), F.hardsigmoid: _unary("aten.hardsigmoid.default"),
        F.pad: _pad, torch._C._nn.pad: _pad,
        **{getattr(operator, name): _compare(f"aten.{name}") for name in ("eq", "ne", "lt", "le", "gt", "ge")},
        operator.invert: _unary("aten.bitwise_not.default"),
        torch.addmm: _addmm, torch.where: _where, torch.split: _split, torch.gather: _gather,
        **{getattr(torch, name): _factory() for name in _FACTORIES},
        **{getattr(torch, name): _factory(True) for name in _LIKE_FACTORIES},
        **{fn: _inplace(aten) for fn, aten in _INPLACE_FUNCTIONS.items()},
    }


# -- modules ------------------------------------------------------------------------------------

def _linear_module(conv, node, args, kwargs, mod):
    return "aten.linear.default", (args[0], conv.tensor(mod.weight), conv.tensor(mod.bias)), {}


def _conv2d_module(conv, node, args, kwargs, mod):
    if isinstance(mod.padding, str) or mod.padding_mode != "zeros":
        raise ValueError(f"Conv2d padding {mod.padding!r} / mode "
                         f"{mod.padding_mode!r} is not supported (only numeric zero padding)")
    return "aten.conv2d.default", (args[0], conv.tensor(mod.weight), conv.tensor(mod.bias), mod.stride,
                                   mod.padding, mod.dilation, mod.groups), {}


def _max_pool2d_module(conv, node, args, kwargs, mod):
    if mod.return_indices:
        raise ValueError("MaxPool2d(return_indices=True) is not supported")
    return "aten.max_pool2d.default", (args[0], mod.kernel_size, mod.stride or mod.kernel_size, mod.padding,
                                       mod.dilation, mod.ceil_mode), {}


def _avg_pool2d_module(conv, node, args, kwargs, mod):
    if mod.divisor_override is not None:
        raise ValueError("AvgPool2d(divisor_override=...) is not supported")
    return "aten.avg_pool2d.default", (args[0], mod.kernel_size, mod.stride or mod.kernel_size, mod.padding,
                                       mod.ceil_mode, mod.count_include_pad), {}


def _adaptive_avg_pool2d_module(conv, node, args, kwargs, mod):
    return "aten.adaptive_avg_pool2d.default", (args[0], list(conv.values[node].shape[-2:])), {}


def _softmax_module(aten: str) -> Adapter:
    def adapt(conv, node, args, kwargs, mod):
        return _with_dim(aten)(conv, node, (args[0], mod.dim), {}, mod)
    return adapt


def _layer_norm_module(conv, node, args, kwargs, mod):
    return "aten.layer_norm.default", (args[0], list(mod.normalized_shape), conv.tensor(mod.weight),
                                       conv.tensor(mod.bias), mod.eps), {}


def _batch_norm_module(conv, node, args, kwargs, mod):
    if mod.training or not mod.track_running_stats:
        raise ValueError("BatchNorm in training mode is not supported; call model.eval()")
    return "aten.batch_norm.default", (args[0], conv.tensor(mod.weight), conv.tensor(mod.bias),
                                       conv.tensor(mod.running_mean), conv.tensor(mod.running_var),
                                       False, mod.momentum, mod.eps), {}


def _embedding_module(conv, node, args, kwargs, mod):
    return "aten.embedding.default", (conv.tensor(mod.weight), args[0]), {}


def _module_adapters() -> dict[type, Adapter]:
    from torch import nn  # torch is optional and heavy: imported on first use

    return {
        nn.Linear: _linear_module, nn.Conv2d: _conv2d_module, nn.MaxPool2d: _max_pool2d_module,
        nn.AvgPool2d: _avg_pool2d_module, nn.AdaptiveAvgPool2d: _adaptive_avg_pool2d_module,
        nn.ReLU: _unary("aten.relu.default"), nn.ReLU6: _hardtanh(0.0, 6.0),
        nn.Hardtanh: lambda conv, node, args, kwargs, mod: _hardtanh(mod.min_val, mod.max_val)(
            conv, node, args, kwargs, mod),
        nn.GELU: lambda conv, node, args, kwargs, mod: ("aten.gelu.default", args[:1],
                                                        {"approximate": mod.approximate}),
        nn.SiLU: _unary("aten.silu.default"), nn.Sigmoid: _unary("aten.sigmoid.default"),
        nn.Tanh: _unary("aten.tanh.default"), nn.Flatten: _flatten,
        nn.Softmax: _softmax_module("aten._softmax.default"),
        nn.LogSoftmax: _softmax_module("aten._log_softmax.default"),
        nn.LayerNorm: _layer_norm_module, nn.BatchNorm2d: _batch_norm_module, nn.Embedding: _embedding_module,
        nn.Dropout: _unary("aten.dropout.default"), nn.Identity: _unary("aten.alias.default"),
    }


def _table_adapter(row: ElementwiseOp) -> Adapter:
    """The operands as they are; anything more (``x.round(decimals=2)``) is refused, not dropped."""
    aten = row.aten[0]

    def adapt(conv, node, args, kwargs, mod):
        if len(args) != row.arity or kwargs:
            raise ValueError(f"from_fx: {node.target} takes {row.arity} tensor operand(s) here ({aten}); "
                             f"got {len(args)} positional and keywords {sorted(kwargs)} (node {node.name})")
        return aten, args, {}
    return adapt


def _table_names() -> dict[str, Adapter]:
    """``torch.<f>`` / ``x.<f>()`` of every table operator whose first ATen op is ``aten.<f>.*``
    (``torch.exp``, ``torch.atan2``): the table's own adapters; the written ones below come first."""
    return {row.aten[0].split(".")[1]: _table_adapter(row) for row in ELEMENTWISE if row.aten}


def _function_adapters() -> dict[Any, Adapter]:
    import torch  # torch is optional and heavy: imported on first use
    import torch.nn.functional as F  # torch is optional and heavy: imported on first use

    table: dict[Any, Adapter] = {
        **{getattr(torch, name): adapt for name, adapt in _table_names().items() if hasattr(torch, name)},
        torch.relu: _unary("aten.relu.default"), F.relu: _unary("aten.relu.default"),
        F.relu6: _hardtanh(0.0, 6.0), F.hardtanh: _hardtanh(),
        torch.sigmoid: _unary("aten.sigmoid.default"), F.sigmoid: _unary("aten.sigmoid.default"),
        torch.tanh: _unary("aten.tanh.default"), F.tanh: _unary("aten.tanh.default"),
        F.silu: _unary("aten.silu.default"), F.gelu: _gelu,
        torch.exp: _unary("aten.exp.default"), torch.sqrt: _unary("aten.sqrt.default"),
        torch.rsqrt: _unary("aten.rsqrt.default"), torch.log: _unary("aten.log.default"),
        torch.erf: _unary("aten.erf.default"), torch.abs: _unary("aten.abs.default"),
        operator.neg: _unary("aten.neg.default"), torch.neg: _unary("aten.neg.default"),
        operator.add: _same("aten.add.Tensor"), torch.add: _same("aten.add.Tensor"),
        operator.sub: _same("aten.sub.Tensor"), torch.sub: _same("aten.sub.Tensor"),
        operator.mul: _same("aten.mul.Tensor"), torch.mul: _same("aten.mul.Tensor"),
        operator.truediv: _same("aten.div.Tensor"), torch.div: _same("aten.div.Tensor"),
        operator.matmul: _same("aten.matmul.default"), torch.matmul: _same("aten.matmul.default"),
        torch.flatten: _flatten, torch.reshape: _shape_method("aten.reshape.default"),
        torch.unsqueeze: _dim_method("aten.unsqueeze.default"), torch.squeeze: _dim_method("aten.squeeze.dims"),
        torch.transpose: _same("aten.transpose.int"), torch.permute: _permute,
        torch.cat: lambda conv, node, args, kwargs, mod: ("aten.cat.default",
                                                          (args[0], _p(args, kwargs, 1, "dim", 0)), {}),
        torch.softmax: _with_dim("aten._softmax.default"), F.softmax: _with_dim("aten._softmax.default"),
        F.log_softmax: _with_dim("aten._log_softmax.default"),
        torch.mean: _reduce("aten.mean.dim", "aten.mean.default"),
        torch.sum: _reduce("aten.sum.dim_IntList", "aten.sum.default"),
        F.linear: lambda conv, node, args, kwargs, mod: ("aten.linear.default",
                                                         (args[0], _p(args, kwargs, 1, "weight"),
                                                          _p(args, kwargs, 2, "bias")), {}),
        F.dropout: _unary("aten.dropout.default"),
        F.scaled_dot_product_attention: _same("aten.scaled_dot_product_attention.default"),
        torch.arange: lambda conv, node, args, kwargs, mod: ("aten.arange.start_step", args,
                                                             {"step": kwargs["step"]} if "step" in kwargs else {}),
        operator.getitem: _getitem,
    }
    return {**_functional_adapters(), **table}


_METHODS: dict[str, Adapter] = {
    **_table_names(),
    "relu": _unary("aten.relu.default"), "sigmoid": _unary("aten.sigmoid.default"),
    "tanh": _unary("aten.tanh.default"), "exp": _unary("aten.exp.default"),
    "view": _shape_method("aten.view.default"), "reshape": _shape_method("aten.reshape.default"),
    "flatten": _flatten, "unsqueeze": _dim_method("aten.unsqueeze.default"),
    "squeeze": _dim_method("aten.squeeze.dims"), "expand": _shape_method("aten.expand.default"),
    "permute": _permute, "transpose": _same("aten.transpose.int"), "t": _unary("aten.t.default"),
    "contiguous": _unary("aten.contiguous.default"),
    "softmax": _with_dim("aten._softmax.default"), "log_softmax": _with_dim("aten._log_softmax.default"),
    "mean": _reduce("aten.mean.dim", "aten.mean.default"), "sum": _reduce("aten.sum.dim_IntList", "aten.sum.default"),
    "add": _same("aten.add.Tensor"), "sub": _same("aten.sub.Tensor"), "mul": _same("aten.mul.Tensor"),
    "div": _same("aten.div.Tensor"), "matmul": _same("aten.matmul.default"),
    "masked_fill": _masked_fill, "chunk": _same("aten.chunk.default"),
    "to": _to, "float": _cast("float32"), "long": _cast("int64"), "int": _cast("int32"),
    "__getitem__": _getitem, "split": _split, "gather": _gather, "type": _type, "where": _where,
    **{name: _inplace(aten) for name, aten in _INPLACE_METHODS.items()},
}


def _is_inplace(node: Any) -> bool:
    """One of the in-place ops converted here (its result then stands for its first argument)."""
    if node.op == "call_method":
        return node.target in _INPLACE_METHODS
    return node.op == "call_function" and node.target in _INPLACE_FUNCTIONS


def mutates(node: Any) -> bool:
    """Whether an fx call may change a tensor in place (``x += y``, ``x.add_(y)``,
    ``torch.relu_(x)``): such a call is kept by dead-code elimination though nothing reads its
    result, and a graph with one is recorded on copies of its inputs."""
    if node.op == "call_method":  # (requires_grad_ changes no value: inference drops it)
        return isinstance(node.target, str) and node.target.endswith("_") and not node.target.startswith("_") \
            and node.target != "requires_grad_"
    if node.op != "call_function":
        return False
    if node.target in _OPERATOR_INPLACE:
        return True
    name = getattr(node.target, "__name__", "")
    return getattr(node.target, "__module__", None) != "_operator" and name.endswith("_") and not name.startswith("_")


_OPERATOR_INPLACE = {getattr(operator, "i" + name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift",
    "concat")}


def _has_tensor(value: Any) -> bool:
    import torch  # torch is optional and heavy: imported on first use

    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (list, tuple)) and any(_has_tensor(v) for v in value)


def _example_input(shape: Any, dtype: str, gen: Any) -> Any:
    """A seeded random tensor of ``shape``; integer ids stay 0 or 1 so they index any table."""
    import torch  # torch is optional and heavy: imported on first use

    if any(not isinstance(d, int) for d in shape):
        raise ValueError(f"from_fx: input shape {tuple(shape)} has a symbolic dim; from_fx takes static shapes "
                         "(use from_exported_program with torch.export.Dim for a dynamic batch)")
    tdtype = getattr(torch, dtype)
    if tdtype.is_floating_point:
        return torch.randn(tuple(shape), generator=gen).to(tdtype)
    if tdtype == torch.bool:
        return torch.rand(tuple(shape), generator=gen) > 0.5
    return torch.randint(0, 2, tuple(shape), generator=gen, dtype=tdtype)


class FxConverter(ExportedProgramConverter):
    """The state of one ``from_fx`` conversion (the converters see the same helpers)."""

    def __init__(self, convert_map: dict[str, Callable], gm: Any, keep_params_as_input: bool,
                 custom: dict[Any, Callable] | None = None):
        super().__init__({**convert_map, _TENSOR_INDEX: _tensor_index, _CONSTANT: _constant})
        #: converters keyed as in TVM's from_fx: a torch function's or method's name, or a module type
        self.custom = custom or {}
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.functions = _function_adapters()
        self.module_adapters = _module_adapters()
        self.values: dict[Any, Any] = {}
        self.consts: dict[int, Expr] = {}
        #: the value a factory call (``torch.zeros``) made, by node name: converted as a constant
        self.folded: dict[str, Any] = {}
        self.param_vars: list[Var] = []
        self.param_values: list[np.ndarray] = []
        self.keep_params_as_input = keep_params_as_input
        if keep_params_as_input:
            for name, p in gm.named_parameters():
                array = p.detach().cpu().contiguous().numpy()
                var = Var(name.replace(".", "_"), TensorStructInfo(list(array.shape), str(array.dtype)))
                self.consts[id(p)] = var
                self.param_vars.append(var)
                self.param_values.append(array)

    def tensor(self, t: Any) -> Expr | None:
        """A parameter or buffer as a Relax constant (or its parameter Var); None stays None."""
        if t is None:
            return None
        if id(t) not in self.consts:
            self.consts[id(t)] = const(t.detach().cpu().contiguous().numpy())
        return self.consts[id(t)]

    def arg(self, a: Any) -> Any:
        import torch.fx  # torch is optional and heavy: imported on first use

        if isinstance(a, torch.fx.Node) and a not in self.env:
            return self.values[a]  # a non-tensor value (a size, an int) as a Python constant
        return super().arg(a)

    # -- the walk -----------------------------------------------------------------------------------
    def record(self, input_info: list) -> list:
        """Run the module once on random inputs; every node keeps its value (and as ``meta["val"]``
        the converters read shapes and dtypes from)."""
        import torch  # torch is optional and heavy: imported on first use

        gen = torch.Generator().manual_seed(0)
        inputs = [_example_input(list(shape), str(dtype), gen) for shape, dtype in input_info]
        self.record_values(inputs)
        return inputs

    def record_values(self, inputs: list) -> None:
        """Run the graph on ``inputs``: every node keeps its value, and a tensor-valued one
        its ``meta["val"]``."""
        import torch  # torch is optional and heavy: imported on first use
        import torch.fx  # torch is optional and heavy: imported on first use

        values = self.values

        factories = {getattr(torch, name) for name in _FACTORIES + _LIKE_FACTORIES}
        folded = self.folded

        class Recorder(torch.fx.Interpreter):
            def run_node(self, n):
                out = super().run_node(n)
                values[n] = out
                if n.op == "call_function" and n.target in factories and isinstance(out, torch.Tensor):
                    folded[n.name] = out.clone()  # as made: a later in-place op may change out
                return out

        with torch.no_grad():
            Recorder(self.gm).run(*inputs)
        for node, value in values.items():
            if _has_tensor(value):
                node.meta["val"] = value

    def custom_converter(self, node: Any) -> Callable | None:
        """The ``custom_convert_map`` entry for a call node (module type, function or method name)."""
        if not self.custom:
            return None
        if node.op == "call_module":
            return self.custom.get(type(self.modules[node.target]))
        if node.op == "call_method":
            return self.custom.get(node.target)
        return self.custom.get(getattr(node.target, "__name__", None))

    def adapter(self, node: Any) -> tuple[Adapter | None, Any, str]:
        """The adapter of a call node, the module it calls, and how to name it in an error."""
        if node.op == "call_module":
            mod = self.modules[node.target]
            fn = next((a for t, a in self.module_adapters.items() if type(mod) is t), None)
            return fn, mod, f"call_module {type(mod).__module__}.{type(mod).__name__} ({node.target})"
        if node.op == "call_method":
            return _METHODS.get(node.target), None, f"call_method {node.target!r} (node {node.name})"
        target = node.target
        try:
            fn = self.functions.get(target)
        except TypeError:  # an unhashable target
            fn = None
        name = f"{getattr(target, '__module__', '') or ''}.{getattr(target, '__name__', target)}".lstrip(".")
        return fn, None, f"call_function {name} (node {node.name})"

    def call_arguments(self, node: Any) -> tuple[tuple, dict]:
        """``node``'s arguments with every node whose value is not a tensor (``x.size(0)`` or a
        symbolic size from ``torch.compile``) replaced by its recorded value."""
        import torch.fx  # torch is optional and heavy: imported on first use

        def concrete(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                return a if _has_tensor(self.values.get(a)) else self.values.get(a)
            if isinstance(a, (list, tuple)):
                return type(a)(concrete(v) for v in a)
            if isinstance(a, slice):  # x[:, :n] with n a symbolic size of a dynamic graph
                return slice(concrete(a.start), concrete(a.stop), concrete(a.step))
            return a

        return tuple(concrete(a) for a in node.args), {k: concrete(v) for k, v in node.kwargs.items()}

    def check_supported(self, graph: Any) -> None:
        """Every call that makes a tensor has an adapter that accepts its arguments, or one error
        lists them all."""
        missing = []
        for node in graph.nodes:
            if node.op in ("call_module", "call_function", "call_method") and _has_tensor(self.values.get(node)):
                if self.custom_converter(node) is not None:
                    continue
                fn, mod, what = self.adapter(node)
                if fn is None:
                    missing.append(what)
                    continue
                try:
                    target, _, _ = fn(self, node, *self.call_arguments(node), mod)
                except (ValueError, KeyError, TypeError) as err:
                    missing.append(f"{what}: {err}")
                    continue
                if target not in self.convert_map:
                    missing.append(f"{what}: no converter for {target}")
        if missing:
            raise ValueError("from_fx: unsupported operators:\n" + "\n".join(f"  {m}" for m in missing))

    def convert_node(self, node: Any) -> Any:
        custom = self.custom_converter(node)
        if custom is not None:  # as TVM: the fx node itself and this converter
            return custom(node, self)
        fn, mod, _ = self.adapter(node)
        target, args, kwargs = fn(self, node, *self.call_arguments(node), mod)
        return self.convert_map[target](_AtenCall(target, args, kwargs, node), self)

    def convert_fx(self, input_info: list, unwrap_unit_return_tuple: bool,
                   no_bind_return_tuple: bool = False) -> IRModule:
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(input_info):
            raise ValueError(f"from_fx: the graph takes {len(placeholders)} inputs "
                             f"({', '.join(n.name for n in placeholders)}) but input_info describes {len(input_info)}")
        self.record(input_info)
        self.check_supported(self.gm.graph)
        user_vars = []
        for node, (shape, dtype) in zip(placeholders, input_info):
            var = Var(node.name, TensorStructInfo([int(d) for d in shape], str(dtype)))
            user_vars.append(var)
            self.env[node] = var
        return self.emit_main(user_vars, unwrap_unit_return_tuple, no_bind_return_tuple)

    def emit_main(self, user_vars: list[Var], unwrap_unit_return_tuple: bool,
                  no_bind_return_tuple: bool = False) -> IRModule:
        """``main(*user_vars, *self.param_vars)``: every call node that makes a tensor, in
        graph order (the placeholders are bound in ``self.env`` already)."""
        import torch  # torch is optional and heavy: imported on first use

        # as TVM: "num_input" only where parameters follow the inputs
        attrs: dict[str, Any] = {"num_input": len(user_vars)} if self.keep_params_as_input else {}
        if self.param_vars:
            attrs["params"] = self.param_values
        with self.bb.function("main", user_vars + self.param_vars, attrs=attrs):
            with self.bb.dataflow():
                output = None
                for node in self.gm.graph.nodes:
                    if node.op == "get_attr":
                        value = self.values[node]
                        if isinstance(value, torch.Tensor):
                            self.env[node] = self.tensor(value)
                    elif node.op in ("call_module", "call_function", "call_method"):
                        if _has_tensor(self.values[node]):
                            self.env[node] = self.convert_node(node)
                            if _is_inplace(node):  # later reads of the changed tensor see the result
                                self.env[node.args[0]] = self.env[node]
                    elif node.op == "output":
                        output = self.emit_result(node.args[0], unwrap_unit_return_tuple, no_bind_return_tuple)
            self.bb.emit_func_output(output)
        return self.bb.get()


def from_fx(model: Any, input_info: list, *, keep_params_as_input: bool = False,
            unwrap_unit_return_tuple: bool = False, no_bind_return_tuple: bool = False,
            custom_convert_map: dict[str, Callable] | None = None,
            default_image_layout: str = "NCHW") -> IRModule:
    """Convert a ``torch.fx.GraphModule`` (``torch.fx.symbolic_trace(model)``; a plain
    ``nn.Module`` is traced here) to an IRModule whose ``main`` takes inputs described by
    ``input_info``, a list of ``(shape, dtype)`` such as ``[((1, 784), "float32")]``.

    Parameters become constants, or with ``keep_params_as_input`` parameters of ``main`` after
    the inputs (see ``relax.frontend.detach_params``).  ``custom_convert_map`` adds converters
    ``fn(node, importer)``: keyed as in TVM by the called function's or method's name
    (``"log1p"`` for ``torch.log1p``) or by an ``nn.Module`` subclass, they get the fx node;
    keyed by an ATen name (``"aten.log1p.default"``) they replace the converter an fx call is
    restated as.  Unsupported calls are listed together before any conversion.
    """
    if default_image_layout != "NCHW":
        raise NotImplementedError(f"from_fx(default_image_layout={default_image_layout!r}): minitvm converts "
                                  "images in torch's NCHW layout only")
    import torch.fx  # torch is optional and heavy: imported on first use

    gm = model if isinstance(model, torch.fx.GraphModule) else torch.fx.symbolic_trace(model)
    custom_convert_map = custom_convert_map or {}
    aten = {k: v for k, v in custom_convert_map.items() if isinstance(k, str) and k.startswith("aten.")}
    custom = {k: v for k, v in custom_convert_map.items() if k not in aten}
    converter = FxConverter({**CONVERTERS, **aten}, gm, keep_params_as_input, custom)
    return converter.convert_fx(list(input_info), unwrap_unit_return_tuple, no_bind_return_tuple)
