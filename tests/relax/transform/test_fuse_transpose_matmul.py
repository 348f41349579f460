"""FuseTransposeMatmul: a dense layer's ``x @ W.T`` as one NT_matmul kernel when it pays."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.testing.nn_models import export_quick_start_mlp


def test_fuses_at_batch_1_and_drops_the_transpose():
    mod, _ = export_quick_start_mlp(1)
    fused = relax.transform.DeadCodeElimination()(relax.transform.FuseTransposeMatmul()(mod))
    text = fused.script()
    assert "R.permute_dims" not in text and "R.matmul" not in text
    assert text.count("cls.NT_matmul") == 2 and "def NT_matmul(" in text and "def NT_matmul1(" in text


def test_leaves_many_rows_and_constant_weights_alone():
    mod, _ = export_quick_start_mlp(64)  # 64 rows: a shared transpose + the tiled matmul is faster
    assert relax.transform.FuseTransposeMatmul()(mod) is mod
    x = relax.Var("x", relax.TensorStructInfo((1, 8), "float32"))
    w = relax.const(np.random.default_rng(0).standard_normal((4, 8)).astype("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        wt = bb.emit(relax.op.permute_dims(w))
        bb.emit_func_output(bb.emit(relax.op.matmul(x, wt)))
    const_mod = bb.get()
    assert relax.transform.FuseTransposeMatmul()(const_mod) is const_mod  # FoldConstant's job


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_compiled_mlp_matches_numpy(batch):
    mod, spec = export_quick_start_mlp(batch)
    ex = minitvm.compile(mod, "llvm")
    assert ("NT_matmul" in ex.as_text()) == (batch <= 8)
    assert "transpose" not in ex.as_text() or batch > 8
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 784)).astype("float32")
    params = [(rng.standard_normal(p.shape) * 0.1).astype("float32") for _, p in spec]
    w1, b1, w2, b2 = params
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    got = relax.VirtualMachine(ex, minitvm.cpu())["forward"](x, *params).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_three_dimensional_input_uses_the_batched_nt_kernel():
    class Proj(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(32, 48)

        def forward(self, x):
            return self.proj(x)

    mod, spec = Proj().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 3, 32), "float32")}})
    ex = minitvm.compile(mod, "llvm")
    assert "NT_matmul" in ex.as_text()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 32)).astype("float32")
    w, b = [rng.standard_normal(p.shape).astype("float32") for _, p in spec]
    got = relax.VirtualMachine(ex, minitvm.cpu())["forward"](x, w, b).numpy()
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("out_dtype,fuses", [("float32", True), ("float16", False)])
def test_an_out_dtype_naming_the_inputs_dtype_fuses_as_an_unset_one(out_dtype, fuses):
    # a model imported from torch names the result dtype (TVM's form); only a real cast is left alone
    x = relax.Var("x", relax.TensorStructInfo((2, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        wt = bb.emit(relax.op.permute_dims(w))
        bb.emit_func_output(bb.emit(relax.op.matmul(x, wt, out_dtype=out_dtype)))
    mod = bb.get()
    fused = relax.transform.FuseTransposeMatmul()(mod)
    assert ("NT_matmul" in fused.script()) == fuses
    if fuses:
        rng = np.random.default_rng(3)
        xv, wv = rng.standard_normal((2, 8)).astype("float32"), rng.standard_normal((4, 8)).astype("float32")
        got = relax.VirtualMachine(minitvm.compile(fused, "llvm"), minitvm.cpu())["main"](xv, wv).numpy()
        np.testing.assert_allclose(got, xv @ wv.T, rtol=1e-5, atol=1e-6)
