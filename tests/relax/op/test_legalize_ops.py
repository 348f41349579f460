"""LegalizeOps: every operator becomes call_tir of a TOPI PrimFunc that computes what numpy
computes.  Each test builds a tiny Relax function with the BlockBuilder, legalizes it and
runs the PrimFuncs in binding order (minitvm.testing.relax_eval) on random data."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm
from minitvm import relax, runtime, tir, transform
from minitvm.ir import Op, structural_equal
from minitvm.relax import op as R
from minitvm.relax.pipeline import high_level_ops
from minitvm.relax.transform import LegalizeOps
from minitvm.testing.op_reference import conv2d_nchw, pool2d_nchw
from minitvm.testing.relax_eval import RelaxEvalError, evaluate
from minitvm.tir import PrimFunc

RNG = np.random.default_rng(7)


def rand(*shape, dtype="float32", low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def build(make, *arrays, symbolic_batch=False):
    """A module whose main takes tensors shaped like ``arrays`` and returns ``make(*params)``;
    with ``symbolic_batch`` the first dimension of every parameter is the variable n."""
    n = tir.Var("n", "int64")
    params = []
    for k, a in enumerate(arrays):
        shape = list(a.shape)
        if symbolic_batch and shape:
            shape[0] = n
        params.append(relax.Var(f"p{k}", relax.TensorStructInfo(shape, str(a.dtype))))
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def run(make, *arrays, symbolic_batch=False):
    mod = LegalizeOps()(build(make, *arrays, symbolic_batch=symbolic_batch))
    assert high_level_ops(mod) == []
    assert relax.analysis.well_formed(mod)
    return evaluate(mod, "main", *arrays)


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


erf = np.vectorize(math.erf)


# -- element-wise ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op,ref", [
    (R.add, np.add), (R.subtract, np.subtract), (R.multiply, np.multiply), (R.divide, np.divide),
    (R.power, np.power), (R.maximum, np.maximum), (R.minimum, np.minimum),
    (R.floor_divide, np.floor_divide), (R.equal, np.equal), (R.not_equal, np.not_equal),
    (R.less, np.less), (R.less_equal, np.less_equal), (R.greater, np.greater),
    (R.greater_equal, np.greater_equal),
])
def test_binary(op, ref):
    a, b = rand(3, 1, 4, low=0.5), rand(2, 1, low=0.5)
    b[1, 0] = a[0, 0, 1]  # an equal pair for the comparisons
    close(run(op, a, b), ref(a, b))


def test_binary_symbolic_batch_and_constant_operand():
    a = rand(5, 3)
    c = relax.const(np.float32(0.5))
    close(run(lambda x: R.multiply(x, c), a, symbolic_batch=True), a * 0.5)


@pytest.mark.parametrize("op,ref,low", [
    (R.exp, np.exp, -2), (R.log, np.log, 0.1), (R.sqrt, np.sqrt, 0.1), (R.rsqrt, lambda x: 1 / np.sqrt(x), 0.1),
    (R.tanh, np.tanh, -2), (R.sigmoid, lambda x: 1 / (1 + np.exp(-x)), -2), (R.erf, erf, -2),
    (R.negative, np.negative, -2), (R.abs, np.abs, -2), (R.nn.relu, lambda x: np.maximum(x, 0), -2),
    (R.nn.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), -3),
    (R.nn.gelu_tanh, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), -3),
    (R.nn.silu, lambda x: x / (1 + np.exp(-x)), -3),
])
def test_unary(op, ref, low):
    a = rand(4, 5, low=low, high=3.0)
    close(run(op, a, symbolic_batch=True), ref(a).astype("float32"))


def test_astype_and_where():
    a = rand(3, 4) * 10
    np.testing.assert_array_equal(run(lambda x: R.astype(x, "int32"), a), a.astype("int32"))
    c = rand(3, 1) > 0
    b = rand(4)
    close(run(R.where, c, a, b), np.where(c, a, b))


def test_logical_ops():
    a, b = rand(3, 4) > 0, rand(4) > 0
    np.testing.assert_array_equal(run(R.logical_and, a, b), a & b)
    np.testing.assert_array_equal(run(R.logical_or, a, b), a | b)
    np.testing.assert_array_equal(run(R.logical_not, a, symbolic_batch=True), ~a)


@pytest.mark.parametrize("lo,hi", [(-0.5, 1.0), (None, 0.3), (0.0, None)])
def test_clip(lo, hi):
    a = rand(4, 5)
    close(run(lambda x: R.clip(x, lo, hi), a, symbolic_batch=True), np.clip(a, lo, hi))


def test_clip_of_integers_rounds_the_bounds_inward():
    a = (rand(3, 4) * 5).astype("int64")
    np.testing.assert_array_equal(run(lambda x: R.clip(x, -1.5, 2.5), a), np.clip(a, -1, 2))


def test_ewise_fma():
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    close(run(R.ewise_fma, a, b, c), a * b + c)


# -- linear algebra -----------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 5))])
def test_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb)
    close(run(R.matmul, a, b), a @ b, 1e-4)


def test_linear_with_and_without_bias():
    x, w, b = rand(3, 6), rand(4, 6), rand(4)
    close(run(R.linear, x, w, b, symbolic_batch=False), x @ w.T + b, 1e-4)
    close(run(lambda x, w: R.linear(x, w), x, w), x @ w.T, 1e-4)


# -- shapes and indexing --------------------------------------------------------------------------

def test_permute_reshape_flatten():
    a = rand(2, 3, 4)
    close(run(lambda x: R.permute_dims(x, [1, 2, 0]), a), a.transpose(1, 2, 0))
    close(run(R.permute_dims, a), a.T)
    close(run(lambda x: R.reshape(x, (4, -1)), a), a.reshape(4, 6))
    close(run(R.flatten, a), a.reshape(-1))


def test_reshape_symbolic_batch():
    a = rand(5, 3, 4)
    close(run(lambda x: R.reshape(x, (x.struct_info.shape.values[0], -1)), a, symbolic_batch=True), a.reshape(5, 12))


def test_expand_dims_squeeze_broadcast_to():
    a = rand(3, 1, 4)
    close(run(lambda x: R.expand_dims(x, [0, 4]), a), a[None, :, :, :, None])
    close(run(R.squeeze, a), a.squeeze())
    close(run(lambda x: R.squeeze(x, [1]), a), a.squeeze(1))
    close(run(lambda x: R.broadcast_to(x, (2, 3, 5, 4)), a), np.broadcast_to(a, (2, 3, 5, 4)))


def test_concat_and_split():
    a, b = rand(2, 3), rand(2, 2)
    close(run(lambda x, y: R.concat([x, y, x], axis=1), a, b), np.concatenate([a, b, a], 1))
    x = rand(6, 4)
    got = run(lambda t: R.split(t, 3, axis=0), x)
    for g, w in zip(got, np.split(x, 3, axis=0)):
        close(g, w)
    got = run(lambda t: R.split(t, [1, 3], axis=1), x)
    for g, w in zip(got, np.split(x, [1, 3], axis=1)):
        close(g, w)
    (whole,) = run(lambda t: R.split(t, 1, axis=0), x)  # one piece is still a 1-tuple (found by fuzzing)
    close(whole, x)


@pytest.mark.parametrize("op, ref", [(R.sum, np.sum), (R.mean, np.mean), (R.max, np.max), (R.min, np.min)])
def test_reducing_a_0d_tensor_gives_its_value(op, ref):
    x = np.array(np.random.default_rng(4).standard_normal(), "float32")  # found by fuzzing
    close(run(lambda t: op(t), x), ref(x))


def test_stack_matches_numpy():
    """relax.op.stack (numpy.stack): a new axis at any position, negative counted from the output's end."""
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    for axis in (0, 1, 2, -1, -3):
        close(run(lambda x, y, z, axis=axis: R.stack([x, y, z], axis=axis), a, b, c), np.stack([a, b, c], axis=axis))
    close(run(lambda x, y: R.stack([x, y], axis=1), a, b, symbolic_batch=True), np.stack([a, b], axis=1))
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 2), "float32"))
    bb = relax.BlockBuilder()
    assert bb.normalize(R.stack([x, x], axis=-1)).struct_info.shape_values[2].value == 2
    with pytest.raises(relax.StructInfoError, match="cannot stack shapes"):
        bb.normalize(R.stack([x, y]))
    with pytest.raises(relax.StructInfoError, match="axis"):
        bb.normalize(R.stack([x, x], axis=3))


