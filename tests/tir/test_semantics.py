"""The TIR semantics table: every row means the same in the constant folder, the interpreter,
scalar LLVM code and vector LLVM code, and each edge case has the one meaning the table decides."""

import math
import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.error import TVMError
from minitvm.testing.fuzz import CAST_DTYPES, SEMANTICS_DTYPES, OpCase, check_op_case
from minitvm.tir import expr as _e
from minitvm.tir import op as _op
from minitvm.tir import semantics as S
from minitvm.tir.tensor_intrin import x86

ROW_NAMES = [row.name for row in S.ROWS]
INT_MIN32, INT_MAX32 = -(2**31), 2**31 - 1


def dtypes_of(row):
    return [d for d in SEMANTICS_DTYPES if row.takes(d)]


# -- every row, every dtype: folder == interpreter == scalar LLVM == vector LLVM ---------------------


@pytest.mark.parametrize("name", ROW_NAMES)
def test_row_agrees_everywhere_on_seeded_edges(name):
    row = next(r for r in S.ROWS if r.name == name)
    for dtype in dtypes_of(row):
        for vectorized in (False, True):
            check_op_case(OpCase(name, dtype, seed=7, n=16, vectorized=vectorized))


@pytest.mark.parametrize("src", CAST_DTYPES)
def test_casts_agree_everywhere_on_seeded_edges(src):
    for dst in CAST_DTYPES:
        for vectorized in (False, True):
            check_op_case(OpCase("cast", src, seed=3, n=16, vectorized=vectorized, to=dst))


# -- the table is complete and is what the rest of minitvm reads --------------------------------


def test_every_arithmetic_node_and_intrinsic_has_a_row():
    nodes = [cls for cls in vars(_e).values() if isinstance(cls, type) and issubclass(cls, (_e.BinaryOp, _e.CmpOp))
             and cls not in (_e.BinaryOp, _e.CmpOp)]
    assert sorted(c.__name__ for c in nodes if c not in S.BY_NODE) == []
    assert _e.Not in S.BY_NODE and _e.Select in S.BY_NODE
    assert sorted(f"tir.{n}" for n in _op.INTRINSICS) == sorted(S.BY_OP)


CONSTRUCTORS = {"add": _op.add, "sub": _op.sub, "mul": _op.mul, "div": _op.truncdiv, "mod": _op.truncmod,
                "floordiv": _op.floordiv, "floormod": _op.floormod, "min": _op.min, "max": _op.max,
                "eq": _op.equal, "ne": _op.not_equal, "lt": _op.less, "le": _op.less_equal, "gt": _op.greater,
                "ge": _op.greater_equal, "bitwise_and": _op.bitwise_and, "bitwise_or": _op.bitwise_or,
                "bitwise_xor": _op.bitwise_xor}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_tir_op_folds_constants_with_the_rows_meaning(name):
    row = next(r for r in S.ROWS if r.name == name)
    rng = np.random.default_rng(0)
    for dtype in dtypes_of(row):
        values = [(int(x), int(y)) for x, y in rng.integers(-50, 50, (20, 2))] if dtype != "bool" else \
            [(0, 1), (1, 1), (0, 0)]
        if S.kind_of(dtype) == "float":
            values = [(x / 3, y / 7) for x, y in values] + [(math.nan, 1.0), (-0.0, 0.0), (math.inf, -1.0)]
        for x, y in values:
            if y == 0 and S.kind_of(dtype) in ("int", "uint") and name in ("div", "mod", "floordiv", "floormod"):
                continue
            if S.kind_of(dtype) == "uint":
                x, y = abs(x), abs(y)
            got = CONSTRUCTORS[name](tir.const(x, dtype), tir.const(y, dtype))
            if isinstance(got, (_e.IntImm, _e.FloatImm)):
                want = row.fold(dtype, x, y)
                assert got.value == want or (math.isnan(got.value) and math.isnan(want)), (name, dtype, x, y)


# -- the edges, one decision each ----------------------------------------------------------------


