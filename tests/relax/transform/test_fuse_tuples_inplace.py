"""FuseOps and FuseTIR with tuples (a split read field by field, a group returning two
values, tuple parameters) and in-place kernels; each checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, topi
from minitvm.relax import op as R
from minitvm.relax.transform import AnnotateTIROpPattern, FuseOps, FuseTIR
from minitvm.script import tir as T
from minitvm.tir import PrimFunc

from .test_fuse_ops_tir import prim_funcs, rand, relax_funcs, run_vm, tensor


def test_a_split_and_its_fields_fuse_into_one_kernel():
    x, w = tensor("x", 2, 4), tensor("w", 12, 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            d = bb.emit_te(topi.nn.dense, x, w)                  # out_ewise_fusable: a group of its own
            parts = bb.emit_te(topi.split, d, indices_or_sections=3, axis=1)
            a = bb.emit_te(topi.sigmoid, bb.emit(relax.TupleGetItem(parts, 0)))
            b = bb.emit_te(topi.tanh, bb.emit(relax.TupleGetItem(parts, 1)))
            c = bb.emit_te(topi.exp, bb.emit(relax.TupleGetItem(parts, 2)))
            gv = bb.emit_output(bb.call_te(topi.add, a, bb.emit_te(topi.multiply, b, c)))
        bb.emit_func_output(gv)
    mod = FuseOps()(AnnotateTIROpPattern()(bb.get()))
    # the split is injective, its fields are read through TupleGetItem (injective too): the
    # whole tail post-dominated by the final add is one group; the dense stays apart
    assert relax_funcs(mod) == ["fused_split_sigmoid_tanh_exp_multiply_add", "main"]
    fused = FuseTIR()(mod)
    assert prim_funcs(fused) == ["dense", "fused_split_sigmoid_tanh_exp_multiply_add"]
    xv, wv = rand(2, 4), rand(12, 4)
    dv = xv @ wv.T
    s0, s1, s2 = dv[:, :4], dv[:, 4:8], dv[:, 8:]
    want = 1 / (1 + np.exp(-s0)) + np.tanh(s1) * np.exp(s2)
    np.testing.assert_allclose(run_vm(fused, xv, wv), want, rtol=1e-5, atol=1e-6)


def _primitive_returning_two_values():
    """A Primitive function returning (exp(x), x + x), called from main."""
    x = tensor("x", 3, 5)
    bb = relax.BlockBuilder()
    with bb.function("fused_exp_add", [x], attrs={"Primitive": True}, private=True):
        with bb.dataflow():
            e = bb.emit_te(topi.exp, x)
            s = bb.emit_te(topi.add, x, x)
            out = bb.emit_output(relax.Tuple([e, s]))
        bb.emit_func_output(out)
    fn = bb.get().get_global_var("fused_exp_add")
    y = tensor("y", 3, 5)
    with bb.function("main", [y]):
        with bb.dataflow():
            pair = bb.emit(relax.Call(fn, [y]))
            total = bb.emit_output(R.add(bb.emit(relax.TupleGetItem(pair, 0)), bb.emit(relax.TupleGetItem(pair, 1))))
        bb.emit_func_output(total)
    return bb.get()


def test_a_primitive_function_returning_a_tuple_becomes_a_kernel_with_two_outputs():
    mod = FuseTIR()(_primitive_returning_two_values())
    kernel = mod["fused_exp_add"]
    assert isinstance(kernel, PrimFunc)
    assert [p.name for p in kernel.params] == ["p_x", "p_output0", "p_output1"]
    assert not kernel.body.block.alloc_buffers        # both results are outputs, nothing in between
    text = mod.script()
    assert "R.call_tir(cls.fused_exp_add, (y,), out_sinfo=[R.Tensor((3, 5)" in text
    xv = rand(3, 5)
    legal = relax.transform.LegalizeOps()(mod)
    np.testing.assert_allclose(run_vm(legal, xv), np.exp(xv) + 2 * xv, rtol=1e-6)


def test_tuple_parameters_are_expanded_before_fusing():
    a, b = tensor("a", 4), tensor("b", 4)
    pair = relax.Var("pair", relax.TupleStructInfo([a.struct_info, b.struct_info]))
    bb = relax.BlockBuilder()
    with bb.function("fused_add_exp", [pair], attrs={"Primitive": True}, private=True):
        with bb.dataflow():
            first = bb.emit(relax.TupleGetItem(pair, 0))
            second = bb.emit(relax.TupleGetItem(pair, 1))
            out = bb.emit_output(bb.call_te(topi.exp, bb.emit_te(topi.add, first, second)))
        bb.emit_func_output(out)
    fn = bb.get().get_global_var("fused_add_exp")
    x, y = tensor("x", 4), tensor("y", 4)
    with bb.function("main", [x, y]):
        with bb.dataflow():
            gv = bb.emit_output(relax.Call(fn, [relax.Tuple([x, y])]))
        bb.emit_func_output(gv)
    mod = FuseTIR()(bb.get())
    # the tuple parameter became pair_0, pair_1: the kernel takes two tensors
    assert [p.name for p in mod["fused_add_exp"].params] == ["p_pair_0", "p_pair_1", "p_output0"]
    xv, yv = rand(4), rand(4)
    np.testing.assert_allclose(run_vm(mod, xv, yv), np.exp(xv + yv), rtol=1e-6)


@T.prim_func
def relu_in_place(A: T.Buffer((6,), "float32")):
    for i in range(6):
        with T.block("relu"):
            vi = T.axis.spatial(6, i)
            A[vi] = T.max(A[vi], T.float32(0))


@T.prim_func
def double(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
    for i in range(6):
        with T.block("double"):
            vi = T.axis.spatial(6, i)
            B[vi] = A[vi] * T.float32(2)


def test_an_in_place_kernel_in_a_group_makes_the_fused_call_in_place():
    x = tensor("x", 6)
    sinfo = relax.TensorStructInfo((6,), "float32")
    bb = relax.BlockBuilder()
    relu = bb.add_func(relu_in_place.with_attr("op_pattern", 0), "relu_in_place")
    dbl = bb.add_func(double.with_attr("op_pattern", 0), "double")
    with bb.function("main", [x]):
        with bb.dataflow():
            d = bb.emit(relax.call_tir(dbl, (x,), sinfo))
            gv = bb.emit_output(relax.call_tir_inplace(relu, (d,), [0], sinfo))
        bb.emit_func_output(gv)
    mod = FuseOps()(bb.get())
    assert relax_funcs(mod) == ["fused_double_relu_in_place", "main"]
    fused = FuseTIR()(mod)
    kernel = fused["fused_double_relu_in_place"]
    # relu writes double's result in place: one output buffer, no intermediate
    assert [p.name for p in kernel.params] == ["p_x", "p_output0"]
    assert "R.call_tir(cls.fused_double_relu_in_place" in fused.script()
    xv = rand(6)
    np.testing.assert_allclose(run_vm(fused, xv), np.maximum(2 * xv, 0), rtol=1e-6)


def test_a_group_whose_value_nothing_reads_is_dropped():
    x = tensor("x", 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            unused = bb.emit(R.exp(x))
            bb.emit(R.nn.relu(unused))                      # a dead chain
            gv = bb.emit_output(R.add(x, x))
        bb.emit_func_output(gv)
    mod = FuseOps()(AnnotateTIROpPattern()(relax.transform.LegalizeOps()(bb.get())))
    names = [b.var.name_hint for b in mod["main"].body.blocks[0].bindings]
    assert relax_funcs(mod) == ["main"] and len(names) == 1   # only the add is left
    xv = rand(4)
    np.testing.assert_allclose(run_vm(FuseTIR()(mod), xv), 2 * xv, rtol=1e-6)


def _chain_of_three():
    x = tensor("x", 5)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.add(x, x))
            b = bb.emit(R.exp(a))
            gv = bb.emit_output(R.negative(b))
        bb.emit_func_output(gv)
    return AnnotateTIROpPattern()(relax.transform.LegalizeOps()(bb.get()))


def test_fusion_depth_and_level_are_configurable():
    mod = _chain_of_three()
    assert relax_funcs(FuseOps()(mod)) == ["fused_add_tir_exp_tir_negative", "main"]
    assert FuseOps(fuse_opt_level=0)(mod) is mod                 # level 0: no fusion
    with minitvm.transform.PassContext(opt_level=0):
        assert FuseOps()(mod) is mod                             # -1 follows the context's level
    with minitvm.transform.PassContext(config={"relax.FuseOps.max_depth": 2}):
        capped = FuseOps()(mod)
    # add joins exp (2 nodes); exp's group joining negative would make 3
    assert relax_funcs(capped) == ["fused_add_tir_exp", "main"]
    xv = rand(5)
    np.testing.assert_allclose(run_vm(FuseTIR()(capped), xv), -np.exp(2 * xv), rtol=1e-6)


@T.prim_func
def mul_split_axes(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 8), "float32", axis_separators=[1])
    B = T.match_buffer(b, (4, 8), "float32")
    C = T.match_buffer(c, (4, 8), "float32", axis_separators=[1])
    for i, j in T.grid(4, 8):
        with T.block("mul"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * B[vi, vj]


def _primitive_passing_x_twice():
    x = tensor("x", 4, 8)
    bb = relax.BlockBuilder()
    mul = bb.add_func(mul_split_axes, "mul")
    with bb.function("fused_mul", [x], attrs={"Primitive": True}, private=True):
        with bb.dataflow():
            out = bb.emit_output(relax.call_tir(mul, (x, x), relax.TensorStructInfo((4, 8), "float32")))
        bb.emit_func_output(out)
    fn = bb.get().get_global_var("fused_mul")
    z = tensor("z", 4, 8)
    with bb.function("main", [z]):
        with bb.dataflow():
            gv = bb.emit_output(relax.Call(fn, [z]))
        bb.emit_func_output(gv)
    return bb.get()


def test_one_value_passed_as_buffers_of_different_layouts_is_refused():
    # x is both A (axis separators [1]) and B (none): no single fused buffer can be both
    with pytest.raises(minitvm.TVMError, match="Inconsistent buffers .* mapped to the same relax var: x"):
        FuseTIR()(_primitive_passing_x_twice())