def test_binary_dtype_mismatch_is_a_type_error():
    """As TVM: operands of different dtypes are a TypeError (still a StructInfoError)."""
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((2, 3), "int32"))
    with pytest.raises(TypeError, match="relax.add: operands have different dtypes float32 and int32"):
        relax.BlockBuilder().normalize(R.add(x, y))
    with pytest.raises(relax.StructInfoError):
        relax.BlockBuilder().normalize(R.multiply(x, y))


def test_split_of_a_symbolic_axis():
    x = rand(6, 2)
    got = run(lambda t: R.split(t, 3, axis=0), x, symbolic_batch=True)
    for g, w in zip(got, np.split(x, 3, axis=0)):
        close(g, w)


def test_concat_of_a_tuple_variable():
    x = rand(4, 6)
    bb = relax.BlockBuilder()
    p = relax.Var("p", relax.TensorStructInfo((4, 6), "float32"))
    with bb.function("main", [p]):
        with bb.dataflow():
            parts = bb.emit(R.split(p, 2, axis=1))
            out = bb.emit_output(R.concat(parts, axis=0))
        bb.emit_func_output(out)
    got = evaluate(LegalizeOps()(bb.get()), "main", x)
    close(got, np.concatenate(np.split(x, 2, axis=1), axis=0))


