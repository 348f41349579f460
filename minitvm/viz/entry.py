"""Which function of a module a picture shows, when the caller does not name one.

One rule for every picture in :mod:`minitvm.viz`: the function called ``main``; else the
only function of the kind drawn; for Relax, functions FuseOps made (attrs ``Primitive``) do
not count, as they are drawn inside their caller -- so the quick start's ``forward`` is
picked after fusion too.  Several candidates and no ``main`` is an error that lists them.
"""

from __future__ import annotations

from typing import Any

from ..ir.module import IRModule
from ..relax.expr import Function
from ..tir.function import PrimFunc

__all__ = ["entry_function", "entry_name", "is_fused"]


def is_fused(func: Any) -> bool:
    """Whether ``func`` is a Relax function FuseOps made (attrs ``Primitive``)."""
    return isinstance(func, Function) and bool(func.attrs) and bool(func.attrs.get("Primitive"))


def _kind_of(kind: str) -> tuple[type, str]:
    if kind == "relax":
        return Function, "Relax function"
    if kind == "tir":
        return PrimFunc, "PrimFunc"
    raise ValueError(f"entry_name: kind must be 'relax' or 'tir', got {kind!r}")


def entry_name(mod: IRModule, kind: str, name: str | None = None, what: str = "viz") -> str:
    """The name of the ``kind`` ("relax" or "tir") function of ``mod`` a picture shows:
    ``name`` if given, else ``main``, else the only (not fused) one."""

    cls, noun = _kind_of(kind)
    funcs = [(gv.name_hint, f) for gv, f in mod.items() if isinstance(f, cls)]
    if name is not None:
        if name not in mod:
            raise KeyError(f"{what}: no function named {name!r}; the module has: "
                           f"{', '.join(gv.name_hint for gv in mod.get_global_vars()) or 'nothing'}")
        return name
    names = [n for n, _ in funcs]
    if not names:
        raise ValueError(f"{what}: the module has no {noun} to draw")
    if "main" in names:
        return "main"
    # fused functions (attrs Primitive) are drawn inside the function that calls them
    candidates = [n for n, f in funcs if not is_fused(f)] or names
    if len(candidates) > 1:
        raise ValueError(f"{what}: the module has no 'main' and several {noun}s ({', '.join(candidates)}); "
                         f"name the one to draw, e.g. {what}(mod, {candidates[0]!r})")
    return candidates[0]


def entry_function(mod_or_func: Any, kind: str, name: str | None = None, what: str = "viz") -> Any:
    """The function a picture shows: ``mod_or_func`` itself if it is a function of ``kind``,
    else the module's function chosen by :func:`entry_name`."""
    cls, noun = _kind_of(kind)
    if isinstance(mod_or_func, IRModule):
        func = mod_or_func[entry_name(mod_or_func, kind, name, what)]
        if not isinstance(func, cls):
            raise TypeError(f"{what} draws {noun}s; {name!r} is a {type(func).__name__}")
        return func
    if isinstance(mod_or_func, cls):
        return mod_or_func
    raise TypeError(f"{what} draws {noun}s (or an IRModule holding one), got {type(mod_or_func).__name__}")
