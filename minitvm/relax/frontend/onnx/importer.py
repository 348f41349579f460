"""``from_onnx``: an ONNX ``ModelProto`` as a Relax IRModule.

Each ONNX value name maps to a Relax expression or, when its value is known while importing, to
a numpy array: initializers (unless kept as inputs), ``Constant`` nodes and the shape arithmetic
exporters emit (``Shape`` -> ``Gather`` -> ``Concat`` -> ``Reshape``).  A known array of dtype
``object`` holds tir expressions where a dimension is symbolic, so a dynamic batch flows into
``Reshape`` as ``[batch, 16]``.  Converters turn a known array into a Relax constant only where
a tensor is needed."""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

import numpy as np

from ....ir.module import IRModule
from ....tir.expr import IntImm, PrimExpr
from ....tir.expr import Var as TirVar
from ... import op as _op
from ...block_builder import BlockBuilder
from ...expr import Constant, Expr, Tuple, Var, const, struct_info_of
from ...struct_info import TensorStructInfo

__all__ = ["OnnxNode", "OnnxImporter", "OpNotImplemented", "from_onnx"]

#: the longest known array a converter folds while importing (shape arithmetic, not weights)
FOLD_LIMIT = 64


class OpNotImplemented(NotImplementedError):
    """Operators of the model that have no converter (TVM's ``tvm.error.OpNotImplemented``)."""


class OnnxNode:
    """One ONNX node as its converter reads it: ``op_type``, ``name``, ``inputs`` / ``outputs``
    (value names, ``""`` for an omitted optional one), ``attrs`` (parsed: ints, floats,
    ``str``, numpy arrays for tensors) and ``opset`` (the model's, which picks the variant)."""

    def __init__(self, proto: Any, opset: int):
        from onnx import helper, numpy_helper  # onnx is an optional extra: imported on first use

        self.op_type: str = proto.op_type
        self.name: str = proto.name
        self.inputs: list[str] = list(proto.input)
        self.outputs: list[str] = list(proto.output)
        self.opset = opset
        self.attrs: dict[str, Any] = {}
        for a in proto.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode() for s in v]
            elif hasattr(v, "dims") and hasattr(v, "data_type"):  # a TensorProto
                v = numpy_helper.to_array(v)
            self.attrs[a.name] = v

    @property
    def where(self) -> str:
        """``Conv node 'conv1'`` (or its first output's name when the node has none)."""
        return f"{self.op_type} node {self.name or self.outputs[0]!r}"

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def has_input(self, k: int) -> bool:
        return len(self.inputs) > k and self.inputs[k] != ""

    def wants_output(self, k: int) -> bool:
        return len(self.outputs) > k and self.outputs[k] != ""

    def error(self, why: str) -> ValueError:
        return ValueError(f"from_onnx: {self.where}: {why}")


def _is_symbolic(v: Any) -> bool:
    return isinstance(v, PrimExpr) and not isinstance(v, IntImm)


def _plain(v: Any) -> Any:
    """A dimension as an int where it is constant, else the tir expression."""
    if isinstance(v, IntImm):
        return int(v.value)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return v


