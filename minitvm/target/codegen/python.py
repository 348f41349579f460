"""The ``python`` target: run lowered PrimFuncs in the numpy reference interpreter.

Arguments are checked exactly as for native code (one shared :class:`FunctionSignature`),
so the interpreter is a drop-in oracle for differential tests.
"""

from __future__ import annotations

from typing import Any

from ...runtime.module import Module
from ...runtime.registry import PackedFunc
from ...tir.function import PrimFunc
from ..interpreter import run_prim_func
from ..signature import FunctionSignature
from ..target import Target

__all__ = ["build_python", "InterpretedFunction", "PythonModule"]


class InterpretedFunction:
    """A PrimFunc run by the interpreter, which checks the arguments as native code does."""

    def __init__(self, name: str, func: PrimFunc):
        self.name = self.__name__ = name
        self.func = func
        self.signature = FunctionSignature.from_prim_func(name, func)
        self._run = run_prim_func

    def __call__(self, *args: Any) -> None:
        self._run(self.func, args, signature=self.signature)

    def __repr__(self) -> str:
        return f"<interpreted {self.name}({self.signature.describe()})>"


class PythonModule(Module):
    """Functions run by the TIR interpreter; ``get_source()`` shows the TIR they run."""

    def __init__(self, funcs: dict[str, PrimFunc], target: Target):
        super().__init__(type_key="python")
        self.target = target
        self._prim_funcs = dict(funcs)
        for name, func in funcs.items():
            self._functions[name] = PackedFunc(InterpretedFunction(name, func), name)

    def get_source(self, fmt: str = "") -> str:
        return "\n\n".join(str(f) for f in self._prim_funcs.values())


def build_python(funcs: dict[str, PrimFunc], target: Target | str = "python") -> PythonModule:
    target = target if isinstance(target, Target) else Target(target)
    return PythonModule(funcs, target)
