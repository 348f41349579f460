"""RemoveRedundantReshape: drop the operations that do not change their input.

An exported model is full of them: ``reshape`` to the shape the tensor already has,
``broadcast_to`` its own shape, ``astype`` to its own dtype, ``permute_dims`` with the axes in
order -- each one a kernel call that copies a tensor into a new one of the same contents.
This pass replaces such a call by its input, and a ``reshape`` of a ``reshape`` by one
``reshape`` of the original tensor (the middle shape never matters).  As TVM's pass of the
same name (which does the two reshape cases), it is one ``relax.dpl`` pattern and a rewriter;
``rewrite_call`` then folds the ``y = x`` aliases left behind.

Before that, reshapes sink below element-wise operators (a minitvm addition, TVM's pass does
not): ``f(reshape(a, s), b)`` becomes ``reshape(f(a, b'), s)`` when the element-wise ``f`` maps
the same elements either way (``b`` a scalar, or a tensor matching the trailing dimensions of
both shapes).  An exported model reshapes a dense layer's ``(tokens, features)`` output to
``(1, tokens, features)`` and back around its GELU (written out as ten multiplies, a power and
a tanh), its residual add or its attention mask: an operator after a reshape does not fuse
into the matmul before it, so each was a kernel of its own reading and writing the whole
tensor.  Sunk, the reshapes meet and cancel, and the chain becomes the matmul's epilogue.
A sink stops where it would not pay: before an element-wise chain that ends in a reduction (a
reduction's kernel takes element-wise calls in, not a reshape), unless the call is the epilogue
of the matmul or convolution whose result is viewed.  Likewise a tensor filled with one value
as a broadcasting operand (``where(c, full_like(x, 0), y)``) becomes the value.

::

    mod = relax.transform.RemoveRedundantReshape()(mod)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal
from ...tir.op_table import ELEMENTWISE
from ...transform import PassContext, module_pass
from ..analysis.remove_unused import remove_all_unused
from ..dpl import DFPattern, is_op, rewrite_call, wildcard
from ..expr import Call, Constant, Function, Var, VarBinding, const, struct_info_of
from ..expr_functor import ExprMutator
from ..op import reshape
from ..op.registry import make_call
from ..struct_info import TensorStructInfo
from ._util import DataflowAwareMutator, map_functions, readers

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


#: the operators a reshape sinks below: each output element is a function of the operands' elements
#: at the same (broadcast) position
_ELEMENTWISE = frozenset([*(op.relax_name for op in ELEMENTWISE), *_UNARY_ELEMENTWISE, "relax.clip", "relax.astype"])


def _static_shape(e: Any) -> tuple[int, ...] | None:
    sinfo = struct_info_of(e)
    return sinfo.static_shape if isinstance(sinfo, TensorStructInfo) else None


#: operators whose kernels compute element-wise consumers as their epilogue
_EPILOGUE_PRODUCERS = frozenset(["relax.matmul", "relax.nn.conv2d", "relax.nn.conv1d"])
#: how many element-wise calls (a bias add, a scale) may stand between such a kernel and a sunk call
_EPILOGUE_DEPTH = 4
#: consumers that read a reshaped tensor as cheaply as the tensor itself (a view, or an operator
#: whose kernel takes no element-wise prologue anyway)
_VIEW_CONSUMERS = frozenset(["relax.reshape", "relax.permute_dims", "relax.matmul"])


def _cheap_to_view(func: Function, readers: dict[Var, list[Any]]) -> set[Var]:
    """The variables whose readers, following element-wise calls, all take a view as cheaply
    as a tensor: sinking a reshape onto them moves it where it costs nothing.  (Not so a
    reduction's input: its element-wise prologue fuses into it, a reshape does not.)"""
    bound = [(b.var, b.value) for block in getattr(func.body, "blocks", ()) for b in block.bindings]
    result_of = {id(value): var for var, value in bound}
    cheap: set[Var] = set()
    for var, _ in reversed(bound):
        if all(r is None or isinstance(r, Call) and isinstance(r.op, Op) and (
                r.op.name in _VIEW_CONSUMERS
                or r.op.name in _ELEMENTWISE and result_of.get(id(r)) in cheap)
               for r in readers.get(var, ())):
            cheap.add(var)
    return cheap


class _SinkReshapes(DataflowAwareMutator):
    """One pass over the dataflow blocks: ``view = reshape(a, s)`` is remembered as a view of
    ``a``; an element-wise call whose tensor operands are views of same-shaped tensors, scalars,
    or tensors that broadcast along the same trailing dimensions in both shapes, runs on the
    viewed tensors and its result becomes a view in turn -- when that pays: the result flows
    only into readers that take a view for free (:func:`_cheap_to_view`), or the call becomes
    the epilogue of the kernel that made the viewed tensor (a matmul's, a convolution's, or an
    earlier such epilogue's; the view's only reader).  Views nothing reads any more are
    removed afterwards."""

    def __init__(self, func: Function) -> None:
        super().__init__()
        self.readers = readers(func)
        self.cheap = _cheap_to_view(func, self.readers)
        self.viewed: dict[Var, Any] = {}  # a variable bound to reshape(a, s) -> a
        self.epilogues: set[Any] = set()  # the sunk calls' new variables that a kernel's epilogue computes

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        if self._is_reshape(value) and isinstance(value.args[0], Var) and value.args[0] in self.viewed:
            # a reshape of a view reshapes what the view sees: the reshape back is no reshape at all
            source = self.viewed[value.args[0]]
            value = source if _static_shape(source) == _static_shape(value) else reshape(source, value.args[1])
            binding = VarBinding(binding.var, value)
        sunk = self._sunk(value) if self.in_dataflow and isinstance(value, Call) else None
        epilogue = sunk is not None and self._is_epilogue(value)
        if sunk is not None and not epilogue and binding.var not in self.cheap:
            sunk = None
        if sunk is None:
            super().visit_var_binding_(binding)
            value = self.builder_.lookup_binding(self.var_remap_.get(binding.var, binding.var))
            if self._is_reshape(value) and _static_shape(value.args[0]) is not None:
                source = value.args[0]  # a view of a view sees the first tensor
                self.viewed[self.var_remap_.get(binding.var, binding.var)] = self.viewed.get(source, source)
            return
        inner = self.builder_.emit(sunk)
        self.builder_.emit_normalized(VarBinding(binding.var, reshape(inner, value.struct_info.shape)))
        self.viewed[binding.var] = inner
        if epilogue:
            self.epilogues.add(inner)

    @staticmethod
    def _is_reshape(value: Any) -> bool:
        return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "relax.reshape"

    def _is_epilogue(self, call: Call) -> bool:
        """Whether ``call`` is the only reader of a view of a tensor a matmul or a convolution
        (or an epilogue sunk earlier) made: sunk, it fuses into that kernel."""
        return any(isinstance(a, Var) and a in self.viewed and len(self.readers.get(a, ())) == 1
                   and self._made_by_a_kernel_with_epilogue(self.viewed[a], _EPILOGUE_DEPTH) for a in call.args)

    def _made_by_a_kernel_with_epilogue(self, var: Any, depth: int) -> bool:
        """Whether ``var`` is a matmul's or a convolution's result, or that of an element-wise
        call of one read by nothing else (a bias add): its kernel computes element-wise epilogues."""
        if var in self.epilogues:
            return True
        made = self.builder_.lookup_binding(var) if isinstance(var, Var) else None
        if not isinstance(made, Call) or not isinstance(made.op, Op):
            return False
        if made.op.name in _EPILOGUE_PRODUCERS:
            return True
        return depth > 0 and made.op.name in _ELEMENTWISE and any(
            isinstance(a, Var) and len(self.readers.get(a, ())) == 1
            and self._made_by_a_kernel_with_epilogue(a, depth - 1) for a in made.args)

    def _sunk(self, call: Call) -> Call | None:
        """``call`` on the viewed tensors, or None when it is no element-wise call of a view."""
        if not isinstance(call.op, Op) or call.op.name not in _ELEMENTWISE:
            return None
        views = [a for a in call.args if isinstance(a, Var) and a in self.viewed]
        out = _static_shape(call)
        if not views or out is None:
            return None
        source = _static_shape(self.viewed[views[0]])
        if any(_static_shape(self.viewed[v]) != source or _static_shape(v) != out for v in views):
            return None
        args = []
        for a in call.args:
            if any(a is v for v in views):
                args.append(self.viewed[a])
                continue
            shape = _static_shape(a)
            if shape is None:
                return None
            if shape == out:  # the same elements in the same order: viewed alike
                args.append(_reshaped(a, source))
                continue
            trailing = shape[next((i for i, d in enumerate(shape) if d != 1), len(shape)):]
            if len(trailing) > len(source) or out[len(out) - len(trailing):] != trailing \
                    or source[len(source) - len(trailing):] != trailing:
                return None  # broadcast along other dimensions than in the viewed tensor
            args.append(a if len(shape) <= len(source) else _reshaped(a, trailing))
        return Call(call.op, args, call.attrs, call.sinfo_args)


#: a tensor filled with one value (``full_like(x, 0)``, ``ones(shape)`` ...): its value
_FILL_VALUES = {"relax.zeros_like": 0, "relax.zeros": 0, "relax.ones_like": 1, "relax.ones": 1,
                "relax.full_like": None, "relax.full": None}
#: operators that broadcast their operands, where a filled tensor can be its value instead
_BROADCASTING = frozenset([*(op.relax_name for op in ELEMENTWISE if op.arity == 2), "relax.where"])


class _FillsAsScalars(ExprMutator):
    """A tensor filled with one value as an operand of a broadcasting operator becomes the value, a
    0-d constant, when the other operands still give the result its shape.  torch's safe softmax
    picks 0 for an all -inf row from ``full_like(scores, 0)``: folded, that was a constant the
    size of the scores, read by every layer."""

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if not isinstance(call.op, Op) or call.op.name not in _BROADCASTING:
            return call
        out = _static_shape(op)
        args = list(call.args)
        for k, a in enumerate(args):
            fill = self.lookup_binding(a)
            if not (isinstance(fill, Call) and isinstance(fill.op, Op) and fill.op.name in _FILL_VALUES):
                continue
            others = [_static_shape(b) for i, b in enumerate(args) if i != k]
            dtype = struct_info_of(fill).dtype
            if out is None or None in others or tuple(np.broadcast_shapes(*others)) != out:
                continue
            value = _FILL_VALUES[fill.op.name]
            if value is None:
                value = fill.args[-1]
                if not isinstance(value, Constant):
                    continue
                value = value.data.numpy()
            args[k] = const(np.asarray(value).astype(dtype))
        if all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(call.op, args, call.attrs, call.sinfo_args)


def _reshaped(e: Any, shape: tuple[int, ...]) -> Any:
    """``reshape(e, shape)``; a constant's data reshaped now (a bias, a mask)."""
    if isinstance(e, Constant):
        return const(e.data.numpy().reshape(shape))
    return reshape(e, shape)


def _sink_reshapes(func: Function) -> Function:
    new = _FillsAsScalars().visit_expr(_SinkReshapes(func).visit_expr(func))
    return func if new is func else remove_all_unused(new)


def _remove(func: Function, mod: IRModule) -> Function:
    if func.attrs.get("Primitive"):
        return func
    return rewrite_call(_PATTERN, _rewrite, _sink_reshapes(func))


@module_pass(opt_level=0, name="RemoveRedundantReshape")
class RemoveRedundantReshape:
    """``RemoveRedundantReshape()``: no-op reshape / broadcast_to / astype / permute_dims -> their
    input, reshape of reshape -> one reshape (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _remove)
