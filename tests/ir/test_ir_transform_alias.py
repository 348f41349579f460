"""minitvm.ir.transform: the pass infrastructure under TVM's name (the MLC course writes
``@tvm.ir.transform.module_pass``)."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax


def test_ir_transform_is_the_pass_infrastructure():
    from minitvm.ir.transform import PassContext, Sequential, module_pass

    assert minitvm.ir.transform.PassContext is PassContext is minitvm.transform.PassContext
    assert Sequential is minitvm.transform.Sequential and module_pass is minitvm.transform.module_pass


def test_module_pass_class_from_ir_transform_runs():
    calls = []

    @minitvm.ir.transform.module_pass(opt_level=0, name="CountFunctions")
    class CountFunctions:
        def transform_module(self, mod, ctx):
            calls.append(len(mod.get_global_vars()))
            return mod

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(y)
    mod = bb.get()
    with minitvm.ir.transform.PassContext(opt_level=3):
        out = minitvm.ir.transform.Sequential([CountFunctions()])(mod)
    assert calls == [1]
    ex = minitvm.compile(out, "llvm")
    data = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(data)).numpy()
    np.testing.assert_allclose(got, data + data, rtol=1e-6)
