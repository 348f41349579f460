"""SplitLayoutRewritePreproc (TVM's relax.transform.SplitLayoutRewritePreproc): the weight
layout rewrite moves to its own PrimFunc, called before the compute one; same numbers."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Before:
    @T.prim_func(private=True)
    def add(X: T.Buffer((8, 8), "float32"), W: T.Buffer((8, 8), "float32"), Out: T.Buffer((8, 8), "float32")):
        T.func_attr({"layout_free_buffers": [1]})
        W_rewrite = T.alloc_buffer((2, 2, 4, 4))
        for i, j in T.grid(8, 8):
            with T.block("W_rewrite"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"meta_schedule.layout_rewrite_preproc": True})
                W_rewrite[vi // 4, vj // 4, vi % 4, vj % 4] = W[vi, vj]
        for i0, j0, i1, j1 in T.grid(2, 2, 4, 4):
            with T.block("Out"):
                vi = T.axis.spatial(8, i0 * 4 + i1)
                vj = T.axis.spatial(8, j0 * 4 + j1)
                Out[vi, vj] = X[vi, vj] + W_rewrite[vi // 4, vj // 4, vi % 4, vj % 4]

    @R.function
    def main(x: R.Tensor((8, 8), "float32"), w: R.Tensor((8, 8), "float32")) -> R.Tensor((8, 8), "float32"):
        R.func_attr({"num_input": 1})
        cls = Before
        with R.dataflow():
            gv = R.call_tir(cls.add, (x, w), out_sinfo=R.Tensor((8, 8), "float32"))
            R.output(gv)
        return gv


def test_split_and_same_numbers():
    after = relax.transform.SplitLayoutRewritePreproc()(Before)
    assert sorted(gv.name_hint for gv in after.get_global_vars()) == ["add_prepacked", "add_weight_prepack", "main"]
    pre = after["add_weight_prepack"]
    assert [pre.buffer_map[p].name for p in pre.params] == ["W", "W_rewrite"]
    assert "layout_free_buffers" not in (after["add_prepacked"].attrs or {})
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((8, 8)).astype("float32") for _ in range(2))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x), minitvm.nd.array(w)).numpy(), x + w, rtol=1e-6)


def test_layout_rewrite_reading_no_parameter_is_refused():
    @I.ir_module
    class Bad:
        @T.prim_func(private=True)
        def f(X: T.Buffer((4,), "float32"), Out: T.Buffer((4,), "float32")):
            tmp = T.alloc_buffer((4,))
            tmp2 = T.alloc_buffer((4,))
            for i in range(4):
                with T.block("tmp"):
                    vi = T.axis.remap("S", [i])
                    tmp[vi] = X[vi]
            for i in range(4):
                with T.block("pre"):
                    vi = T.axis.remap("S", [i])
                    T.block_attr({"meta_schedule.layout_rewrite_preproc": True})
                    tmp2[vi] = tmp[vi]
            for i in range(4):
                with T.block("Out"):
                    vi = T.axis.remap("S", [i])
                    Out[vi] = tmp2[vi]

        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Bad
            return R.call_tir(cls.f, (x,), out_sinfo=R.Tensor((4,), "float32"))

    with pytest.raises(ValueError, match="layout-rewrite block 'pre' reads tmp, which is not a parameter"):
        relax.transform.SplitLayoutRewritePreproc()(Bad)


def test_split_prim_func_remembers_by_identity_only():
    # relax.build splits a kernel when it compiles it early and the pass splits it again: the
    # second answer is the first, while another (even an equal) function gets its own
    from minitvm.ir.structural import structural_equal
    from minitvm.relax.transform.split_layout_rewrite_preproc import split_prim_func

    kernel = Before["add"]
    first = split_prim_func(kernel)
    assert split_prim_func(kernel) is first
    copy = kernel.with_attr("note", "copy")  # the answer follows its own input
    again = split_prim_func(copy)
    assert again is not first and again[1].attrs.get("note") == "copy" and "note" not in first[1].attrs
    assert structural_equal(again[2][0].after, first[2][0].after)
    plain = kernel.with_body(kernel.body.block.body.seq[1])  # no layout-rewrite block: nothing to split
    assert split_prim_func(plain) is None
