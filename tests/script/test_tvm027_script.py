"""TVMScript as TVM 0.27's tests write it: ``x: T.let[T.int32] = ...``, a fresh ``te.var`` named
in the body, ``tirx.`` attribute keys, and ``from tvm.script.parser import tirx``."""

import numpy as np
import pytest

import minitvm
from minitvm import te
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T0
from minitvm.script import tirx as T


@T.prim_func
def doubled_plus_one(A: T.Buffer((6,), "int32"), B: T.Buffer((6,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in range(6):
        with T.sblock("B"):
            vi = T.axis.spatial(6, i)
            v: T.let[T.int32] = A[vi] * 2
            w: T.let = T.Cast("float32", v) + T.float32(1)
            B[vi] = w


@T0.prim_func
def doubled_plus_one_023(A: T0.Buffer((6,), "int32"), B: T0.Buffer((6,), "float32")):
    T0.func_attr({"tir.noalias": True})
    for i in range(6):
        with T0.block("B"):
            vi = T0.axis.spatial(6, i)
            v: T0.int32 = A[vi] * 2
            w: T0.float32 = T0.Cast("float32", v) + T0.float32(1)
            B[vi] = w


def test_let_annotation_is_the_same_let_and_runs():
    assert_structural_equal(doubled_plus_one, doubled_plus_one_023.with_attr("global_symbol", "doubled_plus_one"))
    a = np.random.default_rng(0).integers(-50, 50, 6).astype("int32")
    b = minitvm.nd.empty((6,), "float32")
    minitvm.tirx.build(doubled_plus_one, target="llvm")["doubled_plus_one"](minitvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 2 + 1)
    with pytest.raises(minitvm.script.TVMScriptError, match="unknown dtype 'no such'"):
        from_source("@T.prim_func\ndef f(A: T.Buffer((1,), 'int32')):\n    v: T.let['no such'] = A[0]\n"
                    "    A[0] = v\n")


def test_tirx_attribute_keys_are_the_tir_ones_printed_in_each_era():
    attrs = doubled_plus_one.attrs
    assert attrs == {"global_symbol": "doubled_plus_one", "tir.noalias": True}
    assert attrs["tirx.noalias"] is True and "tirx.noalias" in attrs
    assert 'T.func_attr({"tirx.noalias": True})' in doubled_plus_one.script()
    assert 'T.func_attr({"tir.noalias": True})' in doubled_plus_one_023.script()
    assert_structural_equal(from_source(doubled_plus_one.script()), doubled_plus_one)
    assert doubled_plus_one.with_attr("tirx.is_scheduled", True).attrs.get("tir.is_scheduled") is True


def test_a_fresh_variable_named_in_the_body_is_defined_where_it_is_used():
    # TVM binds the name to the variable itself (no let): the buffer's elem_offset then defines it
    @T0.prim_func
    def offset_view(a: T0.handle, B: T0.Buffer((8,), "float32")):
        off = te.var("elem_offset")
        A = T0.match_buffer(a, (8,), elem_offset=off)
        for i in range(8):
            with T0.block("B"):
                vi = T0.axis.spatial(8, i)
                B[vi] = A[vi] + T0.Cast("float32", off)

    buf = offset_view.buffer_map[offset_view.params[0]]
    assert buf.elem_offset.name == "elem_offset" and "T.let" not in offset_view.script()
    assert_structural_equal(from_source(offset_view.script()), offset_view)


def test_the_parser_package_holds_the_script_namespaces():
    from minitvm.script.parser import ir as I
    from minitvm.script.parser import relax as R
    from minitvm.script.parser import tirx as Tp

    assert Tp is minitvm.script.tir and R is minitvm.script.relax and I is minitvm.script.ir
