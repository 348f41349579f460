"""AttachAttrLayoutFreeBuffers (TVM's): each call_tir's PrimFunc copy names its weight
buffers (parameters after num_input, constants); the module computes the same numbers."""

import numpy as np

import minitvm
from minitvm import relax, te, topi
from minitvm.relax.transform import AttachAttrLayoutFreeBuffers


def test_weights_are_named_and_numbers_unchanged():
    x = relax.Var("x", relax.TensorStructInfo([4, 8], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([8, 3], "float32"))
    bias = np.arange(3, dtype="float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w], attrs={"num_input": 1}):
        with bb.dataflow():
            y = bb.emit_te(topi.nn.matmul, x, w)  # w: the second argument is a weight
            z = bb.emit_te(lambda a, b: te.compute(a.shape, lambda i, j: a[i, j] + b[j], name="add"),
                           y, relax.const(bias))  # the constant is one too
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    before = bb.get()
    after = AttachAttrLayoutFreeBuffers()(before)
    free = {gv.name_hint: list(f.attrs["layout_free_buffers"]) for gv, f in after.functions.items()
            if not isinstance(f, relax.Function)}
    assert sorted(free.values()) == [[1], [1]] and len(free) == 2  # the old copies are gone
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((4, 8)).astype("float32"), rng.standard_normal((8, 3)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy(), a @ b + bias,
                               rtol=1e-5, atol=1e-5)
