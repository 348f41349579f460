"""T.allocate_const: constant data in a prim func, viewed by T.decl_buffer; it parses, prints,
reads back equal and schedules, and the code generators refuse it by name."""

import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import tir as T


@T.prim_func
def scaled(A: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    w = T.allocate_const([1.5, -2, 0.25, 3], "float32", [4])
    W = T.decl_buffer((4,), "float32", data=w)
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            C[vi] = A[vi] * W[vi]


def _const(func):
    found = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.AllocateConst) else None)
    assert len(found) == 1
    return found[0]


def test_allocate_const_holds_the_values_in_its_dtype():
    node = _const(scaled)
    assert node.dtype == "float32" and [e.value for e in node.extents] == [4]
    assert node.data == (1.5, -2.0, 0.25, 3.0)  # the int -2 became a float32 value


def test_allocate_const_round_trips_with_its_buffer_view():
    text = scaled.script()
    assert 'w = T.allocate_const([1.5, -2.0, 0.25, 3.0], "float32", [4])' in text
    assert 'W = T.decl_buffer((4,), "float32", data=w)' in text
    assert text.index("T.allocate_const") < text.index("T.decl_buffer")  # the view follows its data
    reparsed = from_source(text)
    assert_structural_equal(reparsed, scaled)
    assert reparsed.script() == text


def test_allocate_const_checks_the_number_of_values():
    with pytest.raises(TVMScriptError, match="3 values do not fill extents"):
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            w = T.allocate_const([1.0, 2.0, 3.0], "float32", [2, 2])
            W = T.decl_buffer((2, 2), "float32", data=w)
            A[0] = W[0, 0]


def test_cache_read_of_constant_data_goes_inside_its_scope():
    sch = tir.Schedule(scaled)
    sch.cache_read("C", 1, "global")
    func = sch.mod["main"]
    node = _const(func)
    # the copy reads the constant, so it runs where the constant exists: first in its body
    first = node.body.seq[0]
    assert first.body.block.name_hint == "W_global"
    assert [b.name for b in func.body.block.alloc_buffers] == ["W_global"]
    reparsed = from_source(func.script())
    assert_structural_equal(reparsed, func)


@pytest.mark.parametrize("target", ["llvm", "python"])
def test_build_refuses_constant_data_by_name(target):
    with pytest.raises(NotImplementedError, match=r"constant data \(T.allocate_const w\)"):
        minitvm.build(scaled, target=target)


def test_views_of_allocated_storage_are_declared_after_the_allocation():
    # as in TVM, a buffer may view T.allocate's storage (TVM's T.allocate returns its pointer)
    @T.prim_func
    def f(A: T.Buffer((16,), "float32")):
        tmp = T.allocate([16], "float32", "global")
        tmp_2d = T.Buffer((4, 4), "float32", data=tmp)
        for i, j in T.grid(4, 4):
            tmp_2d[i, j] = A[i * 4 + j]
        for k in range(16):
            A[k] = tmp[k] * T.float32(2)

    text = f.script()
    assert text.index("tmp = T.allocate(") < text.index('tmp_2d = T.decl_buffer((4, 4), "float32", data=tmp)')
    reparsed = from_source(text)
    assert_structural_equal(reparsed, f)
    assert reparsed.script() == text
