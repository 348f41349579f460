"""The MLC end-to-end chapter's module written in TVMScript, built and run on the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax

from .mlp_models import mlp_inputs, mlp_reference

pytest.importorskip("minitvm.script.relax", reason="Relax TVMScript has not landed")

from minitvm.script import ir as I  # noqa: E402
from minitvm.script import relax as R  # noqa: E402
from minitvm.script import tir as T  # noqa: E402


@I.ir_module
class MyModule:
    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"), W: T.Buffer((128, 784), "float32"),
                B: T.Buffer((128,), "float32"), Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        Y = T.alloc_buffer((1, 128), "float32")
        for i, j, k in T.grid(1, 128, 784):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 128):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @T.prim_func
    def relu0(X: T.Buffer((1, 128), "float32"), Y: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "relu0", "tir.noalias": True})
        for i, j in T.grid(1, 128):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear1(X: T.Buffer((1, 128), "float32"), W: T.Buffer((10, 128), "float32"),
                B: T.Buffer((10,), "float32"), Z: T.Buffer((1, 10), "float32")):
        T.func_attr({"global_symbol": "linear1", "tir.noalias": True})
        Y = T.alloc_buffer((1, 10), "float32")
        for i, j, k in T.grid(1, 10, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 10):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"), b0: R.Tensor((128,), "float32"),
             w1: R.Tensor((10, 128), "float32"), b1: R.Tensor((10,), "float32")):
        cls = MyModule
        with R.dataflow():
            lv0 = R.call_tir(cls.linear0, (x, w0, b0), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_tir(cls.relu0, (lv0,), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            out = R.call_tir(cls.linear1, (lv1, w1, b1), out_sinfo=R.Tensor((1, 10), dtype="float32"))
            R.output(out)
        return out


def test_tvmscript_module_builds_and_matches_numpy():
    ex = relax.build(MyModule, target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    x, params = mlp_inputs(1, seed=11)
    out = vm["main"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params])
    np.testing.assert_allclose(out.numpy(), mlp_reference(x, *params), rtol=1e-5, atol=1e-5)


def test_memory_reuse_is_visible_in_the_printed_ir():
    mod = relax.transform.ToNonDataflow()(MyModule)
    mod = relax.transform.StaticPlanBlockMemory()(relax.transform.CallTIRRewrite()(mod))
    text = mod["main"].script()
    assert text.count("R.memory.alloc_storage(") == 2
    assert "R.memory.alloc_tensor(storage, " in text and "R.memory.alloc_tensor(storage1, " in text
    assert text.count("R.builtin.alloc_tensor(") == 1  # the result, which escapes
