"""Named Relax pipelines: ``relax.get_pipeline("zero")`` is a pass that takes a module of
high-level Relax to one the VM code generator accepts.

* ``"zero"``    -- ``LegalizeOps`` (high-level ops -> ``call_tir`` of PrimFuncs), operator
  fusion (``AnnotateTIROpPattern``, ``FoldConstant``, ``FuseOps``, ``FuseTIR``), then the VM
  lowering: ``ToNonDataflow``, ``CallTIRRewrite``, ``StaticPlanBlockMemory``,
  ``VMBuiltinLower``, ``VMShapeLower``.
* ``"default"`` -- what ``minitvm.compile`` runs: ``FuseTransposeMatmul`` (a dense layer's
  ``x @ W.T`` as one kernel at small batch), ``DeadCodeElimination``, the same legalization
  and fusion as "zero", ``DefaultCPUSchedule`` (a schedule for every fused kernel), then the
  VM lowering.

``register_pipeline(name, fn)`` adds one: ``fn(**kwargs)`` returns a Pass.
"""

from __future__ import annotations

from typing import Any, Callable

from ..ir.module import IRModule
from ..ir.op import Op
from ..transform import Pass, Sequential
from .expr import Call, Function
from .expr_functor import ExprVisitor

__all__ = ["get_pipeline", "register_pipeline", "vm_lowering_passes", "zero_pipeline", "default_pipeline"]

#: operators the VM lowering handles itself (everything else needs LegalizeOps)
_LOWERED_BY_VM = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed",
                            "relax.call_pure_packed", "relax.builtin.alloc_tensor", "relax.memory.alloc_storage",
                            "relax.memory.alloc_tensor", "relax.print", "relax.assert_op"})


def vm_lowering_passes() -> list[Pass]:
    """The passes from call_tir-level Relax to what the VM code generator emits."""
    from . import transform as T

    return [T.ToNonDataflow(), T.CallTIRRewrite(), T.StaticPlanBlockMemory(), T.VMBuiltinLower(),
            T.VMShapeLower()]


class _OpCollector(ExprVisitor):
    def __init__(self) -> None:
        self.ops: dict[str, None] = {}

    def visit_call_(self, op: Call) -> None:
        if isinstance(op.op, Op) and op.op.name not in _LOWERED_BY_VM:
            self.ops.setdefault(op.op.name)
        super().visit_call_(op)


def high_level_ops(mod: IRModule) -> list[str]:
    """Names of the operators in ``mod`` that only LegalizeOps can lower, in order of use."""
    c = _OpCollector()
    for _, func in mod.items():
        if isinstance(func, Function):
            c.visit_expr(func)
    return list(c.ops)


def optimization_passes() -> list[Pass]:
    """High-level ops to PrimFuncs, then operator fusion: what "zero" runs before the lowering."""
    from . import transform as T

    return [T.LegalizeOps(), T.AnnotateTIROpPattern(), T.FoldConstant(), T.FuseOps(), T.FuseTIR()]


def zero_pipeline(**kwargs: Any) -> Pass:
    """LegalizeOps, operator fusion (AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR),
    then the VM lowering -- TVM's zero pipeline."""
    return Sequential([*optimization_passes(), *vm_lowering_passes()], name="zero")


def default_pipeline(**kwargs: Any) -> Pass:
    """What ``minitvm.compile`` runs: FuseTransposeMatmul + DeadCodeElimination, the zero
    pipeline's legalization and fusion, default CPU schedules for every (fused) kernel
    (``tir.transform.DefaultCPUSchedule``), then the VM lowering."""
    from ..tir.transform import DefaultCPUSchedule
    from .transform import DeadCodeElimination, FuseTransposeMatmul

    return Sequential([FuseTransposeMatmul(), DeadCodeElimination(), *optimization_passes(), DefaultCPUSchedule(),
                       *vm_lowering_passes()], name="default")


_PIPELINES: dict[str, Callable[..., Pass]] = {"zero": zero_pipeline, "default": default_pipeline,
                                              "default_build": default_pipeline}


def register_pipeline(name: str, fn: Callable[..., Pass], override: bool = False) -> None:
    """Make ``get_pipeline(name)`` return ``fn(**kwargs)``."""
    if name in _PIPELINES and not override:
        raise ValueError(f"pipeline {name!r} is already registered; pass override=True to replace it")
    if not callable(fn):
        raise TypeError(f"register_pipeline({name!r}): expected a function returning a Pass, got {fn!r}")
    _PIPELINES[name] = fn


def get_pipeline(name: str = "zero", **kwargs: Any) -> Pass:
    """The pipeline registered as ``name`` ("zero", "default", or one you registered)."""
    fn = _PIPELINES.get(name)
    if fn is None:
        raise ValueError(f"unknown pipeline {name!r}; registered: {', '.join(sorted(_PIPELINES))}")
    p = fn(**kwargs)
    if not isinstance(p, Pass):
        raise TypeError(f"pipeline {name!r} returned {type(p).__name__}, not a Pass")
    return p
