"""QuantizeLinearWeights / FuseDequantizeMatmul: int8 per-channel and packed int4 group weights
of linear layers, the fused dequantize-matmul kernels, against numpy on seeded random data."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax, tir
from minitvm.relax.frontend import detach_params
from minitvm.relax.frontend.torch import from_exported_program
from minitvm.relax.transform.quantize_weights import (
    FuseDequantizeMatmul,
    QuantizeLinearWeights,
    constant_bytes,
    pack_int4,
    quantize_int8,
    unpack_int4,
)
from minitvm.script import from_source


def test_int8_and_int4_numbers():
    rng = np.random.default_rng(40)
    w = rng.standard_normal((6, 64)).astype("float32")
    q, scale = quantize_int8(w)
    assert q.dtype == np.int8 and scale.shape == (6,) and np.abs(q).max() == 127
    assert np.abs(q * scale[:, None] - w).max() <= scale.max() / 2 + 1e-6
    packed, scales = pack_int4(w, group_size=32)  # 6 rows: tiles of 2 (16 does not divide 6)
    assert packed.shape == (3, 8, 2) and packed.dtype == np.uint32 and scales.shape == (3, 2, 2)
    err = np.abs(unpack_int4(packed, scales, 32) - w).reshape(6, 2, 32).max(axis=2)
    assert (err <= np.concatenate(list(scales), axis=1).T / 2 + 1e-6).all()
    # the layout: word [t, w, r] holds weights 8w .. 8w + 7 of row 64t + r, weight 8w + i in bits 4i..
    rows = rng.standard_normal((128, 64)).astype("float32")
    p, s = pack_int4(rows, 32)
    assert p.shape == (2, 8, 64) and s.shape == (2, 2, 64)
    for t, word, r, i in [(0, 0, 0, 0), (1, 5, 3, 7), (0, 7, 63, 4), (1, 2, 40, 1)]:
        j, k = 64 * t + r, 8 * word + i
        code = (int(p[t, word, r]) >> (4 * i)) & 15
        assert code == np.clip(np.round(rows[j, k] / s[t, k // 32, r]), -8, 7) + 8
    with pytest.raises(ValueError, match="multiple of 8"):
        pack_int4(w[:, :40], 20)
    with pytest.raises(ValueError, match=r"K a multiple of it \(here 40\)"):
        pack_int4(w[:, :40], 32)


class _MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(64, 128)
        self.l2 = torch.nn.Linear(128, 32, bias=False)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def _mlp(rows=1, keep_params=False):
    torch.manual_seed(41)
    model = _MLP()
    x = torch.randn(rows, 64)
    ep = torch.export.export(model, (x,))
    weights = [model.l1.weight.detach().numpy(), model.l2.weight.detach().numpy()]
    return from_exported_program(ep, keep_params_as_input=keep_params), model, x.numpy(), weights


def _reference(model, x, w1, w2):
    """The MLP in numpy with the given (dequantized) weights."""
    h = np.maximum(x @ w1.T + model.l1.bias.detach().numpy(), 0)
    return h @ w2.T


def _run(mod, *args):
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    out = vm["main"](*(minitvm.nd.array(a) for a in args))
    return (out[0] if isinstance(out, (list, tuple)) or not hasattr(out, "numpy") else out).numpy()


def _dequantized(mode, weights):
    if mode == "int8":
        return [q * s[:, None] for q, s in map(quantize_int8, weights)]
    return [unpack_int4(*pack_int4(w, 32), 32) for w in weights]


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_fused_kernels_compute_the_dequantized_layer(mode):
    mod, model, x, weights = _mlp()
    quantized = QuantizeLinearWeights(mode)(mod)
    text = quantized.script()
    kernel = "fused_dequantize_NT_matmul" if mode == "int8" else "fused_dequantize_int4_NT_matmul"
    assert text.count(f"cls.{kernel}") == 2 and "R.matmul" not in text and "R.dequantize" not in text
    assert "def dequantize_int4" not in text  # the unfused decode kernels were dropped
    # a weight takes 1 byte (half a byte) plus its scales: a float32 per row (per group of 32)
    w_bytes = sum(w.nbytes for w in weights)
    rows = sum(w.shape[0] for w in weights)
    stored = w_bytes // 4 + 4 * rows if mode == "int8" else w_bytes // 8 + w_bytes // 32
    assert constant_bytes(quantized) == constant_bytes(mod) - w_bytes + stored
    # to FuseOps the kernels are matmuls: the bias and relu join the first as an epilogue, and do
    # not join the second (bias-free) layer's kernel; the GEMV rule schedules both
    kernels = {gv.name_hint: f for gv, f in relax.get_pipeline("default")(quantized).functions.items()
               if not isinstance(f, relax.Function)}
    assert sorted(kernels) == sorted([f"fused_{kernel}_add_relu", f"{kernel}1"]), sorted(kernels)
    # partial sums in a local buffer (printed T.alloc_buffer in the MLC era, T.sblock_alloc_buffer in
    # 0.27's): int8's an rfactor buffer (schedule_gemv), int4's the per-group dot products
    # (schedule_int4_gemv)
    partial = r"_rf = T\.(sblock_)?alloc_buffer" if mode == "int8" else \
        r"int4_group_dot = T\.(sblock_)?alloc_buffer\(.*scope=\"local\""
    assert all(re.search(partial, f.script()) for f in kernels.values())
    got = _run(quantized, x)
    np.testing.assert_allclose(got, _reference(model, x, *_dequantized(mode, weights)), rtol=1e-5, atol=1e-5)
    fp32 = model(torch.from_numpy(x)).detach().numpy()
    assert np.abs(got - fp32).max() < (0.01 if mode == "int8" else 0.1)


def test_unfused_form_is_tvms_dequantize_and_round_trips():
    mod, model, x, weights = _mlp()
    q8 = QuantizeLinearWeights("int8", fuse=False)(mod)
    text = q8.script()
    assert text.count("R.dequantize(") == 2 and 'axis=0, out_dtype="float32"' in text and "R.matmul" in text
    minitvm.ir.assert_structural_equal(from_source(q8.script(show_meta=True)), q8)
    # fusing afterwards gives the same module as fuse=True
    minitvm.ir.assert_structural_equal(FuseDequantizeMatmul()(q8), QuantizeLinearWeights("int8")(mod))
    q4 = QuantizeLinearWeights("int4", fuse=False)(mod)
    assert q4.script().count("cls.dequantize_int4") == 2
    np.testing.assert_allclose(_run(q4, x), _reference(model, x, *_dequantized("int4", weights)), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_parameter_weights_with_values_become_quantized_parameters(mode):
    mod, model, x, weights = _mlp(keep_params=True)
    quantized = QuantizeLinearWeights(mode)(mod)
    names = [p.name for p in quantized["main"].params]
    suffix = "q" if mode == "int8" else "q4"
    assert names == ["x", f"l1_weight_{suffix}", "l1_weight_scale", "l1_bias", f"l2_weight_{suffix}",
                     "l2_weight_scale"]
    stripped, params = detach_params(quantized)
    values = [p.numpy() for p in params["main"]]
    assert values[0].dtype == (np.int8 if mode == "int8" else np.uint32)
    got = _run(stripped, x, *values)
    np.testing.assert_allclose(got, _reference(model, x, *_dequantized(mode, weights)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 64), (1, 1, 64), ("n", 64), (80, 64)],
                         ids=["3-rows", "3-d", "symbolic-rows", "80-rows"])
def test_every_row_shape_matches_numpy(shape):
    """A few rows: the dot-product kernel; many or symbolic: decode once, then the tiled matmul."""
    rng = np.random.default_rng(42)
    w = rng.standard_normal((48, 64)).astype("float32")
    dims = [tir.Var("n", "int64") if d == "n" else d for d in shape]
    x = relax.Var("x", relax.TensorStructInfo(dims, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, bb.emit(relax.op.permute_dims(relax.const(w)))))
        bb.emit_func_output(out)
    data = rng.standard_normal([5 if d == "n" else d for d in shape]).astype("float32")
    many = shape[0] != 3 and len(shape) == 2
    for mode in ("int8", "int4"):
        quantized = QuantizeLinearWeights(mode)(bb.get())
        assert ("_matmul(" in quantized.script() and "NT_matmul(" not in quantized.script()) == many
        got = _run(quantized, data)
        np.testing.assert_allclose(got, data @ _dequantized(mode, [w])[0].T, rtol=1e-5, atol=1e-5)


def test_leaves_unpackable_and_non_linear_weights_alone():
    rng = np.random.default_rng(43)
    x = relax.Var("x", relax.TensorStructInfo((1, 40), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        wt = bb.emit(relax.op.permute_dims(relax.const(rng.standard_normal((8, 40)).astype("float32"))))
        y = bb.emit(relax.op.matmul(x, wt))
        z = bb.emit(relax.op.matmul(y, relax.const(rng.standard_normal((8, 4)).astype("float32"))))
        bb.emit_func_output(z)
    mod = bb.get()
    assert QuantizeLinearWeights("int4")(mod) is mod  # K = 40: no whole groups of 32; the 2nd: no transpose
    assert QuantizeLinearWeights("int8")(mod).script().count("fused_dequantize_NT_matmul(") == 1
    with pytest.raises(ValueError, match="mode must be 'int8' or 'int4'"):
        QuantizeLinearWeights("int3")
    with pytest.raises(ValueError, match="multiple of 8, got 12"):
        QuantizeLinearWeights("int4", group_size=12)


def test_nn_exported_parameters_quantized_from_a_params_dict():
    from minitvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 32, bias=False)

        def forward(self, x):
            return self.fc(x)

    mod, spec = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 64), "float32")}})
    rng = np.random.default_rng(44)
    w = rng.standard_normal((32, 64)).astype("float32")
    quantized = QuantizeLinearWeights("int4", params={"fc.weight": w})(mod)
    assert [p.name for p in quantized["forward"].params] == ["x", "fc_weight_q4", "fc_weight_scale"]
    stripped, params = detach_params(quantized)
    x = rng.standard_normal((1, 64)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(stripped, target="llvm"), minitvm.cpu())
    got = vm["forward"](minitvm.nd.array(x), *params["forward"]).numpy()
    np.testing.assert_allclose(got, x @ unpack_int4(*pack_int4(w, 32), 32).T, rtol=1e-5, atol=1e-5)
    assert QuantizeLinearWeights("int4", params={"other": w})(mod) is mod  # its weight's value unknown
