"""The reference interpreter: exact TIR semantics on numpy arrays, for block-level and lowered TIR."""

import math

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import IRModule
from minitvm.target.interpreter import compile_prim_func, python_source, run_prim_func
from minitvm.testing import tir_builders as tb
from minitvm.tir.transform import lower_pipeline, lowered
from minitvm.transform import Sequential

C = tir.const


def both_forms(func):
    """The function as written (with blocks) and after the lowering pipeline."""
    return [func, lowered(func)]


# -- whole kernels against numpy ------------------------------------------------------------------


@pytest.mark.parametrize("form", [0, 1], ids=["blocks", "lowered"])
def test_mm_relu(form):
    func = both_forms(tb.mm_relu(12, 10, 8))[form]
    A, B, out = tb.random_arguments(func, seed=3)
    run_prim_func(func, [A, B, out])
    np.testing.assert_allclose(out, np.maximum(A @ B, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", [0, 1], ids=["blocks", "lowered"])
def test_broadcast_add(form):
    func = both_forms(tb.broadcast_add(5, 7))[form]
    A, B, out = tb.random_arguments(func, seed=4)
    run_prim_func(func, [A, B, out])
    np.testing.assert_array_equal(out, A + B)


def _conv_reference(x, w):
    batch, _, size, _ = x.shape
    out_channels, _, kernel, _ = w.shape
    out_size = size - kernel + 1
    out = np.zeros((batch, out_channels, out_size, out_size), x.dtype)
    for h in range(out_size):
        for v in range(out_size):
            window = x[:, :, h:h + kernel, v:v + kernel]
            out[:, :, h, v] = np.einsum("bchw,ochw->bo", window, w)
    return out


@pytest.mark.parametrize("form", [0, 1], ids=["blocks", "lowered"])
def test_conv2d_int64(form):
    func = both_forms(tb.conv2d_int64(batch=2, in_channels=3, size=7, out_channels=2, kernel=3))[form]
    X, W, out = tb.random_arguments(func, seed=5)
    run_prim_func(func, [X, W, out])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, _conv_reference(X, W))


@pytest.mark.parametrize("form", [0, 1], ids=["blocks", "lowered"])
def test_batch_matmul_relu(form):
    func = both_forms(tb.batch_matmul_relu(3, 5, 4, 6))[form]
    A, B, out = tb.random_arguments(func, seed=6)
    run_prim_func(func, [A, B, out])
    np.testing.assert_allclose(out, np.maximum(A @ B, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", [0, 1], ids=["blocks", "lowered"])
def test_softmax(form):
    func = both_forms(tb.softmax(6, 9))[form]
    A, out = tb.random_arguments(func, seed=7)
    run_prim_func(func, [A, out])
    e = np.exp(A - A.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_a_64_cube_matmul_in_lowered_form():
    # speed is measured in benchmarks/, never asserted here
    func = lowered(tb.mm_relu(64, 64, 64))
    A, B, out = tb.random_arguments(func)
    run_prim_func(func, [A, B, out])
    np.testing.assert_allclose(out, np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)


# -- exact scalar semantics ---------------------------------------------------------------------------


def unary_kernel(n, in_dtype, out_dtype, fn):
    """``Out[i] = fn(A[i], i)`` as a lowered-style loop (no blocks)."""
    A, Out = tb.buffer("A", (n,), in_dtype), tb.buffer("Out", (n,), out_dtype)
    body = tb.grid((n,), lambda i: tb.store(Out, (i,), fn(A[i], i)))
    return tb.prim_func("unary", [A, Out], body).with_body(body)


def binary_kernel(n, dtype, fn, out_dtype=None):
    A, B = tb.buffer("A", (n,), dtype), tb.buffer("B", (n,), dtype)
    Out = tb.buffer("Out", (n,), out_dtype or dtype)
    body = tb.grid((n,), lambda i: tb.store(Out, (i,), fn(A[i], B[i])))
    return tb.prim_func("binary", [A, B, Out], body).with_body(body)


def run_binary(fn, a, b, out_dtype=None):
    a, b = np.asarray(a), np.asarray(b)
    func = binary_kernel(len(a), str(a.dtype), fn, out_dtype)
    out = np.zeros(len(a), out_dtype or a.dtype)
    run_prim_func(func, [a, b, out])
    return out


def test_int32_arithmetic_wraps_around():
    a = np.array([2**31 - 1, -(2**31), 65536], np.int32)
    b = np.array([1, 1, 65536], np.int32)
    np.testing.assert_array_equal(run_binary(lambda x, y: x + y, a, b), [-(2**31), -(2**31) + 1, 2**17])
    np.testing.assert_array_equal(run_binary(lambda x, y: x - y, a, b), [2**31 - 2, 2**31 - 1, 0])
    np.testing.assert_array_equal(run_binary(lambda x, y: x * y, a, b), [2**31 - 1, -(2**31), 0])


def test_div_and_mod_truncate_while_floordiv_and_floormod_round_down():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    np.testing.assert_array_equal(run_binary(tir.Div, a, b), [3, -3, -3, 3])
    np.testing.assert_array_equal(run_binary(tir.Mod, a, b), [1, -1, 1, -1])
    np.testing.assert_array_equal(run_binary(tir.FloorDiv, a, b), [3, -4, -4, 3])
    np.testing.assert_array_equal(run_binary(tir.FloorMod, a, b), [1, 1, -1, -1])


def test_integer_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError):
        run_binary(tir.FloorDiv, np.array([1], np.int32), np.array([0], np.int32))


def test_float32_math_stays_float32():
    a = np.array([1.0, 1e8, 0.1], np.float32)
    b = np.array([1e-8, 1.0, 0.2], np.float32)
    np.testing.assert_array_equal(run_binary(lambda x, y: x + y, a, b), a + b)
    np.testing.assert_array_equal(run_binary(lambda x, y: x / y, a, b), a / b)
    # a float constant is a float32 constant: 0.1 rounds to float32 before the multiply
    out = np.zeros(3, np.float32)
    run_prim_func(unary_kernel(3, "float32", "float32", lambda x, i: x * C(0.1)), [a, out])
    np.testing.assert_array_equal(out, a * np.float32(0.1))


def test_min_max_select_and_if_then_else():
    a = np.array([1.5, -2.0, 3.0], np.float32)
    b = np.array([0.5, 4.0, 3.0], np.float32)
    np.testing.assert_array_equal(run_binary(tir.Min, a, b), np.minimum(a, b))
    np.testing.assert_array_equal(run_binary(tir.Max, a, b), np.maximum(a, b))
    np.testing.assert_array_equal(run_binary(lambda x, y: tir.Select(x < y, x, C(0.0)), a, b),
                                  np.where(a < b, a, 0))
    np.testing.assert_array_equal(
        run_binary(lambda x, y: tir.if_then_else(x > C(0.0), y, x * C(2.0)), a, b),
        np.where(a > 0, b, a * 2))


def test_casts_truncate_and_wrap():
    a = np.array([2.7, -2.7, 1e3], np.float32)
    out = np.zeros(3, np.int32)
    run_prim_func(unary_kernel(3, "float32", "int32", lambda x, i: tir.Cast("int32", x)), [a, out])
    np.testing.assert_array_equal(out, [2, -2, 1000])
    big = np.array([2**40 + 5, -1, 2**31], np.int64)
    narrow = np.zeros(3, np.int32)
    run_prim_func(unary_kernel(3, "int64", "int32", lambda x, i: tir.Cast("int32", x)), [big, narrow])
    np.testing.assert_array_equal(narrow, big.astype(np.int32))
    flags = np.zeros(3, bool)
    run_prim_func(unary_kernel(3, "float32", "bool", lambda x, i: x > C(0.0)), [a, flags])
    np.testing.assert_array_equal(flags, a > 0)


INTRINSICS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": np.vectorize(math.erf), "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "sin": np.sin, "cos": np.cos, "exp2": np.exp2, "log2": np.log2,
}


@pytest.mark.parametrize("name", sorted(INTRINSICS))
def test_intrinsics(name):
    a = np.array([0.25, 1.5, 2.5, 3.75], np.float32)
    out = np.zeros(4, np.float32)
    build = getattr(tir, name)
    run_prim_func(unary_kernel(4, "float32", "float32", lambda x, i: build(x)), [a, out])
    np.testing.assert_allclose(out, INTRINSICS[name](a.astype(np.float64)), rtol=2e-6)


def test_round_is_half_to_even_and_fabs_pow():
    a = np.array([0.5, 1.5, 2.5, -2.5], np.float32)
    out = np.zeros(4, np.float32)
    run_prim_func(unary_kernel(4, "float32", "float32", lambda x, i: tir.round(x)), [a, out])
    np.testing.assert_array_equal(out, [0.0, 2.0, 2.0, -2.0])
    run_prim_func(unary_kernel(4, "float32", "float32", lambda x, i: tir.pow(tir.abs(x), C(2.0))),
                  [a, out])
    np.testing.assert_array_equal(out, a * a)


# -- bounds checks ---------------------------------------------------------------------------------------


def test_out_of_bounds_in_one_dimension_names_buffer_index_and_extent():
    A, Out = tb.buffer("A", (4, 4)), tb.buffer("Out", (4, 4))
    # A[i, j + 1] leaves the row at j == 3 although the flat offset would still be inside A
    body = tb.grid((4, 4), lambda i, j: tb.store(Out, (i, j), A[i, j + 1]))
    func = tb.prim_func("shift", [A, Out], body)
    with pytest.raises(IndexError, match=r"buffer A: index 4 is out of bounds for extent 4 in dimension 1"):
        run_prim_func(func, tb.random_arguments(func))


def test_negative_index_never_wraps():
    A, Out = tb.buffer("A", (8,)), tb.buffer("Out", (8,))
    body = tb.grid((8,), lambda i: tb.store(Out, (i,), A[i - 1]))
    func = tb.prim_func("prev", [A, Out], body)
    with pytest.raises(IndexError, match=r"buffer A: index -1 is out of bounds for extent 8"):
        run_prim_func(func, tb.random_arguments(func))
    # lowered without the OOB checker that opens the pipeline (it refuses this before it runs):
    # the interpreter's own check is what is tested here
    unchecked = Sequential(lower_pipeline().passes[1:])(IRModule({"prev": func}))["prev"]
    with pytest.raises(IndexError, match="buffer A"):
        run_prim_func(unchecked, tb.random_arguments(func))


def test_in_bounds_accesses_are_proven_and_not_checked():
    source = python_source(lowered(tb.mm_relu()))
    assert "_checked" not in source
    assert "for i in range(16):" in source and "Y[i * 16 + j]" in source


# -- tracing, arguments, caching ---------------------------------------------------------------------------


def test_trace_reports_every_access_in_order():
    func = tb.mm_relu(2, 2, 2)
    events = []
    run_prim_func(func, tb.random_arguments(func), trace=lambda *e: events.append(e))
    # first matmul step: init write, then read Y, A, B, write Y
    assert events[:5] == [("write", "Y", (0, 0)), ("read", "Y", (0, 0)), ("read", "A", (0, 0)),
                          ("read", "B", (0, 0)), ("write", "Y", (0, 0))]
    assert len(events) == 8 * 4 + 4 + 4 * 2  # 8 updates, 4 inits, 4 relus (read + write)
    flat_events = []
    run_prim_func(lowered(func), tb.random_arguments(func), trace=lambda *e: flat_events.append(e))
    assert flat_events[4] == ("write", "Y", 0) and flat_events[-1] == ("write", "C", 3)
    assert "_trace" not in python_source(func)


def test_scalar_parameters_and_symbolic_shapes():
    n = tir.Var("n")
    scale = tir.Var("scale", "float32")
    A, Out = tb.buffer("A", (n,)), tb.buffer("Out", (n,))
    i = tir.Var("i")
    body = tir.For(i, C(0), n, body=tb.store(Out, (i,), A[i] * scale))
    func = tir.PrimFunc((tir.Var("A_handle", "handle"), tir.Var("Out_handle", "handle"), scale),
                        None, body)
    func = tir.PrimFunc(func.params, {func.params[0]: A, func.params[1]: Out}, body,
                        attrs={"global_symbol": "scale"})
    a = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    run_prim_func(func, [a, out, 3.0])
    np.testing.assert_array_equal(out, a * 3)
    with pytest.raises(ValueError, match="dimension 0 is n = 4, but n = 5 from argument 'A'"):
        run_prim_func(func, [a, np.zeros(4, np.float32), 1.0])


def test_argument_checks():
    """The interpreter checks arguments with native code's check, in the same words."""
    func = tb.broadcast_add(2, 3)
    A, B, out = tb.random_arguments(func)
    with pytest.raises(TypeError, match="argument 'A' expects dtype float32, got float64"):
        run_prim_func(func, [A.astype(np.float64), B, out])
    with pytest.raises(ValueError, match=r"argument 'A' expects shape \(2, 3\), got \(2, 4\)"):
        run_prim_func(func, [np.zeros((2, 4), np.float32), B, out])
    with pytest.raises(ValueError, match="C-contiguous"):
        run_prim_func(func, [A, B, np.zeros((3, 2), np.float32).T])
    with pytest.raises(ValueError, match=r"expects 3 arguments \(A, B, C\), got 2"):
        run_prim_func(func, [A, B])
    native = minitvm.build(func, target="llvm")
    for bad in ([A.astype(np.float64), B, out], [np.zeros((2, 4), np.float32), B, out], [A, B]):
        with pytest.raises(Exception) as interpreted:
            run_prim_func(func, bad)
        with pytest.raises(Exception) as compiled:
            native["broadcast_add"](*bad)
        assert (type(interpreted.value), str(interpreted.value)) == (type(compiled.value), str(compiled.value))


def test_compiled_code_is_cached_per_function():
    func = tb.broadcast_add()
    assert compile_prim_func(func) is compile_prim_func(func)
    assert compile_prim_func(func, trace=True) is not compile_prim_func(func)


def test_generated_source_of_a_lowered_kernel():
    """Golden text: what a learner sees with ``python_source``."""
    expected = '''\
def mm_relu(A, B, C):
    # A: float32[4, 4], flat
    # B: float32[4, 4], flat
    # C: float32[4, 4], flat
    Y = _uninitialized(16, float32)
    for i in range(4):
        for j in range(4):
            for k in range(4):
                if k == 0:
                    Y[i * 4 + j] = 0.0
                Y[i * 4 + j] = Y[i * 4 + j] + A[i * 4 + k] * B[k * 4 + j]
    for i_1 in range(4):
        for j_1 in range(4):
            C[i_1 * 4 + j_1] = _max_float32(Y[i_1 * 4 + j_1], float32(0.0))
'''
    assert python_source(lowered(tb.mm_relu(4, 4, 4))) == expected


# -- random expressions against numpy's vectorized arithmetic (which wraps and rounds alike) ---------


def _random_expression(rng, leaves, dtype, depth):
    """A random TIR expression and the numpy computation of the same thing."""
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.3:
            value = int(rng.integers(-(2**31), 2**31)) if dtype == "int32" else float(rng.normal())
            return C(value, dtype), np.array(value, dtype)
        return leaves[int(rng.integers(len(leaves)))]
    a, na = _random_expression(rng, leaves, dtype, depth - 1)
    ops = ["add", "sub", "mul", "min", "max", "select"]
    ops += ["floordiv", "floormod", "truncdiv"] if dtype == "int32" else ["div"]
    op = ops[int(rng.integers(len(ops)))]
    if op in ("floordiv", "floormod", "truncdiv"):
        c = int(rng.choice([-7, -3, 2, 5, 16]))
        build = {"floordiv": tir.FloorDiv, "floormod": tir.FloorMod, "truncdiv": tir.Div}[op]
        reference = {"floordiv": np.floor_divide, "floormod": np.remainder,
                     "truncdiv": lambda x, y: (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)}[op]
        return build(a, C(c, dtype)), reference(na, np.array(c, dtype)).astype(dtype)
    b, nb = _random_expression(rng, leaves, dtype, depth - 1)
    if op == "select":
        return tir.Select(a < b, a, b * b), np.where(na < nb, na, nb * nb)
    build = {"add": tir.Add, "sub": tir.Sub, "mul": tir.Mul, "min": tir.Min, "max": tir.Max,
             "div": tir.Div}[op]
    reference = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
                 "max": np.maximum, "div": np.divide}[op]
    return build(a, b), reference(na, nb)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_random_expressions_match_numpy_exactly(dtype):
    rng = np.random.default_rng(11)
    n = 16
    A, B, Out = tb.buffer("A", (n,), dtype), tb.buffer("B", (n,), dtype), tb.buffer("Out", (n,), dtype)
    if dtype == "int32":
        a = rng.integers(-(2**31), 2**31, n).astype(dtype)
        b = rng.integers(-50, 50, n).astype(dtype)
    else:
        a, b = rng.normal(size=n).astype(dtype), rng.normal(size=n).astype(dtype)
    i = tir.Var("i")
    index_leaf = (i * 1000 + 7, np.arange(n, dtype=np.int32) * 1000 + 7) if dtype == "int32" else None
    leaves = [(A[i], a), (B[i], b)] + ([index_leaf] if index_leaf else [])
    with np.errstate(all="ignore"):
        for _ in range(25):
            expr, reference = _random_expression(rng, leaves, dtype, 4)
            body = tir.For(i, C(0), C(n), body=tir.BufferStore(Out, expr, (i,)))
            func = tb.prim_func("random", [A, B, Out], body).with_body(body)
            out = np.zeros(n, dtype)
            run_prim_func(func, [a, b, out])
            np.testing.assert_array_equal(out, np.broadcast_to(reference, (n,)).astype(dtype),
                                          err_msg=python_source(func))


def test_reading_storage_before_writing_it_shows():
    A, Out = tb.buffer("A", (4,)), tb.buffer("Out", (4,))
    scratch = tb.buffer("scratch", (4,))
    body = tb.grid((4,), lambda i: tb.store(Out, (i,), A[i] + scratch[i]))  # scratch never written
    func = tb.prim_func("forgot_init", [A, Out], body, alloc_buffers=[scratch])
    a, out = tb.random_arguments(func)
    run_prim_func(func, [a, out])
    assert np.isnan(out).all()
    ints = tb.buffer("ints", (2,), "int32")
    Oi = tb.buffer("Oi", (2,), "int32")
    body = tb.grid((2,), lambda i: tb.store(Oi, (i,), ints[i]))
    out = np.zeros(2, np.int32)
    run_prim_func(tb.prim_func("forgot_init", [Oi], body, alloc_buffers=[ints]), [out])
    assert (out.view(np.uint32) == 0xA5A5A5A5).all()
