"""Named Relax pipelines, as TVM's ``relax.get_pipeline(name)``: each returns a Pass that
rewrites a module of Relax functions and PrimFuncs and leaves it at the level of
``R.call_tir`` into PrimFuncs (what ``mod.show()`` then prints).

* ``"zero"``    -- TVM's zero pipeline: ``LegalizeOps`` (high-level ops -> ``call_tir`` of
  PrimFuncs), then operator fusion (``AnnotateTIROpPattern``, ``FoldConstant``, ``FuseOps``,
  ``FuseTIR``); then, once a MetaSchedule database is current, the tuned schedules from it.
* ``"static_shape_tuning"`` -- TVM's (:func:`static_shape_tuning_pipeline`): the zero
  pipeline, then MetaSchedule tunes the kernels and applies its database.
* ``"default"`` (also ``"default_build"``) -- what ``minitvm.compile`` runs on a module
  unless told otherwise: ``FuseTransposeMatmul`` (a dense layer's ``x @ W.T`` as one kernel
  at small batch), ``DeadCodeElimination``, the same legalization and fusion as "zero",
  then the tuned schedules of a tuning database in scope, and ``DefaultCPUSchedule`` for every
  other fused kernel.  Every pass in it leaves code
  it has already handled alone, so a module that went through "zero" first compiles fine.

The lowering to VM builtins is not part of any of them: ``relax.build`` (and so
``minitvm.compile``) runs it after the pipeline, as two stages named as TVM's backends name
them -- :func:`dataflow_lower_passes` (``ToNonDataflow``, ``CallTIRRewrite``) and
:func:`finalize_passes` (``StaticPlanBlockMemory``, ``VMBuiltinLower``, ``VMShapeLower``);
:func:`vm_lowering_passes` is both.  Those passes leave lowered code alone, so compiling a
module that is already lowered does not lower it again.

``register_pipeline(name, fn)`` adds one: ``fn(**kwargs)`` returns a Pass (``@register_pipeline(name)``
on ``fn`` does the same, as in TVM).  A registered pipeline may end with the VM lowering
itself (TVM's ``optimize_llm.py`` lists ``ToNonDataflow`` ... ``AttachGlobalSymbol``);
``relax.build`` then does not lower again.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import topi
from ..ir.module import IRModule
from ..target import Target
from ..tir.transform import DefaultCPUSchedule
from ..tir.transform.default_schedule import RULES as _DEFAULT_RULES
from ..transform import Pass, PassContext, PassInfo, Sequential, tuning_database
from . import transform as T
from .analysis.remove_unused import bindings_outside_dataflow_kept
from .transform import AlterOpLayout, DeadCodeElimination, FuseTransposeMatmul, LegalizeOps
from .transform.fold_batchnorm_to_conv2d import FoldInferenceBatchnormToConv2D
from .transform.legalize_ops import high_level_ops  # noqa: F401 - where learners and tests look for it

__all__ = ["get_pipeline", "register_pipeline", "zero_pipeline", "default_pipeline", "default_build_pipeline",
           "graph_rewrite_passes", "default_schedule_rules", "legalize_passes", "default_kernel_passes",
           "dataflow_lower_passes", "finalize_passes", "vm_lowering_passes", "static_shape_tuning_pipeline",
           "weight_prepack_passes"]

def legalize_passes(target: Any = None) -> list[Pass]:
    """High-level ops to PrimFuncs, then operator fusion: TVM's CPU ``legalize_passes``, the
    body of the zero pipeline.  ``target`` is accepted as TVM's backends take it; the passes
    are the same for every target minitvm has."""

    return [T.LegalizeOps(), T.AnnotateTIROpPattern(), T.FoldConstant(), T.FuseOps(), T.FuseTIR()]


#: the older name of :func:`legalize_passes`
optimization_passes = legalize_passes


def dataflow_lower_passes(target: Any = None) -> list[Pass]:
    """Reshape kernels back to views (``RewriteDataflowReshape``, while the dataflow blocks still
    say which values cannot escape), then out of dataflow blocks, ``call_tir`` -> explicit output
    allocation + a kernel call (TVM's ``dataflow_lower_passes``)."""

    return [T.RewriteDataflowReshape(), T.ToNonDataflow(), T.CallTIRRewrite()]


def finalize_passes(target: Any = None) -> list[Pass]:
    """Memory planning, allocations -> VM builtins, shapes -> the VM's shape heap."""

    return [T.StaticPlanBlockMemory(), T.VMBuiltinLower(), T.VMShapeLower()]


def vm_lowering_passes(target: Any = None) -> list[Pass]:
    """The passes from call_tir-level Relax to what the VM code generator emits: what
    ``relax.build`` runs after the Relax pipeline."""
    return [*dataflow_lower_passes(target), *finalize_passes(target)]


class _ZeroPipeline(Sequential):
    """The zero pipeline's passes, then, when a tuning database is in scope (``with database:``),
    its schedules (``MetaScheduleApplyDatabase``), as TVM's zero pipeline does."""

    def __init__(self, passes: list[Pass], name: str, enable_warning: bool = False) -> None:
        super().__init__(passes, name=name)
        self.enable_warning = enable_warning

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = super().transform(mod, ctx)
        if tuning_database.current() is not None:
            mod = T.MetaScheduleApplyDatabase(enable_warning=self.enable_warning)(mod)
        return mod


def zero_pipeline(*, enable_warning: bool = False) -> Pass:
    """TVM's zero pipeline: LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR
    (then a current tuning database).  ``enable_warning`` makes LegalizeOps warn about ops it
    has no legalization for."""

    passes = legalize_passes()
    passes[0] = LegalizeOps(enable_warning=enable_warning)
    return _ZeroPipeline(passes, name="zero", enable_warning=enable_warning)


def default_pipeline() -> Pass:
    """What ``minitvm.compile`` runs: the graph rewrites, FuseTransposeMatmul +
    DeadCodeElimination, the zero pipeline's legalization and fusion, a tuning database's
    kernels when one is in scope, then default CPU schedules for every other (fused) kernel
    (``tir.transform.DefaultCPUSchedule``).  The VM lowering follows in ``relax.build``."""
    # a tuning database in scope gives its kernels first; DefaultCPUSchedule skips those
    return _DefaultPipeline([*default_kernel_passes(), _ApplyDatabaseInScope(), *weight_prepack_passes(
        DefaultCPUSchedule(rules=default_schedule_rules()))], name="default")


def weight_prepack_passes(schedule: Pass) -> list[Pass]:
    """``schedule`` between the passes that let it re-lay-out weights once, at compile time:
    ``AttachAttrLayoutFreeBuffers`` tells each kernel which arguments are constants; a schedule
    that packs one (a large matmul's right operand into column panels) leaves the copy at its
    root, annotated; ``SplitLayoutRewritePreproc`` moves it into a function of its own, which
    ``FoldConstant`` runs on the constant (TVM's MetaSchedule does the same with tuned
    schedules); ``DeadCodeElimination`` drops the functions no longer called."""
    return [T.AttachAttrLayoutFreeBuffers(), schedule, T.SplitLayoutRewritePreproc(), T.FoldConstant(),
            DeadCodeElimination()]


class _DefaultPipeline(Sequential):
    """Its dead-code eliminations (its own, FuseTIR's, FoldConstant's) prune dataflow blocks only:
    TVM's default build pipeline has none, so an unused pure call outside a dataflow block (a
    packed function writing an argument, a callback) runs there and must run here too."""

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        with bindings_outside_dataflow_kept():
            return super().transform(mod, ctx)


def default_kernel_passes() -> list[Pass]:
    """The passes of the default pipeline that form its kernels (before any schedule): the
    graph rewrites, then the zero pipeline's legalization and fusion with FuseOps extended by
    the attention regions.  ``meta_schedule.relax_integration.extract_tasks`` runs them to
    find the kernels to tune."""
    fusion = [T.FuseAttention() if p.info.name == "FuseOps" else p for p in legalize_passes()]
    return [*graph_rewrite_passes(), FuseTransposeMatmul(), DeadCodeElimination(), *fusion]


def graph_rewrite_passes() -> list[Pass]:
    """The graph-level rewrites a serving runtime does before it picks kernels, first in the
    default pipeline: ``RemoveRedundantReshape`` (no-op reshapes and copies go),
    ``SplitIntoSlices`` (a split whose parts are only copied on becomes slices that fuse into the copies),
    ``FoldInferenceBatchnormToConv2D`` (an inference BatchNorm into the convolution's
    constants), ``FoldExplicitPadding`` (a zero pad before a convolution becomes its padding), ``AlterOpLayout``
    (convolutions get the x86 kernel, their weights packed once, now; an overlapping max pool the
    separable one).  ``FuseAttention`` (short
    attention as one kernel) takes FuseOps' place later in the pipeline."""
    return [T.RemoveRedundantReshape(), T.SplitIntoSlices(), FoldInferenceBatchnormToConv2D(), T.FoldExplicitPadding(),
            AlterOpLayout()]


def default_schedule_rules() -> list:
    """``DefaultCPUSchedule``'s rules in the default pipeline: the x86 kernels' own schedules
    (``topi.x86``) first, then the generic rules (``tir.transform.default_schedule.RULES``)."""
    return [topi.x86.schedule_conv2d_nchw_packed, topi.x86.schedule_max_pool2d_separable, *_DEFAULT_RULES]


class _ApplyDatabaseInScope(Pass):
    """``MetaScheduleApplyDatabase`` when a tuning database is in scope, else nothing."""

    def __init__(self) -> None:
        self.info = PassInfo(0, "MetaScheduleApplyDatabaseInScope", ())

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return T.MetaScheduleApplyDatabase()(mod) if tuning_database.current() is not None else mod


class _StaticShapeTuning(Pass):
    def __init__(self, total_trials: int, target: Any, work_dir: str, max_trials_per_task: int | None) -> None:
        self.info = PassInfo(0, "static_shape_tuning", ())
        self.total_trials, self.work_dir = int(total_trials), str(work_dir)
        self.max_trials_per_task = max_trials_per_task
        self.target = target if isinstance(target, Target) else Target(target)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        # the tuning pass reads the target in scope when it is made, as TVM's
        with self.target:
            tune = [T.MetaScheduleTuneIRMod(params={}, work_dir=self.work_dir, max_trials_global=self.total_trials,
                                            max_trials_per_task=self.max_trials_per_task)]
            tune = tune if self.total_trials > 0 else []  # no trials: only what work_dir holds already
            return Sequential([T.DecomposeOpsForInference(), T.CanonicalizeBindings(), zero_pipeline(), *tune,
                               T.MetaScheduleApplyDatabase(self.work_dir)], name="static_shape_tuning")(mod)


def static_shape_tuning_pipeline(total_trials: int, target: Any, work_dir: str = "tuning_logs",
                                 cpu_weight_prepack: bool = False, max_trials_per_task: int | None = None) -> Pass:
    """TVM's tuning pipeline for a model of static shapes: ``DecomposeOpsForInference``,
    ``CanonicalizeBindings``, the zero pipeline, then MetaSchedule tunes every kernel within
    ``total_trials`` trials (``max_trials_per_task`` each at most; 0 trials: no tuning, only
    the records already in ``work_dir``) and the best schedules found in ``work_dir``'s
    database replace the kernels.  Compile the result with ``minitvm.compile(mod, target)``."""
    if cpu_weight_prepack:
        raise NotImplementedError("static_shape_tuning_pipeline: cpu_weight_prepack=True (packing weights into "
                                  "the tuned layouts through a main_transform_params function) is not supported")
    if int(total_trials) < 0:
        raise ValueError(f"static_shape_tuning_pipeline: total_trials must be >= 0, got {total_trials}")
    return _StaticShapeTuning(total_trials, target, work_dir, max_trials_per_task)


#: TVM's name for the pipeline ``tvm.compile`` runs by default
default_build_pipeline = default_pipeline

_PIPELINES: dict[str, Callable[..., Pass]] = {"zero": zero_pipeline, "default": default_pipeline,
                                              "default_build": default_build_pipeline,
                                              "static_shape_tuning": static_shape_tuning_pipeline}


def register_pipeline(name: str, fn: Callable[..., Pass] | None = None, override: bool = False) -> Any:
    """Make ``get_pipeline(name, **kwargs)`` return ``fn(**kwargs)``.  Without ``fn``, a
    decorator, as TVM's ``@register_pipeline("opt_llm")`` (which returns the function)."""
    if name in _PIPELINES and not override:
        raise ValueError(f"pipeline {name!r} is already registered; pass override=True to replace it")
    if fn is None:
        def register(func: Callable[..., Pass]) -> Callable[..., Pass]:
            register_pipeline(name, func, override=override)
            return func

        return register
    if not callable(fn):
        raise TypeError(f"register_pipeline({name!r}): expected a function returning a Pass, got {fn!r}")
    _PIPELINES[name] = fn
    return fn


def get_pipeline(name: str = "zero", **kwargs: Any) -> Pass:
    """The pipeline registered as ``name`` ("zero", "default", or one you registered)."""
    fn = _PIPELINES.get(name)
    if fn is None:
        raise ValueError(f"unknown pipeline {name!r}; registered: {', '.join(sorted(_PIPELINES))}")
    p = fn(**kwargs)
    if not isinstance(p, Pass):
        raise TypeError(f"pipeline {name!r} returned {type(p).__name__}, not a Pass")
    return p
