"""``torch.compile(model, backend=relax_dynamo())``: minitvm as a TorchDynamo backend.

TorchDynamo traces a model's Python into ``torch.fx`` graphs, splitting it where the code
does something a graph cannot hold (a ``print``, ``.item()`` feeding Python control flow:
a *graph break*; the code between graphs runs in eager torch).  It hands each graph and
its example inputs to the backend, which returns a callable it runs in place of the graph.

For each graph this backend, as TVM's ``relax.frontend.torch.relax_dynamo``: imports it
with :func:`from_fx`, runs the Relax pipeline, builds it for llvm and returns a callable
over torch tensors (inputs shared with numpy, not copied; outputs copied once, since a
build reuses its output storage from call to call).  minitvm's own choices:

* **Weights are constants.**  Dynamo passes a module's parameters and buffers as graph
  inputs; they are folded into the compiled module (as ``torch.compile``'s ``freezing``
  does), so the pipeline can pre-pack them.  Each call checks their version counters: a
  weight changed in place (an optimizer step) makes the next call compile again.
* **One build per input shape.**  ``from_fx`` takes static shapes, so a graph that dynamo
  made symbolic (``dynamic=True``, ``torch._dynamo.mark_dynamic`` or its automatic dynamic
  shapes after a second shape) is built once per concrete shape it is called with, and
  kept; ``backend.compiles`` lists every build with its shapes.
* **An unsupported operator runs that graph in eager torch** with a warning naming it;
  the rest of the model stays compiled.

``dynamo_capture_subgraphs(model, *args)`` returns the graphs as one IRModule
(``subgraph_0``, ``subgraph_1`` ...) without building them.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from ....ir.module import IRModule
from ....runtime.device import cpu
from ....runtime.ndarray import NDArray
from ....runtime.vm import VirtualMachine
from ....target import Target
from ...expr import Var
from ...struct_info import TensorStructInfo
from ...vm_build import build, get_pipeline
from .exported_program import CONVERTERS
from .fx_translator import FxConverter, mutates

__all__ = ["relax_dynamo", "dynamo_capture_subgraphs", "minitvm_backend"]

_log = logging.getLogger(__name__)

#: what a graph input is: a model input, a weight folded as a constant, or a Python scalar
#: (a symbolic size dynamo passes beside the tensors)
INPUT, WEIGHT, SCALAR = "input", "weight", "scalar"


def _is_weight(node: Any, value: Any) -> bool:
    """A parameter or buffer of the module, as dynamo's source of the placeholder says."""
    import torch  # torch is optional and heavy: imported on first use
    from torch._dynamo import source as sources  # torch is optional and heavy: imported on first use

    if isinstance(value, torch.nn.Parameter):
        return True
    src = getattr(node.meta.get("grapharg"), "source", None)
    while src is not None:
        if isinstance(src, (sources.ParamBufferSource, sources.UnspecializedParamBufferSource)):
            return True
        src = getattr(src, "base", None)
    return False


def _dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).replace("torch.", "")


class DynamoConverter(FxConverter):
    """``from_fx`` for a graph from TorchDynamo: placeholders are inputs, weights or scalars,
    and the values are recorded on the real arguments of a call."""

    def __init__(self, gm: Any, kinds: list[str], keep_params_as_input: bool = False):
        super().__init__(CONVERTERS, gm, keep_params_as_input)
        self.kinds = kinds

    def convert(self, args: list, unwrap_unit_return_tuple: bool = False) -> IRModule:
        import torch  # torch is optional and heavy: imported on first use

        # a graph that changes a tensor in place is recorded on copies: the recording must
        # not change the caller's tensors (the graph may then run in eager torch on them)
        if any(mutates(n) for n in self.gm.graph.nodes):
            args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        self.record_values(list(args))
        self.check_supported(self.gm.graph)
        output = next(n for n in self.gm.graph.nodes if n.op == "output").args[0]
        for item in (output if isinstance(output, (list, tuple)) else [output]):
            if not isinstance(self.values.get(item), torch.Tensor):
                raise ValueError(f"the graph returns {type(self.values.get(item)).__name__} {item} "
                                 "(only tensors can be returned by a compiled graph)")
        user_vars = []
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for node, kind, value in zip(placeholders, self.kinds, args):
            if kind == INPUT:
                var = Var(node.name, TensorStructInfo(list(value.shape), _dtype_name(value)))
                user_vars.append(var)
                self.env[node] = var
            elif kind == WEIGHT and self.keep_params_as_input:
                array = value.detach().cpu().contiguous().numpy()
                var = Var(node.name, TensorStructInfo(list(array.shape), str(array.dtype)))
                self.param_vars.append(var)
                self.param_values.append(array)
                self.env[node] = var
            elif kind == WEIGHT:
                self.env[node] = self.tensor(value)
            # a SCALAR stays a Python value in self.values: the converters read it as a constant
        return self.emit_main(user_vars, unwrap_unit_return_tuple)


