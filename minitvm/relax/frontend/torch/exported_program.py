"""``from_exported_program``: a ``torch.export.ExportedProgram`` as a Relax IRModule."""

from __future__ import annotations

import operator
import re
from typing import Any, Callable

import numpy as np

from ....ir.module import IRModule
from ....tir.expr import Var as TirVar
from ...block_builder import BlockBuilder
from ...expr import Expr, Tuple, Var, const, struct_info_of
from ...op import astype
from ...struct_info import TensorStructInfo
from . import binary, creation, datatype, manipulation, nn, search, statistical, unary
from .decompose import run_decompositions

__all__ = ["from_exported_program", "CONVERTERS", "CONVERTER_KINDS", "CHECKS", "TRAINING_OPS"]

#: The converter modules by kind, in the order the docs list them.
CONVERTER_KINDS: dict[str, Any] = {
    "unary": unary, "binary": binary, "neural network": nn, "statistical": statistical,
    "search": search, "manipulation": manipulation, "creation": creation, "dtype": datatype,
}

#: ATen op name (``str(node.target)``, or ``"getitem"``) -> ``fn(node, converter)``.
CONVERTERS: dict[str, Callable[[Any, "ExportedProgramConverter"], Any]] = {
    name: fn for module in CONVERTER_KINDS.values() for name, fn in module.CONVERTERS.items()
}

#: ATen op name -> ``fn(node, converter)`` returning why this call (a variant: a 3-D transposed
#: convolution, an unsupported keyword) cannot be converted, or None; run before any conversion
CHECKS: dict[str, Callable[[Any, "ExportedProgramConverter"], str | None]] = {
    name: fn for module in CONVERTER_KINDS.values() for name, fn in getattr(module, "CHECKS", {}).items()
}

#: ATen ops that only a model in training mode records (batch statistics, random dropout)
TRAINING_OPS = frozenset({"aten._native_batch_norm_legit_functional.default", "aten._native_batch_norm_legit.default",
                          "aten.native_dropout.default", "aten.bernoulli.p", "aten.bernoulli.default"})

_ADVICE = ("Convert the missing ones yourself with custom_convert_map, one function per ATen overload, e.g.\n"
           "  def convert(node, importer):\n"
           "      args = importer.retrieve_args(node)  # the node's inputs as Relax values\n"
           "      return importer.block_builder.emit(...)  # the Relax ops that compute what {name} does\n"
           "  from_exported_program(ep, custom_convert_map={{\"{name}\": convert}})\n"
           "docs/torch_ops.md lists the operators and variants minitvm converts.")


def op_name(node: Any) -> str:
    """``aten.linear.default`` for an ATen overload, the function's name otherwise."""
    target = node.target
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", None)
    if type(target).__name__ in ("OpOverload", "OpOverloadPacket") or name is None:
        return str(target)
    return name


def source_line(node: Any) -> str:
    """Where the op came from in the user's code, as ``file.py:12: the source line`` (the
    innermost frame outside torch's own package: ``self.conv(x)``, not torch's ``F.conv2d``)."""
    trace = node.meta.get("stack_trace")
    if trace:
        lines = [ln for ln in trace.splitlines() if ln.strip()]
        frames = []
        for i, line in enumerate(lines):
            m = re.match(r'\s*File "([^"]+)", line (\d+)', line)
            if m:
                code = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].lstrip().startswith(
                    "File ") else ""
                frames.append((m.group(1), m.group(2), code))
        if frames:
            user = [f for f in frames if not _in_torch(f[0])] or frames
            path, line_no, code = user[-1]
            return f"{path.rsplit('/', 1)[-1]}:{line_no}: {code}"
        return lines[-1].strip() if lines else ""
    stack = node.meta.get("source_fn_stack")
    if stack:
        return " / ".join(str(getattr(fn, "__name__", fn)) for _, fn in stack)
    return ""


def _in_torch(path: str) -> bool:
    """A file of torch's own package (``.../site-packages/torch/nn/modules/conv.py``)."""
    return "/torch/" in path.replace("\\", "/") and "site-packages" in path or "/dist-packages/torch/" in path


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _dim_name(symbol: Any, shape_env: Any) -> str:
    """The name the user gave the ``torch.export.Dim`` behind ``symbol`` (``batch``), else
    torch's symbol name (``s0``)."""
    try:
        sources = shape_env.var_to_sources.get(symbol) or []
        names = shape_env.source_name_to_debug_name
        for src in sources:
            if src.name in names:
                return str(names[src.name])
    except AttributeError:
        pass
    return str(symbol)


