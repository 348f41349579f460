"""minitvm: a compact deep-learning compiler that mirrors Apache TVM's Python API.

Subpackages load on first use (``minitvm.nd``, ``minitvm.build`` ...), so
``import minitvm`` stays fast and the layers import only downward.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

__version__ = "0.1.0"

from . import eras  # noqa: E402 - first: TVM 0.27's module paths (minitvm.tirx ...) resolve from here on

eras.install()

from . import ir, tir  # noqa: E402
from .ir import IRModule  # noqa: E402
from .transform import tuning_database as _tuning_database  # noqa: E402


def _load_tuner() -> None:
    importlib.import_module("minitvm.meta_schedule")  # lazy: the tuner imports the whole compiler


# Relax's tuning passes (MetaScheduleTuneTIR, MetaScheduleApplyDatabase(work_dir=)) reach the tuner
# through this hook; the tuner sits above Relax, so the root package loads it when first needed
_tuning_database.register_loader(_load_tuner)

# name -> (module, attribute or None for the module itself)
_LAZY = {
    "arith": ("minitvm.arith", None),
    "error": ("minitvm.error", None),
    "TVMError": ("minitvm.error", "TVMError"),
    "DataType": ("minitvm.ir.dtype", "DataType"),
    "DataTypeCode": ("minitvm.ir.dtype", "DataTypeCode"),
    "transform": ("minitvm.transform", None),
    "te": ("minitvm.te", None),
    "script": ("minitvm.script", None),
    "target": ("minitvm.target", None),
    "runtime": ("minitvm.runtime", None),
    "testing": ("minitvm.testing", None),
    "grade": ("minitvm.grade", None),
    "viz": ("minitvm.viz", None),
    "relax": ("minitvm.relax", None),
    "meta_schedule": ("minitvm.meta_schedule", None),
    "tirx": ("minitvm.tirx", None),  # TVM 0.27's name of tir (the same module)
    "s_tir": ("minitvm.s_tir", None),  # TVM 0.27: schedules and the tuner
    "support": ("minitvm.support", None),
    "contrib": ("minitvm.contrib", None),
    "rpc": ("minitvm.rpc", None),
    "nd": ("minitvm.runtime.ndarray", None),
    "cpu": ("minitvm.runtime.device", "cpu"),
    "cuda": ("minitvm.runtime.device", "cuda"),
    "device": ("minitvm.runtime.device", "device"),
    "register_func": ("minitvm.runtime.registry", "register_func"),
    "get_global_func": ("minitvm.runtime.registry", "get_global_func"),
    "register_global_func": ("minitvm.runtime.registry", "register_global_func"),
    "build": ("minitvm.driver", "build"),
    "compile": ("minitvm.driver", "compile"),
    "lower": ("minitvm.driver", "lower"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'minitvm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))


__all__ = ["ir", "tir", "IRModule", "__version__", *_LAZY]


# -- torch.compile(model, backend="minitvm") ----------------------------------------------------
# torch finds backends by name in torch._dynamo's registry (or in the "torch_dynamo_backends"
# entry points of installed packages, where pyproject.toml lists this one too).  Importing that
# registry costs over a second, so the name is registered the moment torch imports it, and torch
# is never imported here.
_TORCH_REGISTRY = "torch._dynamo.backends.registry"


def _torch_compile_backend(graph_module: Any, example_inputs: list) -> Any:
    """``torch.compile(model, backend="minitvm")``: ``relax.frontend.torch.relax_dynamo()``."""
    # lazy: relax and torch load when torch first compiles a graph, not with minitvm
    from .relax.frontend.torch.dynamo import minitvm_backend

    return minitvm_backend(graph_module, example_inputs)


def _register_torch_backend(registry: Any) -> None:
    try:
        registry.register_backend(_torch_compile_backend, name="minitvm")
    except AssertionError:  # "duplicate name": registered already (by its entry point)
        pass


class _TorchRegistryHook:
    """A ``sys.meta_path`` finder that only watches for torch's backend registry: it lets the
    other finders load it, then registers the backend."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _TORCH_REGISTRY:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_and_register(module: Any) -> None:
                exec_module(module)
                _register_torch_backend(module)

            spec.loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def _watch_torch_registry() -> None:
    if _TORCH_REGISTRY in sys.modules:
        _register_torch_backend(sys.modules[_TORCH_REGISTRY])
    elif not any(isinstance(f, _TorchRegistryHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchRegistryHook())


_watch_torch_registry()
