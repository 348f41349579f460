"""Relax passes, one per module (TVM's names): ``relax.transform.CallTIRRewrite()(mod)``.

Lowering to the VM, in the order :func:`minitvm.relax.get_pipeline` runs them:
:class:`ToNonDataflow`, :class:`CallTIRRewrite`, :class:`StaticPlanBlockMemory`,
:class:`VMBuiltinLower`, :class:`VMShapeLower`.  ``LegalizeOps`` (high-level ops ->
``call_tir`` of PrimFuncs) comes first.
"""

from .call_tir_rewrite import CallTIRRewrite
from .legalize_ops import LegalizeOps
from .static_plan_block_memory import StaticPlanBlockMemory, memory_plan
from .to_non_dataflow import ToNonDataflow
from .vm_builtin_lower import VMBuiltinLower
from .vm_shape_lower import VMShapeLower

__all__ = ["CallTIRRewrite", "LegalizeOps", "StaticPlanBlockMemory", "memory_plan", "ToNonDataflow", "VMBuiltinLower",
           "VMShapeLower"]
