"""ToMixedPrecision (TVM's relax.transform.ToMixedPrecision): matmuls read float16 and
accumulate in out_dtype, elementwise ops follow, softmax stays float32; the numbers agree
with numpy within float16 tolerance, and with numpy's own float16-input emulation closely."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax.transform import ToMixedPrecision
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w1: R.Tensor((16, 32), "float32"), b1: R.Tensor((32,), "float32"),
             w2: R.Tensor((32, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.matmul(x, w1, out_dtype="float32")
            hb = R.add(h, b1)
            a = R.nn.relu(hb)
            o = R.matmul(a, w2, out_dtype="float32")
            gv = R.nn.softmax(o, axis=-1)
            R.output(gv)
        return gv


def _calls(mod):
    out = {}
    for b in mod["main"].body.blocks[0].bindings:
        if isinstance(b.value, relax.Call):
            out.setdefault(b.value.op.name, []).append(b.value)
    return out


def _run(mod, arrays):
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in arrays)).numpy()


def test_mlp_in_float16_matches_numpy():
    after = ToMixedPrecision(out_dtype="float32")(MLP)
    calls = _calls(after)
    for mm in calls["relax.matmul"]:  # both matmuls read float16 operands
        assert [str(a.struct_info.dtype) for a in mm.args] == ["float16", "float16"]
        assert mm.attrs["out_dtype"] == "float32"
    (softmax,) = calls["relax.nn.softmax"]  # "never": back to float32 first
    assert str(softmax.args[0].struct_info.dtype) == "float32"
    assert str(after["main"].ret_struct_info.dtype) == "float32"

    rng = np.random.default_rng(7)
    x, w1, b1, w2 = (rng.standard_normal(s).astype("float32") * 0.5 for s in [(4, 16), (16, 32), (32,), (32, 8)])
    got = _run(after, [x, w1, b1, w2])

    def softmax(v):
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    want32 = softmax(np.maximum(x @ w1 + b1, 0) @ w2)
    np.testing.assert_allclose(got, want32, rtol=2e-2, atol=2e-3)
    # numpy's emulation of the float16 program: float16 operands, float32 accumulation, the
    # bias add and relu in float16 (they follow their float16 input)
    h16 = (x.astype("float16").astype("float32") @ w1.astype("float16").astype("float32")).astype("float16")
    a16 = np.maximum(h16 + b1.astype("float16"), np.float16(0))
    o = a16.astype("float32") @ w2.astype("float16").astype("float32")
    np.testing.assert_allclose(got, softmax(o), rtol=2e-3, atol=1e-4)


def test_out_dtype_float16_and_fp16_inputs():
    """out_dtype="float16": the matmul accumulates in float16 and is cast back to float32 for
    the block's output; a parameter named in fp16_input_names becomes a float16 parameter."""
    after = ToMixedPrecision(out_dtype="float16", fp16_input_names=["w2"])(MLP)
    params = {p.name_hint: str(p.struct_info.dtype) for p in after["main"].params}
    assert params == {"x": "float32", "w1": "float32", "b1": "float32", "w2": "float16"}
    for mm in _calls(after)["relax.matmul"]:
        assert mm.attrs["out_dtype"] == "float16"
    rng = np.random.default_rng(8)
    x, w1, b1, w2 = (rng.standard_normal(s).astype("float32") * 0.5 for s in [(4, 16), (16, 32), (32,), (32, 8)])
    got = _run(after, [x, w1, b1, w2.astype("float16")])
    o = np.maximum(x @ w1 + b1, 0) @ w2
    e = np.exp(o - o.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=3e-2, atol=3e-3)


def test_wrap_param_is_dropped_and_legalizes_to_a_cast():
    x = relax.Var("x", R.Tensor((2, 3), "float16"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.wrap_param(x, "float32"))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert str(gv.struct_info.dtype) == "float32"
    a = np.random.default_rng(9).standard_normal((2, 3)).astype("float16")
    got = _run(mod, [a])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a.astype("float32"))
