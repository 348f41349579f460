"""The builder and its frames: a stack of open ``with`` scopes, each collecting statements."""

from __future__ import annotations

import threading
from typing import Any, Callable

from ...relax.expr import Var as RelaxVar
from ...tir.buffer import Buffer
from ...tir.expr import IterVar, Var

__all__ = ["IRBuilder", "IRBuilderFrame"]

_STATE = threading.local()


def _builders() -> list["IRBuilder"]:
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    return _STATE.stack


class IRBuilderFrame:
    """One open ``with`` scope.  Statements made inside land in ``stmts``; on exit the frame
    builds its own node and hands it to the frame around it (or to the builder, as the result)."""

    def __init__(self) -> None:
        self.stmts: list[Any] = []
        self._callbacks: list[Callable[[], None]] = []

    def __enter__(self) -> Any:
        IRBuilder.current()._frames.append(self)
        return self.enter_value()

    def enter_value(self) -> Any:
        """What ``with frame as x`` binds (a loop's variable, a let's variable ...)."""
        return self

    def __exit__(self, exc_type: Any, exc: Any, trace: Any) -> None:
        builder = IRBuilder.current()
        if not builder._frames or builder._frames[-1] is not self:
            raise RuntimeError(f"IRBuilder: {type(self).__name__} exited out of order")
        builder._frames.pop()
        if exc_type is None:
            for callback in reversed(self._callbacks):
                callback()
            self.finish(builder)

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the frame exits (before it builds its node)."""
        self._callbacks.append(callback)

    def finish(self, builder: "IRBuilder") -> None:
        raise NotImplementedError(f"{type(self).__name__} builds nothing")


class IRBuilder:
    """``with IRBuilder() as ib:`` opens a builder; frames made inside nest in it; ``ib.get()``
    is the finished IR (the outermost frame's node)."""

    def __init__(self) -> None:
        self._frames: list[IRBuilderFrame] = []
        self._result: Any = None
        self._has_result = False

    def __enter__(self) -> "IRBuilder":
        _builders().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _builders()
        if stack and stack[-1] is self:
            stack.pop()

    @staticmethod
    def current() -> "IRBuilder":
        """The innermost open builder (ValueError when there is none, as TVM)."""
        stack = _builders()
        if not stack:
            raise ValueError("no IRBuilder is in scope: open one with `with IRBuilder() as ib:`")
        return stack[-1]

    @staticmethod
    def is_in_scope() -> bool:
        return bool(_builders())

    def get(self) -> Any:
        """The IR built: refused while a frame is still open or before anything was built."""
        if self._frames:
            raise ValueError(f"IRBuilder.get(): {type(self._frames[-1]).__name__} is still open")
        if not self._has_result:
            raise ValueError("IRBuilder.get(): nothing has been built")
        return self._result

    def find_frame(self, kind: type) -> Any:
        """The innermost open frame of ``kind``, or None."""
        for frame in reversed(self._frames):
            if isinstance(frame, kind):
                return frame
        return None

    def add(self, node: Any) -> None:
        """Give a finished node to the innermost open frame, or make it the builder's result."""
        if self._frames:
            self._frames[-1].stmts.append(node)
            return
        if self._has_result:
            raise ValueError("IRBuilder: a second node was built outside any frame; "
                             "put both in one frame (e.g. T.prim_func)")
        self._result, self._has_result = node, True

    @staticmethod
    def name(s: str, v: Any) -> Any:
        """Give ``v`` (a variable, a buffer, or a list of them) the name ``s``."""
        return _rename(v, s)

    @staticmethod
    def name_many(s: list[str], vs: list[Any]) -> list[Any]:
        if len(s) != len(vs):
            raise ValueError(f"IRBuilder.name_many: {len(s)} names for {len(vs)} values")
        return [IRBuilder.name(i, v) for i, v in zip(s, vs)]


def _rename(v: Any, name: str) -> Any:
    """Names are no part of a node's identity (structural equality maps variables), so the
    builder renames in place, as TVM's does."""
    if isinstance(v, (list, tuple)):
        for x in v:
            _rename(x, name)
    elif isinstance(v, Var):
        object.__setattr__(v, "name", name)
    elif isinstance(v, IterVar):
        _rename(v.var, name)
    elif isinstance(v, (Buffer, RelaxVar)):
        object.__setattr__(v, "name", name)
    else:
        raise TypeError(f"IRBuilder.name: cannot name {type(v).__name__} {v!r}")
    return v
