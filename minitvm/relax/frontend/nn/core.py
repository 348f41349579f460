"""The pieces of ``relax.frontend.nn``: :class:`Tensor` (a traced Relax value),
:class:`Parameter` (a model weight), :class:`Object` (a non-tensor value such as a KV cache),
:class:`Effect` (state threaded through the exported functions), :class:`Module` and the
containers :class:`ModuleList`, :class:`ModuleDict`, :class:`ParameterList`, :class:`ParameterDict`.

A model is ordinary Python.  Export (:meth:`Module.export_tvm`) calls each method named in the
spec once with :class:`Tensor` s that wrap Relax variables; every operation on them emits one
binding through the :class:`~minitvm.relax.BlockBuilder` whose function is open, so the traced
program *is* the Relax function.  As in TVM, a module finds its parameters and submodules by
walking its attributes (``__dict__`` order), so ``super().__init__()`` is optional.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ....runtime.device import device as as_device
from ....runtime.ndarray import NDArray, as_numpy
from ....runtime.ndarray import array as _nd_array
from ....tir.expr import FloatImm, IntImm, PrimExpr
from ....tir.expr import Var as TirVar
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...struct_info import ObjectStructInfo, TensorStructInfo, TupleStructInfo
from . import spec as spec_module

__all__ = ["Tensor", "Parameter", "Object", "Effect", "Module", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict", "current_builder", "wrap_nested", "get_default_dtype",
           "set_default_dtype"]

_DEFAULT_DTYPE = "float32"


def get_default_dtype() -> str:
    """The dtype a Parameter gets when none is given (``float32`` unless set)."""
    return _DEFAULT_DTYPE


def set_default_dtype(dtype: str) -> None:
    global _DEFAULT_DTYPE
    _DEFAULT_DTYPE = str(dtype)


def current_builder() -> BlockBuilder:
    """The builder of the function being traced; a clear error outside ``export_tvm``."""
    bb = BlockBuilder.current()
    if bb is None:
        raise RuntimeError("nn: tensor operations run only while a model is traced; "
                           "call model.export_tvm(spec=...) instead of calling the model on data")
    return bb


def _shape_dims(shape: Sequence[Any], where: str) -> list[Any]:
    """Dimensions for a placeholder: ints stay, a string becomes an int64 ``tir.Var``."""
    dims: list[Any] = []
    for d in shape:
        if isinstance(d, (int, np.integer, IntImm)) and not isinstance(d, bool):
            d = int(d.value if isinstance(d, IntImm) else d)
            if d < 0:
                raise ValueError(f"{where}: negative dimension {d} in shape {list(shape)}")
            dims.append(d)
        elif isinstance(d, str):
            dims.append(TirVar(d, "int64"))
        elif isinstance(d, PrimExpr):
            if str(d.dtype) != "int64":
                raise TypeError(f"{where}: dimension {d} must be int64, got {d.dtype}")
            dims.append(d)
        else:
            raise TypeError(f"{where}: dimension {d!r} must be an int, a name or an int64 tir expression")
    return dims


def _scalar_operand(value: Any, like: "Tensor") -> Any:
    """A Python (or tir) number beside a tensor becomes a 0-d constant of the tensor's dtype."""
    if isinstance(value, (IntImm, FloatImm)):
        value = value.value
    if isinstance(value, (bool, int, float, np.number)):
        return Tensor.from_scalar(value, like.dtype)
    return value