class ExportedProgramConverter:
    """The state of one conversion; converters read their arguments through it."""

    def __init__(self, convert_map: dict[str, Callable], custom: frozenset[str] = frozenset()):
        self.convert_map = convert_map
        #: the ops ``custom_convert_map`` converts (their variants are the user's business)
        self.custom = custom
        self.bb = BlockBuilder()
        self.env: dict[Any, Any] = {}
        self.sym: dict[str, TirVar] = {}

    # -- helpers for converters ---------------------------------------------------------------
    @property
    def block_builder(self) -> BlockBuilder:
        """TVM's name for :attr:`bb`: where a converter emits its Relax bindings."""
        return self.bb

    def retrieve_args(self, node: Any) -> list[Any]:
        """TVM's helper for custom converters: ``node``'s arguments, graph nodes replaced by
        their Relax values."""
        return list(self.arg(tuple(node.args)))

    def arg(self, a: Any) -> Any:
        """An fx argument with every graph node replaced by its Relax value."""
        import torch.fx  # torch is optional and heavy: imported on first use

        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def dtype_name(self, dtype: Any) -> str:
        return _dtype_name(dtype)

    def dtype_of(self, a: Any) -> str:
        return _dtype_name(a.meta["val"].dtype)

    def _prim(self, d: Any) -> Any:
        """A torch size (int or SymInt) as an int or a tir expression over int64 vars."""
        import torch  # torch is optional and heavy: imported on first use

        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if expr.is_Integer:
                return int(expr)
            return self._sympy(expr, getattr(d.node, "shape_env", None))
        return int(d)

    def _sympy(self, e: Any, shape_env: Any = None) -> Any:
        if e.is_Integer:
            return int(e)
        if e.is_Symbol:
            key = str(e)
            if key not in self.sym:
                self.sym[key] = TirVar(_dim_name(e, shape_env), "int64")
            return self.sym[key]
        parts = [self._sympy(a, shape_env) for a in e.args]
        if e.is_Add:
            out = parts[0]
            for p in parts[1:]:
                out = out + p
            return out
        if e.is_Mul:
            out = parts[0]
            for p in parts[1:]:
                out = out * p
            return out
        raise ValueError(f"from_exported_program: symbolic size {e} is not supported")

    def shape_of(self, a: Any) -> list[Any]:
        """The shape torch recorded for node ``a`` (ints, or tir expressions where symbolic); a
        Relax value (``from_fx`` passes parameters as constants) gives its struct info's."""
        if isinstance(a, Expr):
            return [d.value if hasattr(d, "value") else d for d in struct_info_of(a).shape_values]
        return [self._prim(d) for d in a.meta["val"].shape]

    def scalar(self, value: Any, like: Expr) -> Expr:
        """A Python number as a 0-d constant of ``like``'s dtype (it broadcasts)."""
        return self.scalar_of(value, struct_info_of(like).dtype)

    def scalar_of(self, value: Any, dtype: str) -> Expr:
        """A Python number as a 0-d constant of ``dtype``."""
        return const(np.array(value, dtype=dtype))

    def operands(self, a: Any, b: Any, dtype: str | None = None) -> tuple[Expr, Expr]:
        """Two operands of an element-wise op, both of ``dtype`` (torch's type promotion,
        e.g. float32 for an int64 tensor plus a float one); without ``dtype`` a Python number
        takes the tensor's dtype."""
        a, b = self.arg(a), self.arg(b)
        if dtype is not None:
            return self.as_dtype(a, dtype), self.as_dtype(b, dtype)
        if not isinstance(a, Expr):
            a = self.scalar(a, b)
        if not isinstance(b, Expr):
            b = self.scalar(b, a)
        return a, b

    def as_dtype(self, value: Any, dtype: str) -> Expr:
        """A tensor cast to ``dtype`` when it differs, or a Python number as a 0-d constant."""
        if not isinstance(value, Expr):
            return self.scalar_of(value, dtype)
        if struct_info_of(value).dtype == dtype:
            return value
        return self.bb.emit(astype(value, dtype))

    def emit_result(self, results: Any, unwrap_unit_return_tuple: bool, no_bind_return_tuple: bool = False) -> Any:
        """The graph's output as the dataflow block's output, as TVM: a single value (an fx
        graph returning one tensor) as it is; a tuple bound to one variable, or its only value
        when ``unwrap_unit_return_tuple``, or with ``no_bind_return_tuple`` each value bound to
        its own output variable and the function returning the tuple of those."""
        if not isinstance(results, (list, tuple)):
            return self.bb.emit_output(self.arg(results), "gv")
        values = [self.arg(r) for r in results]
        if unwrap_unit_return_tuple and len(values) == 1:
            return self.bb.emit_output(values[0], "gv")
        if no_bind_return_tuple:
            return Tuple([self.bb.emit_output(v, "gv") for v in values])
        return self.bb.emit_output(Tuple(values), "gv")

    # -- the walk -----------------------------------------------------------------------------
    def check_supported(self, graph: Any, custom: frozenset[str] = frozenset()) -> None:
        """Every operator has a converter and every call a variant it takes, or one error lists
        them all (each with its source line) and says what to do; a model exported in training
        mode is told to call ``model.eval()`` first."""
        missing: dict[str, list[str]] = {}
        training: dict[str, list[str]] = {}
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            name = op_name(node)
            if name in custom:  # the user's own converter takes every variant
                continue
            why = _training_reason(node, name)
            if why is not None:
                training.setdefault(f"{name} ({why})", []).append(source_line(node))
                continue
            if name not in self.convert_map:
                missing.setdefault(name, []).append(source_line(node))
                continue
            check = CHECKS.get(name)
            why = check(node, self) if check is not None else None
            if why:
                missing.setdefault(f"{name}: {why}", []).append(source_line(node))
        if not missing and not training:
            return

        def listing(entries: dict[str, list[str]]) -> list[str]:
            lines = []
            for name, where in entries.items():
                place = "; ".join(dict.fromkeys(w for w in where if w))
                lines.append(f"  {name}" + (f"  ({place})" if place else ""))
            return lines

        parts = []
        if training:
            parts.append("from_exported_program: the model was exported in training mode:\n"
                         + "\n".join(listing(training))
                         + "\nCall model.eval() before torch.export.export(model, ...) to export it for inference.")
        if missing:
            first = next(iter(missing)).split(":")[0]
            parts.append("from_exported_program: unsupported operators:\n" + "\n".join(listing(missing))
                         + "\n" + _ADVICE.format(name=first))
        raise ValueError("\n\n".join(parts))

    def convert_node(self, node: Any) -> Any:
        """One call: an empty result (a zero in its static shape) is an empty constant, as
        torch allows (``cat`` of an empty cache); otherwise the converter's value, cast to the
        dtype torch recorded when it differs (torch's promotion, e.g. int32 ``sum`` to int64)."""
        name = op_name(node)
        val = node.meta.get("val")
        custom = name in self.custom
        if not custom and name != "getitem":
            if _is_static_empty(val):
                return _empty_const(val)
            if isinstance(val, (tuple, list)) and val and all(_is_static_empty(v) for v in val):
                return tuple(_empty_const(v) for v in val)
        if not custom and name != "getitem" and _all_inputs_empty(node):
            return self.from_empty_inputs(node)
        out = self.convert_map[name](node, self)
        if custom or not isinstance(out, Expr) or not hasattr(val, "dtype"):
            return out
        sinfo = struct_info_of(out)
        want = _dtype_name(val.dtype)
        if isinstance(sinfo, TensorStructInfo) and not sinfo.is_unknown_dtype and sinfo.dtype != want:
            return self.bb.emit(astype(out, want))
        return out

    def from_empty_inputs(self, node: Any) -> Any:
        """A call whose every tensor input is empty depends on shapes alone (``sum`` of nothing
        is 0, ``var`` of nothing NaN): torch computes it on empty tensors, and it is a constant."""
        import torch  # torch is optional and heavy: imported on first use
        import torch.fx  # torch is optional and heavy: imported on first use

        def real(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                val = a.meta["val"]
                return torch.empty(tuple(int(d) for d in val.shape), dtype=val.dtype)
            if isinstance(a, (list, tuple)):
                return type(a)(real(x) for x in a)
            return a

        value = node.target(*real(node.args), **{k: real(v) for k, v in node.kwargs.items()})
        if isinstance(value, (tuple, list)):
            return tuple(const(v.detach().contiguous().numpy()) for v in value)
        return const(value.detach().contiguous().numpy())

    def convert(self, ep: Any, keep_params_as_input: bool, unwrap_unit_return_tuple: bool,
                no_bind_return_tuple: bool = False) -> IRModule:
        from torch.export.graph_signature import InputKind  # torch is optional and heavy: imported on first use

        graph = ep.graph_module.graph
        self.check_supported(graph, self.custom)
        specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        user_vars, param_vars, param_values = [], [], []
        for node in placeholders:
            spec = specs[node.name]
            if spec.kind == InputKind.USER_INPUT:
                if not hasattr(node.meta.get("val"), "shape"):
                    raise ValueError(f"from_exported_program: input {node.name!r} is not a tensor")
                var = Var(node.name, TensorStructInfo(self.shape_of(node), self.dtype_of(node)))
                user_vars.append(var)
                self.env[node] = var
                continue
            if spec.target in ep.state_dict:
                tensor = ep.state_dict[spec.target]
            else:
                tensor = ep.constants[spec.target]
            array = tensor.detach().cpu().contiguous().numpy()
            if keep_params_as_input:
                var = Var(spec.target.replace(".", "_"), TensorStructInfo(list(array.shape), str(array.dtype)))
                param_vars.append(var)
                param_values.append(array)
                self.env[node] = var
            else:
                self.env[node] = const(array)

        # as TVM: "num_input" only where parameters follow the inputs
        attrs: dict[str, Any] = {"num_input": len(user_vars)} if keep_params_as_input else {}
        if keep_params_as_input:
            attrs["params"] = param_values
        with self.bb.function("main", user_vars + param_vars, attrs=attrs):
            with self.bb.dataflow():
                output = None
                for node in graph.nodes:
                    if node.op == "call_function":
                        self.env[node] = self.convert_node(node)
                    elif node.op == "output":
                        output = self.emit_result(node.args[0], unwrap_unit_return_tuple, no_bind_return_tuple)
                    elif node.op not in ("placeholder",):
                        raise ValueError(f"from_exported_program: graph node kind {node.op!r} is not supported")
            self.bb.emit_func_output(output)
        return self.bb.get()


def _is_static_empty(val: Any) -> bool:
    """A fake tensor with a constant zero among its sizes (and no symbolic one)."""
    shape = getattr(val, "shape", None)
    if shape is None or not hasattr(val, "dtype"):
        return False
    return all(isinstance(d, int) for d in shape) and any(d == 0 for d in shape)


def _all_inputs_empty(node: Any) -> bool:
    """Every tensor argument of ``node`` is empty (at least one), in a static shape."""
    import torch.fx  # torch is optional and heavy: imported on first use

    inputs: list = []

    def collect(a: Any) -> None:
        if isinstance(a, torch.fx.Node):
            inputs.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                collect(x)

    collect(node.args)
    collect(list(node.kwargs.values()))
    vals = [a.meta.get("val") for a in inputs]
    tensors = [v for v in vals if hasattr(v, "shape") and hasattr(v, "dtype")]
    return bool(tensors) and len(tensors) == len(vals) and all(_is_static_empty(v) for v in tensors)


def _empty_const(val: Any) -> Expr:
    return const(np.empty(tuple(int(d) for d in val.shape), dtype=_dtype_name(val.dtype)))


def _training_reason(node: Any, name: str) -> str | None:
    """Why ``node`` shows the model was exported in training mode, or None."""
    if name in TRAINING_OPS:
        if name == "aten.native_dropout.default" and not bool(node.args[2] if len(node.args) > 2 else True):
            return None
        return "batch statistics" if "batch_norm" in name else "random dropout"
    if name == "aten.dropout.default" and bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("train")):
        return "random dropout"
    if name == "aten.batch_norm.default" and bool(node.args[5] if len(node.args) > 5 else node.kwargs.get("training")):
        return "batch statistics"
    return None


