"""minitvm: a compact deep-learning compiler that mirrors Apache TVM's Python API.

Subpackages load on first use (``minitvm.nd``, ``minitvm.build`` ...), so
``import minitvm`` stays fast and the layers import only downward.
"""

from __future__ import annotations

import importlib
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