class OnnxImporter:
    """The state of one import; converters read their inputs and emit through it."""

    def __init__(self, convert_map: dict[str, Callable], shape_dict: dict | None, dtype_dict: Any,
                 keep_params_in_input: bool, sanitize: bool):
        self.convert_map = convert_map
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.keep_params_in_input = keep_params_in_input
        self.sanitize = sanitize
        self.bb = BlockBuilder()
        #: ONNX value name -> Relax expression or known numpy array
        self.env: dict[str, Any] = {}
        self._exprs: dict[str, Expr] = {}  # known arrays already made Relax constants
        self.sym: dict[str, TirVar] = {}
        self._names: dict[str, int] = {}
        self.params: list[tuple[Var, np.ndarray]] = []
        self._param_arrays: dict[str, np.ndarray] = {}
        self.inputs: list[Var] = []

    # -- what converters call ------------------------------------------------------------------
    @property
    def block_builder(self) -> BlockBuilder:
        return self.bb

    def emit(self, expr: Expr) -> Expr:
        return self.bb.emit(expr)

    def known(self, node: OnnxNode, k: int) -> np.ndarray | None:
        """Input ``k``'s value when known while importing (None when absent or computed at run time)."""
        if not node.has_input(k):
            return None
        value = self.env[node.inputs[k]]
        if isinstance(value, np.ndarray):
            return value
        # an initializer kept as an input still has its value where an operator needs one (a
        # Reshape's target shape), as TVM's get_constant does; the parameter stays an input
        return self._param_arrays.get(node.inputs[k])

    def all_known(self, node: OnnxNode, limit: int = FOLD_LIMIT) -> bool:
        """Every given input is known and small: the node can be computed while importing."""
        vals = [self.known(node, k) for k in range(len(node.inputs)) if node.has_input(k)]
        return all(v is not None and v.size <= limit for v in vals)

    def ints(self, node: OnnxNode, k: int, what: str) -> list[Any] | None:
        """Input ``k`` as a list of ints (tir expressions where symbolic), None when absent; an
        error when only known at run time (``what`` names it: "the target shape")."""
        if not node.has_input(k):
            return None
        value = self.known(node, k)
        if value is None:
            raise node.error(f"{what} (input {k}, {node.inputs[k]!r}) must be known while importing; here it is "
                             "computed at run time, which minitvm's importer does not support")
        return [_plain(v) for v in np.asarray(value).reshape(-1).tolist()]

    def scalar_input(self, node: OnnxNode, k: int, what: str) -> Any:
        vals = self.ints(node, k, what)
        return None if vals is None else vals[0]

    def tensor(self, node: OnnxNode, k: int) -> Expr | None:
        """Input ``k`` as a Relax expression (known arrays become constants), None when absent."""
        if not node.has_input(k):
            return None
        return self.expr_of(node.inputs[k])

    def expr_of(self, name: str) -> Expr:
        value = self.env[name]
        if not isinstance(value, np.ndarray):
            return value
        if name not in self._exprs:
            self._exprs[name] = self.materialize(value)
        return self._exprs[name]

    def materialize(self, value: np.ndarray) -> Expr:
        """A known array as a Relax value: a constant, or for symbolic dimensions a tensor
        computed from them at run time (``sum(ones([n]))`` is ``n``: Relax has no op that turns
        a shape into a tensor here)."""
        if value.dtype != object:
            return const(value)
        flat = [_plain(v) for v in value.reshape(-1).tolist()]
        if not any(_is_symbolic(v) for v in flat):
            return const(np.array(flat, dtype="int64").reshape(value.shape))
        parts = []
        for v in flat:
            if _is_symbolic(v):
                parts.append(_op.reshape(_op.sum(_op.ones([v], "int64")), [1]))
            else:
                parts.append(const(np.array([v], dtype="int64")))
        return self.emit(_op.reshape(_op.concat(parts, axis=0), list(value.shape)))

    def shape(self, node: OnnxNode, k: int) -> list[Any]:
        """Input ``k``'s shape: ints, tir expressions where symbolic."""
        value = self.env[node.inputs[k]]
        if isinstance(value, np.ndarray):
            return list(value.shape)
        sinfo = struct_info_of(value)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
            raise node.error(f"input {node.inputs[k]!r} has an unknown shape (rank); give it in shape_dict")
        return [_plain(d) for d in sinfo.shape_values]

    def shape_of(self, expr: Expr) -> list[Any]:
        """A Relax tensor's shape: ints, tir expressions where symbolic."""
        return [_plain(d) for d in struct_info_of(expr).shape_values]

    def dtype(self, node: OnnxNode, k: int) -> str:
        value = self.env[node.inputs[k]]
        if isinstance(value, np.ndarray):
            return "int64" if value.dtype == object else str(value.dtype)
        return struct_info_of(value).dtype

    def scalar(self, value: Any, like: Expr) -> Expr:
        """A Python number as a 0-d constant of ``like``'s dtype (what the torch helpers call)."""
        return self.scalar_of(value, struct_info_of(like).dtype)

    def scalar_of(self, value: Any, dtype: str) -> Expr:
        return const(np.array(value, dtype=dtype))

    # -- the graph -----------------------------------------------------------------------------
    def _fresh(self, name: str) -> str:
        """A unique Relax name made of ``name`` (TVM's UniqueNameSupply: ``x``, ``x_1``, ...)."""
        name = name.replace(".", "_")
        if name not in self._names:
            self._names[name] = 0
            return name
        suffix = self._names[name]
        candidate = name
        while candidate in self._names:
            suffix += 1
            candidate = f"{name}_{suffix}"
        self._names[name] = suffix
        self._names[candidate] = 0
        return candidate

    def _sanitized(self, name: str) -> str:
        """TVM's input names: ``.`` becomes ``_``, a name not starting with a letter or ``_``
        gets ``input_`` in front, an empty one is ``empty_``; repeats get ``_1``, ``_2``."""
        dotted = name.replace(".", "_")
        if name == "":
            new = self._fresh("empty_")
        elif not (dotted[0].isalpha() or dotted[0] == "_"):
            new = self._fresh("input_" + dotted)
        else:
            new = self._fresh(dotted)
        if new != name:
            warnings.warn(f"from_onnx: renaming input {name!r} to {new!r}", stacklevel=4)
        return new

    def _dim(self, dim: Any, input_name: str, axis: int) -> Any:
        # a dim_value that is set, 0 included (an empty tensor), is a size; TVM reads 0 as unknown
        if dim.HasField("dim_value"):
            return int(dim.dim_value)
        name = dim.dim_param if dim.HasField("dim_param") else ""
        if not name:  # an unnamed unknown dimension: a variable of its own
            name = f"{input_name}_dim{axis}"
        return _parse_dim(name, self.sym)

    def read_inputs(self, graph: Any, initializers: set[str]) -> None:
        from onnx import helper  # onnx is an optional extra: imported on first use

        for info in graph.input:
            if info.name in initializers:
                continue
            ttype = info.type.tensor_type
            if not info.type.HasField("tensor_type"):
                raise ValueError(f"from_onnx: input {info.name!r} is not a tensor (sequences and maps are not "
                                 "supported)")
            dtype = str(helper.tensor_dtype_to_np_dtype(ttype.elem_type)) if ttype.elem_type else "float32"
            if isinstance(self.dtype_dict, dict) and info.name in self.dtype_dict:
                dtype = str(self.dtype_dict[info.name])
            if info.name in self.shape_dict:
                shape = [d if isinstance(d, PrimExpr) else int(d) for d in self.shape_dict[info.name]]
            elif ttype.HasField("shape"):
                shape = [self._dim(d, info.name, i) for i, d in enumerate(ttype.shape.dim)]
            else:
                raise ValueError(f"from_onnx: input {info.name!r} has no shape (unknown rank); give it in shape_dict")
            name = self._sanitized(info.name) if self.sanitize else info.name
            var = Var(name, TensorStructInfo(shape, dtype))
            self.inputs.append(var)
            self.env[info.name] = var

    def read_initializers(self, graph: Any) -> set[str]:
        from onnx import numpy_helper  # onnx is an optional extra: imported on first use

        names = set()
        for init in graph.initializer:
            if not init.name.strip():
                raise ValueError("from_onnx: an initializer has no name")
            array = numpy_helper.to_array(init).reshape(tuple(init.dims))
            names.add(init.name)
            if self.keep_params_in_input:
                # torch's exporter names anonymous weights "onnx::Conv_12": the prefix is noise
                var = Var(self._fresh(init.name.removeprefix("onnx::")),
                          TensorStructInfo(list(array.shape), str(array.dtype)))
                self.params.append((var, array))
                self._param_arrays[init.name] = np.asarray(array)
                self.env[init.name] = var
            else:
                self.env[init.name] = np.asarray(array)
        return names

    def check_supported(self, graph: Any) -> None:
        """One error naming every operator of the graph that has no converter (as TVM)."""
        missing = []
        for proto in graph.node:
            key = proto.op_type if proto.domain in ("", "ai.onnx") else f"{proto.domain}.{proto.op_type}"
            if key not in self.convert_map and key not in missing:
                missing.append(key)
        if missing:
            raise OpNotImplemented("The following operators are not supported for frontend ONNX: "
                                   + ", ".join(missing)
                                   + ".\nminitvm converts the operators listed by "
                                   "minitvm.relax.frontend.onnx.supported_ops().")

    def convert_node(self, proto: Any, opset: int) -> None:
        node = OnnxNode(proto, opset)
        key = proto.op_type if proto.domain in ("", "ai.onnx") else f"{proto.domain}.{proto.op_type}"
        try:
            out = self.convert_map[key](node, self)
        except Exception as err:
            if not str(err).startswith("from_onnx:"):  # say where a Relax op refused its operands
                err.add_note(f"from_onnx: while converting {node.where} (inputs {node.inputs})")
            raise
        outs = list(out) if isinstance(out, (list, tuple)) else [out]  # several outputs: a Python list
        for k, name in enumerate(node.outputs):
            if not name:
                continue
            if k >= len(outs) or outs[k] is None:
                raise node.error(f"output {k} ({name!r}) is not supported")
            value = outs[k]
            if isinstance(value, np.generic):  # numpy gives 0-d results as scalars
                value = np.asarray(value)
            if isinstance(value, Expr) and not isinstance(value, (Var, Constant)):
                value = self.bb.emit(value)
            self.env[name] = value

    def convert(self, model: Any, opset: int) -> IRModule:
        graph = model.graph
        initializers = self.read_initializers(graph)
        self.read_inputs(graph, initializers)
        self.check_supported(graph)
        attrs: dict[str, Any] = {"num_input": len(self.inputs)}
        params = [v for v, _ in self.params]
        if self.keep_params_in_input and self.params:
            attrs["params"] = [a for _, a in self.params]
        with self.bb.function("main", self.inputs + params, attrs=attrs):
            with self.bb.dataflow():
                for proto in graph.node:
                    self.convert_node(proto, opset)
                outs = [self.expr_of(o.name) for o in graph.output]
                output = self.bb.emit_output(outs[0] if len(outs) == 1 else Tuple(outs))
            self.bb.emit_func_output(output)
        return self.bb.get()


