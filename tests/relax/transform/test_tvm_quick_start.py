"""TVM's quick start, pass by pass: the nn.Module MLP 784 -> 256 -> 10 exported with export_tvm,
then LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR (TVM's zero pipeline)
give the module TVM gives: ``forward`` calls the two transposes and the two fused kernels
through ``R.call_tir``, with TVM's names for functions, variables, buffers and blocks."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax import transform
from minitvm.relax.frontend import nn
from minitvm.script import from_source
from minitvm.testing.nn_models import QuickStartMLP as MLPModel
from minitvm.tir import PrimFunc


def _zero_passes(mod):
    """TVM's zero pipeline, pass by pass."""
    for p in (transform.LegalizeOps(), transform.AnnotateTIROpPattern(), transform.FoldConstant(),
              transform.FuseOps(), transform.FuseTIR()):
        mod = p(mod)
    return mod


def _exported():
    mod, params = MLPModel().export_tvm({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    return mod, params


F32 = 'dtype="float32"'


def test_forward_calls_the_fused_kernels_as_in_tvm():
    mod = _zero_passes(_exported()[0])
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == [
        "forward", "fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"]
    text = mod.script()
    body = text.split("with R.dataflow():\n")[1].split("return gv")[0]
    assert [line.strip() for line in body.splitlines() if line.strip()] == [
        f"permute_dims = R.call_tir(cls.transpose, (fc1_weight,), out_sinfo=R.Tensor((784, 256), {F32}))",
        f"lv = R.call_tir(cls.fused_matmul_add_relu, (x, permute_dims, fc1_bias), "
        f"out_sinfo=R.Tensor((1, 256), {F32}))",
        f"permute_dims1 = R.call_tir(cls.transpose1, (fc2_weight,), out_sinfo=R.Tensor((256, 10), {F32}))",
        # FuseTIR canonicalizes bindings first (as TVM's does): `lv1 = ...; gv = lv1` becomes `gv = ...`
        f"gv = R.call_tir(cls.fused_matmul1_add1, (lv, permute_dims1, fc2_bias), "
        f"out_sinfo=R.Tensor((1, 10), {F32}))",
        "R.output(gv)",
    ]
    minitvm.ir.assert_structural_equal(from_source(text), mod)


def test_fused_kernels_use_tvms_buffer_and_block_names():
    mod = _zero_passes(_exported()[0])
    first, second = mod["fused_matmul_add_relu"], mod["fused_matmul1_add1"]
    assert isinstance(first, PrimFunc) and dict(first.attrs) == {"tir.noalias": True}
    assert [first.buffer_map[p].name for p in first.params] == ["x", "permute_dims", "fc1_bias", "compute_intermediate"]
    assert [b.name for b in first.body.block.alloc_buffers] == ["T_matmul_intermediate", "T_add_intermediate"]
    # FuseOps names a fused function's parameters after the values the group read (``relu``),
    # before the call that makes it is renamed ``lv``
    assert [second.buffer_map[p].name for p in second.params] == ["relu", "permute_dims1", "fc2_bias",
                                                                   "T_add_intermediate"]
    assert [b.name for b in second.body.block.alloc_buffers] == ["T_matmul_intermediate"]
    text = first.script()
    assert [line.strip() for line in text.splitlines() if line.strip().startswith("with T.sblock(")] == [
        'with T.sblock("T_matmul"):', 'with T.sblock("T_add"):', 'with T.sblock("compute"):']
    # the transposes are untouched kernels, still carrying their fusion pattern
    assert mod["transpose"].attrs["op_pattern"] == 2


def test_the_fused_module_computes_the_mlp():
    mod, params = _exported()
    fused = _zero_passes(mod)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 784)).astype("float32")
    weights = {name: rng.standard_normal(p.shape).astype("float32") / 16 for name, p in params}
    vm = relax.VirtualMachine(minitvm.compile(fused, target="llvm"), minitvm.cpu())
    out = vm["forward"](minitvm.nd.array(x), *[minitvm.nd.array(weights[name]) for name, _ in params]).numpy()
    hidden = np.maximum(x @ weights["fc1.weight"].T + weights["fc1.bias"], 0)
    np.testing.assert_allclose(out, hidden @ weights["fc2.weight"].T + weights["fc2.bias"], rtol=1e-4, atol=1e-5)
