"""AttachExternModules: compiled external modules travel with the IRModule to the build.

``AttachExternModules(ext_mods)(mod)`` loads each ``relax.frontend.nn.ExternModule`` (its
``load()`` gives a runtime Module of functions) and appends it to the module attribute
``"external_mods"``; ``relax.build`` imports them into the executable's kernel library, where
the VM finds the functions that ``R.call_dps_packed("name", ...)`` names.  An already loaded
runtime Module is taken as it is.  The pass's name is ``"AttachExternalModules"``, as TVM's.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...runtime.module import Module
from ...transform import PassContext, module_pass

__all__ = ["AttachExternModules", "EXTERNAL_MODS"]

#: the module attribute holding the loaded external modules
EXTERNAL_MODS = "external_mods"


def _load(ext: Any) -> Module:
    if isinstance(ext, Module):
        return ext
    load = getattr(ext, "load", None)
    if not callable(load):
        raise TypeError(f"AttachExternModules: expected an nn.ExternModule (or a loaded runtime Module), "
                        f"got {type(ext).__name__}")
    loaded = load()
    if not isinstance(loaded, Module):
        raise TypeError(f"AttachExternModules: {type(ext).__name__}.load() returned {type(loaded).__name__}, "
                        "not a runtime Module")
    return loaded


@module_pass(opt_level=0, name="AttachExternalModules")
class AttachExternModules:
    """Append the loaded external modules to ``mod.attrs["external_mods"]``: ``AttachExternModules(mods)(mod)``."""

    def __init__(self, extern_modules: list | None) -> None:
        self.extern_modules = list(extern_modules or ())

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        attached = list((mod.attrs or {}).get(EXTERNAL_MODS, ()))
        attached += [_load(ext) for ext in self.extern_modules]
        return mod.with_attr(EXTERNAL_MODS, attached)
