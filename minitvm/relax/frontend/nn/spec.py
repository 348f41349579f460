"""Input specs for ``export_tvm``: which methods to export and what each argument is.

    spec = {
        "prefill": {
            "input_embed": nn.spec.Tensor([1, "seq_len", 64], "float32"),
            "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
            "$": {"param_mode": "packed", "effect_mode": "none"},
        },
        "create_cache": {"max_batch_size": int, "$": {"param_mode": "none", "effect_mode": "none"}},
    }

An argument is an ``nn.spec.Tensor`` (a string dimension is symbolic: an int64 ``tir.Var`` of that
name, shared by every argument of the method that names it), ``int`` / ``"int"`` / ``nn.spec.Int``
(the function takes an ``R.Shape([name])`` and the method sees the ``tir.Var``), an
``nn.spec.Object`` (an ``R.Object`` wrapped in ``object_type``), or a tuple/list of these.

The ``"$"`` entry sets how parameters and effects are passed: ``param_mode`` ``"plain"`` (each
weight a function parameter after the inputs, the default), ``"packed"`` (one tuple of all
weights, last) or ``"none"`` (the method may use no weight); ``effect_mode`` likewise.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ....tir.expr import PrimExpr

__all__ = ["Int", "Tensor", "Object", "Tuple", "MethodSpec", "ModuleSpec"]

_MODES = ("plain", "packed", "none")


class Int:
    """An integer argument: the function takes ``R.Shape([name])``."""

    def __repr__(self) -> str:
        return "int"


class Tensor:
    """A tensor argument of ``shape`` (ints, names or int64 ``tir`` expressions) and ``dtype``."""

    def __init__(self, shape: Sequence[Any], dtype: str = "float32"):
        self.shape = list(shape)
        for d in self.shape:
            ok = isinstance(d, str) or isinstance(d, PrimExpr) or (isinstance(d, int) and not isinstance(d, bool))
            if not ok or (isinstance(d, int) and d < 0):
                raise TypeError(f"nn.spec.Tensor: dimension {d!r} must be a non-negative int, a name "
                                "or a tir.Var")
        self.dtype = str(dtype)

    def __repr__(self) -> str:
        return f"Tensor([{', '.join(str(d) for d in self.shape)}], '{self.dtype}')"


class Object:
    """A non-tensor argument (``R.Object``) that the method receives as an ``object_type``
    (a subclass of :class:`nn.Object`)."""

    def __init__(self, object_type: type) -> None:
        self.object_type = object_type

    def __repr__(self) -> str:
        return "object"


class Tuple:
    """A tuple (or list) argument; the method receives a tuple (or list) of its elements."""

    def __init__(self, name: str, elements: Sequence[Any]) -> None:
        if not isinstance(elements, (tuple, list)):
            raise TypeError(f"nn.spec.Tuple: elements must be a tuple or list, got {type(elements).__name__}")
        self.name = name
        self.elements = elements

    def __repr__(self) -> str:
        return repr(self.elements)


def _convert_arg(arg: Any, name: str) -> Any:
    if arg is Int or arg is int or (isinstance(arg, str) and arg == "int"):
        return Int()
    if isinstance(arg, (Int, Tensor, Object)):
        return arg
    if isinstance(arg, Tuple):
        return arg
    if isinstance(arg, (tuple, list)):
        return Tuple(name, type(arg)(_convert_arg(a, f"{name}_{i}") for i, a in enumerate(arg)))
    raise TypeError(f"nn.spec: argument {name!r} has spec {arg!r}; expected nn.spec.Tensor, int, "
                    "nn.spec.Object or a tuple of these")


class MethodSpec:
    """How one method is exported: its arguments' specs and the parameter/effect modes."""

    def __init__(self, method: Callable, arg_names: list[str], arg_specs: list[Any],
                 param_mode: str = "plain", effect_mode: str = "plain"):
        if param_mode not in _MODES:
            raise ValueError(f"nn.spec: param_mode {param_mode!r} is not one of {_MODES}")
        if effect_mode not in _MODES:
            raise ValueError(f"nn.spec: effect_mode {effect_mode!r} is not one of {_MODES}")
        self.method, self.arg_names, self.arg_specs = method, arg_names, arg_specs
        self.param_mode, self.effect_mode = param_mode, effect_mode

    def _repr(self, name: str) -> str:
        return f"{name}({', '.join(f'{n}: {s}' for n, s in zip(self.arg_names, self.arg_specs))})"

    def __repr__(self) -> str:
        return self._repr("MethodSpec")

    @staticmethod
    def from_raw(spec: Any, method: Callable) -> "MethodSpec":
        """A MethodSpec from ``{"arg": spec, ..., "$": {modes}}`` (arguments in the method's order)."""
        if isinstance(spec, MethodSpec):
            return spec
        if not isinstance(spec, dict):
            raise TypeError(f"nn.spec: the spec of {getattr(method, '__name__', method)} must be a dict "
                            f"of argument specs, got {type(spec).__name__}")
        spec = dict(spec)  # TVM pops "$" from the caller's dict; a copy keeps the spec reusable
        config = spec.pop("$", {})
        unknown_cfg = set(config) - {"param_mode", "effect_mode"}
        if unknown_cfg:
            raise ValueError(f"nn.spec: unknown '$' entries {sorted(unknown_cfg)}; use param_mode/effect_mode")
        name = getattr(method, "__name__", "method")
        sig_names = list(inspect.signature(method).parameters)
        unknown = [k for k in spec if k not in sig_names]
        if unknown:
            raise TypeError(f"export_tvm: {name}() has no argument(s) {unknown} (it takes {sig_names})")
        arg_names = [n for n in sig_names if n in spec]
        arg_specs = [_convert_arg(spec[n], n) for n in arg_names]
        return MethodSpec(method, arg_names, arg_specs, config.get("param_mode", "plain"),
                          config.get("effect_mode", "plain"))


class ModuleSpec:
    """Every method to export from ``module``, in the order given."""

    def __init__(self, module: Any, method_names: list[str], method_specs: list[MethodSpec]) -> None:
        self.module, self.method_names, self.method_specs = module, method_names, method_specs

    @staticmethod
    def from_raw(spec: Any, module: Any) -> "ModuleSpec":
        """A ModuleSpec from ``{"method": {arg specs}, ...}`` (see the module docstring)."""
        if isinstance(spec, ModuleSpec):
            return spec
        if not isinstance(spec, dict) or not spec:
            raise TypeError('export_tvm: spec must map method names to input specs, e.g. '
                            '{"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}')
        names = list(spec)
        specs = []
        for name in names:
            method = getattr(module, name, None)
            if method is None or not callable(method):
                raise AttributeError(f"export_tvm: {type(module).__name__} has no method {name!r}")
            specs.append(MethodSpec.from_raw(spec[name], method))
        return ModuleSpec(module, names, specs)

    def __repr__(self) -> str:
        return "ModuleSpec:\n" + "\n".join("  " + s._repr(n) for n, s in zip(self.method_names, self.method_specs))
