"""ConvertLayout and relax.layout_transform: the converted module computes what the original
did (seeded random inputs through the VM), and the inserted conversions are the ones TVM
inserts."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir.op import Op
from minitvm.relax.transform import ConvertLayout, Normalize
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(34)


def _run(mod, *arrays):
    ex = minitvm.compile(mod, "llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    out = vm["main"](*(minitvm.nd.array(a) for a in arrays))
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()


def _ops(mod):
    names = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, relax.Call) and isinstance(b.value.op, Op):
                names.append(b.value.op.name)
    return names


@I.ir_module
class ConvNet:
    @R.function
    def main(x: R.Tensor((2, 3, 10, 10), "float32"), w: R.Tensor((8, 3, 3, 3), "float32"),
             bias: R.Tensor((1, 8, 1, 1), "float32"), w2: R.Tensor((4, 8, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w, padding=[1, 1])
            b = R.nn.relu(R.add(a, bias))
            c = R.sum(b, axis=[2], keepdims=True)
            d = R.nn.conv2d(R.multiply(b, c), w2)
            parts = R.split(d, 2, axis=1)
            e = R.concat([parts[1], parts[0]], axis=1)
            gv = R.nn.softmax(e, axis=1)
            R.output(gv)
        return gv


def _conv_inputs():
    return (RNG.standard_normal((2, 3, 10, 10)).astype("float32"), RNG.standard_normal((8, 3, 3, 3)).astype("float32"),
            RNG.standard_normal((1, 8, 1, 1)).astype("float32"), RNG.standard_normal((4, 8, 3, 3)).astype("float32"))


def test_nhwc_conversion_keeps_the_numbers():
    after = Normalize()(ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(ConvNet))
    ops = _ops(after)
    # inputs permuted in, the result permuted back once; everything between stays NHWC
    assert ops.count("relax.permute_dims") == 5 and ops[-1] == "relax.permute_dims"
    convs = [b.value for b in after["main"].body.blocks[0].bindings
             if isinstance(b.value, relax.Call) and b.value.op == Op.get("relax.nn.conv2d")]
    assert [c.attrs["data_layout"] for c in convs] == ["NHWC", "NHWC"]
    inputs = _conv_inputs()
    np.testing.assert_allclose(_run(after, *inputs), _run(ConvNet, *inputs), rtol=1e-5, atol=1e-5)


def test_blocked_layout_inserts_layout_transform_both_ways():
    after = ConvertLayout({"relax.nn.conv2d": ["NCHW4c", "OIHW4o"]})(ConvNet)
    ops = _ops(after)
    assert "relax.layout_transform" in ops and "relax.permute_dims" not in ops
    convs = [b for b in after["main"].body.blocks[0].bindings
             if isinstance(b.value, relax.Call) and b.value.op == Op.get("relax.nn.conv2d")]
    # 3 input channels do not split by 4: the first conv stays NCHW; the second (8 channels) blocks
    assert [c.value.attrs["data_layout"] for c in convs] == ["NCHW", "NCHW4c"]
    assert [int(d) for d in convs[1].var.struct_info.shape_values] == [2, 1, 8, 8, 4]


def test_channels_not_divisible_leave_the_module_alone():
    mod = ConvertLayout({"relax.nn.conv2d": ["NCHW3c", "OIHW3o"]})(ConvNet)
    minitvm.ir.assert_structural_equal(mod, ConvNet)


def test_layout_cb_chooses_per_call():
    seen = []

    def cb(call):
        seen.append(call.op.name)
        return {"relax.nn.conv2d": ["NHWC", "OHWI"]}

    after = ConvertLayout({}, cb)(ConvNet)
    assert "relax.nn.conv2d" in seen
    inputs = _conv_inputs()
    np.testing.assert_allclose(_run(after, *inputs), _run(ConvNet, *inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad", [None, 1.5])
def test_layout_transform_op_numbers_and_round_trip(pad):
    @I.ir_module
    class M:
        @R.function
        def main(x: R.Tensor((2, 6, 3, 5), "float32")):
            a = R.layout_transform(x, index_map=lambda n, c, h, w: (n, c // 4, h, w, c % 4), pad_value=pad)
            b = R.layout_transform(x, index_map=T.index_map(lambda n, c, h, w: (n, h, w, c), index_dtype="int32"))
            return (a, b)

    assert [int(d) for d in M["main"].ret_struct_info.fields[0].shape_values] == [2, 2, 3, 5, 4]
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(M.script()), M)
    x = RNG.standard_normal((2, 6, 3, 5)).astype("float32")
    a, b = _run(M, x)
    padded = np.concatenate([x, np.full((2, 2, 3, 5), pad or 0.0, "float32")], axis=1)
    if pad is not None:  # without pad_value the padding's contents are unspecified
        np.testing.assert_array_equal(a, padded.reshape(2, 2, 4, 3, 5).transpose(0, 1, 3, 4, 2))
    else:
        np.testing.assert_array_equal(a[:, 0], x[:, :4].transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(b, x.transpose(0, 2, 3, 1))


def test_resize2d_follows_the_converted_layout():
    @I.ir_module
    class M:
        @R.function
        def main(x: R.Tensor((2, 8, 10, 10), "float32"), w: R.Tensor((8, 8, 3, 3), "float32")):
            with R.dataflow():
                a = R.nn.conv2d(x, w)
                gv = R.image.resize2d(a, R.shape([16, 12]))
                R.output(gv)
            return gv

    after = ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(M)
    resize = [b for b in after["main"].body.blocks[0].bindings
              if isinstance(b.value, relax.Call) and b.value.op == Op.get("relax.image.resize2d")][0]
    assert resize.value.attrs["layout"] == "NHWC"
    assert [int(d) for d in resize.var.struct_info.shape_values] == [2, 16, 12, 8]
    assert [int(d) for d in after["main"].ret_struct_info.shape_values] == [2, 8, 16, 12]
    blocked = relax.op.image.resize2d(relax.Var("x", relax.TensorStructInfo((2, 4, 9, 9, 16), "float32")),
                                      size=5, layout="NCHW16c")
    assert [int(d) for d in relax.BlockBuilder().normalize(blocked).struct_info.shape_values] == [2, 4, 5, 5, 16]
