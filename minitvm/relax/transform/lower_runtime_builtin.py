"""LowerRuntimeBuiltin: the operators the VM runs as builtins become calls of them (TVM's name).

What :mod:`.vm_builtin_lower` describes (allocations, kills, reshapes, packed calls,
``call_tir_dyn`` ...), with TVM's one difference: ``R.builtin.alloc_tensor`` must have been
lowered by ``LowerAllocTensor`` already, and is refused with an error saying so.  In TVM's
pipeline it runs after ``KillAfterLastUse`` and before ``VMShapeLower``.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import Function
from ._util import map_functions
from .vm_builtin_lower import _BuiltinLower

__all__ = ["LowerRuntimeBuiltin"]


class _RuntimeBuiltinLower(_BuiltinLower):
    pass_name = "LowerRuntimeBuiltin"
    lowers_alloc_tensor = False


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _RuntimeBuiltinLower(mod).visit_expr(func)


@module_pass(opt_level=0, name="LowerRuntimeBuiltin")
class LowerRuntimeBuiltin:
    """Memory operators, kills and reshapes -> VM builtin calls: ``LowerRuntimeBuiltin()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