class Tensor:
    """A Relax tensor value seen from the model's code: ``.shape``, ``.dtype``, ``.ndim``,
    arithmetic and comparisons (a Python number on either side becomes a constant of the
    tensor's dtype).  Never built by users except through :meth:`placeholder`."""

    def __init__(self, expr: rx.Expr | None = None, *, _expr: rx.Expr | None = None):
        expr = _expr if _expr is not None else expr
        sinfo = getattr(expr, "struct_info", None)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.ndim < 0 or sinfo.shape_values is None:
            raise TypeError(f"nn.Tensor wraps a Relax tensor of known shape, got struct info {sinfo}")
        self._expr = expr

    @property
    def _relax(self) -> rx.Expr:
        return self._expr

    @staticmethod
    def from_const(data: Any) -> "Tensor":
        """A constant tensor holding ``data``; as TVM's ``relax.const``, float64 data becomes
        float32 and int64 int32 (Python numbers and numpy's defaults are the wide ones)."""
        arr = as_numpy(data)
        narrow = {"float64": "float32", "int64": "int32"}.get(str(arr.dtype))
        return Tensor(_expr=rx.const(arr.astype(narrow) if narrow else arr))

    @staticmethod
    def from_scalar(data: int | float, dtype: str) -> "Tensor":
        """A 0-d constant of ``dtype``."""
        return Tensor(_expr=rx.const(np.array(data, dtype=dtype)))

    @staticmethod
    def from_struct_info(struct_info: TensorStructInfo, name: str = "tensor") -> "Tensor":
        return Tensor(_expr=rx.Var(name, struct_info))

    @staticmethod
    def placeholder(shape: Sequence[Any], dtype: str, name: str = "tensor") -> "Tensor":
        """An unbound tensor of ``shape``/``dtype`` (a string dimension is a fresh int64
        ``tir.Var``): the declared result of an extern call or a tensor_ir_op ``out``."""
        return Tensor(_expr=rx.Var(name, TensorStructInfo(_shape_dims(shape, "nn.Tensor.placeholder"), dtype)))

    @property
    def _sinfo(self) -> TensorStructInfo:
        return self._expr.struct_info

    @property
    def shape(self) -> list:
        """The dimensions: Python ints, or ``tir`` expressions for symbolic ones."""
        return [int(v.value) if isinstance(v, IntImm) else v for v in self._sinfo.shape_values]

    @property
    def ndim(self) -> int:
        return self._sinfo.ndim

    @property
    def dtype(self) -> str:
        return self._sinfo.dtype

    def __repr__(self) -> str:
        return f'Tensor({self.shape}, "{self.dtype}")'

    # operators: each emits one binding (see nn.op); order of operands follows TVM's
    def __add__(self, other: Any) -> "Tensor":
        return op.add(self, _scalar_operand(other, self))

    def __radd__(self, other: Any) -> "Tensor":
        return op.add(self, _scalar_operand(other, self))

    def __sub__(self, other: Any) -> "Tensor":
        return op.subtract(self, _scalar_operand(other, self))

    def __rsub__(self, other: Any) -> "Tensor":
        return op.subtract(_scalar_operand(other, self), self)

    def __mul__(self, other: Any) -> "Tensor":
        return op.multiply(self, _scalar_operand(other, self))

    def __rmul__(self, other: Any) -> "Tensor":
        return op.multiply(self, _scalar_operand(other, self))

    def __truediv__(self, other: Any) -> "Tensor":
        return op.divide(self, _scalar_operand(other, self))

    def __rtruediv__(self, other: Any) -> "Tensor":
        return op.divide(_scalar_operand(other, self), self)

    def __matmul__(self, other: Any) -> "Tensor":
        return op.matmul(self, other)

    def __neg__(self) -> "Tensor":
        return op.negative(self)

    def __lt__(self, other: Any) -> "Tensor":
        return op.less(self, _scalar_operand(other, self))

    def __le__(self, other: Any) -> "Tensor":
        return op.less_equal(self, _scalar_operand(other, self))

    def __gt__(self, other: Any) -> "Tensor":
        return op.greater(self, _scalar_operand(other, self))

    def __ge__(self, other: Any) -> "Tensor":
        return op.greater_equal(self, _scalar_operand(other, self))

    __hash__ = object.__hash__

    def astype(self, dtype: str) -> "Tensor":
        return op.astype(self, dtype)

    def maximum(self, other: Any) -> "Tensor":
        return op.maximum(self, _scalar_operand(other, self))

    def minimum(self, other: Any) -> "Tensor":
        return op.minimum(self, _scalar_operand(other, self))

    def reshape(self, *shape: Any) -> "Tensor":
        return op.reshape(self, shape)

    def permute_dims(self, *axes: int) -> "Tensor":
        return op.permute_dims(self, axes)

    def repeat(self, repeats: int, axis: int | None = None) -> "Tensor":
        return op.repeat(self, repeats, axis)


