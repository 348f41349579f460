"""TVM's quick start, as written: an nn.Module MLP, export_tvm, the zero pipeline, mod.show().

What mod.show() prints has TVM's structure: `forward` calls, with R.call_tir, the two weight
transposes and the two fused kernels FuseOps/FuseTIR name after the operators they hold."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.testing.nn_models import QuickStartMLP as MLPModel


def _call_tirs(func):
    """(bound variable, callee, argument names, output shape) of each R.call_tir in ``func``, in order."""
    call_tir = relax.Op.get("relax.call_tir")
    calls = []
    for block in func.body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, relax.Call) and v.op == call_tir:
                args = [a.name_hint for a in v.args[1].fields]
                shape = [int(d) for d in v.sinfo_args[0].shape.values]
                calls.append((b.var.name_hint, v.args[0].name_hint, args, shape))
    return calls


def test_quick_start_prints_tvms_structure_after_the_zero_pipeline(capsys):
    mod, param_spec = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    mod = relax.get_pipeline("zero")(mod)
    mod.show()
    text = capsys.readouterr().out

    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == [
        "forward", "fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"]
    assert isinstance(mod["forward"], relax.Function)
    for name in ("fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"):
        assert isinstance(mod[name], tvm.tir.PrimFunc) and f"def {name}(" in text
    # forward: one dataflow block of four call_tir, in TVM's order, and no VM lowering yet
    fc1_t, relu, fc2_t, out = _call_tirs(mod["forward"])
    assert fc1_t == ("permute_dims", "transpose", ["fc1_weight"], [784, 256])
    assert relu[1:] == ("fused_matmul_add_relu", ["x", "permute_dims", "fc1_bias"], [1, 256])
    assert fc2_t == ("permute_dims1", "transpose1", ["fc2_weight"], [256, 10])
    assert out[1:] == ("fused_matmul1_add1", [relu[0], "permute_dims1", "fc2_bias"], [1, 10])
    assert "with R.dataflow():" in text and text.count("R.call_tir(cls.") == 4
    for lowered in ("alloc_storage", "alloc_tensor", "call_packed", "vm.builtin"):
        assert lowered not in text
    assert "R.call_tir(cls.fused_matmul_add_relu, (x, permute_dims, fc1_bias)" in text
    assert "out_sinfo=R.Tensor((1, 10), dtype=\"float32\")" in text

    # and it runs, as the quick start's next cells do
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(13)
    data = rng.standard_normal((1, 784)).astype("float32")
    params = [rng.standard_normal(tuple(int(s) for s in p.shape)).astype("float32") * 0.05 for _, p in param_spec]
    w1, b1, w2, b2 = params
    got = vm["forward"](tvm.nd.array(data), *[tvm.nd.array(p) for p in params]).numpy()
    np.testing.assert_allclose(got, np.maximum(data @ w1.T + b1, 0) @ w2.T + b2, rtol=1e-4, atol=1e-4)

