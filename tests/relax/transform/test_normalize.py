"""Normalize: nested SeqExprs spliced into their blocks, neighbouring blocks merged, nested
calls bound to variables; the normalized function computes the same numbers."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax.transform import Normalize


def test_nested_seq_and_nested_calls_are_flattened_and_compute_the_same():
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    sinfo = relax.TensorStructInfo((3, 4), "float32")
    y, z = relax.Var("y", sinfo), relax.Var("z", sinfo)
    inner = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(z, relax.op.exp(x))])], z)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, inner)])],
                         relax.op.multiply(relax.op.add(y, x), y))
    func = relax.Function([x], body, relax.TensorStructInfo(dtype="float32", ndim=2)).with_attr("global_symbol", "main")
    mod = Normalize()(minitvm.IRModule.from_expr(func))
    main = mod["main"]
    assert len(main.body.blocks) == 1
    assert [b.var.name for b in main.body.blocks[0].bindings][:2] == ["z", "y"]
    assert isinstance(main.body.body, relax.Var)  # the nested call got its own binding
    assert [int(d) for d in main.ret_struct_info.shape_values] == [3, 4]  # refined from the body
    data = np.random.default_rng(7).standard_normal((3, 4)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(data)).numpy(),
                               (np.exp(data) + data) * np.exp(data), rtol=1e-5)
    assert Normalize()(mod)["main"] is main  # already normal: left as it is