_DIM_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_][A-Za-z0-9_]*|//|[-+*/()])")


def _parse_dim(name: str, sym: dict[str, TirVar]) -> Any:
    """A ``dim_param`` as a tir expression: a name is one int64 variable per distinct name
    (``batch`` in two inputs is the same size), and ``2*batch`` / ``seq + 1`` are arithmetic
    over them (``/`` floor-divides, as TVM parses them); anything else is a variable named
    after the whole text."""
    if name == "?":  # an anonymous unknown size: a variable of its own each time (as TVM)
        return TirVar("?", "int64")
    tokens = _DIM_TOKEN.findall(name)
    if "".join(tokens) != name.replace(" ", "") or len(tokens) == 1:
        key = name if len(tokens) == 1 and tokens[0][0].isalpha() or name[:1] == "_" else re.sub(r"\W", "_", name)
        if key not in sym:
            sym[key] = TirVar(key, "int64")
        return sym[key]
    out: Any = None
    pending = None
    for tok in tokens:
        if tok in ("+", "-", "*", "//", "/"):  # a single "/" divides too: sizes are integers (as TVM)
            pending = tok
            continue
        if tok in ("(", ")"):  # parenthesised forms are rare: fall back to one variable
            return _parse_dim(re.sub(r"\W", "_", name), sym)
        val = int(tok) if tok.isdigit() else _parse_dim(tok, sym)
        if out is None:
            out = val
        elif pending == "+":
            out = out + val
        elif pending == "-":
            out = out - val
        elif pending == "*":
            out = out * val
        else:
            out = out // val
    return out


