"""CombineParallelMatmul and ReorderPermuteDimsAfterConcat: the rewritten module computes the
same numbers (seeded random inputs through the VM), with one matmul / one transpose left."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.ir.op import Op
from minitvm.relax.transform import CombineParallelMatmul, ReorderPermuteDimsAfterConcat
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script.ir_builder import IRBuilder
from minitvm.script.ir_builder import relax as relax_builder

RNG = np.random.default_rng(35)


def _run(mod, arrays):
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    out = vm["main"](*(minitvm.nd.array(a) for a in arrays))
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]


def _inputs(func):
    return [RNG.standard_normal([int(d) for d in p.struct_info.shape_values]).astype("float32") for p in func.params]


def _count(mod, name):
    return sum(1 for block in mod["main"].body.blocks for b in block.bindings
               if isinstance(b.value, relax.Call) and b.value.op == Op.get(name))


@I.ir_module
class Branches:
    @R.function
    def main(x: R.Tensor((2, 5, 8), "float32"), w0: R.Tensor((8, 6), "float32"), w1: R.Tensor((8, 4), "float32"),
             w2: R.Tensor((8, 3), "float32"), b0: R.Tensor((6,), "float32"), b1: R.Tensor((4,), "float32"),
             b2: R.Tensor((3,), "float32"), y: R.Tensor((2, 5, 8), "float32")):
        with R.dataflow():
            r0 = R.nn.gelu(R.add(R.matmul(x, w0), b0))
            r1 = R.nn.gelu(R.add(R.matmul(x, w1), b1))
            r2 = R.nn.gelu(R.add(R.matmul(x, w2), b2))
            other = R.matmul(y, w0)  # alone on its left operand: kept
            out = (r0, r1, r2, other)
            R.output(out)
        return out


def test_branches_with_bias_and_activation_become_one_matmul():
    after = CombineParallelMatmul()(Branches)
    assert _count(after, "relax.matmul") == 2 and _count(after, "relax.nn.gelu") == 1
    assert _count(after, "relax.split") == 1
    inputs = _inputs(Branches["main"])
    for got, want in zip(_run(after, inputs), _run(Branches, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_check_can_refuse_a_group():
    after = CombineParallelMatmul(lambda lhs, rhs, bias, bindings: len(rhs) > 3)(Branches)
    minitvm.ir.assert_structural_equal(after, Branches)


def test_reorder_permute_dims_after_concat_keeps_the_numbers():
    @I.ir_module
    class M:
        @R.function
        def main(x: R.Tensor((3, 8), "float32"), wa: R.Tensor((5, 8), "float32"), wb: R.Tensor((4, 8), "float32")):
            with R.dataflow():
                w = R.concat([R.permute_dims(wa), R.permute_dims(wb, axes=[1, 0])], axis=1)
                out = R.matmul(x, w)
                R.output(out)
            return out

    after = ReorderPermuteDimsAfterConcat()(M)
    assert _count(after, "relax.permute_dims") == 1
    inputs = _inputs(M["main"])
    np.testing.assert_allclose(_run(after, inputs)[0], _run(M, inputs)[0], rtol=1e-5, atol=1e-5)


def _builder_branches(acts):
    """Built with R.arg/R.emit/R.func_ret_value under an IRBuilder, as TVM's own tests build it."""
    with IRBuilder() as builder:
        with relax_builder.function():
            R.func_name("main")
            x = R.arg("x", R.Tensor((5, 8), "float32"))
            ws = [R.arg("w", R.Tensor((8, 4), "float32")) for _ in acts]
            with R.dataflow() as frame:
                outs = []
                for w, act in zip(ws, acts):
                    out = R.emit(R.matmul(x, w))
                    outs.append(R.emit(act(out)) if act is not None else out)
                R.output(R.emit(R.concat(outs, axis=1)))
            R.func_ret_value(frame.output_vars[0])
    return minitvm.IRModule({"main": builder.get()})


def test_mixed_activations_stay_on_their_branches():
    """Branches with different activations: one matmul, each activation kept on its piece
    (once lost, the output was the bare matmul)."""
    mod = _builder_branches([R.nn.gelu, R.nn.relu, None])
    after = CombineParallelMatmul()(mod)
    assert _count(after, "relax.matmul") == 1
    assert _count(after, "relax.nn.gelu") == 1 and _count(after, "relax.nn.relu") == 1
    arrays = _inputs(mod["main"])
    (got,) = _run(after, arrays)
    (want,) = _run(mod, arrays)
    x, w0, w1, w2 = arrays
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 4:8], np.maximum(x @ w1, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 8:], x @ w2, rtol=1e-5, atol=1e-6)


def test_split_of_a_symbolic_axis_at_indices():
    """relax.split at constant indices of (640 + M): pieces 640 and M, as TVM (the shape
    variable known not negative); concat's length written as TVM writes it (640 + M)."""
    m = minitvm.tir.Var("M", "int64")
    a = relax.Var("a", R.Tensor((2, 640), "float32"))
    b = relax.Var("b", R.Tensor((2, m), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [a, b]):
        cat = bb.emit(relax.op.concat([a, b], axis=1))
        parts = bb.emit(relax.op.split(cat, [640], axis=1))
        bb.emit_func_output(parts)
    shape = cat.struct_info.shape_values[1]
    assert isinstance(shape, minitvm.tir.Add) and int(shape.a) == 640 and shape.b is m
    first, second = parts.struct_info.fields
    assert int(first.shape_values[1]) == 640 and second.shape_values[1] is m