class Parameter(Tensor):
    """A model weight of ``shape`` (ints, or names for symbolic dimensions) and ``dtype``
    (default: :func:`get_default_dtype`).  During export it is a parameter of each Relax
    function; ``.data`` optionally holds its value (a runtime tensor)."""

    def __init__(self, shape: Sequence[Any], dtype: str | None = None):
        dtype = get_default_dtype() if dtype is None else str(dtype)
        super().__init__(_expr=Tensor.placeholder(shape, dtype, "param")._expr)
        self._data: NDArray | None = None
        self.attrs: dict[str, Any] = OrderedDict()

    @property
    def data(self) -> NDArray | None:
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if value is None:
            self._data = None
            return
        arr = value if isinstance(value, NDArray) else _nd_array(as_numpy(value))
        want = tuple(self.shape)
        if len(arr.shape) != len(want) or any(isinstance(w, int) and w != g for g, w in zip(arr.shape, want)):
            raise ValueError(f"nn.Parameter: data of shape {tuple(arr.shape)} for a parameter of shape {want}")
        if str(arr.dtype) != self.dtype:
            raise ValueError(f"nn.Parameter: data of dtype {arr.dtype} for a parameter of dtype {self.dtype}")
        self._data = arr

    def to(self, dtype: str | None = None) -> None:
        """Change the dtype of an unbound parameter (bound data would silently lose precision)."""
        if dtype is None:
            return
        if self._data is not None:
            raise ValueError("nn.Parameter.to: the parameter is bound to data; converting it could "
                             "lose precision, so set .data = None first or convert the data")
        self._expr = Tensor.placeholder(self.shape, dtype, "param")._expr

    def __repr__(self) -> str:
        return f'Parameter({self.shape}, "{self.dtype}")'


class Object:
    """A non-tensor Relax value (struct info ``R.Object``), such as a KV cache: subclass it,
    pass ``nn.spec.Object(object_type=MyCache)`` in a spec, and the method receives an instance
    wrapping the function's parameter.  ``_expr`` that is not a variable is emitted first."""

    def __init__(self, *, _expr: rx.Expr, _name: str) -> None:
        if not isinstance(_expr, rx.Var):
            _expr = current_builder().emit(_expr, _name)
        if not isinstance(_expr.struct_info, ObjectStructInfo):
            raise TypeError(f"nn.Object {_name!r} wraps a value of struct info {_expr.struct_info}; "
                            "expected R.Object")
        self._expr = _expr


