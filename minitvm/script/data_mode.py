"""TVMScript parsed as data: the rules the parsers follow for text read from a file.

``from_source(text, data_only=True)`` (a tuning database, a candidate sent to a worker) builds
only what TVMScript means: ``T.*`` / ``R.*`` / ``I.*`` constructs, literals, names the script
binds, arithmetic.  Python the parser would otherwise evaluate (a lambda, a comprehension, a
builtin such as ``__import__``, an attribute of a string) is refused with a
:class:`TVMScriptError` at its line: a file is parsed as data, never run.

While a data-mode parse is under way, every parser made (sub-parsers of string dimensions,
Relax local functions, the functions of a module) reads the mode from a context variable,
so no path inside the parse can fall back to evaluating Python.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import functools
import types
from typing import Any

from ..relax import op
from ..support.flags import switched_on

__all__ = ["data_only", "active", "BUILTINS", "NOT_TVMSCRIPT", "refusal", "read_attribute", "check_call",
           "check_python_binop"]

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("tvmscript_data_only", default=False)

NOT_TVMSCRIPT = "is not TVMScript; a file is parsed as data, never run"

# modules and namespace objects whose public names a script may use come from here
_SCRIPT_PACKAGE = "minitvm.script."
# names a namespace lists that register or run code; reachable for identity (decorators), never
# called in data mode
_NEVER_CALLED_NAMES = ("prim_func", "macro", "function", "emit_te", "ir_module", "module_attrs",
                       "register", "register_function_parser", "index_map")
# names listed in a namespace's __all__ that change the process, not the IR being read
_NEVER_READ_NAMES = frozenset({"register", "register_function_parser", "FunctionParser", "OpPattern"})
# the builtins printed TVMScript uses: the Relax printer writes a non-finite constant as float("inf")
BUILTINS = frozenset({"float"})
# bits a Python integer built by ** or << may have (a file cannot make the parser allocate gigabytes)
_MAX_INT_BITS = 4096


def data_only() -> contextlib.AbstractContextManager[None]:
    """Within: every TVMScript parser made evaluates no Python from its text."""
    return switched_on(_ACTIVE)


def active() -> bool:
    return _ACTIVE.get()


def refusal(node: ast.AST, why: str = "") -> str:
    """``<expression> is not TVMScript (why); ...`` (a long expression shortened)."""
    text = ast.unparse(node)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} {NOT_TVMSCRIPT}" if not why else f"{text} is not TVMScript ({why}); a file is parsed as " \
        "data, never run"


def _is_script_module(obj: Any) -> bool:
    """``T``, ``R``, ``I`` and the operator modules under ``R`` (``R.nn``, ``R.memory`` ...)."""
    return isinstance(obj, types.ModuleType) and obj.__name__.startswith(("minitvm.script.",
                                                                           "minitvm.relax.op"))


def _public_names(module: types.ModuleType) -> set[str]:
    names = set(getattr(module, "__all__", ()))
    if module.__name__ == "minitvm.script.relax":  # R.<op> falls back to minitvm.relax.op
        names |= set(op.__all__)
    return names - _NEVER_READ_NAMES


def read_attribute(owner: Any, name: str) -> tuple[Any, str | None]:
    """``(owner.name, None)``, or ``(None, why it is not TVMScript)`` -- decided before reading
    it where the owner alone decides (no attribute of a Python value is ever read)."""
    if name.startswith("_"):
        return None, "a private or special attribute"
    if isinstance(owner, types.ModuleType):
        if not _is_script_module(owner) or name not in _public_names(owner):
            return None, "not a TVMScript name"
    elif not type(owner).__module__.startswith("minitvm."):
        return None, "an attribute of a Python value"
    value = getattr(owner, name)
    if isinstance(value, types.ModuleType) and not _is_script_module(value):
        return None, "a Python module"
    script_helper = isinstance(owner, types.ModuleType) or type(owner).__module__.startswith(_SCRIPT_PACKAGE)
    if not script_helper and callable(value):  # IR nodes give fields (A.data, x.dtype), not methods
        return None, "a method of an IR node"
    return value, None


@functools.cache
def _never_called() -> tuple:
    from . import ir, relax, tir  # lazy: cycle -- T, R and I (script.tir/relax/ir) import this module

    found = [getattr(m, n) for m in (tir, relax, ir, op) for n in _NEVER_CALLED_NAMES if hasattr(m, n)]
    return (*found, tir.IndexMap.from_func)


def check_call(func: Any) -> str | None:
    """Why calling ``func`` is not TVMScript, or None when it is."""
    if any(func is f for f in _never_called()):
        return "a function that runs or registers code"
    if func is float:
        return None
    if isinstance(func, types.MethodType):
        owner = func.__self__
        module = owner.__name__ if isinstance(owner, types.ModuleType) else type(owner).__module__
    elif isinstance(func, (types.FunctionType, types.BuiltinFunctionType, type)):
        module = getattr(func, "__module__", None) or ""
    else:  # an object with __call__ (T.int32, T.Buffer, a GlobalVar)
        module = type(func).__module__
    if not module.startswith("minitvm."):
        return "not a TVMScript function"
    return None


def check_python_binop(op: type, a: Any, b: Any) -> str | None:
    """Why ``a <op> b`` on two Python values is refused in data mode (None: it is fine):
    numbers only, and no ``**`` / ``<<`` that would build an enormous integer."""
    numbers = (int, float)
    if not (isinstance(a, numbers) and isinstance(b, numbers)):
        return f"arithmetic on {type(a).__name__} and {type(b).__name__}"
    if isinstance(a, int) and isinstance(b, int):
        if op is ast.Pow and b > 0 and abs(a) > 1 and a.bit_length() * b > _MAX_INT_BITS:
            return f"an integer power of more than {_MAX_INT_BITS} bits"
        if op is ast.LShift and b > _MAX_INT_BITS:
            return f"a shift by more than {_MAX_INT_BITS} bits"
    return None
