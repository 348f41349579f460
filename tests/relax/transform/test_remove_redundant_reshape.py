"""RemoveRedundantReshape: no-op reshapes and copies go, reshape chains become one reshape."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax


def _module():
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.reshape(x, (2, 3, 4)))           # same shape: a no-op
            b = bb.emit(relax.op.broadcast_to(a, (2, 3, 4)))      # same shape: a no-op
            c = bb.emit(relax.op.astype(b, "float32"))            # same dtype: a no-op
            d = bb.emit(relax.op.permute_dims(c, (0, 1, 2)))      # axes in order: a no-op
            e = bb.emit(relax.op.exp(d))
            f = bb.emit(relax.op.reshape(e, (6, 4)))
            g = bb.emit(relax.op.reshape(f, (4, 6)))              # reshape of reshape: one reshape of e
            h = bb.emit(relax.op.permute_dims(g, (1, 0)))         # a real transpose: stays
            gv = bb.emit_output(relax.op.broadcast_to(h, (2, 6, 4)))  # a real broadcast: stays
        bb.emit_func_output(gv)
    return bb.get()


def test_no_op_copies_go_and_reshape_chains_collapse():
    mod = _module()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    ops = [b.value.op.name for b in new["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    assert ops == ["relax.exp", "relax.reshape", "relax.permute_dims", "relax.broadcast_to"]
    reshape = new["main"].body.blocks[0].bindings[1].value
    assert reshape.args[0].name_hint == new["main"].body.blocks[0].bindings[0].var.name_hint  # reads exp directly
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype("float32")
    want = np.broadcast_to(np.exp(x).reshape(4, 6).T, (2, 6, 4))
    for m in (mod, new):
        got = relax.VirtualMachine(minitvm.compile(m, "llvm"), minitvm.cpu())["main"](x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_nothing_to_remove_returns_the_module():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.reshape(x, (3, 2))))
    mod = bb.get()
    assert relax.transform.RemoveRedundantReshape()(mod) is mod


def test_a_copy_read_through_an_alias():
    # the fuzzer's case: the output is ``gv = lv`` with ``lv`` a transpose; the matcher looks
    # through the alias, so the rewriter must read the call from its matches, not the alias
    x = relax.Var("x", relax.TensorStructInfo((2, 1, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(relax.op.permute_dims(x, (0, 2, 1)))
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.RemoveRedundantReshape()(mod)
    data = np.random.default_rng(6).standard_normal((2, 1, 3)).astype("float32")
    got = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())["main"](data).numpy()
    np.testing.assert_allclose(got, data.transpose(0, 2, 1), rtol=1e-6)


def test_an_activation_between_a_reshape_and_the_reshape_back_reads_the_tensor_itself():
    """ViT's and BERT's MLP: ``x @ W + b`` as (tokens, 768), viewed as (1, tokens, 768) for GELU,
    flattened again for the next layer.  GELU on the (tokens, 768) tensor itself fuses into the
    dense layer's kernel (FuseOps does not fuse a reshape after a matmul).  Element-wise calls
    after a reshape to another shape run on the unreshaped tensor too, and one reshape is left at
    the end of the chain; torch's result either way."""
    import torch

    x = relax.Var("x", relax.TensorStructInfo((6, 8), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((8, 12), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            h = bb.emit(relax.op.matmul(x, w))
            v = bb.emit(relax.op.reshape(h, (1, 6, 12)))
            g = bb.emit(relax.op.nn.gelu(v))
            back = bb.emit(relax.op.reshape(g, (6, 12)))                  # the reshape back: both go
            s = bb.emit(relax.op.reshape(relax.op.tanh(relax.op.reshape(back, (3, 24))), (4, 18)))
            gv = bb.emit_output(relax.op.add(s, relax.op.reshape(back, (4, 18))))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    ops = [b.value.op.name for b in new["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    assert ops == ["relax.matmul", "relax.nn.gelu", "relax.tanh", "relax.add", "relax.reshape"], ops
    fused = relax.get_pipeline("default")(mod)
    assert any("matmul" in gv.name_hint and "gelu" in gv.name_hint for gv, _ in fused.functions_items()), fused
    rng = np.random.default_rng(8)
    xv, wv = rng.standard_normal((6, 8)).astype("float32"), rng.standard_normal((8, 12)).astype("float32")
    g_t = torch.nn.functional.gelu(torch.from_numpy(xv @ wv))
    want = (torch.tanh(g_t.reshape(3, 24)).reshape(4, 18) + g_t.reshape(4, 18)).numpy()
    for m in (mod, new):
        got = relax.VirtualMachine(minitvm.compile(m, "llvm"), minitvm.cpu())["main"](xv, wv).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _ops(mod):
    return [b.value.op.name for b in mod["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]


def _run(mod, *args):
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())["main"](*args).numpy()


def test_a_written_out_gelu_and_a_residual_add_become_the_dense_layers_epilogues():
    """GPT-2's MLP as torch.export writes it: ``x @ W + b`` viewed as (1, tokens, features), GELU
    spelled as ``0.5 x (1 + tanh(0.798 (x + 0.0447 x^3)))``, viewed back for the next dense layer,
    whose output is viewed again for the residual add before a layer norm.  The reshapes sink
    below the element-wise calls and cancel: the GELU is the first matmul's epilogue and the
    residual add the second's (each was a kernel of its own)."""
    import torch

    f32 = "float32"
    x = relax.Var("x", relax.TensorStructInfo((6, 8), f32))
    resid = relax.Var("resid", relax.TensorStructInfo((1, 6, 8), f32))
    rng = np.random.default_rng(11)
    w1, b1, w2 = (rng.standard_normal(s).astype(f32) * 0.5 for s in ((8, 16), (16,), (16, 8)))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [x, resid]):
        with bb.dataflow():
            h = bb.emit(op.add(relax.const(b1), op.matmul(x, relax.const(w1))))
            v = bb.emit(op.reshape(h, (1, 6, 16)))
            inner = op.multiply(op.add(v, op.multiply(op.power(v, relax.const(3.0, f32)), relax.const(0.044715, f32))),
                                relax.const(0.7978845608, f32))
            g = bb.emit(op.multiply(op.multiply(v, relax.const(0.5, f32)),
                                    op.add(op.tanh(inner), relax.const(1.0, f32))))
            y = bb.emit(op.matmul(op.reshape(g, (6, 16)), relax.const(w2)))
            r = bb.emit(op.add(resid, op.reshape(y, (1, 6, 8))))
            gv = bb.emit_output(op.nn.layer_norm(r, relax.const(np.ones(8, f32)), relax.const(np.zeros(8, f32)), [-1]))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    ops = _ops(new)
    assert ops.index("relax.tanh") < ops.index("relax.matmul", 1) and ops.count("relax.reshape") == 2, ops
    assert ops[-3:] == ["relax.add", "relax.reshape", "relax.nn.layer_norm"], ops  # the residual before its view
    kernels = [gv.name_hint for gv, f in relax.get_pipeline("default")(mod).functions_items()
               if not isinstance(f, relax.Function)]
    assert any(k.startswith("fused_matmul") and "tanh" in k for k in kernels), kernels
    assert sum(k.startswith("fused_matmul") and "add" in k for k in kernels) == 2, kernels  # both epilogues
    assert not [k for k in kernels if "add" in k and not k.startswith("fused_matmul")], kernels  # no add alone
    xv, rv = rng.standard_normal((6, 8)).astype(f32), rng.standard_normal((1, 6, 8)).astype(f32)
    t = torch.from_numpy
    hidden = torch.nn.functional.gelu(t(xv) @ t(w1) + t(b1), approximate="tanh")
    want = torch.nn.functional.layer_norm(t(rv) + (hidden @ t(w2)).reshape(1, 6, 8), (8,)).numpy()
    for m in (mod, new):
        np.testing.assert_allclose(_run(m, xv, rv), want, rtol=1e-4, atol=1e-4)


def test_a_chain_into_a_reduction_keeps_its_reshape_first():
    """torch's safe softmax checks each row for a finite score: ``max(astype(x != -inf))`` over a
    reshaped matmul.  Sunk, the reshape would stand between the element-wise calls and the max --
    and a reduction takes element-wise calls into its kernel but not a reshape -- so it stays."""
    f32 = "float32"
    a = relax.Var("a", relax.TensorStructInfo((3, 5, 4), f32))
    b = relax.Var("b", relax.TensorStructInfo((3, 4, 5), f32))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        with bb.dataflow():
            v = bb.emit(op.reshape(op.matmul(a, b), (1, 3, 5, 5)))
            both = bb.emit(op.nn.softmax(v, axis=-1))
            finite = bb.emit(op.astype(op.logical_not(op.equal(v, relax.const(float("-inf"), f32))), "int8"))
            gv = bb.emit_output(relax.Tuple([both, op.max(finite, axis=[-1], keepdims=True)]))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.RemoveRedundantReshape()(mod)
    ops = _ops(new)
    assert ops[:3] == ["relax.matmul", "relax.reshape", "relax.nn.softmax"] and ops.index("relax.equal") > 1, ops
    assert new["main"].body.blocks[0].bindings[ops.index("relax.equal")].value.args[0].name_hint == \
        new["main"].body.blocks[0].bindings[1].var.name_hint  # the check reads the view


@pytest.mark.parametrize("bias_shape, sinks", [((4,), True), ((4, 1), False), ((1, 1, 4), True), ((2, 4, 4), True)])
def test_an_operand_sinks_with_the_reshape_only_when_it_meets_the_same_elements(bias_shape, sinks):
    """``reshape(x: (8, 4), (2, 4, 4)) + bias``: a bias along the last axis meets the same
    elements in both shapes, one along the middle axis (4, 1) does not -- its add stays after the
    reshape.  A bias of the view's whole shape is viewed alike.  numpy's numbers either way."""
    f32 = "float32"
    x = relax.Var("x", relax.TensorStructInfo((8, 4), f32))
    bias = np.random.default_rng(3).standard_normal(bias_shape).astype(f32)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = bb.emit(relax.op.reshape(relax.op.exp(x), (2, 4, 4)))
            gv = bb.emit_output(relax.op.reshape(relax.op.add(v, relax.const(bias)), (8, 4)))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    assert ("relax.reshape" not in _ops(new)) is sinks, _ops(new)
    xv = np.random.default_rng(4).standard_normal((8, 4)).astype(f32)
    want = (np.exp(xv).reshape(2, 4, 4) + bias).reshape(8, 4)
    for m in (mod, new):
        np.testing.assert_allclose(_run(m, xv), want, rtol=1e-6)


def test_a_filled_tensor_as_a_broadcast_operand_becomes_its_value():
    """torch's safe softmax: ``where(row_all_masked, full_like(p, 0), p)``.  The zeros need no
    tensor of their own (folded, it was a constant the size of the scores in every layer):
    ``where`` broadcasts a 0-d zero.  A filled tensor that sets the result's shape stays."""
    f32 = "float32"
    p = relax.Var("p", relax.TensorStructInfo((2, 3, 5), f32))
    c = relax.Var("c", relax.TensorStructInfo((2, 3, 1), "bool"))
    col = relax.Var("col", relax.TensorStructInfo((3, 1), f32))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [p, c, col]):
        with bb.dataflow():
            w = bb.emit(op.where(c, op.full_like(p, relax.const(0, "int32")), p))
            s = bb.emit(op.multiply(w, op.ones_like(p)))
            wide = bb.emit(op.add(col, op.zeros((3, 4), f32)))  # sets the shape (3, 4): stays
            gv = bb.emit_output(relax.Tuple([s, wide]))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    assert _ops(new) == ["relax.where", "relax.multiply", "relax.zeros", "relax.add"], _ops(new)
    where = new["main"].body.blocks[0].bindings[0].value
    assert isinstance(where.args[1], relax.Constant) and where.args[1].data.numpy().shape == ()
    rng = np.random.default_rng(6)
    pv, cv = rng.standard_normal((2, 3, 5)).astype(f32), rng.random((2, 3, 1)) < 0.5
    colv = rng.standard_normal((3, 1)).astype(f32)
    for m in (mod, new):
        vm = relax.VirtualMachine(minitvm.compile(m, "llvm"), minitvm.cpu())
        got_s, got_wide = (t.numpy() for t in vm["main"](pv, cv, colv))
        np.testing.assert_array_equal(got_s, np.where(cv, 0, pv))
        np.testing.assert_array_equal(got_wide, np.broadcast_to(colv, (3, 4)))