def test_take_and_strided_slice():
    table = rand(10, 4)
    idx = np.array([[3, 0], [9, 3]], "int64")
    close(run(lambda t, i: R.take(t, i, axis=0), table, idx), table[idx])
    close(run(lambda t, i: R.take(t, i, axis=1), table, np.array([2, 0], "int32")), table[:, [2, 0]])
    x = rand(5, 6)
    close(run(lambda t: R.strided_slice(t, [0, 1], [1, -1], [5, 100], [2, 2]), x), x[1:5:2, -1::2])
    close(run(lambda t: R.strided_slice(t, [1], [4], [0], [-1]), x, symbolic_batch=True), x[:, 4:0:-1])


# -- reductions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op,ref", [(R.sum, np.sum), (R.mean, np.mean), (R.max, np.max), (R.min, np.min),
                                    (R.prod, np.prod)])
def test_reductions(op, ref):
    a = rand(3, 4, 5, low=0.5, high=1.5)
    close(run(lambda x: op(x, axis=[0, 2], keepdims=True), a), ref(a, axis=(0, 2), keepdims=True), 1e-4)
    close(run(lambda x: op(x, axis=1), a, symbolic_batch=True), ref(a, axis=1), 1e-4)
    close(run(op, a), ref(a), 1e-4)


def test_argmax_argmin():
    a = rand(4, 6)
    np.testing.assert_array_equal(run(lambda x: R.argmax(x, axis=1), a, symbolic_batch=True), a.argmax(1))
    np.testing.assert_array_equal(run(lambda x: R.argmin(x, axis=0, keepdims=True), a), a.argmin(0)[None])
    np.testing.assert_array_equal(run(R.argmax, a), a.argmax())


# -- creation -------------------------------------------------------------------------------------

