"""FoldBatchnormToConv2D: inference BatchNorm after a convolution folded into its constants."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir.op import Op

RNG = np.random.default_rng(20)


def _rand(*shape, low=None):
    if low is not None:
        return RNG.uniform(low, low + 1.0, shape).astype("float32")
    return RNG.standard_normal(shape).astype("float32")


def _conv_bn_module(weight_const=True, training=False, bias=False, extra_use=False, stride=1, out_dtype="void"):
    """x -> conv2d(3x3, 4 -> 6) [+ bias] -> batch_norm -> [0] (-> + conv when ``extra_use``)."""
    x = relax.Var("x", relax.TensorStructInfo((2, 4, 7, 7), "float32"))
    w_var = relax.Var("w", relax.TensorStructInfo((6, 4, 3, 3), "float32"))
    params = [x] if weight_const else [x, w_var]
    stats = {"gamma": _rand(6), "beta": _rand(6), "mean": _rand(6), "var": _rand(6, low=0.5)}
    w, b = _rand(6, 4, 3, 3), _rand(1, 6, 1, 1)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            conv = bb.emit(relax.op.nn.conv2d(x, relax.const(w) if weight_const else w_var, strides=stride,
                                              padding=1, out_dtype=out_dtype))
            y = bb.emit(relax.op.add(conv, relax.const(b))) if bias else conv
            bn = bb.emit(relax.op.nn.batch_norm(y, *(relax.const(v) for v in stats.values()), axis=1,
                                                epsilon=1e-3, training=training))
            out = bb.emit(relax.TupleGetItem(bn, 0))
            if extra_use:
                out = bb.emit(relax.op.add(out, conv))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get(), w, (b if bias else None), stats


def _reference(x, w, b, stats, stride=1):
    torch = pytest.importorskip("torch")
    y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=1)
    if b is not None:
        y = y + torch.from_numpy(b)
    s = {k: torch.from_numpy(v) for k, v in stats.items()}
    return torch.nn.functional.batch_norm(y, s["mean"], s["var"], s["gamma"], s["beta"], eps=1e-3).numpy()


def _ops(mod):
    """The op name of every binding of main's dataflow block ("getitem" for a tuple field;
    the output's ``gv = lv`` is left out)."""
    return [b.value.op.name if isinstance(b.value, relax.Call) and isinstance(b.value.op, Op) else "getitem"
            for b in mod["main"].body.blocks[0].bindings if not isinstance(b.value, relax.Var)]


def _fold(mod):
    return relax.transform.DeadCodeElimination()(relax.transform.FoldBatchnormToConv2D()(mod))


@pytest.mark.parametrize("bias,stride,out_dtype", [(False, 1, "void"), (True, 1, "void"), (False, 2, "void"),
                                                   (True, 2, "void"), (False, 1, "float32")])
def test_batch_norm_becomes_the_convolutions_weight_and_one_add(bias, stride, out_dtype):
    # out_dtype="float32" on float32 data: how from_exported_program writes a convolution
    mod, w, b, stats = _conv_bn_module(bias=bias, stride=stride, out_dtype=out_dtype)
    folded = _fold(mod)
    assert _ops(folded) == ["relax.nn.conv2d", "relax.add"]  # no batch_norm, no tuple, no second add
    conv = folded["main"].body.blocks[0].bindings[0].value
    scale = stats["gamma"] / np.sqrt(stats["var"] + 1e-3)
    np.testing.assert_allclose(conv.args[1].data.numpy(), w * scale[:, None, None, None], rtol=1e-6)
    x = _rand(2, 4, 7, 7)
    got = relax.VirtualMachine(minitvm.compile(folded, "llvm"), minitvm.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, stats, stride), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [{"weight_const": False}, {"extra_use": True}])
def test_leaves_what_it_cannot_fold(case):
    mod, *_ = _conv_bn_module(**case)
    assert "relax.nn.batch_norm" in _ops(_fold(mod))


def test_a_training_batch_norm_folds_as_inference_as_tvms_pass_but_not_in_the_default_pipeline():
    # TVM's pass reads every BatchNorm as inference (R.nn.batch_norm defaults to training=True)
    mod, w, b, stats = _conv_bn_module(training=True)
    folded = _fold(mod)
    assert _ops(folded) == ["relax.nn.conv2d", "relax.add"]
    x = _rand(2, 4, 7, 7)
    got = relax.VirtualMachine(minitvm.compile(folded, "llvm"), minitvm.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, stats), rtol=1e-4, atol=1e-5)
    # the default pipeline keeps the batch statistics a training BatchNorm computes
    kept = relax.transform.DeadCodeElimination()(relax.transform.FoldInferenceBatchnormToConv2D()(mod))
    assert "relax.nn.batch_norm" in _ops(kept)


def test_default_pipeline_folds_a_resnet_and_matches_torch():
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.testing import zoo

    from ..frontend.torch.zoo_cache import exported

    m = zoo.MODELS["resnet_block"]
    mod = from_exported_program(exported("resnet_block", 2), unwrap_unit_return_tuple=True)
    lowered = relax.get_pipeline("default")(mod)
    assert "batch_norm" not in lowered.script()
    x = m.example_inputs(2)
    got = relax.VirtualMachine(minitvm.compile(lowered, "llvm", relax_pipeline=None), minitvm.cpu())["main"](
        x[0].numpy()).numpy()
    with torch.no_grad():
        want = m.build()(*x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
