"""AlterOpLayout: conv2d with a constant weight -> the x86 packed kernel, weight packed once."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import pack_conv2d_weight

RNG = np.random.default_rng(11)


def _conv_module(cout=16, groups=1, weight_const=True, stride=1, cin=8, kernel=3):
    x = relax.Var("x", relax.TensorStructInfo((2, cin, 9, 9), "float32"))
    wv = relax.Var("w", relax.TensorStructInfo((cout, cin // groups, kernel, kernel), "float32"))
    w = RNG.standard_normal((cout, cin // groups, kernel, kernel)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x] if weight_const else [x, wv]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(w) if weight_const else wv, strides=stride, padding=1,
                                           groups=groups))
            gv = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(gv)
    return bb.get(), w


@pytest.mark.parametrize("stride", [1, 2])
def test_conv_gets_the_packed_kernel_and_a_packed_constant(stride):
    mod, w = _conv_module(cout=32, stride=stride)
    new = relax.transform.AlterOpLayout()(mod)
    text = new.script()
    assert "R.nn.conv2d" not in text and "R.call_tir(cls.conv2d" in text
    call = new["main"].body.blocks[0].bindings[0].value
    packed = call.args[1].fields[1]
    np.testing.assert_array_equal(packed.data.numpy(), pack_conv2d_weight(w))  # done once, here
    x = RNG.standard_normal((2, 8, 9, 9)).astype("float32")
    torch = pytest.importorskip("torch")
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,
                                                 padding=1)).numpy()
    ex = minitvm.compile(new, "llvm")
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# a parameter weight, groups of 4 output channels (no vector block in a group), 6 channels (no
# vector block), a padded 1x1 over 4 channels: 4 < MIN_REDUCTION multiply-adds
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
@pytest.mark.parametrize("case", [{"weight_const": False}, {"groups": 4}, {"cout": 6}, {"cin": 4, "kernel": 1}])
def test_leaves_other_convolutions_alone(case, unit):
    mod, _ = _conv_module(**case)
    with unit:
        assert relax.transform.AlterOpLayout()(mod) is mod


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_a_short_reduction_is_packed_on_either_unit(unit):
    """4 x 3 x 3 = 36 multiply-adds per output (a stem's 3 x 3 x 3 = 27 alike): at least
    MIN_REDUCTION, packed on AVX-512 too (it was not, until the packed kernel's row tiles made
    short reductions pay there); torch's numbers."""
    import torch

    mod, w = _conv_module(cin=4)
    x = RNG.standard_normal((2, 4, 9, 9)).astype("float32")
    with unit:
        new = relax.transform.AlterOpLayout()(mod)
        assert new is not mod
        got = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())["main"](x).numpy()
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_image_stem_is_packed_in_blocks_of_one_vector_on_avx512():
    """A 3 -> 64 7x7 stride-2 stem onto 48 columns (whole vectors, not pairs): blocks of 16 on
    AVX-512 (its tile runs along the output rows), of two AVX2 vectors there; torch's numbers."""
    import torch

    x = relax.Var("x", relax.TensorStructInfo((1, 3, 96, 96), "float32"))
    w = RNG.standard_normal((64, 3, 7, 7)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.relu(relax.op.nn.conv2d(x, relax.const(w), strides=2, padding=3)))
        bb.emit_func_output(gv)
    mod = bb.get()
    xs = RNG.standard_normal((1, 3, 96, 96)).astype("float32")
    want = torch.nn.functional.conv2d(torch.from_numpy(xs), torch.from_numpy(w), stride=2, padding=3).relu().numpy()
    for unit, block in ((AVX512, 16), (AVX2, 16)):
        with unit:
            new = relax.transform.AlterOpLayout()(mod)
            packed = new["main"].body.blocks[0].bindings[0].value.args[1].fields[1].data.numpy()
            assert packed.shape == (64 // block, 3, 7, 7, block), (unit, packed.shape)
            got = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())["main"](xs).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_default_pipeline_schedules_the_packed_kernel_with_its_epilogue():
    mod, _ = _conv_module(cout=16)
    lowered = relax.get_pipeline("default")(mod)
    kernels = [f for gv, f in lowered.functions.items() if gv.name_hint.startswith("fused_conv2d")]
    assert len(kernels) == 1 and kernels[0].attrs["tir.is_scheduled"]
    text = kernels[0].script()
    assert "conv2d_nchw_packed" in text and 'scope="local"' in text and "T.max(" in text  # relu fused in


