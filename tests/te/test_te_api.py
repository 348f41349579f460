"""The TE building blocks: tensors, compute, reductions, and the errors a learner meets."""

from __future__ import annotations

import pytest

from minitvm import te, tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import FloatImm, IntImm, Max, Var


def test_placeholder():
    A = te.placeholder((128, 64), "float32", name="A")
    assert A.shape == (IntImm("int32", 128), IntImm("int32", 64))
    assert [int(d) for d in A.shape] == [128, 64]
    assert A.dtype == "float32" and A.name == "A" and A.ndim == 2
    assert isinstance(A.op, te.PlaceholderOp) and A.op.input_tensors == []
    assert te.placeholder((3,)).dtype == "float32"
    assert te.placeholder(5, "int8", name="v").shape == (IntImm("int32", 5),)
    assert A == A.op.output(0) and A != te.placeholder((128, 64), name="A")
    assert "A" in repr(A)


def test_placeholder_rejects_bad_input():
    with pytest.raises(TypeError, match="unknown dtype"):
        te.placeholder((2,), "float31")
    with pytest.raises(TypeError, match="not an int"):
        te.placeholder((2.5,))
    with pytest.raises(ValueError, match="negative"):
        te.placeholder((-1,))


def test_indexing_builds_a_producer_load():
    A = te.placeholder((4, 5), name="A")
    i, j = te.var("i"), te.var("j")
    load = A[i, j + 1]
    assert isinstance(load, te.ProducerLoad) and load.producer == A and load.dtype == "float32"
    assert load.indices[0] is i
    assert_structural_equal(load.indices[1], j + 1)
    assert_structural_equal(A(i, 0), A[i, 0])


def test_indexing_with_the_wrong_number_of_indices():
    A = te.placeholder((4, 5), name="A")
    i = te.var("i")
    with pytest.raises(IndexError, match=r"tensor A has 2 dimensions but is indexed with 1 index: A\[i\]"):
        A[i]
    with pytest.raises(IndexError, match="indexed with 3 indices"):
        A[i, i, i]
    with pytest.raises(TypeError, match="indices must be integers"):
        A[i, 1.5]


def test_compute_axes_are_named_after_the_lambda():
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda row, col: A[row, col] * 2.0, name="B", tag="elemwise")
    op = B.op
    assert [iv.var.name for iv in op.axis] == ["row", "col"]
    assert all(iv.iter_type == "spatial" for iv in op.axis)
    assert op.reduce_axis == () and op.tag == "elemwise" and op.input_tensors == [A]
    assert B.shape == A.shape and B.dtype == "float32" and B.name == "B"


def test_compute_with_varargs_and_default_name():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.compute(A.shape, lambda *idx: A[idx] + 1.0)
    assert B.name == "compute"
    assert [iv.var.name for iv in B.op.axis] == ["i0", "i1", "i2"]
    C = te.compute(A.shape, lambda n, *rest: A[(n, *rest)], name="C")
    assert [iv.var.name for iv in C.op.axis] == ["n", "i1", "i2"]


def test_compute_arity_mismatch():
    with pytest.raises(ValueError, match="compute: shape has 2 dims but fcompute takes 3 arguments"):
        te.compute((4, 5), lambda i, j, k: i + j + k)
    with pytest.raises(ValueError, match="shape has 1 dim but fcompute takes 2 arguments"):
        te.compute((4,), lambda i, j: i)


def test_compute_dtype_follows_the_body():
    A = te.placeholder((4,), "int32", name="A")
    assert te.compute((4,), lambda i: A[i] + 1).dtype == "int32"
    assert te.compute((4,), lambda i: A[i].astype("float32")).dtype == "float32"
    assert te.compute((4,), lambda i: te.const(1.5, "float64")).dtype == "float64"
    assert te.compute((4,), lambda i: i).dtype == "int32"