def _eliminate_dead_code(gm: Any) -> None:
    """Drop unused nodes, keeping in-place ops whose results nothing reads (``z += 1`` on a
    view changes its base: fx's own test does not see an ``operator.iadd`` as a side effect)."""
    gm.graph.eliminate_dead_code(is_impure_node=lambda n: n.is_impure() or mutates(n))
    gm.recompile()


def placeholder_kinds(gm: Any, example_inputs: list) -> list[str]:
    """INPUT, WEIGHT or SCALAR for each placeholder of ``gm`` (``example_inputs`` in order)."""
    import torch  # torch is optional and heavy: imported on first use

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise ValueError(f"relax_dynamo: the graph has {len(placeholders)} placeholders but dynamo "
                         f"passed {len(example_inputs)} example inputs")
    kinds = []
    for node, value in zip(placeholders, example_inputs):
        if not isinstance(value, torch.Tensor):
            kinds.append(SCALAR)
        else:
            kinds.append(WEIGHT if _is_weight(node, value) else INPUT)
    return kinds


@dataclass
class _Build:
    """What one build of a graph records (``backend.compiles``): the graph's number, the
    shapes of its tensor inputs, and whether it fell back to eager torch (and why)."""

    graph: int
    shapes: tuple
    eager: str = ""
    seconds: float = 0.0


@dataclass
class _Graph:
    """One graph dynamo handed over, and its builds by input shape."""

    number: int
    gm: Any
    kinds: list[str]
    pipeline: Any
    target: str
    compiles: list
    runs: dict = field(default_factory=dict)
    eager: str = ""

    def __post_init__(self) -> None:
        self.inputs = [i for i, k in enumerate(self.kinds) if k == INPUT]
        self.scalars = [i for i, k in enumerate(self.kinds) if k == SCALAR]
        self.weights = [i for i, k in enumerate(self.kinds) if k == WEIGHT]

    def key(self, args: tuple) -> tuple:
        """Shapes of the inputs, values of the scalars, identities and versions of the weights:
        a call with the same key runs the same build (dynamo's guards see to the dtypes)."""
        return (tuple(args[i].shape for i in self.inputs), tuple(args[i] for i in self.scalars),
                tuple((id(args[i]), args[i]._version) for i in self.weights))

    def __call__(self, *args: Any) -> Any:
        if self.eager:
            return self.gm.forward(*args)
        key = self.key(args)
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = self.build(args)
        return run(*args)

    def build(self, args: tuple) -> Callable[..., Any]:
        import time

        shapes = tuple(tuple(a.shape) for k, a in zip(self.kinds, args) if k == INPUT)
        record = _Build(self.number, shapes)
        self.compiles.append(record)
        t0 = time.perf_counter()
        try:
            mod = DynamoConverter(self.gm, self.kinds).convert(list(args))
        except (ValueError, NotImplementedError, KeyError, TypeError) as err:
            # not a crash: dynamo's own graph breaks run in eager torch too, and the other
            # graphs of the model stay compiled
            self.eager = record.eager = str(err)
            warnings.warn(f"minitvm dynamo backend: graph {self.number} runs in eager torch: {err}",
                          stacklevel=2)
            return self.gm.forward
        run = _compile(mod, self.kinds, self.pipeline, self.target)
        record.seconds = time.perf_counter() - t0
        _log.info("minitvm dynamo backend: built graph %d for input shapes %s in %.2f s",
                  self.number, shapes, record.seconds)
        return run