def _run(expr_of, dtypes, out_dtype, *arrays, target="llvm"):
    args = [te.placeholder((len(arrays[0]),), d, name=f"A{k}") for k, d in enumerate(dtypes)]
    out = te.compute((len(arrays[0]),), lambda i: expr_of(*[a[i] for a in args]), name="out")
    result = np.zeros(len(arrays[0]), out_dtype)
    minitvm.build(te.create_prim_func(args + [out]), target=target)["main"](*arrays, result)
    return result


@pytest.mark.parametrize("build", [_op.floordiv, _op.floormod, _op.truncdiv, _op.truncmod])
def test_integer_division_by_a_constant_zero_is_refused_when_built(build):
    x = tir.Var("x", "int32")
    with pytest.raises(S.IntegerDivisionByZero, match="Divide by zero"):
        build(x, 0)
    with pytest.raises(TVMError):  # TVM's error class, as TVM's folder raises
        build(tir.const(5), tir.const(0))


@pytest.mark.parametrize("target", ["python", "llvm"])
@pytest.mark.parametrize("node", [_e.Div, _e.Mod, _e.FloorDiv, _e.FloorMod])
def test_integer_division_by_zero_at_run_time_is_an_error_everywhere(node, target):
    a = np.array([7, -7, 3, 1], "int32")
    b = np.array([2, 2, 0, 5], "int32")
    with pytest.raises(RuntimeError, match="integer division by zero"):
        _run(lambda x, y: node(x, y), ["int32"] * 2, "int32", a, b, target=target)


@pytest.mark.parametrize("target", ["python", "llvm"])
def test_floor_and_truncating_division_of_negatives(target):
    a = np.array([7, -7, 7, -7, INT_MIN32], "int32")
    b = np.array([2, 2, -2, -2, -1], "int32")
    want = {_e.FloorDiv: [3, -4, -4, 3, INT_MIN32], _e.FloorMod: [1, 1, -1, -1, 0],
            _e.Div: [3, -3, -3, 3, INT_MIN32], _e.Mod: [1, -1, 1, -1, 0]}  # INT_MIN / -1 wraps
    for node, expected in want.items():
        got = _run(lambda x, y, node=node: node(x, y), ["int32"] * 2, "int32", a, b, target=target)
        np.testing.assert_array_equal(got, expected, err_msg=node.__name__)
        folded = [S.BY_NODE[node].fold("int32", int(x), int(y)) for x, y in zip(a, b)]
        assert folded == expected


