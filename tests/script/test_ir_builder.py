"""TVM's imperative IR builder (minitvm.script.ir_builder): the IR it builds equals the same
function written in TVMScript, and it runs."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as TS
from minitvm.script.ir_builder import IRBuilder
from minitvm.script.ir_builder import ir as I
from minitvm.script.ir_builder import tir as T


@TS.prim_func
def _add_one(A: TS.Buffer((4, 8), "float32"), B: TS.Buffer((4, 8), "float32")):
    TS.func_attr({"global_symbol": "add_one"})
    for i, j in TS.grid(4, 8):
        with TS.block("B"):
            vi, vj = TS.axis.remap("SS", [i, j])
            TS.reads(A[vi, vj])
            TS.writes(B[vi, vj])
            B[vi, vj] = A[vi, vj] + TS.float32(1)


def _build_add_one():
    """The same function, its block's reads and writes left to detection (as TVM's builder)."""
    with IRBuilder() as ib:
        with T.prim_func():
            T.func_attr({"global_symbol": "add_one"})
            A = T.arg("A", T.Buffer((4, 8), "float32"))
            B = T.arg("B", T.Buffer((4, 8), "float32"))
            with T.grid(4, 8) as (i, j):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.buffer_store(B, A[vi, vj] + T.float32(1), [vi, vj])
    return ib.get()


def test_builder_matches_tvmscript_and_runs():
    func = _build_add_one()
    assert_structural_equal(func, _add_one, map_free_vars=True)
    assert [b.name for b in func.buffer_map.values()] == ["A", "B"]
    lib = minitvm.build(func, target="python")
    a = np.random.default_rng(0).random((4, 8), dtype=np.float32)
    b = minitvm.nd.empty((4, 8), "float32")
    lib["add_one"](minitvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 1)


def test_undeclared_access_is_marked_outside_a_function_and_modules_collect_functions():
    with IRBuilder() as ib:
        with T.block("b"):
            T.evaluate(0)
    # a block built alone keeps the mark for a later pass (reads and writes: bits 1 and 2)
    assert ib.get().block.annotations["tir.script_parsing_detect_access"].value == 3
    with IRBuilder() as ib:
        with I.ir_module():
            with T.prim_func():
                T.func_name("f")
                with T.block("b"):
                    T.evaluate(0)
    # in a function the mark is resolved; a lone block without iterators is the root itself
    body = ib.get()["f"].body.block
    assert body.name == "b" and body.annotations == {} and body.reads == ()


def test_builder_scopes_and_errors():
    with pytest.raises(ValueError, match="no IRBuilder"):
        IRBuilder.current()
    with IRBuilder() as outer:
        with IRBuilder() as inner:
            assert IRBuilder.current() is inner
        assert IRBuilder.current() is outer
        with pytest.raises(ValueError, match="nothing has been built"):
            outer.get()
    with IRBuilder() as ib, pytest.raises(NotImplementedError, match="while loop"):
        T.While(tir.const(True, "bool"))
    with IRBuilder() as ib:
        with T.If(T.int32() > 0):
            with T.Then():
                T.evaluate(1)
            with T.Else():
                T.evaluate(2)
    stmt = ib.get()
    assert isinstance(stmt, tir.IfThenElse) and stmt.else_case.value.value == 2