def _compile(mod: IRModule, kinds: list[str], pipeline: Any, target: str) -> Callable[..., Any]:
    """Build ``mod`` and wrap its ``main`` as a function of the graph's arguments."""
    import torch  # torch is optional and heavy: imported on first use

    tgt = Target(target)
    seq = get_pipeline("default" if pipeline is None else pipeline) if pipeline is None or \
        isinstance(pipeline, str) else pipeline
    with tgt:
        mod = seq(mod)
    main = VirtualMachine(build(mod, tgt, relax_pipeline=None), cpu())["main"]
    inputs = [i for i, k in enumerate(kinds) if k == INPUT]

    def as_array(t: Any) -> NDArray:
        # shares the tensor's memory (a copy only for a non-contiguous one); an NDArray given
        # its address takes the VM's quickest argument check
        t = t.detach().contiguous()
        return NDArray(t.numpy(), _address=t.data_ptr())

    def as_tensor(out: Any) -> Any:
        if isinstance(out, (tuple, list)):
            return tuple(as_tensor(o) for o in out)
        # a copy: the compiled main reuses its output storage on the next call
        return torch.from_numpy(out.numpy())

    def run(*args: Any) -> Any:
        out = main(*[as_array(args[i]) for i in inputs])
        result = as_tensor(out)
        return result if isinstance(result, tuple) else (result,)

    return run


def relax_dynamo(pipeline: Any = None, *, target: str = "llvm") -> Callable[[Any, list], Callable[..., Any]]:
    """A TorchDynamo backend: ``torch.compile(model, backend=relax_dynamo())``.

    ``pipeline``: the Relax pipeline run before the build -- a name for
    :func:`minitvm.relax.get_pipeline`, a Pass, or None for ``"default"``.  The backend's
    ``compiles`` attribute lists every build (graph number, input shapes, seconds, and why
    it runs in eager torch if it does)."""
    compiles: list[_Build] = []
    graphs: list[_Graph] = []

    def backend(graph_module: Any, example_inputs: list) -> Callable[..., Any]:
        import torch  # torch is optional and heavy: imported on first use

        if not isinstance(graph_module, torch.fx.GraphModule):
            raise TypeError(f"relax_dynamo: expected a torch.fx.GraphModule, got {type(graph_module).__name__}")
        _eliminate_dead_code(graph_module)
        graph = _Graph(len(graphs), graph_module, placeholder_kinds(graph_module, example_inputs),
                       pipeline, target, compiles)
        graphs.append(graph)
        # built on the first call: only then are the symbolic sizes of a dynamic graph known
        return graph

    backend.compiles = compiles  # type: ignore[attr-defined]
    return backend


def minitvm_backend(graph_module: Any, example_inputs: list) -> Callable[..., Any]:
    """``torch.compile(model, backend="minitvm")``: :func:`relax_dynamo` with the default pipeline."""
    return relax_dynamo()(graph_module, example_inputs)


def dynamo_capture_subgraphs(model: Any, *args: Any, keep_params_as_input: bool = False,
                             **kwargs: Any) -> IRModule:
    """The graphs TorchDynamo makes of ``model(*args, **kwargs)`` as one IRModule, a function
    ``subgraph_<k>`` per graph in the order dynamo compiles them (the model runs once, in
    eager torch).  Weights are constants, or with ``keep_params_as_input`` parameters after
    the inputs (attribute ``"params"`` holds their values, see ``relax.frontend.detach_params``)."""
    import torch  # torch is optional and heavy: imported on first use

    mod = IRModule()

    def capture(graph_module: Any, example_inputs: list) -> Callable[..., Any]:
        _eliminate_dead_code(graph_module)
        kinds = placeholder_kinds(graph_module, example_inputs)
        if any(k == SCALAR for k in kinds):
            raise ValueError("dynamo_capture_subgraphs: a graph has symbolic sizes; call it on static shapes")
        func = DynamoConverter(graph_module, kinds, keep_params_as_input).convert(
            list(example_inputs), unwrap_unit_return_tuple=True)["main"]
        name = f"subgraph_{len(mod.functions)}"
        mod[name] = func.with_attr("global_symbol", name)
        return graph_module.forward

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=capture, dynamic=False)
    with torch.no_grad():
        compiled(*args, **kwargs)
    return mod
