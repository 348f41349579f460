"""``Module.export_tvm``: trace each method named in the spec into one Relax function."""

from __future__ import annotations

import inspect
from typing import Any

from ....ir.module import IRModule
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Tuple, Var
from ...struct_info import TensorStructInfo
from . import spec as _spec
from .core import Module, Parameter, Tensor, tracing

__all__ = ["export_module"]


def _var_name(name: str) -> str:
    """``fc1.weight`` -> ``fc1_weight``: a Relax variable name TVMScript can print and parse."""
    return name.replace(".", "_")


def _outputs(result: Any, method: str) -> Any:
    """The traced result as Relax: a Tensor, or a (nested) tuple/list of them."""
    if isinstance(result, Tensor):
        return result._relax
    if isinstance(result, (tuple, list)):
        return Tuple([_outputs(r, method) for r in result])
    raise TypeError(f"export_tvm: {method} returned {type(result).__name__}; return nn.Tensor(s)")


def export_module(model: Module, spec: dict[str, dict[str, Any]]) -> tuple[IRModule, list[tuple[str, Parameter]]]:
    if not isinstance(spec, dict) or not spec:
        raise TypeError('export_tvm: spec must map method names to input specs, e.g. '
                        '{"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}')
    params = list(model.named_parameters())
    bb = BlockBuilder()
    for method_name, inputs in spec.items():
        method = getattr(model, method_name, None)
        if method is None or not callable(method):
            raise AttributeError(f"export_tvm: {type(model).__name__} has no method {method_name!r}")
        arg_names = list(inspect.signature(method).parameters)
        unknown = [k for k in inputs if k not in arg_names]
        if unknown:
            raise TypeError(f"export_tvm: {method_name}() has no argument(s) {unknown} (it takes {arg_names})")
        sym: dict[str, TirVar] = {}
        in_vars = []
        for name, s in inputs.items():
            if not isinstance(s, _spec.Tensor):
                raise TypeError(f"export_tvm: input {name!r} must be an nn.spec.Tensor, got {type(s).__name__}")
            in_vars.append(Var(name, TensorStructInfo(s.struct_shape(sym), s.dtype)))
        param_vars = [Var(_var_name(n), TensorStructInfo(list(p.shape), p.dtype)) for n, p in params]
        with bb.function(method_name, in_vars + param_vars, attrs={"num_input": len(in_vars)}):
            with tracing(bb), bb.dataflow():
                for (_, p), v in zip(params, param_vars):
                    p._expr = v
                try:
                    result = method(**{n: Tensor(v) for n, v in zip(inputs, in_vars)})
                    out = bb.emit_output(_outputs(result, method_name), "gv")
                finally:
                    for _, p in params:
                        p._expr = None
            bb.emit_func_output(out)
    return bb.get(), params
