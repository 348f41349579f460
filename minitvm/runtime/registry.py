"""The global function registry: named callables shared by the runtime, the VM and user code."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["PackedFunc", "register_func", "register_global_func", "get_global_func", "convert",
           "list_global_func_names", "remove_global_func"]


class PackedFunc:
    """A named callable (TVM's PackedFunc): what registries and modules hand out."""

    __slots__ = ("_fn", "name", "__wrapped__")

    def __init__(self, fn: Callable[..., Any], name: str | None = None):
        if not callable(fn):
            raise TypeError(f"PackedFunc needs a callable, got {type(fn).__name__}")
        self._fn = fn
        self.name = name or getattr(fn, "__name__", "packed_func")
        self.__wrapped__ = fn

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def __repr__(self) -> str:
        return f"PackedFunc({self.name!r})"


_REGISTRY: dict[str, PackedFunc] = {}


def register_func(func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None,
                  override: bool = False) -> Any:
    """Register ``f`` under ``func_name``; without ``f`` it is a decorator.

    ``@register_func`` alone uses the function's own name; registering a taken name
    raises unless ``override=True``.
    """
    if callable(func_name) and f is None:  # bare @register_func
        fn = func_name
        return register_func(fn.__name__, fn, override)
    if not isinstance(func_name, str):
        raise TypeError(f"register_func: the name must be a str, got {type(func_name).__name__}")
    name = func_name

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"register_func({name!r}): expected a callable, got {type(fn).__name__}")
        if name in _REGISTRY and not override:
            raise ValueError(f"global function {name!r} is already registered; pass override=True "
                             "to replace it")
        _REGISTRY[name] = fn if isinstance(fn, PackedFunc) else PackedFunc(fn, name)
        return fn

    return register if f is None else register(f)


#: newer TVM spelling
register_global_func = register_func


def get_global_func(name: str, allow_missing: bool = False) -> PackedFunc | None:
    """The function registered as ``name`` (None if missing and ``allow_missing``)."""
    fn = _REGISTRY.get(name)
    if fn is None and not allow_missing:
        close = [n for n in _REGISTRY if name.split(".")[-1] in n][:5]
        hint = f"; similar names: {', '.join(close)}" if close else ""
        raise ValueError(f"no global function named {name!r} is registered{hint}")
    return fn


def list_global_func_names() -> list[str]:
    """All registered names, sorted."""
    return sorted(_REGISTRY)


def remove_global_func(name: str) -> None:
    """Unregister ``name`` (no error if it is missing)."""
    _REGISTRY.pop(name, None)


def convert(value: Any) -> Any:
    """TVM's ``tvm.runtime.convert`` (``tvm_ffi.convert``): a Python value as the runtime holds it.

    The runtime here is Python, so numbers, strings and objects are themselves; lists and tuples
    become lists and dicts dicts, their items converted in turn."""
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return value
