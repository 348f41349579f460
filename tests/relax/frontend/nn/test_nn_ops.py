"""nn.op's TVM-shaped operators (split, silu, rms_norm, tensor_expr_op, tensor_ir_op, extern),
Tensor.placeholder, wrap_nested, nn.RMSNorm's signature, Module.to(dtype) and ``x += y``,
each compiled and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tir
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import Tensor, op
from minitvm.runtime import ShapeTuple
from minitvm.script import tir as T


def _vm(mod):
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), "llvm")
    return relax.VirtualMachine(ex, minitvm.cpu())


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def _silu(x):
    return x / (1 + np.exp(-x))


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@T.prim_func(private=True)
def _shift(var_a: T.handle, offset: T.int64, var_b: T.handle):
    n = T.int64()
    A = T.match_buffer(var_a, (n, 4), "float32")
    B = T.match_buffer(var_b, (n, 4), "float32")
    for i, j in T.grid(n, 4):
        with T.block("b"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.Cast("float32", offset)


def test_split_silu_tensor_ir_op_and_tensor_expr_op():
    class Model(nn.Module):
        def test(self, x, offset):
            n = x.shape[0]
            y = op.tensor_ir_op(_shift, "shift", args=[x, offset], out=Tensor.placeholder((n, 4), "float32"))

            def _last_row(t):
                s, d = t.shape
                return te.compute((1, d), lambda i, k: t[s - 1, k], name="index")

            last = op.tensor_expr_op(_last_row, name_hint="index", args=[y])
            gate, up = op.split(y, 2, axis=-1)
            return last, op.silu(gate) * up

    mod, _ = Model().export_tvm(spec={"test": {"x": nn.spec.Tensor(["n", 4], "float32"), "offset": int}})
    text = mod.script()
    assert "R.call_tir(cls.shift, (x, R.prim_value(offset))" in text  # the scalar in its PrimFunc position
    assert "R.call_tir(cls.index, (shift,)" in text and "R.split(shift, indices_or_sections=2, axis=-1)" in text
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["index", "shift", "test"]

    vm = _vm(mod)
    x = _rand(np.random.default_rng(0), 3, 4)
    last, ffn = vm["test"](minitvm.nd.array(x), ShapeTuple([5]))
    y = x + 5
    np.testing.assert_array_equal(last.numpy(), y[-1:])
    np.testing.assert_allclose(ffn.numpy(), _silu(y[:, :2]) * y[:, 2:], rtol=1e-5, atol=1e-6)


def test_split_at_indices_and_wrap_nested_of_a_tuple():
    class Model(nn.Module):
        def forward(self, x):
            a, b, c = op.split(x, [1, 3], axis=1)
            pair = op.wrap_nested(relax.Tuple([b._expr, c._expr]), "pair")
            assert isinstance(pair, tuple) and [t.shape for t in pair] == [[2, 2], [2, 2]]
            return op.concat([pair[1], a, pair[0]], dim=1)

    mod, _ = Model().export_tvm(spec={"forward": {"x": nn.spec.Tensor([2, 5], "float32")}})
    x = _rand(np.random.default_rng(1), 2, 5)
    got = _vm(mod)["forward"](minitvm.nd.array(x)).numpy()
    np.testing.assert_array_equal(got, np.concatenate([x[:, 3:], x[:, :1], x[:, 1:3]], axis=1))


def test_rmsnorm_tvm_signature_with_and_without_bias():
    class Model(nn.Module):
        def __init__(self):
            self.plain = nn.RMSNorm(8, -1, 1e-6, bias=False)
            self.biased = nn.RMSNorm(8, axes=[-1], epsilon=1e-5)

        def forward(self, x):
            return self.plain(x), self.biased(x)

    model = Model()
    mod, params = model.export_tvm(spec={"forward": {"x": nn.spec.Tensor(["n", 8], "float32")}})
    assert [n for n, _ in params] == ["plain.weight", "biased.weight", "biased.bias"]  # TVM: bias defaults True
    assert "R.nn.rms_norm" in mod.script()
    rng = np.random.default_rng(2)
    x, w1, w2, b2 = _rand(rng, 4, 8), _rand(rng, 8), _rand(rng, 8), _rand(rng, 8)
    plain, biased = _vm(mod)["forward"](*map(minitvm.nd.array, (x, w1, w2, b2)))
    np.testing.assert_allclose(plain.numpy(), _rms(x, w1, 1e-6), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(biased.numpy(), _rms(x, w2, 1e-5) + b2, rtol=1e-5, atol=1e-5)


def test_inplace_add_and_module_to_dtype():
    class Block(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 4, bias=False)
            self.dtype = "float32"

        def forward(self, h):
            h += self.fc(h)  # Tensor has no __iadd__: Python falls back to __add__, as in TVM
            h += 1.0
            return h

    block = Block()
    block.to("float64")
    assert block.dtype == "float64" and block.fc.weight.dtype == "float64"
    mod, params = block.export_tvm(spec={"forward": {"h": nn.spec.Tensor([2, 4], "float64")}})
    assert mod["forward"].params[1].struct_info.dtype == "float64"
    rng = np.random.default_rng(3)
    h, w = rng.standard_normal((2, 4)), rng.standard_normal((4, 4))
    got = _vm(mod)["forward"](minitvm.nd.array(h), minitvm.nd.array(w)).numpy()
    np.testing.assert_allclose(got, h + h @ w.T + 1.0, rtol=1e-12)

    block.fc.weight.data = w
    with pytest.raises(ValueError, match="bound to data"):
        block.to("float32")


def test_linear_out_dtype_keeps_its_bias_dtype_under_to():
    lin = nn.Linear(4, 3, out_dtype="float32")
    lin.to("float16")
    assert (lin.weight.dtype, lin.bias.dtype) == ("float16", "float32")


def test_extern_calls_a_registered_function_destination_passing():
    @minitvm.register_func("testing.nn_core.scaled_copy", override=True)
    def scaled_copy(x, scale, out):
        out.copyfrom(x.numpy() * scale)

    class Model(nn.Module):
        def forward(self, x):
            return op.extern("testing.nn_core.scaled_copy", [x, 2.5], out=Tensor.placeholder(x.shape, x.dtype))

    mod, _ = Model().export_tvm(spec={"forward": {"x": nn.spec.Tensor([3, 2], "float32")}})
    assert 'R.call_dps_packed("testing.nn_core.scaled_copy"' in mod.script()
    x = _rand(np.random.default_rng(4), 3, 2)
    np.testing.assert_allclose(_vm(mod)["forward"](minitvm.nd.array(x)).numpy(), x * 2.5, rtol=1e-6)


def test_placeholder_names_symbolic_dims_and_rejects_bad_ones():
    t = Tensor.placeholder([2, "m"], "float16", name="t")
    assert t.shape[0] == 2 and t.shape[1].name == "m" and t.dtype == "float16" and t.ndim == 2
    with pytest.raises(TypeError, match="dimension"):
        Tensor.placeholder([2.5], "float32")
    with pytest.raises(ValueError, match="negative"):
        Tensor.placeholder([-1], "float32")


def _scale_scalar_last():
    """``scale(A, B, k)``: B = A * k, the scalar after the output buffer (made with TE)."""
    n, k = tir.Var("n", "int64"), tir.Var("k", "int64")
    a = te.placeholder((n, 4), "float32", name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * tir.Cast("float32", k), name="B")
    return te.create_prim_func([a, b, k])


_shift_scalar_last = _scale_scalar_last()


def test_tensor_ir_op_with_scalars_after_the_outputs_passes_them_as_tir_vars():
    # the layout before TVM 0.26 (and of TVM's own llama_rope kernel): scalars last, as tir_vars
    class Model(nn.Module):
        def test(self, x, k):
            out = Tensor.placeholder(x.shape, "float32")
            return op.tensor_ir_op(_shift_scalar_last, "scale", args=[x, k], out=out)

    mod, _ = Model().export_tvm(spec={"test": {"x": nn.spec.Tensor(["n", 4], "float32"), "k": int}})
    assert "R.call_tir(cls.scale, (x,), out_sinfo=R.Tensor((n, 4), dtype=\"float32\"), tir_vars=R.shape([k]))" \
        in mod.script()
    x = _rand(np.random.default_rng(5), 2, 4)
    np.testing.assert_allclose(_vm(mod)["test"](minitvm.nd.array(x), ShapeTuple([3])).numpy(), x * 3, rtol=1e-6)

    class Wrong(nn.Module):
        def test(self, x):
            return op.tensor_ir_op(_shift_scalar_last, "scale", args=[x], out=Tensor.placeholder(x.shape, "float32"))

    with pytest.raises(TypeError, match="BBs: B a buffer"):
        Wrong().export_tvm(spec={"test": {"x": nn.spec.Tensor([2, 4], "float32")}})


def test_parameter_containers_name_and_feed_their_parameters():
    class Model(nn.Module):
        def __init__(self):
            self.scales = nn.ParameterList([nn.Parameter([3]), nn.Parameter([3])])
            self.table = nn.ParameterDict({"shift": nn.Parameter([3])})
            self.blocks = nn.ModuleDict({"proj": nn.Linear(3, 3, bias=False)})

        def forward(self, x):
            h = self.blocks["proj"](x) * self.scales[0] + self.table["shift"]
            return h * self.scales[1] + op.full([2, 3], 0.5) + op.arange(0, 3, 1)

    model = Model()
    model.scales[1] = nn.Parameter([3])
    assert list(model.table.keys()) == ["shift"] and "shift" in model.table
    mod, params = model.export_tvm(spec={"forward": {"x": nn.spec.Tensor([2, 3], "float32")}})
    assert [n for n, _ in params] == ["scales.0", "scales.1", "table.shift", "blocks.proj.weight"]
    rng = np.random.default_rng(6)
    x, s0, s1, shift, w = (_rand(rng, *s) for s in ((2, 3), (3,), (3,), (3,), (3, 3)))
    got = _vm(mod)["forward"](*map(minitvm.nd.array, (x, s0, s1, shift, w))).numpy()
    want = ((x @ w.T) * s0 + shift) * s1 + 0.5 + np.arange(3, dtype="float32")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="nn.Parameter"):
        model.scales[0] = np.zeros(3)


def test_from_const_narrows_like_relax_const_in_tvm():
    assert Tensor.from_const(np.ones((1, 2))).dtype == "float32"
    assert Tensor.from_const(np.arange(3)).dtype == "int32"
    assert Tensor.from_const(np.ones(2, "float16")).dtype == "float16"


def test_conv1d_and_group_norm_modules_match_numpy():
    class Model(nn.Module):
        def __init__(self):
            self.conv = nn.Conv1D(4, 6, kernel_size=3, padding=1)
            self.norm = nn.GroupNorm(num_groups=2, num_channels=6)

        def forward(self, x):
            return self.norm(self.conv(x))

    mod, params = Model().export_tvm(spec={"forward": {"x": nn.spec.Tensor([2, 4, 5], "float32")}})
    assert [n for n, _ in params] == ["conv.weight", "conv.bias", "norm.weight", "norm.bias"]
    rng = np.random.default_rng(7)
    x, w, b, g, beta = (_rand(rng, *s) for s in ((2, 4, 5), (6, 4, 3), (6,), (6,), (6,)))
    got = _vm(mod)["forward"](*map(minitvm.nd.array, (x, w, b, g, beta))).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    conv = sum(np.einsum("ncw,oc->now", xp[:, :, k:k + 5], w[:, :, k]) for k in range(3)) + b[None, :, None]
    grouped = conv.reshape(2, 2, 3, 5)
    mu, var = grouped.mean((2, 3), keepdims=True), grouped.var((2, 3), keepdims=True)
    want = ((grouped - mu) / np.sqrt(var + 1e-5)).reshape(2, 6, 5) * g[None, :, None] + beta[None, :, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