class Effect:
    """State that every exported function takes and returns (an IO token, a KV cache): the
    exporter asks it for its initial values (``_initialize_effect``), its input variables,
    and, after tracing, its updated values."""

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list[rx.Var]:
        raise NotImplementedError(f"{type(self).__name__}.emit_init")

    def create(self, name_hint: str) -> list[rx.Var]:
        raise NotImplementedError(f"{type(self).__name__}.create")

    def set_state(self, state_vars: list[rx.Var]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.set_state")

    def finalize(self) -> list[rx.Var]:
        raise NotImplementedError(f"{type(self).__name__}.finalize")

    def to(self, dtype: str | None = None) -> None:
        """Most effects have no dtype to change."""


class Module:
    """Base class of models: assign submodules and :class:`Parameter` s as attributes, write
    ``forward`` (and any other method to export)."""

    def __init__(self) -> None:
        pass  # parameters are found by walking attributes; nothing to register

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """``("fc1.weight", Parameter)`` pairs in attribute order, depth first; a parameter
        shared by two modules comes once."""
        seen: set[int] = set()
        for name, p in _attribute_finder(self, prefix, lambda x: isinstance(x, Parameter)):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for name, item in self.__dict__.items():
            if isinstance(item, Module):
                yield name, item

    def state_dict(self, *, prefix: str = "", destination: dict | None = None) -> dict[str, Parameter]:
        destination = OrderedDict() if destination is None else destination
        for name, p in self.named_parameters(prefix):
            destination[name] = p
        return destination

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> tuple[list[str], list[str]]:
        """Set each parameter's ``.data`` from ``state_dict`` (Parameters with data, runtime
        tensors or numpy arrays by name); returns ``(missing, unexpected)`` keys."""
        own = self.state_dict()
        unexpected = [k for k in state_dict if k not in own]
        missing = [k for k in own if k not in state_dict]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for key, value in state_dict.items():
            if key in own:
                if isinstance(value, Parameter):
                    if value.data is None:
                        raise ValueError(f"load_state_dict: parameter {key} is not set to any concrete tensor")
                    value = value.data
                own[key].data = value
        return missing, unexpected

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NotImplementedError(f"{type(self).__name__} does not define forward")
        return forward(*args, **kwargs)

    def to(self, dtype: str | None = None) -> None:
        """Convert every parameter (and effect, submodule) below to ``dtype``."""
        for item in list(self.__dict__.values()):
            if isinstance(item, (Module, Parameter, Effect)):
                item.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = dtype

    def export_tvm(self, spec: Any, debug: bool = False, allow_extern: bool = False) -> tuple:
        """Trace the methods named in ``spec`` into an IRModule (see :mod:`.spec` for the form).

        Returns ``(mod, [(name, Parameter), ...])``, or with ``allow_extern=True``
        ``(mod, params, ext_mods)`` where ``ext_mods`` lists the :class:`nn.ExternModule` s the
        model called.  ``debug=True`` threads an IO effect through every function (``_io``)."""
        from .exporter import Exporter  # lazy: the exporter imports this module (Module, Tensor, Object)

        mspec = spec_module.ModuleSpec.from_raw(spec, self)
        mod, params, ext_mods = Exporter(debug=debug).build(mspec)
        if allow_extern:
            return mod, params, ext_mods
        if ext_mods:
            raise ValueError("export_tvm: the model uses ExternModule(s) "
                             f"{[type(m).__name__ for m in ext_mods]}; pass allow_extern=True")
        return mod, params

    def jit(self, spec: Any, device: Any = "cpu", pipeline: Any = "default_build", out_format: str = "torch",
            debug: bool = False) -> Any:
        """Export the methods in ``spec``, build them for the VM on ``device`` with the Relax
        ``pipeline`` (None runs none) and return a callable wrapper: with ``out_format="torch"``
        a :class:`nn.torch.TorchModule` (``model["forward"](torch_tensor, ...)``).  Every
        parameter must hold data."""
        from ...transform import AttachExternModules  # lazy: the transforms import the frontends' floor
        from ...vm_build import VirtualMachine, build  # lazy: building pulls in the whole pipeline
        from .exporter import Exporter  # lazy: the exporter imports this module

        if out_format != "torch":
            raise ValueError(f"Unknown out_format: {out_format}")
        dev = as_device(device) if isinstance(device, str) else device
        mspec = spec_module.ModuleSpec.from_raw(spec, self)
        mod, params, ext_mods = Exporter(debug=debug).build(mspec)
        if ext_mods:
            mod = AttachExternModules(ext_mods)(mod)
        missing = [name for name, p in params if p.data is None]
        if missing:
            raise ValueError(f"Parameters are not set to any concrete values: {', '.join(missing)}")
        target = "llvm" if dev.device_type == 1 else str(device)
        vm = VirtualMachine(build(mod, target=target, relax_pipeline=pipeline), dev)
        from . import torch as _torch  # lazy: needs the torch package, only for this format

        return _torch.TorchModule(spec=mspec, vm=vm, params=[p.data for _, p in params])

    def __repr__(self) -> str:
        kids = "".join(f"\n  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in _child_modules(self))
        return f"{type(self).__name__}({self._extra_repr()}{kids}{chr(10) if kids else ''})"

    def _extra_repr(self) -> str:
        return ""


class ModuleList(Module):
    """A list of submodules, named ``"0"``, ``"1"``, ... (so ``layers.0.weight``)."""

    def __init__(self, modules: Sequence[Module] = ()):
        self.modules: list[Module] = []
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList holds nn.Module objects, got {type(module).__name__}")
        self.modules.append(module)

    def __len__(self) -> int:
        return len(self.modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.modules)

    def __getitem__(self, i: int) -> Module:
        return self.modules[i]

    def __setitem__(self, i: int, module: Module) -> None:
        self.modules[i] = module

    def to(self, dtype: str | None = None) -> None:
        for m in self.modules:
            m.to(dtype=dtype)

    def forward(self, x: Any) -> Any:
        for m in self.modules:
            x = m(x)
        return x


class ModuleDict(Module):
    """Submodules by name (``blocks.<key>.weight``)."""

    def __init__(self, modules: dict[str, Module] | None = None):
        self.modules: OrderedDict[str, Module] = OrderedDict(modules or {})

    def __iter__(self) -> Iterator[Module]:
        return iter(self.modules.values())

    def __getitem__(self, key: str) -> Module:
        return self.modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.modules[key] = module

    def __len__(self) -> int:
        return len(self.modules)

    def __contains__(self, key: str) -> bool:
        return key in self.modules

    def keys(self) -> Any:
        return self.modules.keys()

    def values(self) -> Any:
        return self.modules.values()

    def items(self) -> Any:
        return self.modules.items()

    def get(self, key: str, default: Module | None = None) -> Module | None:
        return self.modules.get(key, default)

    def update(self, modules: dict[str, Module]) -> None:
        self.modules.update(modules)

    def pop(self, key: str) -> Module:
        return self.modules.pop(key)

    def clear(self) -> None:
        self.modules.clear()

    def to(self, dtype: str | None = None) -> None:
        for m in self.modules.values():
            m.to(dtype=dtype)


class ParameterList(Module):
    """Parameters in a list (``weights.0``, ``weights.1`` ...)."""

    def __init__(self, params: Sequence[Parameter] | None = None):
        self.params: list[Parameter] = []
        for p in params or ():
            self.append(p)

    def append(self, param: Parameter) -> None:
        if not isinstance(param, Parameter):
            raise TypeError(f"ParameterList elements must be nn.Parameter, got {type(param).__name__}")
        self.params.append(param)

    def extend(self, params: Sequence[Parameter]) -> None:
        for p in params:
            self.append(p)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.params)

    def __getitem__(self, i: int) -> Parameter:
        return self.params[i]

    def __setitem__(self, i: int, param: Parameter) -> None:
        if not isinstance(param, Parameter):
            raise TypeError(f"ParameterList elements must be nn.Parameter, got {type(param).__name__}")
        self.params[i] = param

    def __len__(self) -> int:
        return len(self.params)

    def to(self, dtype: str | None = None) -> None:
        for p in self.params:
            p.to(dtype=dtype)


class ParameterDict(Module):
    """Parameters by name (``table.<key>``)."""

    def __init__(self, params: dict[str, Parameter] | None = None):
        self.params: OrderedDict[str, Parameter] = OrderedDict()
        for k, p in (params or {}).items():
            self[k] = p

    def __setitem__(self, key: str, param: Parameter) -> None:
        if not isinstance(key, str) or not isinstance(param, Parameter):
            raise TypeError(f"ParameterDict maps str to nn.Parameter, got {type(key).__name__} -> "
                            f"{type(param).__name__}")
        self.params[key] = param

    def __getitem__(self, key: str) -> Parameter:
        return self.params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def __contains__(self, key: str) -> bool:
        return key in self.params

    def keys(self) -> Any:
        return self.params.keys()

    def values(self) -> Any:
        return self.params.values()

    def items(self) -> Any:
        return self.params.items()

    def get(self, key: str, default: Parameter | None = None) -> Parameter | None:
        return self.params.get(key, default)

    def update(self, params: dict[str, Parameter]) -> None:
        for k, p in params.items():
            self[k] = p

    def pop(self, key: str) -> Parameter:
        return self.params.pop(key)

    def clear(self) -> None:
        self.params.clear()

    def to(self, dtype: str | None = None) -> None:
        for p in self.params.values():
            p.to(dtype=dtype)


def _child_modules(root: Module) -> Iterator[tuple[str, Module]]:
    """Direct submodules with their names, containers looked through as the finder does."""
    if isinstance(root, ModuleList):
        yield from ((str(i), m) for i, m in enumerate(root.modules))
    elif isinstance(root, ModuleDict):
        yield from root.modules.items()
    elif not isinstance(root, (ParameterList, ParameterDict)):
        yield from root.named_children()


def _attribute_finder(root: Any, prefix: str, condition: Callable[[Any], bool]) -> Iterator[tuple[str, Any]]:
    """Attributes below ``root`` for which ``condition`` holds, named by their dotted path."""
    if isinstance(root, ParameterList):
        items: Any = ((str(i), p) for i, p in enumerate(root.params))
    elif isinstance(root, ParameterDict):
        items = root.params.items()
    elif isinstance(root, (ModuleList, ModuleDict)):
        items = _child_modules(root)
    else:
        items = root.__dict__.items()
    for name, item in items:
        if condition(item):
            yield prefix + name, item
        elif isinstance(item, Module):
            yield from _attribute_finder(item, f"{prefix}{name}.", condition)


def wrap_nested(expr: rx.Expr, name: str) -> Any:
    """Emit ``expr`` (unless it already is a dataflow variable) and wrap the result: a Tensor,
    or a tuple of them (recursively) for a tuple value, an :class:`Object` for ``R.Object``."""
    if not isinstance(expr, rx.DataflowVar):
        expr = current_builder().emit(expr, name)
    sinfo = expr.struct_info
    if isinstance(sinfo, TensorStructInfo):
        return Tensor(_expr=expr)
    if isinstance(sinfo, TupleStructInfo):
        return tuple(wrap_nested(rx.TupleGetItem(expr, i), f"{name}.{i}") for i in range(len(sinfo.fields)))
    if isinstance(sinfo, ObjectStructInfo):
        return Object(_expr=expr, _name=name)
    raise TypeError(f"nn.wrap_nested: cannot wrap a value of struct info {sinfo}")


# Tensor's operators emit nn.op calls; nn.op builds on the classes above, so it is imported
# here, after them (its names are looked up at call time).
from . import op  # noqa: E402
