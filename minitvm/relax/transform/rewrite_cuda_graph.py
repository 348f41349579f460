"""RewriteCUDAGraph: nothing, unless ``PassContext`` config ``"relax.backend.use_cuda_graph"`` asks.

In TVM the pass lifts the statically planned, kernel-only regions of a function into
functions that a CUDA graph captures once and replays.  It is off by default (TVM's pipelines
run it everywhere and it changes nothing then).  minitvm has no CUDA device and no graph
runtime, so when the option is on the pass refuses with an error instead of pretending.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ...transform.pass_infra import register_pass_config

__all__ = ["RewriteCUDAGraph", "USE_CUDA_GRAPH"]

#: TVM's config option that turns the rewrite on
USE_CUDA_GRAPH = "relax.backend.use_cuda_graph"
register_pass_config(USE_CUDA_GRAPH, bool)


@module_pass(opt_level=0, name="RewriteCUDAGraph")
class RewriteCUDAGraph:
    """The module unchanged unless CUDA graphs are asked for (then an error): ``RewriteCUDAGraph()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if ctx.get_config(USE_CUDA_GRAPH, False):
            raise NotImplementedError(
                f"RewriteCUDAGraph: PassContext config {USE_CUDA_GRAPH!r} is True, but minitvm has no CUDA "
                "device and no CUDA graph runtime to capture the rewritten regions; unset the option")
        return mod