def test_reduce_axis():
    k = te.reduce_axis((0, 16), "k")
    assert isinstance(k, tir.IterVar) and k.iter_type == "reduce" and k.var.name == "k"
    assert int(k.dom.min) == 0 and int(k.dom.extent) == 16
    r = te.reduce_axis((2, 5))
    assert r.var.name == "rv" and int(r.dom.min) == 2 and int(r.dom.extent) == 3
    with pytest.raises(TypeError, match="begin, end"):
        te.reduce_axis(16, "k")


def test_iter_var_works_in_index_arithmetic():
    k = te.reduce_axis((0, 3), "k")
    y = te.var("y")
    assert_structural_equal(y + k, y + k.var)
    assert_structural_equal(k + y, k.var + y)
    assert_structural_equal(k * 2 - 1, k.var * 2 - 1)
    assert_structural_equal(k < 2, k.var < 2)
    assert_structural_equal(tir.convert(k), k.var)


def test_sum_builds_a_reduce():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="S")
    body = S.op.body[0]
    assert isinstance(body, te.Reduce) and body.dtype == "float32"
    assert S.op.reduce_axis == (k,)
    assert_structural_equal(body.combiner.identity_element, (FloatImm("float32", 0.0),))


def test_reduce_over_several_axes():
    A = te.placeholder((4, 5, 6), name="A")
    j = te.reduce_axis((0, 5), "j")
    k = te.reduce_axis((0, 6), "k")
    S = te.compute((4,), lambda i: te.sum(A[i, j, k], axis=[j, k]), name="S")
    assert S.op.reduce_axis == (j, k)
    func = te.create_prim_func([A, S])
    block = func.body.block.body.body.body.body.block
    assert [iv.var.name for iv in block.iter_vars] == ["v_i", "v_j", "v_k"]


def test_max_min_of_two_expressions_are_elementwise():
    Y = te.placeholder((4, 4), name="Y")
    i, j = te.var("i"), te.var("j")
    relu = te.max(Y[i, j], 0)
    assert isinstance(relu, Max)
    assert_structural_equal(relu.b, FloatImm("float32", 0.0))
    assert isinstance(te.min(Y[i, j], 6.0), tir.Min)
    assert_structural_equal(te.max(1, 2), IntImm("int32", 2))
    assert isinstance(te.sum(Y[i, j], 1.0), tir.Add)


def test_reducer_needs_an_axis():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="needs a reduce axis"):
        te.compute((1,), lambda i: te.sum(A[i]))


def test_spatial_axis_is_not_a_reduce_axis():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j], name="B")
    with pytest.raises(ValueError, match="spatial axis"):
        te.sum(A[0, 0], axis=B.op.axis[0])


def test_reduce_axis_used_outside_a_reducer():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    with pytest.raises(ValueError, match="reduce axis k is used outside a reducer"):
        te.compute((4,), lambda i: A[i, k], name="bad")
    k2 = te.reduce_axis((0, 8), "k2")
    with pytest.raises(ValueError, match="reduce axis k2 is used outside a reducer"):
        te.compute((4,), lambda i: te.sum(A[i, k] + A[i, k2], axis=k), name="bad")


def test_reduction_must_be_the_whole_body():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    with pytest.raises(ValueError, match="must be the whole body of a compute"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="bad")


def test_index_of_another_compute_is_rejected():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    other = B.op.axis[0].var
    with pytest.raises(ValueError, match="index i of another compute"):
        te.compute((4,), lambda j: A[other], name="C")


def test_fcompute_returning_a_tensor():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="returned the tensor A"):
        te.compute((4,), lambda i: A)


def test_math_helpers_are_tirs():
    x = te.var("x", "float32")
    for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "erf", "rsqrt"):
        call = getattr(te, name)(x)
        assert isinstance(call, tir.Call) and call.op == f"tir.{name}"
    assert te.if_then_else(x > 0.0, x, 0.0).op == "tir.if_then_else"
    assert_structural_equal(te.max_value("int8"), IntImm("int8", 127))
    assert te.const(1).dtype == "int32" and te.const(1.0).dtype == "float32"
    assert te.const(2, "float16").dtype == "float16"
    assert isinstance(te.size_var("n"), tir.SizeVar) and te.var("n", "int64").dtype == "int64"
    b = te.var("b", "bool")
    assert_structural_equal(te.all(b, x > 0.0, x < 1.0), tir.op.logical_and(tir.op.logical_and(b, x > 0.0),
                                                                           x < 1.0))
    assert isinstance(te.any(b, x > 0.0), tir.Or)