def _aten_keys(custom: dict[str, Callable]) -> dict[str, Callable]:
    """``custom_convert_map`` keyed as minitvm names ops (``aten.add.Tensor``); TVM's spelling
    without the namespace (``add.Tensor``) names the same ATen op, so it is keyed both ways."""
    out = dict(custom)
    for name, fn in custom.items():
        if not name.startswith("aten."):
            out.setdefault(f"aten.{name}", fn)
    return out


def from_exported_program(ep: Any, *, keep_params_as_input: bool = False, unwrap_unit_return_tuple: bool = False,
                          no_bind_return_tuple: bool = False,
                          custom_convert_map: dict[str, Callable] | None = None,
                          run_ep_decomposition: bool = True) -> IRModule:
    """Convert ``ep`` (from ``torch.export.export``) to an IRModule whose ``main`` takes the
    user inputs.

    Parameters and buffers become constants, or with ``keep_params_as_input`` extra
    parameters after the inputs (``attrs["num_input"]`` counts the inputs and
    ``attrs["params"]`` holds their values, see ``relax.frontend.detach_params``).  The result
    is a tuple unless ``unwrap_unit_return_tuple`` and there is one output; the tuple is bound
    to one variable, or with ``no_bind_return_tuple`` built in the ``return`` from one output
    variable per value.  ``run_ep_decomposition`` (default True) first runs
    ``ep.run_decompositions()``.
    ``custom_convert_map`` adds or overrides converters: ``{"aten.op.overload": fn(node, converter)}``
    (TVM's ``"op.overload"``, without ``aten.``, is taken too).
    Dynamic dimensions (``torch.export.Dim``) become int64 tir variables named after torch's
    symbols.
    """
    if run_ep_decomposition:
        ep = run_decompositions(ep)
    custom = _aten_keys(custom_convert_map or {})
    convert_map = {**CONVERTERS, **custom}
    converter = ExportedProgramConverter(convert_map, frozenset(custom))
    return converter.convert(ep, keep_params_as_input, unwrap_unit_return_tuple,
                             no_bind_return_tuple)


#: TVM's name of the converter class (``exported_program_translator.ExportedProgramImporter``)
ExportedProgramImporter = ExportedProgramConverter