@pytest.mark.parametrize("hw, packed", [(8, False), (7, False)])
def test_a_pointwise_conv_stays_unpacked(hw, packed):
    """A 1x1, stride-1, unpadded conv is a matmul over the pixels (``schedule_conv2d_1x1`` tiles
    it in NCHW), over whole vectors of pixels (8 x 8) or not (7 x 7 = 49: a peeled partial tile)."""
    x = relax.Var("x", relax.TensorStructInfo((2, 64, hw, hw), "float32"))
    w = RNG.standard_normal((32, 64, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.conv2d(x, relax.const(w)))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert (relax.transform.AlterOpLayout()(mod) is not mod) == packed


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
@pytest.mark.parametrize("hw, stride", [(28, 2), (14, 2), (13, 2), (12, 3)])
def test_a_strided_pointwise_conv_subsamples_then_runs_as_a_pointwise_one(unit, hw, stride):
    """ResNet's 1x1 stride-2 downsampling shortcut: a strided slice of the input's kept pixels,
    then the unpacked 1x1 stride-1 convolution (``schedule_conv2d_1x1``), not the packed kernel
    (which loads each pixel's input alone, at the stride); torch's numbers."""
    import torch

    x = relax.Var("x", relax.TensorStructInfo((2, 64, hw, hw), "float32"))
    w = RNG.standard_normal((32, 64, 1, 1)).astype("float32")
    b = RNG.standard_normal((1, 32, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(w), strides=stride))
            gv = bb.emit_output(relax.op.add(y, relax.const(b)))
        bb.emit_func_output(gv)
    mod = bb.get()
    xs = RNG.standard_normal((2, 64, hw, hw)).astype("float32")
    with unit:
        new = relax.transform.AlterOpLayout()(mod)
        text = new.script()
        assert "R.strided_slice" in text and "R.nn.conv2d" in text and "call_tir" not in text, text
        assert "strides=[1, 1]" in text.replace("(", "[").replace(")", "]"), text
        got = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())["main"](xs).numpy()
    want = (torch.nn.functional.conv2d(torch.from_numpy(xs), torch.from_numpy(w), stride=stride)
            + torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch, stride, padding, dilation, width, groups", [
    (8, 2, 0, 1, 79, 1), (1, 1, 2, 1, 19, 1), (8, 2, 1, 2, 40, 1), (1, 5, 0, 1, 400, 1),
    (8, 1, 2, 1, 19, 4), (1, 2, 1, 1, 33, 2)])  # (groups of 8 and 16 output channels)
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_conv1d_gets_the_packed_kernel_over_one_row(unit, batch, stride, padding, dilation, width, groups):
    """A 1-d convolution with a constant weight is the packed 2-d kernel over one row, scheduled
    with its GELU by the default pipeline; torch's numbers on random data.  (wav2vec2's first
    layer, 1 channel x 10 taps, is packed too: 10 >= MIN_REDUCTION.)"""
    import torch

    cin = 1 if stride == 5 else 32 * groups  # (a group: 32 channels x 3 taps, 96 multiply-adds)
    k = 10 if stride == 5 else 3
    w = RNG.standard_normal((32, cin // groups, k)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo((batch, cin, width), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv1d(x, relax.const(w), strides=stride, padding=padding, dilation=dilation,
                                           groups=groups))
            gv = bb.emit_output(relax.op.nn.gelu(y))
        bb.emit_func_output(gv)
    mod = bb.get()
    data = RNG.standard_normal((batch, cin, width)).astype("float32")
    with unit:
        packed = relax.transform.AlterOpLayout()(mod)
        expected = True
        assert (packed is not mod) == expected and ("R.nn.conv1d" in packed.script()) != expected
        lowered = relax.get_pipeline("default")(mod)
        kernels = [f for gv, f in lowered.functions.items() if gv.name_hint.startswith("fused_conv1d")]
        assert len(kernels) == 1 and ("conv2d_nchw_packed_local" in kernels[0].script()) == expected
        got = relax.VirtualMachine(minitvm.compile(lowered, "llvm", relax_pipeline=None), minitvm.cpu())["main"](data)
    want = torch.nn.functional.gelu(torch.nn.functional.conv1d(
        torch.from_numpy(data), torch.from_numpy(w), stride=stride, padding=padding, dilation=dilation,
        groups=groups)).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cin, cout, k, groups, stride, padding", [(16, 16, 3, 1, 2, 0), (32, 32, 5, 4, 1, 2)])
