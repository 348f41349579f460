"""TVM's bring-your-own-codegen tutorial, our own copy of its workflow: the example NPU's and
TensorRT's pattern tables partition a conv + ReLU module; neither backend has a code generator in
minitvm (as in a TVM build without them), so the partitioned modules are checked by structure."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
import minitvm.relax.backend.contrib.example_npu  # noqa: F401 -- registers the example NPU's patterns
from minitvm import relax
from minitvm.relax.backend import get_patterns_with_prefix
from minitvm.relax.backend.contrib.tensorrt import partition_for_tensorrt
from minitvm.relax.transform import FuseOpsByPattern, MergeCompositeFunctions
from minitvm.script import relax as R


@tvm.script.ir_module
class DepthwiseThenConvReLU:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), dw: R.Tensor((4, 1, 3, 3), "float32"),
             w: R.Tensor((6, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, dw, groups=4)
            b = R.nn.conv2d(a, w)
            out = R.nn.relu(b)
            R.output(out)
        return out


def _offloaded(mod):
    """{function name: (Codegen, [Composite of each inner function])} of the partitioned functions."""
    found = {}
    for gv, func in mod.functions_items():
        if "Codegen" in func.attrs:
            inner = [b.value.attrs["Composite"] for block in func.body.blocks for b in block.bindings
                     if isinstance(b.value, relax.Function)]
            found[gv.name_hint] = (func.attrs["Codegen"], sorted(inner))
    return found


def test_example_npu_takes_the_fused_conv_relu_and_the_grouped_conv_as_depthwise():
    mod = FuseOpsByPattern(get_patterns_with_prefix("example_npu"), bind_constants=False,
                           annotate_codegen=True)(DepthwiseThenConvReLU)
    mod = MergeCompositeFunctions()(mod)
    composites = sorted(c for _, cs in _offloaded(mod).values() for c in cs)
    assert composites == ["example_npu.conv2d_relu_fused", "example_npu.depthwise_conv2d"]
    assert {codegen for codegen, _ in _offloaded(mod).values()} == {"example_npu"}
    assert tvm.get_global_func("relax.ext.example_npu", True) is None  # no code generator, as TVM's CPU build
    # the fused pattern wins over the plain conv2d registered before it, the higher priority first
    names = [p.name for p in get_patterns_with_prefix("example_npu")]
    assert names.index("example_npu.conv2d_relu_fused") < names.index("example_npu.conv2d")


def test_partition_for_tensorrt_merges_the_chain_into_one_function_with_the_weight_bound():
    w = np.random.default_rng(5).standard_normal((6, 4, 3, 3)).astype("float32")
    mod = partition_for_tensorrt(relax.transform.BindParams("main", {"w": w})(DepthwiseThenConvReLU))
    (codegen, composites), = _offloaded(mod).values()
    assert codegen == "tensorrt"
    assert composites == ["tensorrt.nn.conv2d", "tensorrt.nn.conv2d", "tensorrt.nn.relu"]
    assert [p.name_hint for p in mod["main"].params] == ["x", "dw"]  # w became a constant
