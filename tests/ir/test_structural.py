"""Structural equality and hashing: variables compare by where they are defined."""

import pytest

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal, structural_equal, structural_hash


def _loop_store(name: str, value: float):
    """for i in range(4): X[i, i] = X[i, i] + value, with fresh variables each call."""
    i = tir.Var("i" + name)
    X = tir.decl_buffer((4, 4), "float32", "X" + name)
    body = tir.BufferStore(X, X[i, i] + value, (i, i))
    loop = tir.For(i, tir.const(0), tir.const(4), "serial", body)
    param = tir.Var("X" + name, "handle")
    return tir.PrimFunc((param,), {param: X}, loop)


def test_renamed_functions_are_equal_and_hash_alike():
    f, g = _loop_store("a", 1.0), _loop_store("b", 1.0)
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)
    assert_structural_equal(f, g)


def test_attributes_in_another_order_are_equal_and_hash_alike():
    # the printer may write T.func_attr's keys in another order than the source had them
    f = _loop_store("a", 1.0).with_attr("global_symbol", "main").with_attr("tir.noalias", True)
    g = _loop_store("b", 1.0).with_attr("tir.noalias", True).with_attr("global_symbol", "main")
    assert list(f.attrs) != list(g.attrs)
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)


def test_a_printed_and_parsed_module_hashes_as_the_original():
    from minitvm.script import from_source
    from minitvm.testing.programs import mm_relu

    mod = IRModule({"main": mm_relu})
    again = from_source(mod.script())
    assert structural_equal(again, mod) and structural_hash(again) == structural_hash(mod)


def test_different_constant_is_reported_with_its_path():
    f, g = _loop_store("a", 1.0), _loop_store("b", 2.0)
    assert not structural_equal(f, g)
    with pytest.raises(ValueError) as err:
        assert_structural_equal(f, g)
    msg = str(err.value)
    assert "root.body.body.value.b.value" in msg
    assert "lhs: 1.0" in msg and "rhs: 2.0" in msg


def test_free_variables_must_match_unless_mapped():
    i, j = tir.Var("i"), tir.Var("j")
    assert structural_equal(i + 1, i + 1)
    assert not structural_equal(i + 1, j + 1)
    assert structural_equal(i + 1, j + 1, map_free_vars=True)
    assert structural_hash(i + 1, map_free_vars=True) == structural_hash(j + 1, map_free_vars=True)


def test_binding_is_one_to_one():
    i, j = tir.Var("i"), tir.Var("j")
    x, y = tir.Var("x"), tir.Var("y")
    # i+j vs x+x: i->x, then j->x would map two variables onto one
    assert not structural_equal(i + j, x + x, map_free_vars=True)
    assert structural_equal(i + j, x + y, map_free_vars=True)


def test_dtype_of_a_variable_matters():
    a, b = tir.Var("a", "int32"), tir.Var("b", "int64")
    assert not structural_equal(a, b, map_free_vars=True)


def test_buffer_shapes_compared_when_bound():
    f = _loop_store("a", 1.0)
    i = tir.Var("i")
    X = tir.decl_buffer((4, 5), "float32", "X")
    body = tir.For(i, tir.const(0), tir.const(4), "serial", tir.BufferStore(X, X[i, i] + 1.0, (i, i)))
    p = tir.Var("X", "handle")
    g = tir.PrimFunc((p,), {p: X}, body)
    with pytest.raises(ValueError, match=r"buffer_map.*shape\[1\]"):
        assert_structural_equal(f, g)


def test_modules_compare_by_function():
    f, g = _loop_store("a", 1.0), _loop_store("b", 1.0)
    assert structural_equal(IRModule({"main": f}), IRModule({"main": g}))
    assert not structural_equal(IRModule({"main": f}), IRModule({"other": g}))


def test_constant_folding_in_operators():
    i = tir.Var("i")
    assert (i * 1 + 0) is i
    assert isinstance(tir.const(3) * 4, tir.IntImm) and (tir.const(3) * 4).value == 12
    assert (tir.const(7) // 2).value == 3 and (tir.const(-7) // 2).value == -4
    assert (tir.const(-7) % 2).value == 1
    assert tir.truncdiv(tir.const(-7), tir.const(2)).value == -3
    # python float meets int expression: promoted to float32
    assert (i + 0.5).dtype == "float32"
    assert (tir.Var("n", "int64") + i).dtype == "int64"
    assert tir.IntImm("int8", 200).value == -56


def _sym_func(n):
    A = tir.decl_buffer((n,), "float32", "A")
    a = tir.Var("A", "handle")
    i = tir.Var("i")
    body = tir.For(i, tir.const(0), n, "serial", tir.BufferStore(A, A[i] * 2.0, (i,)))
    return tir.PrimFunc((a,), {a: A}, body)


def test_module_functions_bind_their_own_variables():
    shared = tir.Var("n")
    one_n = IRModule({"f": _sym_func(shared), "g": _sym_func(shared)})
    two_ns = IRModule({"f": _sym_func(tir.Var("n")), "g": _sym_func(tir.Var("m"))})
    assert structural_equal(one_n, two_ns) and structural_equal(two_ns, one_n)
    assert structural_hash(one_n) == structural_hash(two_ns)
    assert not structural_equal(one_n, IRModule({"f": _sym_func(shared), "h": _sym_func(shared)}))


_HASH_IN_A_FRESH_PROCESS = """
from minitvm.ir import structural_hash
from minitvm.script import tir as T

@T.prim_func
def scale(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 16), "float32")
    B = T.match_buffer(b, (n, 16), "float32")
    for i, j in T.grid(n, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(0.5)

print(structural_hash(scale))
"""


def test_structural_hash_is_the_same_in_every_process(tmp_path):
    """Python salts hash(str) per process (and hash(None) is an address); the structural hash must
    depend on neither (TVM's does not), so a tuning database can be read from another process."""
    import os
    import subprocess
    import sys

    script = tmp_path / "hash_scale.py"  # a file: the TVMScript parser reads the function's source
    script.write_text(_HASH_IN_A_FRESH_PROCESS)
    hashes = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, str(script)], env=env, check=True,
                             capture_output=True, text=True).stdout
        hashes.add(int(out.split()[-1]))
    assert len(hashes) == 1


def test_equality_without_definitions_agrees_with_structural_equal():
    # the short cut the simplifier takes for every pair of terms: the same answers, and None
    # (ask structural_equal) where a variable is defined or two buffers meet
    from minitvm.ir.structural import equal_without_definitions

    i, j = tir.Var("i"), tir.Var("j")
    A, B = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    x = tir.Var("x")
    exprs = [i * 4 + j, i * 4 + j, i * 4 + i, j * 4 + j, (i + 1) // 2, (i + 1) // 2, (i + 1) % 2,
             tir.const(1.5, "float32"), tir.const(1.5, "float32"), tir.const(float("nan"), "float32"),
             tir.const(float("nan"), "float32"), tir.const(1, "int64"), tir.const(1, "int32"),
             tir.Max(i, j), tir.Min(i, j), A[i], A[i], A[j]]
    for a in exprs:
        for b in exprs:
            assert equal_without_definitions(a, b) is structural_equal(a, b), (a, b)
    assert equal_without_definitions(A[i], B[i]) is None  # B could view A's memory
    assert equal_without_definitions(tir.Let(x, i, x + 1), tir.Let(x, i, x + 1)) is None