def test_a_short_conv1d_is_packed_on_avx512_too(cin, cout, k, groups, stride, padding):
    """wav2vec2's 16 -> 16 x 3 taps (48 multiply-adds per output) and 4-group 32 -> 32 x 5 taps
    (40): packed as 1-d convolutions on AVX-512 too; torch's numbers."""
    import torch

    w = RNG.standard_normal((cout, cin // groups, k)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo((8, cin, 39), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.conv1d(x, relax.const(w), strides=stride, padding=padding, groups=groups))
        bb.emit_func_output(gv)
    mod = bb.get()
    data = RNG.standard_normal((8, cin, 39)).astype("float32")
    with AVX512:
        packed = relax.transform.AlterOpLayout()(mod)
        assert packed is not mod and "R.nn.conv1d" not in packed.script()
    got = relax.VirtualMachine(minitvm.compile(packed, "llvm"), minitvm.cpu())["main"](data).numpy()
    want = torch.nn.functional.conv1d(torch.from_numpy(data), torch.from_numpy(w), stride=stride, padding=padding,
                                      groups=groups).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _max_pool_module(ceil_mode=False, layout="NCHW"):
    x = relax.Var("x", relax.TensorStructInfo((2, 6, 15, 15), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.max_pool2d(x, pool_size=3, strides=2, padding=1, ceil_mode=ceil_mode,
                                               layout=layout))
            gv = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(gv)
    return bb.get()


def test_an_nchw_max_pool_gets_the_separable_kernel():
    new = relax.transform.AlterOpLayout()(_max_pool_module())
    text = new.script()
    assert "R.nn.max_pool2d" not in text and "R.call_tir(cls.max_pool2d" in text
    assert 'sblock("pool_rows")' in new["max_pool2d"].script()
    x = RNG.standard_normal((2, 6, 15, 15)).astype("float32")
    import torch
    want = torch.relu(torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, 1)).numpy()
    ex = minitvm.compile(new, "llvm")
    np.testing.assert_array_equal(relax.VirtualMachine(ex, minitvm.cpu())["main"](x).numpy(), want)


@pytest.mark.parametrize("case", [{"ceil_mode": True}, {"layout": "NHWC"}])
def test_other_max_pools_keep_the_generic_kernel(case):
    mod = _max_pool_module(**case)
    assert relax.transform.AlterOpLayout()(mod) is mod


def test_repeated_convs_share_one_kernel_built_once(monkeypatch):
    """Two same-shaped convs with different weights and a third of another stride: the packed TE
    kernel is built twice (once per distinct conv), the repeated conv calls the first one's
    PrimFunc with its own packed weight, and the module is the one built without the memo;
    torch's numbers."""
    import torch

    from minitvm.relax.transform import alter_op_layout

    x = relax.Var("x", relax.TensorStructInfo((1, 16, 12, 12), "float32"))
    ws = [RNG.standard_normal((16, 16, 3, 3)).astype("float32") for _ in range(3)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, relax.const(ws[0]), padding=1)))
            y = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(y, relax.const(ws[1]), padding=1)))
            gv = bb.emit_output(relax.op.nn.conv2d(y, relax.const(ws[2]), strides=2, padding=1))
        bb.emit_func_output(gv)
    mod = bb.get()
    kernel = alter_op_layout._PACKED["relax.nn.conv2d"]
    built = []

    def counting(*args, **kwargs):
        built.append(kwargs["strides"])
        return kernel[2](*args, **kwargs)

    monkeypatch.setitem(alter_op_layout._PACKED, "relax.nn.conv2d", (*kernel[:2], counting))
    new = relax.transform.AlterOpLayout()(mod)
    assert built == [[1, 1], [2, 2]]
    calls = [b.value for b in new["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)
             and b.value.op.name == "relax.call_tir"]
    assert len(calls) == 3 and calls[0].args[0] is calls[1].args[0] is not calls[2].args[0]

    # the same module as when every conv builds its kernel (call_te, add_func finding the twin)
    class Unmemoized(alter_op_layout._ConvLayout):
        def __init__(self, m):
            super().__init__(m)
            self.kernels = _NoMemo()

    monkeypatch.setattr(alter_op_layout, "_ConvLayout", Unmemoized)
    minitvm.ir.assert_structural_equal(new, relax.transform.AlterOpLayout()(mod))
    assert len(built) == 5

    data = RNG.standard_normal((1, 16, 12, 12)).astype("float32")
    t = torch.from_numpy(data)
    for k, w in enumerate(ws):
        t = torch.nn.functional.conv2d(t, torch.from_numpy(w), stride=2 if k == 2 else 1, padding=1)
        t = torch.relu(t) if k < 2 else t
    got = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())["main"](data).numpy()
    np.testing.assert_allclose(got, t.numpy(), rtol=1e-4, atol=1e-4)


class _NoMemo(dict):
    """A memo that remembers nothing (every conv builds its kernel)."""

    def get(self, key, default=None):
        return default

    def __setitem__(self, key, value):
        pass
