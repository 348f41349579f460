"""relax.testing.dump_ast (an expression's nodes as nested text) and relax.shape_of /
shape_to_tensor (a tensor's shape read at run time) against numpy's shapes."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax, tir
from minitvm.relax.testing import dump_ast
from minitvm.script import relax as R


def test_dump_ast_nests_nodes_and_can_leave_out_annotations():
    m = tir.Var("m", "int64")
    x = relax.Var("x", R.Tensor([m, 4], "float32"))
    call = relax.op.add(x, x)
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        y = bb.emit(call)
        bb.emit_func_output(y)
    text = dump_ast(bb.get()["f"])
    assert text.startswith("Function(\n    params=[")
    assert 'op=Op(name="relax.add")' in text and "PrimExpr(value=`m`)" in text
    assert "PrimExpr(value=`T.int64(4)`)" in text and "is_pure=True" in text
    assert dump_ast(x, include_struct_info_annotations=False) == 'Var(name_hint="x")'
    block = relax.BindingBlock([relax.VarBinding(relax.Var("c"), relax.const(np.arange(3, dtype="int32")))])
    assert "data=[0 1 2]" in dump_ast(block, include_struct_info_annotations=False)


def test_shape_of_an_unknown_shape_is_read_at_run_time():
    x = relax.Var("x", R.Tensor("float32", ndim=3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(relax.get_shape_of(x))
        t = bb.emit(relax.op.shape_to_tensor(s))
        bb.emit_func_output(relax.Tuple([s, t]))
    mod = bb.get()
    assert mod["main"].body.blocks[0].bindings[0].value.op.name == "relax.shape_of"
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    data = np.random.default_rng(0).standard_normal((2, 5, 3)).astype("float32")
    shape, tensor = vm["main"](minitvm.nd.array(data))
    assert tuple(int(d) for d in shape) == data.shape
    np.testing.assert_array_equal(tensor.numpy(), np.array(data.shape, "int64"))