def test_zeros_ones_full_arange_with_symbolic_sizes():
    a = rand(3, 4)

    def make(x):
        n = x.struct_info.shape.values[0]
        return R.add(R.add(x, R.ones((n, 4), "float32")), R.zeros((n, 1), "float32"))

    close(run(make, a, symbolic_batch=True), a + 1)
    close(run(lambda x: R.multiply(x, R.full((3, 4), relax.const(np.float32(2.5)))), a), a * 2.5)
    close(run(lambda x: R.add(x, R.arange(0.0, 2.0, 0.5, "float32")), a), a + np.arange(0, 2, 0.5, dtype="float32"))
    close(run(lambda x: R.add(x, R.ones_like(x)), a), a + 1)
    close(run(lambda x: R.add(x, R.zeros_like(x)), a), a)
    close(run(lambda x: R.subtract(x, R.full((4,), 1.25)), a), a - 1.25)
    close(run(lambda x: R.multiply(x, R.full_like(x, 3)), a), a * 3)
    close(run(lambda x: R.add(x, R.full_like(x, relax.const(np.float32(-3.0)))), a), a - 3)


# -- neural networks --------------------------------------------------------------------------------

def test_softmax_log_softmax():
    a = rand(3, 5) * 4
    e = np.exp(a - a.max(-1, keepdims=True))
    close(run(R.nn.softmax, a, symbolic_batch=True), e / e.sum(-1, keepdims=True))
    e0 = np.exp(a - a.max(0, keepdims=True))
    close(run(lambda x: R.nn.log_softmax(x, axis=0), a), np.log(e0 / e0.sum(0, keepdims=True)), 1e-4)


def test_layer_norm():
    x, g, b = rand(2, 3, 8), rand(8), rand(8)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    close(run(R.nn.layer_norm, x, g, b, symbolic_batch=False), (x - mu) / np.sqrt(var + 1e-5) * g + b, 1e-4)
    g2, b2 = rand(3, 8), rand(3, 8)
    mu, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    close(run(lambda *t: R.nn.layer_norm(*t, axes=[1, 2], epsilon=1e-3), x, g2, b2),
          (x - mu) / np.sqrt(var + 1e-3) * g2 + b2, 1e-4)


def test_batch_norm_returns_the_tuple():
    x, g, b, m, v = rand(2, 3, 4, 4), rand(3), rand(3), rand(3), rand(3, low=0.5)
    out, m2, v2 = run(lambda *t: R.nn.batch_norm(*t, training=False), x, g, b, m, v)
    c = (slice(None), None, None)
    close(out, (x - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c], 1e-4)
    close(m2, m)
    close(v2, v)


