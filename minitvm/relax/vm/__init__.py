"""The Relax -> VM compiler: :mod:`.codegen` turns lowered Relax functions into bytecode;
:mod:`.ops` holds the memory operators the lowering passes introduce; :mod:`.ir_text`
dumps Relax functions as text for debugging.  The runtime half (bytecode format,
Executable, VirtualMachine) is :mod:`minitvm.runtime.vm`."""

from . import ops
from .codegen import VMCodegenError, codegen, param_info
from .ir_text import expr_text, function_text, module_text

__all__ = ["codegen", "param_info", "VMCodegenError", "ops", "module_text", "function_text", "expr_text"]