def _model_opset(model: Any) -> int:
    for ident in model.opset_import:
        if ident.domain in ("", "ai.onnx"):
            return int(ident.version)
    return 1


def from_onnx(model: Any, shape_dict: dict[str, list] | None = None,
              dtype_dict: str | dict[str, str] | None = "float32",
              opset: int | None = None, keep_params_in_input: bool = False,
              sanitize_input_names: bool = True) -> IRModule:
    """Convert an ONNX ``ModelProto`` to an IRModule whose ``main`` takes the graph's inputs.

    ``shape_dict`` / ``dtype_dict`` override an input's shape or dtype by name (a ``dtype_dict``
    that is a string, the default, changes nothing: the graph's dtypes are used, as in TVM).
    Initializers become constants, or with ``keep_params_in_input`` parameters after the inputs
    (``attrs["num_input"]`` counts the inputs, ``attrs["params"]`` holds the values; see
    ``relax.frontend.detach_params``).  ``opset`` overrides the model's (a lower one warns).
    Named unknown dimensions (``dim_param``) become int64 tir variables, one per name.
    Operators without a converter are all named in one ``OpNotImplemented`` error before any
    conversion."""
    from . import CONVERTERS  # lazy: the package builds CONVERTERS from modules that import this one

    try:
        import onnx  # onnx is an optional extra: imported on first use
    except ImportError as err:  # pragma: no cover - the extra is installed in the test env
        raise ImportError("from_onnx needs the onnx package (pip install 'minitvm[onnx]')") from err
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx expects an onnx.ModelProto, got {type(model).__name__}")
    if model.ir_version < 3:
        raise ValueError(f"from_onnx: model IR version {model.ir_version} is not supported (ONNX 1.1, IR 3, or later)")
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # noqa: BLE001 - the checker is strict; TVM only warns too
        warnings.warn(f"from_onnx: onnx.checker: {err}", stacklevel=2)
    in_model = _model_opset(model)
    if opset is None:
        opset = in_model
    elif opset < in_model:
        warnings.warn(f"from_onnx: overriding the model's opset {in_model} with the lower {opset} may "
                      "convert some operators wrongly", stacklevel=2)
    importer = OnnxImporter(CONVERTERS, shape_dict, dtype_dict, keep_params_in_input, sanitize_input_names)
    return importer.convert(model, opset)