def test_comm_reducer_custom_product():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    P = te.compute((3,), lambda i: prod(A[i, k], axis=k), name="P")
    block = te.create_prim_func([A, P]).body.block.body.body.body.block
    assert_structural_equal(block.init.value, FloatImm("float32", 1.0))
    assert isinstance(block.body.value, tir.Mul)


def test_sum_with_init_value():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    S = te.compute((3,), lambda i: te.sum(A[i, k], axis=k, init=1.0), name="S")
    block = te.create_prim_func([A, S]).body.block.body.body.body.block
    assert_structural_equal(block.init.value, FloatImm("float32", 1.0))


def test_argmax_with_a_tuple_reducer():
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return tir.op.if_then_else(keep, x[0], y[0]), tir.op.if_then_else(keep, x[1], y[1])

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    idx, val = te.compute((3,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
    assert idx.dtype == "int32" and val.dtype == "float32"
    assert idx.name == "T.v0" and val.name == "T.v1" and idx.op is val.op
    func = te.create_prim_func([A, idx, val])
    block = func.body.block.body.body.body.block
    assert [w.buffer.name for w in block.writes] == ["T_v0", "T_v1"]
    assert [r.buffer.name for r in block.reads] == ["A"]
    # both components are computed from the old values before either is stored
    assert isinstance(block.body, tir.LetStmt) and isinstance(block.body.body, tir.LetStmt)
    assert isinstance(block.init, tir.SeqStmt) and len(block.init) == 2


def test_compute_with_several_outputs():
    A = te.placeholder((4,), name="A")
    lo, hi = te.compute((4,), lambda i: (A[i] - 1.0, A[i] + 1.0), name="band")
    func = te.create_prim_func([A, lo, hi])
    block = func.body.block.body.body.block
    assert isinstance(block.body, tir.SeqStmt) and len(block.body) == 2
    assert [w.buffer.name for w in block.writes] == ["band_v0", "band_v1"]


def test_mixed_reduce_and_plain_outputs_are_rejected():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(ValueError, match="every output is a reduction or none is"):
        te.compute((4,), lambda i: (te.sum(A[i, k], axis=k), A[i, 0]))


def test_zero_dim_output():
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), "k")
    total = te.compute((), lambda: te.sum(A[k], axis=k), name="total")
    assert total.ndim == 0 and total.shape == ()
    func = te.create_prim_func([A, total])
    loop = func.body.block.body
    assert loop.loop_var.name == "k"
    block = loop.body.block
    assert [iv.var.name for iv in block.iter_vars] == ["v_k"] and block.body.indices == ()


def test_compute_attrs_become_block_annotations():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B", attrs={"schedule_rule": "none"})
    block = te.create_prim_func([A, B]).body.block.body.body.block
    assert block.annotations == {"schedule_rule": "none"}


def test_var_type_checks():
    assert isinstance(te.var("n"), Var)
    with pytest.raises(TypeError):
        te.var("n", "int33")


def test_reduce_range_depending_on_an_index_is_rejected():
    A = te.placeholder((4,), name="A")

    def prefix_sum(i):
        k = te.reduce_axis((0, i + 1), "k")
        return te.sum(A[k], axis=k)

    with pytest.raises(ValueError, match="range of reduce axis k depends on i; .* where="):
        te.compute((4,), prefix_sum, name="P")


def test_reduce_axis_thread_tag_is_refused_by_name():
    assert te.reduce_axis((0, 8), "k").var.name == "k"
    with pytest.raises(NotImplementedError, match="thread_tag='threadIdx.x'"):
        te.reduce_axis((0, 8), "k", thread_tag="threadIdx.x")
