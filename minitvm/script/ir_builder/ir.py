"""The module frame of the IR builder (TVM's ``tvm.script.ir_builder.ir``, imported as ``I``)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from .base import IRBuilder, IRBuilderFrame

__all__ = ["ir_module", "IRModuleFrame", "module_attrs"]


class IRModuleFrame(IRBuilderFrame):
    def __init__(self) -> None:
        super().__init__()
        self.functions: dict[str, Any] = {}
        self.attrs: dict = {}

    def add_function(self, name: str, func: Any) -> None:
        if name in self.functions:
            raise ValueError(f"I.ir_module: a second function named {name!r}")
        self.functions[name] = func

    def finish(self, builder: IRBuilder) -> None:
        if self.stmts:
            raise ValueError("I.ir_module: only functions belong in a module frame")
        mod = IRModule(dict(self.functions))
        builder.add(mod.with_attrs(self.attrs) if self.attrs else mod)


def ir_module() -> IRModuleFrame:
    """``with I.ir_module():`` -- an IRModule of the functions built inside."""
    return IRModuleFrame()


def module_attrs(attrs: dict) -> None:
    frame = IRBuilder.current().find_frame(IRModuleFrame)
    if frame is None:
        raise ValueError("I.module_attrs must be inside I.ir_module()")
    frame.attrs.update(attrs)
