"""The Relax frames of the IR builder (TVM's tvm.script.ir_builder.relax) build what the
BlockBuilder builds, and the function runs."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script.ir_builder import IRBuilder
from minitvm.script.ir_builder import relax as R


def test_ir_builder_dataflow_function_matches_block_builder_and_runs():
    sinfo = relax.TensorStructInfo((4,), "float32")
    with IRBuilder() as ib:
        with R.function():
            R.func_name("main")
            x = R.arg("x", sinfo)
            R.func_ret_struct_info(relax.TensorStructInfo(dtype="float32", ndim=1))
            with R.dataflow() as df:
                y = R.emit(R.add(x, x))
                z = R.emit(R.multiply(y, x))
                R.output(z)
            (z,) = df.output_vars
            R.func_ret_value(z)
    func = ib.get()
    assert not isinstance(func.body.body, relax.DataflowVar)

    x = relax.Var("x", sinfo)
    bb = relax.BlockBuilder()
    with bb.function("main", (x,)):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x))
            z = bb.emit_output(relax.op.multiply(y, x))
        bb.emit_func_output(z)
    minitvm.ir.assert_structural_equal(func, bb.get()["main"])  # the body's (4,) beats the annotation

    data = np.random.default_rng(2).random(4).astype("float32")
    ex = relax.build(minitvm.IRModule.from_expr(func), "llvm")
    out = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(data))
    np.testing.assert_allclose(out.numpy(), (data + data) * data, rtol=1e-6)