@pytest.mark.parametrize("target", ["python", "llvm"])
def test_float_min_max_propagate_nan_and_order_signed_zeros(target):
    a = np.array([np.nan, 1.0, -0.0, 0.0, 2.0], "float32")
    b = np.array([1.0, np.nan, 0.0, -0.0, -3.0], "float32")
    lo = _run(lambda x, y: _e.Min(x, y), ["float32"] * 2, "float32", a, b, target=target)
    hi = _run(lambda x, y: _e.Max(x, y), ["float32"] * 2, "float32", a, b, target=target)
    np.testing.assert_array_equal(lo, [np.nan, np.nan, -0.0, -0.0, -3.0])
    np.testing.assert_array_equal(np.signbit(lo), [False, False, True, True, True])
    np.testing.assert_array_equal(hi, [np.nan, np.nan, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(np.signbit(hi), [False, False, False, False, False])
    assert math.isnan(_op.min(tir.const(math.nan, "float32"), tir.const(1.0, "float32")).value)
    assert math.isnan(_op.max(tir.const(1.0, "float32"), tir.const(math.nan, "float32")).value)


@pytest.mark.parametrize("target", ["python", "llvm"])
def test_float_to_int_casts_saturate_and_nan_is_zero(target):
    a = np.array([1e10, -1e10, np.nan, np.inf, -np.inf, -3.7, 3.7, 300.0], "float32")
    got32 = _run(lambda x: _e.Cast("int32", x), ["float32"], "int32", a, target=target)
    np.testing.assert_array_equal(got32, [INT_MAX32, INT_MIN32, 0, INT_MAX32, INT_MIN32, -3, 3, 300])
    got_u8 = _run(lambda x: _e.Cast("uint8", x), ["float32"], "uint8", a, target=target)
    np.testing.assert_array_equal(got_u8, [255, 0, 0, 255, 0, 0, 3, 255])
    assert [int(S.cast_value(np.float32(v), "float32", "int32")) for v in a] == list(got32)


def _halfway_doubles(rng, n):
    """float64 values that float16 rounding gets wrong when done through float32 (a double
    rounding): a tie between two halves nudged below float32's precision, plus halves, ties,
    subnormals, overflow and random values."""
    halves = rng.integers(0, 0x7C00, n, dtype=np.uint16).view(np.float16).astype(np.float64)
    step = np.spacing(halves.astype(np.float16)).astype(np.float64)
    ties = halves + step / 2
    nudge = ties * 2.0**-40 * rng.choice([-1.0, 1.0], n)
    edges = [0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e300, -np.inf, np.nan, 2.0**-25, 2.0**-25 * (1 + 2.0**-40),
             2.0**-24 * 1.5, 1 + 2.0**-11 + 2.0**-30, 1.2345]
    spread = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 5, n)
    values = np.concatenate([edges, halves, ties, ties + nudge, spread])
    return values * rng.choice([-1.0, 1.0], len(values))


@pytest.mark.parametrize("target", ["python", "llvm", "llvm -mcpu=x86-64"])
@pytest.mark.parametrize("src", ["float64", "float32"])
def test_casts_to_float16_round_once_to_nearest_even(src, target):
    # "llvm -mcpu=x86-64": no F16C, so float32 <-> float16 are library calls too
    with np.errstate(over="ignore"):
        a = _halfway_doubles(np.random.default_rng(21), 256).astype(src)
        want = a.astype("float16")
    for vectorized in (False, True):
        case = OpCase("cast", src, seed=0, n=len(a), vectorized=vectorized, to="float16")
        got = np.zeros(len(a), "float16")
        minitvm.build(case.build(), target=target)["main"](a, got)
        same = (got.view("uint16") == want.view("uint16")) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{target} {vectorized}: {a[~same][:4]} -> {got[~same][:4]}, numpy {want[~same][:4]}"
        back = np.zeros(len(a), src)
        minitvm.build(OpCase("cast", "float16", seed=0, n=len(a), vectorized=vectorized, to=src).build(),
                      target=target)["main"](want, back)
        np.testing.assert_array_equal(back, want.astype(src))


@pytest.mark.parametrize("target", ["python", "llvm"])
@pytest.mark.parametrize("dtype, low, high", [("float32", -106.0, -85.0), ("float64", -746.0, -707.0)])
def test_exp_underflows_gradually_everywhere(dtype, low, high, target):
    # LLVM's vectorizable float32 exp once returned 0 below -87.3, where numpy's is subnormal
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(low, high, 60), [low, high, -np.inf, np.nan]]).astype(dtype)
    want = np.exp(x)
    assert (want[:60] != 0).sum() > 30 and (want[:60] < np.finfo(dtype).tiny).sum() > 30  # subnormals
    for vectorized in (False, True):
        got = np.zeros(len(x), dtype)
        minitvm.build(OpCase("exp", dtype, seed=0, n=len(x), vectorized=vectorized).build(), target=target)["main"](
            x, got)
        np.testing.assert_array_equal(got == 0, want == 0, err_msg=f"{target} {vectorized}: flushed to zero")
        np.testing.assert_array_max_ulp(got[~np.isnan(want)], want[~np.isnan(want)], maxulp=1)
        assert np.isnan(got[-1])
        folded = [S.BY_OP["tir.exp"].fold(dtype, float(v)) for v in x[:8]]
        np.testing.assert_array_equal(np.array(folded, dtype), want[:8])


