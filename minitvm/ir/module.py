"""IRModule: the unit every pass consumes and produces — a map from global names to functions."""

from __future__ import annotations

from typing import Any, Iterator

from .node import Node, node

__all__ = ["GlobalVar", "IRModule"]


@node(binds=True)
class GlobalVar(Node):
    """The name of a function in an IRModule (``@name`` in the printed text)."""

    name_hint: str

    def __repr__(self) -> str:
        return f"I.GlobalVar({self.name_hint!r})"


class IRModule(Node):
    """Functions by global name, plus module attributes.

    Immutable like every node: ``mod[name] = f`` is allowed only while building a
    module (TVM allows it too); passes return new modules.
    """

    _field_names = ("functions", "attrs", "global_infos")
    # function names are defined by the module; each function binds its own variables
    _scoped_fields = frozenset({"functions"})

    def __init__(self, functions: dict | None = None, attrs: dict | None = None,
                 global_infos: dict | None = None):
        funcs: dict[GlobalVar, Any] = {}
        for key, func in (functions or {}).items():
            gv = key if isinstance(key, GlobalVar) else GlobalVar(str(key))
            funcs[gv] = func
        object.__setattr__(self, "functions", dict(sorted(funcs.items(), key=lambda kv: kv[0].name_hint)))
        object.__setattr__(self, "attrs", dict(attrs or {}))
        # module-level facts by name (TVM's ``mod.global_infos``: {"vdevice": [VDevice, ...]})
        object.__setattr__(self, "global_infos", {str(k): list(v) for k, v in (global_infos or {}).items()})
        # Python functions beside the IR (TVM's ``mod.pyfuncs``: a BasePyModule's @I.pyfunc methods,
        # RelaxToPyFuncConverter's results); not a field, so equality and printing ignore it
        object.__setattr__(self, "pyfuncs", {})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("IRModule is immutable; use mod.with_function(...) or mod[name] = f")

    @staticmethod
    def from_expr(func: Any, name: str | None = None) -> "IRModule":
        """A module of one function, named ``name``, else (as TVM) its ``global_symbol``
        attribute when it has one, else ``main``."""
        if name is None:
            attrs = getattr(func, "attrs", None) or {}
            name = str(attrs.get("global_symbol") or "main")
        return IRModule({name: func})

    # -- lookup -----------------------------------------------------------------
    def get_global_var(self, name: str) -> GlobalVar:
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        names = ", ".join(gv.name_hint for gv in self.functions) or "(none)"
        raise KeyError(f"IRModule has no function named {name!r}; it has: {names}")

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self.functions)

    def functions_items(self) -> list[tuple[GlobalVar, Any]]:
        """``(GlobalVar, function)`` pairs in alphabetical order of their names (TVM's tutorials
        loop over a module with it)."""
        return sorted(self.functions.items(), key=lambda kv: str(kv[0].name_hint))

    def __getitem__(self, key: str | GlobalVar) -> Any:
        gv = key if isinstance(key, GlobalVar) else self.get_global_var(key)
        try:
            return self.functions[gv]
        except KeyError:
            raise KeyError(f"IRModule has no function {gv.name_hint!r}") from None

    def __contains__(self, key: str | GlobalVar) -> bool:
        if isinstance(key, GlobalVar):
            return key in self.functions
        return any(gv.name_hint == key for gv in self.functions)

    def __setitem__(self, key: str | GlobalVar, func: Any) -> None:
        self._put(key, func)

    def __delitem__(self, key: str | GlobalVar) -> None:
        """``del mod["name"]``: remove the function (TVM's ``IRModule.remove``)."""
        gv = key if isinstance(key, GlobalVar) else self.get_global_var(key)
        if gv not in self.functions:
            raise KeyError(f"IRModule has no function {gv.name_hint!r}")
        object.__setattr__(self, "functions", {g: f for g, f in self.functions.items() if g is not gv})

    def _put(self, key: str | GlobalVar, func: Any) -> None:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        funcs = dict(self.functions)
        gv = next((g for g in funcs if g.name_hint == name), None)
        if gv is None:
            gv = key if isinstance(key, GlobalVar) else GlobalVar(name)
        funcs[gv] = func
        object.__setattr__(self, "functions", dict(sorted(funcs.items(), key=lambda kv: kv[0].name_hint)))

    def update_func(self, gv: str | GlobalVar, func: Any) -> None:
        self._put(gv, func)

    def with_function(self, name: str | GlobalVar, func: Any) -> "IRModule":
        """A new module with ``name`` set to ``func`` (same GlobalVar if it exists)."""
        new = IRModule(self.functions, self.attrs, self.global_infos)
        new._put(name, func)
        return new

    def without(self, name: str) -> "IRModule":
        return IRModule({gv: f for gv, f in self.functions.items() if gv.name_hint != name}, self.attrs,
                        self.global_infos)

    def with_attr(self, key: str, value: Any) -> "IRModule":
        return IRModule(self.functions, {**self.attrs, key: value}, self.global_infos)

    def with_attrs(self, attrs: dict) -> "IRModule":
        """A new module with every entry of ``attrs`` set."""
        return IRModule(self.functions, {**self.attrs, **dict(attrs)}, self.global_infos)

    def without_attr(self, key: str) -> "IRModule":
        """A new module without the attribute ``key`` (the same attributes if it has none)."""
        return IRModule(self.functions, {k: v for k, v in self.attrs.items() if k != key}, self.global_infos)

    def update_global_info(self, name: str, infos: list) -> None:
        """Set the global infos under ``name`` (TVM allows this in place, like ``mod[name] = f``)."""
        object.__setattr__(self, "global_infos", {**self.global_infos, str(name): list(infos)})

    def items(self) -> Iterator[tuple[GlobalVar, Any]]:
        return iter(list(self.functions.items()))

    def keys(self) -> list[str]:
        return [gv.name_hint for gv in self.functions]

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(list(self.functions))

    def __len__(self) -> int:
        return len(self.functions)

    def copy(self) -> "IRModule":
        return IRModule(self.functions, self.attrs, self.global_infos)

    def __repr__(self) -> str:
        return f"IRModule({', '.join(self.keys())})"
