"""RemoveRedundantReshape: no-op reshapes and copies go, reshape chains become one reshape."""

from __future__ import annotations

import numpy as np

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
    dense layer's kernel (FuseOps does not fuse a reshape after a matmul); a reshape to another
    shape keeps its activation between reshapes; torch's result either way."""
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
            s = bb.emit(relax.op.reshape(relax.op.tanh(relax.op.reshape(back, (3, 24))), (4, 18)))  # stays
            gv = bb.emit_output(relax.op.add(s, relax.op.reshape(back, (4, 18))))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.DeadCodeElimination()(relax.transform.RemoveRedundantReshape()(mod))
    ops = [b.value.op.name for b in new["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    assert ops[:2] == ["relax.matmul", "relax.nn.gelu"] and ops.count("relax.reshape") == 3, ops
    fused = relax.get_pipeline("default")(mod)
    assert any("matmul" in gv.name_hint and "gelu" in gv.name_hint for gv, _ in fused.functions_items()), fused
    rng = np.random.default_rng(8)
    xv, wv = rng.standard_normal((6, 8)).astype("float32"), rng.standard_normal((8, 12)).astype("float32")
    g_t = torch.nn.functional.gelu(torch.from_numpy(xv @ wv))
    want = (torch.tanh(g_t.reshape(3, 24)).reshape(4, 18) + g_t.reshape(4, 18)).numpy()
    for m in (mod, new):
        got = relax.VirtualMachine(minitvm.compile(m, "llvm"), minitvm.cpu())["main"](xv, wv).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