@pytest.mark.parametrize("target", ["python", "llvm"])
def test_bool_arithmetic_is_or_and_and(target):
    a = np.array([0, 0, 1, 1], bool)
    b = np.array([0, 1, 0, 1], bool)
    np.testing.assert_array_equal(_run(lambda x, y: _e.Add(x, y), ["bool"] * 2, "bool", a, b, target=target),
                                  a | b)
    np.testing.assert_array_equal(_run(lambda x, y: _e.Mul(x, y), ["bool"] * 2, "bool", a, b, target=target),
                                  a & b)
    t = tir.const(True, "bool")
    assert _op.add(t, t).value == 1  # True + True is True (or), not 0 (1-bit wrap-around)


def test_bool_subtraction_and_division_are_refused():
    x, y = tir.Var("x", "bool"), tir.Var("y", "bool")
    for build in (_op.sub, _op.floordiv, _op.truncmod):
        with pytest.raises(TypeError, match="does not take bool operands"):
            build(x, y)


@pytest.mark.parametrize("target", ["python", "llvm"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_shifts_by_the_width_or_more_shift_every_bit_out(dtype, target):
    bits = np.dtype(dtype).itemsize * 8
    signed = dtype.startswith("int")
    a = np.array([-5 if signed else 5, 5, 1, 3], dtype)
    n = np.array([bits, bits + 3, bits - 1, -1 if signed else 2 * bits], dtype)
    left = _run(lambda x, y: _op.shift_left(x, y), [dtype] * 2, dtype, a, n, target=target)
    right = _run(lambda x, y: _op.shift_right(x, y), [dtype] * 2, dtype, a, n, target=target)
    np.testing.assert_array_equal(left, np.array([0, 0, 1 << (bits - 1), 0], "uint64").astype(dtype))
    np.testing.assert_array_equal(right, [-1 if signed else 0, 0, 0, 0])


def test_a_constant_shift_out_of_range_is_refused_as_in_tvm():
    x = tir.Var("x", "int32")
    with pytest.raises(ValueError, match="less than 32"):
        _ = x << 32
    with pytest.raises(ValueError, match="non-negative"):
        _ = x >> -1
    assert (tir.const(1) << 31).value == INT_MIN32  # wraps in int32


def test_and_or_invert_are_bitwise_on_integers_and_logical_on_bools():
    x, b = tir.Var("x", "int32"), tir.Var("b", "bool")
    assert isinstance(x & 3, _e.Call) and (x & 3).op == "tir.bitwise_and"
    assert isinstance(b & b, _e.And) and isinstance(~b, _e.Not)
    assert (~x).op == "tir.bitwise_not" and (x ^ 5).op == "tir.bitwise_xor"
    assert (tir.const(12) & tir.const(10)).value == 8


def test_vectorizable_rows_emit_vector_instructions():
    for name, dtype in (("min", "float32"), ("max", "int32"), ("select", "float64"), ("shift_right", "int32"),
                        ("exp", "float32"), ("add", "int8")):
        case = OpCase(name, dtype, seed=0, n=16, vectorized=True)
        lib = minitvm.build(case.build(), target="llvm")
        raw = lib.get_source("ll-raw")
        assert "<16 x" in raw, f"{name} on {dtype} was not emitted as vector code"


def test_integer_bounds_contain_every_result():
    rng = np.random.default_rng(5)
    ana = minitvm.arith.Analyzer()
    for name in ("add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max"):
        row = next(r for r in S.ROWS if r.name == name)
        for _ in range(30):
            (a0, a1), (b0, b1) = np.sort(rng.integers(-40, 40, (2, 2)), axis=1)
            x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
            ana.bind(x, tir.Range.from_min_extent(int(a0), int(a1 - a0) + 1))
            ana.bind(y, tir.Range.from_min_extent(int(b0), int(b1 - b0) + 1))
            bound = ana.const_int_bound(row.node(x, y))
            for xv in range(a0, a1 + 1):
                for yv in range(b0, b1 + 1):
                    if yv == 0 and name in ("div", "mod", "floordiv", "floormod"):
                        continue
                    value = row.fold("int32", xv, yv)
                    assert bound.min_value <= value <= bound.max_value, (name, (a0, a1), (b0, b1), xv, yv)


# -- llvm.x86.avx512.vpdpbusd: four u8 x s8 products added to an int32, per 32-bit lane ----------------


def _vpdpbusd_reference(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's answer: the words' bytes, a's unsigned and b's signed, dotted and added (wrapping)."""
    ua = a.astype("<i4").view(np.uint8).reshape(-1, 4).astype(np.int64)
    sb = b.astype("<i4").view(np.int8).reshape(-1, 4).astype(np.int64)
    return (acc.astype(np.int64) + (ua * sb).sum(axis=1)).astype(np.int32)  # astype wraps


def _vpdpbusd_func(n: int, vectorized: bool, target: str = "llvm"):
    case = OpCase("vpdpbusd", "int32", seed=0, n=n, vectorized=vectorized)
    return minitvm.build(case.build(), target=target)


@pytest.mark.parametrize("target", ["python", "llvm", "llvm -mattr=-avx512vnni"])
@pytest.mark.parametrize("lanes", [16, 8])
def test_vpdpbusd_matches_numpy_on_full_range_bytes(target, lanes):
    rng = np.random.default_rng(11)
    words = [rng.integers(-(2**31), 2**31, lanes * 4, dtype=np.int64).astype(np.int32) for _ in range(3)]
    words[0][:2] = [INT_MAX32, INT_MIN32]  # the sum wraps at both ends
    words[1][:2], words[2][:2] = -1, [-(2**31), 0x7F7F7F7F]  # bytes 255 x -128 and 255 x 127
    acc, a, b = (w[:lanes] for w in words)
    for vectorized in (False, True):
        out = np.zeros(lanes, "int32")
        _vpdpbusd_func(lanes, vectorized, target)["main"](acc, a, b, out)
        np.testing.assert_array_equal(out, _vpdpbusd_reference(acc, a, b), err_msg=f"{target} {vectorized}")


def test_vpdpbusd_folds_constants():
    call = tir.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", 10, -1, 0x01FF7F80)
    # bytes of a: 255 each; of b (low first): -128, 127, -1, 1
    assert S.row_of(call).fold("int32", 10, -1, 0x01FF7F80) == 10 + 255 * (-128 + 127 - 1 + 1)


def test_vpdpbusd_on_16_lanes_is_one_vnni_instruction():
    # built for a CPU with VNNI (read, not run: this one may lack it; the numbers are checked above)
    lib = _vpdpbusd_func(16, vectorized=True, target=x86.VNNI_TARGET)
    assert "llvm.x86.avx512.vpdpbusd.512" in lib.get_source("ll-raw")
    assert re.search(r"vpdpbusd\s+[^\n]*%zmm", lib.get_source("asm"))


def test_vpdpbusd_without_vnni_is_plain_integer_code():
    lib = _vpdpbusd_func(16, vectorized=True, target="llvm -mattr=-avx512vnni")
    assert "vpdpbusd" not in lib.get_source("ll-raw") and "vpdpbusd" not in lib.get_source("asm")


def test_vpdpbusd_takes_only_int32_words():
    x = tir.Var("x", "int64")
    with pytest.raises(TypeError, match="vpdpbusd does not take int64"):
        tir.call_llvm_pure_intrin("int64", "llvm.x86.avx512.vpdpbusd", x, x, x)
    with pytest.raises(NotImplementedError, match="type suffix"):
        tir.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd.512", 1, 2, 3)


def test_vpdpbusd_bound_contains_every_result():
    ana = minitvm.arith.Analyzer()
    acc, a, b = (tir.Var(n, "int32") for n in "xab")
    ana.bind(acc, tir.Range.from_min_extent(-5, 11))
    bound = ana.const_int_bound(tir.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", acc, a, b))
    assert (bound.min_value, bound.max_value) == (-5 - 4 * 255 * 128, 5 + 4 * 255 * 127)
    assert S.row_of(tir.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", acc, a, b)).fold(
        "int32", 5, -1, 0x7F7F7F7F) == bound.max_value
