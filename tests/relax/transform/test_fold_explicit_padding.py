"""FoldExplicitPadding: a zero pad of a convolution's spatial axes becomes its padding."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax

RNG = np.random.default_rng(5)


def _pad_conv(pad_width, pad_value=0.0, padding=(0, 0, 0, 0), stride=1, groups=1, channels=8):
    """pad(x) then conv2d (MobileNetV2's TF "same" padding); returns (module, weight)."""
    x = relax.Var("x", relax.TensorStructInfo((2, channels, 9, 9), "float32"))
    w = RNG.standard_normal((channels, channels // groups, 3, 3)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(relax.op.nn.pad(x, pad_width, pad_value=pad_value))
            gv = bb.emit_output(relax.op.nn.conv2d(p, relax.const(w), strides=stride, padding=padding, groups=groups))
        bb.emit_func_output(gv)
    return bb.get(), w


def _run(mod, x):
    ex = minitvm.compile(mod, "llvm")
    return relax.VirtualMachine(ex, minitvm.cpu())["main"](x).numpy()


@pytest.mark.parametrize("stride, groups", [(2, 8), (1, 1)])
def test_a_zero_pad_becomes_the_convolutions_padding(stride, groups):
    torch = pytest.importorskip("torch")
    # top 0, bottom 1, left 0, right 1 (TF "same" at stride 2), plus the conv's own (1, 2, 1, 2)
    mod, w = _pad_conv([0, 0, 0, 0, 0, 1, 0, 1], padding=(1, 2, 1, 2), stride=stride, groups=groups)
    new = relax.transform.FoldExplicitPadding()(mod)
    new = relax.transform.DeadCodeElimination()(new)
    assert "R.nn.pad" not in new.script()
    conv = new["main"].body.blocks[0].bindings[0].value
    assert tuple(int(p) for p in conv.attrs["padding"]) == (1, 2, 2, 3)
    x = RNG.standard_normal((2, 8, 9, 9)).astype("float32")
    want = torch.nn.functional.conv2d(torch.nn.functional.pad(torch.from_numpy(x), (2, 3, 1, 2)),
                                      torch.from_numpy(w), stride=stride, groups=groups).numpy()
    np.testing.assert_allclose(_run(new, x), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [
    {"pad_width": [0, 0, 0, 0, 1, 1, 1, 1], "pad_value": 1.0},  # not a zero pad
    {"pad_width": [1, 0, 0, 0, 1, 1, 1, 1]},                    # pads the batch axis
])
def test_other_pads_stay(case):
    mod, _ = _pad_conv(**case)
    assert relax.transform.FoldExplicitPadding()(mod) is mod


def test_the_default_pipeline_folds_it():
    assert "FoldExplicitPadding" in [p.info.name for p in relax.pipeline.graph_rewrite_passes()]
    mod, _ = _pad_conv([0, 0, 0, 0, 1, 1, 1, 1])
    lowered = relax.get_pipeline("default")(mod)
    assert not any(gv.name_hint.startswith("pad") for gv in lowered.functions)
