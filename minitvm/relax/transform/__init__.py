"""Relax passes, one per module (TVM's names): ``relax.transform.CallTIRRewrite()(mod)``.

Lowering to the VM, in the order ``relax.build`` runs them after the Relax pipeline:
:class:`ToNonDataflow`, :class:`CallTIRRewrite`, :class:`StaticPlanBlockMemory`,
:class:`VMBuiltinLower`, :class:`VMShapeLower`.  ``LegalizeOps`` (high-level ops ->
``call_tir`` of PrimFuncs) comes first.  TVM's own lowering, which a pipeline may spell out
(TVM's ``optimize_llm.py`` does; ``relax.build`` then lowers nothing again):
:class:`RewriteDataflowReshape`, ``ToNonDataflow``, :class:`RemovePurityChecking`,
``CallTIRRewrite``, ``StaticPlanBlockMemory``, :class:`RewriteCUDAGraph`,
:class:`LowerAllocTensor`, :class:`KillAfterLastUse`, :class:`LowerRuntimeBuiltin`,
``VMShapeLower``, :class:`AttachGlobalSymbol`, :class:`AttachExternModules`.
"""

from .call_tir_rewrite import CallTIRRewrite
from .legalize_ops import LegalizeOps
from .static_plan_block_memory import StaticPlanBlockMemory, memory_plan
from .to_non_dataflow import ToNonDataflow
from .vm_builtin_lower import VMBuiltinLower
from .vm_shape_lower import VMShapeLower

__all__ = ["CallTIRRewrite", "LegalizeOps", "StaticPlanBlockMemory", "memory_plan", "ToNonDataflow", "VMBuiltinLower",
           "VMShapeLower"]
from .fold_constant import FoldConstant  # noqa: E402, I001  (appended one per pass, not sorted)
from .dead_code_elimination import DeadCodeElimination  # noqa: E402
from .bind_params import BindParams  # noqa: E402
from .canonicalize_bindings import CanonicalizeBindings  # noqa: E402
from .eliminate_common_subexpr import EliminateCommonSubexpr  # noqa: E402
from .convert_to_dataflow import ConvertToDataflow  # noqa: E402
from .annotate_tir_op_pattern import AnnotateTIROpPattern  # noqa: E402
from .fuse_ops import FuseOps  # noqa: E402
from .fuse_tir import FuseTIR  # noqa: E402
from .fuse_transpose_matmul import FuseTransposeMatmul  # noqa: E402
from .meta_schedule_apply_database import MetaScheduleApplyDatabase  # noqa: E402
from .meta_schedule_tune_tir import MetaScheduleTuneIRMod, MetaScheduleTuneTIR  # noqa: E402
from . import transform  # noqa: E402  (TVM's module path relax.transform.transform)
from .fold_batchnorm_to_conv2d import FoldBatchnormToConv2D, FoldInferenceBatchnormToConv2D  # noqa: E402
from .alter_op_layout import AlterOpLayout  # noqa: E402
from .fold_weight_layout import FoldWeightLayout  # noqa: E402
from .fold_explicit_padding import FoldExplicitPadding  # noqa: E402
from .fuse_attention import FuseAttention  # noqa: E402
from .remove_redundant_reshape import RemoveRedundantReshape  # noqa: E402
from .split_into_slices import SplitIntoSlices  # noqa: E402  (minitvm's: no TVM pass of this name)
# TVM's VM lowering passes that optimize_llm.py's pipeline names (issue 33)
from .rewrite_dataflow_reshape import RewriteDataflowReshape  # noqa: E402
from .remove_purity_checking import RemovePurityChecking  # noqa: E402
from .rewrite_cuda_graph import RewriteCUDAGraph  # noqa: E402
from .lower_alloc_tensor import LowerAllocTensor  # noqa: E402
from .kill_after_last_use import KillAfterLastUse  # noqa: E402
from .lower_runtime_builtin import LowerRuntimeBuiltin  # noqa: E402
from .attach_global_symbol import AttachGlobalSymbol  # noqa: E402
from .attach_external_modules import AttachExternModules  # noqa: E402
from .quantize_weights import FuseDequantizeMatmul, QuantizeLinearWeights  # noqa: E402
from .fuse_ops_by_pattern import FuseOpsByPattern, FusionPattern, PatternCheckContext  # noqa: E402
from .merge_composite_functions import MergeCompositeFunctions  # noqa: E402
from .run_codegen import RunCodegen  # noqa: E402
from .convert_layout import ConvertLayout  # noqa: E402
from .normalize import Normalize  # noqa: E402
from .reorder_permute_dims_after_concat import ReorderPermuteDimsAfterConcat  # noqa: E402
from .combine_parallel_matmul import CombineParallelMatmul  # noqa: E402
from .alter_op_impl import AlterOpImpl  # noqa: E402
from .optimize_layout_transform import OptimizeLayoutTransform  # noqa: E402
from .gradient import Gradient  # noqa: E402
from .to_mixed_precision import ToMixedPrecision  # noqa: E402
from .attach_attr_layout_free_buffers import AttachAttrLayoutFreeBuffers  # noqa: E402
from .realize_vdevice import RealizeVDevice  # noqa: E402
from .update_vdevice import UpdateVDevice  # noqa: E402
from .decompose_ops import DecomposeOpsForInference, DecomposeOpsForTraining  # noqa: E402
__all__ += ["DecomposeOpsForInference", "DecomposeOpsForTraining", "MetaScheduleTuneIRMod", "ToMixedPrecision",
            "AttachAttrLayoutFreeBuffers", "SplitIntoSlices"]
from ... import transform as _pass_infra  # noqa: E402
from ...ir import transform as _ir_pass_infra  # noqa: E402
from . import apply_pass_to_function as _apply_pass_to_function  # noqa: E402
from .adjust_matmul_order import AdjustMatmulOrder  # noqa: E402
from .bind_symbolic_vars import BindSymbolicVars  # noqa: E402
from .bundle_model_params import BundleModelParams  # noqa: E402
from .compute_prim_value import ComputePrimValue  # noqa: E402
from .expand_matmul_of_sum import ExpandMatmulOfSum  # noqa: E402
from .expand_tuple_arguments import ExpandTupleArguments  # noqa: E402
from .inline_private_functions import InlinePrivateFunctions  # noqa: E402
from .lambda_lift import LambdaLift  # noqa: E402
from .lazy_transform_params import LazyGetInput, LazySetOutput, LazyTransformParams  # noqa: E402
from .lift_transform_params import LiftTransformParams  # noqa: E402
from .remove_unused_outputs import RemoveUnusedOutputs  # noqa: E402
from .remove_unused_parameters import RemoveUnusedParameters  # noqa: E402
from .reorder_take_after_matmul import ReorderTakeAfterMatmul  # noqa: E402
from .topological_sort import TopologicalSort  # noqa: E402
from .update_param_struct_info import UpdateParamStructInfo  # noqa: E402

# tvm.ir.transform.ApplyPassToFunction: installed on the pass-infra floor (it needs Relax's ExternFunc)
_pass_infra.ApplyPassToFunction = _ir_pass_infra.ApplyPassToFunction = _apply_pass_to_function.ApplyPassToFunction
from .dataflow_inplace import DataflowUseInplaceCalls  # noqa: E402,F401 - the name only: calling it raises
from .normalize_global_var import NormalizeGlobalVar  # noqa: E402
from .split_layout_rewrite_preproc import SplitLayoutRewritePreproc  # noqa: E402