@pytest.mark.parametrize("strides,padding,dilation,groups", [(1, 0, 1, 1), (2, (1, 2), 1, 1), (1, 1, 2, 2)])
def test_conv2d(strides, padding, dilation, groups):
    x, w = rand(2, 4, 8, 7), rand(6, 4 // groups, 3, 3)
    got = run(lambda a, b: R.nn.conv2d(a, b, strides, padding, dilation, groups), x, w, symbolic_batch=False)
    pad4 = (padding,) * 4 if isinstance(padding, int) else (padding[0], padding[1], padding[0], padding[1])
    close(got, conv2d_nchw(x, w, (strides,) * 2, pad4, (dilation,) * 2, groups), 1e-4)


def test_conv2d_with_a_symbolic_height_keeps_the_inferred_struct_info():
    h = tir.Var("h", "int64")
    x = relax.Var("x", relax.TensorStructInfo((1, 2, h, 6), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((3, 2, 3, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        out = bb.emit(R.nn.conv2d(x, w, strides=2, padding=1))
        bb.emit_func_output(out)
    mod = bb.get()
    legal = LegalizeOps()(mod)
    call = legal["main"].body.blocks[0].bindings[0].value
    assert structural_equal(call.sinfo_args[0], out.struct_info)
    for rows in (5, 8):
        xv, wv = rand(1, 2, rows, 6), rand(3, 2, 3, 3)
        close(evaluate(legal, "main", xv, wv), conv2d_nchw(xv, wv, (2, 2), (1, 1, 1, 1)), 1e-4)


def test_pooling():
    x = rand(2, 3, 7, 6)
    close(run(lambda a: R.nn.max_pool2d(a, 3, 2, padding=1), x), pool2d_nchw(x, 3, 2, (1,) * 4, "max"))
    close(run(lambda a: R.nn.avg_pool2d(a, 2, 2), x, symbolic_batch=True), pool2d_nchw(x, 2, 2, (0,) * 4, "avg"))
    close(run(lambda a: R.nn.avg_pool2d(a, 3, 2, padding=1, count_include_pad=False), x),
          pool2d_nchw(x, 3, 2, (1,) * 4, "avg", count_include_pad=False))
    close(run(lambda a: R.nn.adaptive_avg_pool2d(a, 1), x), x.mean((2, 3), keepdims=True))


def test_pad_and_dropout():
    x = rand(2, 3)
    close(run(lambda a: R.nn.pad(a, [1, 0, 0, 2], pad_value=4.0), x), np.pad(x, ((1, 0), (0, 2)), constant_values=4.0))
    out, mask = run(lambda a: R.nn.dropout(a, 0.3), x)
    close(out, x)
    close(mask, np.ones_like(x))


def test_the_evaluator_also_runs_kernels_in_the_interpreter():
    x, w = rand(3, 4), rand(5, 4)
    mod = LegalizeOps()(build(lambda a, b: R.nn.softmax(R.linear(a, b)), x, w))
    e = np.exp(x @ w.T - (x @ w.T).max(-1, keepdims=True))
    close(evaluate(mod, "main", x, w, target="python"), e / e.sum(-1, keepdims=True), 1e-5)
    with pytest.raises(RelaxEvalError, match=r"argument p1: expected shape \(5, 4\), got \(4, 4\)"):
        evaluate(mod, "main", x, rand(4, 4))


# -- the pass -------------------------------------------------------------------------------------

def _prim_funcs(mod):
    return sorted(gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc))


def test_identical_primfuncs_are_shared_and_named_after_the_op(n):
    x = relax.Var("x", relax.TensorStructInfo((n, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(R.add(x, y))
            b = bb.emit(R.add(a, x))          # same shapes: the same PrimFunc
            c = bb.emit(R.add(b, relax.const(np.ones((4,), "float32"))))  # another shape
            d = bb.emit(R.nn.relu(c))
            out = bb.emit_output(R.nn.relu(d))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    assert _prim_funcs(mod) == ["add", "add1", "relu"]
    calls = [b.value for blk in mod["main"].body.blocks for b in blk.bindings]
    assert [c.args[0].name_hint for c in calls] == ["add", "add", "add1", "relu", "relu"]
    xv, yv = rand(3, 4), rand(3, 4)
    close(evaluate(mod, "main", xv, yv), np.maximum(xv + yv + xv + 1, 0))


def test_symbolic_var_only_in_the_output_is_bound_by_the_output_buffer(n):
    # as in TVM: a whole output dimension is read off the output buffer, so no tir_vars
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    bb = relax.BlockBuilder()
    m = relax.Var("m", relax.ShapeStructInfo([n]))
    with bb.function("main", [x, m]):
        z = bb.emit(R.zeros((n, 2), "float32"))
        out = bb.emit(R.add(z, x))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    zeros_call = mod["main"].body.blocks[0].bindings[0].value
    assert len(zeros_call.args) == 2 and len(zeros_call.args[1].fields) == 0
    assert relax.analysis.well_formed(mod)
    xv = rand(2)
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(xv), runtime.ShapeTuple([3])).numpy()
    close(got, np.zeros((3, 2), "float32") + xv)


def test_ops_without_legalization_or_unknown_shapes_stay():
    from minitvm.relax.op.registry import register

    name = "test.legalize_opaque_identity"
    if name not in Op.list_op_names():
        register(name)(lambda call, ctx: relax.expr.struct_info_of(call.args[0]))
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    u = relax.Var("u", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, u]):
        a = bb.emit(relax.Call(Op.get(name), [x]))
        b = bb.emit(R.exp(u))         # unknown shape: no kernel can be written yet
        c = bb.emit(R.exp(a))
        bb.emit_func_output(relax.Tuple([b, c]))
    mod = LegalizeOps()(bb.get())
    assert high_level_ops(mod) == [name, "relax.exp"]
    assert _prim_funcs(mod) == ["tir_exp"]
    with pytest.raises(RelaxEvalError, match=f"cannot evaluate a call of {name}"):
        evaluate(mod, "main", rand(2, 3), rand(2, 3))
    with pytest.warns(UserWarning, match="LegalizeOps left these operators as they were"):
        LegalizeOps(enable_warning=True)(bb.get())


def test_custom_legalization_and_pass_infra():
    from minitvm import topi

    def add_as_subtract(bb, call):
        return bb.call_te(topi.subtract, *call.args, primfunc_name_hint="my_sub")

    mod = build(R.add, rand(2, 2), rand(2, 2))
    out = LegalizeOps({"relax.add": add_as_subtract})(mod)
    assert _prim_funcs(out) == ["my_sub"]
    p = LegalizeOps()
    assert p.info.name == "LegalizeOps" and p.info.opt_level == 0
    with transform.PassContext(opt_level=3):
        seq = transform.Sequential([LegalizeOps()])(mod)
    assert _prim_funcs(seq) == ["add"]
    assert high_level_ops(mod) == ["relax.add"]  # the input module is unchanged


def test_legalize_ops_common_helpers_as_in_tvm():
    from minitvm.relax.transform.legalize_ops.common import _try_convert_to_scalar_const, register_legalize

    c = relax.const(np.float32(2.5))
    imm = _try_convert_to_scalar_const(c)
    assert isinstance(imm, tir.FloatImm) and imm.dtype == "float32" and imm.value == 2.5
    assert _try_convert_to_scalar_const(c, python_native=True) == 2.5
    vec = relax.const(np.ones(3, "float32"))
    assert _try_convert_to_scalar_const(vec) is vec
    # the common register_legalize is the one LegalizeOps reads
    from minitvm.relax.transform import legalize_ops
    assert legalize_ops.register_legalize is register_legalize


def test_binary_keeps_a_shared_shape_variable_and_the_vdevice():
    """As TVM: operands sharing one shape variable give a result with that variable; the
    operands' virtual device carries over, and two different ones are refused."""
    from minitvm.ir import VDevice

    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    x = relax.Var("x", relax.TensorStructInfo(s, "float32"))
    y = relax.Var("y", relax.TensorStructInfo(s, "float32"))
    bb = relax.BlockBuilder()
    out = bb.normalize(R.add(x, y)).struct_info
    assert out.shape is s and out.ndim == 2
    other = relax.Var("z", relax.TensorStructInfo(relax.Var("t", relax.ShapeStructInfo(ndim=2)), "float32"))
    assert bb.normalize(R.add(x, other)).struct_info.shape is None
    cpu, gpu = VDevice("llvm"), VDevice("cuda")
    a = relax.Var("a", relax.TensorStructInfo((2, 3), "float32", cpu))
    b = relax.Var("b", relax.TensorStructInfo((2, 3), "float32"))
    assert bb.normalize(R.multiply(a, b)).struct_info.vdevice == cpu
    c = relax.Var("c", relax.TensorStructInfo((2, 3), "float32", gpu))
    with pytest.raises(TypeError, match="different virtual devices"):
        bb.normalize(R.multiply(a, c))


def test_logical_xor_matches_numpy():
    rng = np.random.default_rng(7)
    a, b = rng.random((3, 4)) > 0.5, rng.random((4,)) > 0.5
    close(run(lambda x, y: R.logical_xor(x, y), a, b), np.logical_xor(a, b))
