"""TVMScript stamps stores and blocks with their file line (ir.Span); spans never change
structural equality or hashing, and survive schedule primitives that keep the statement."""

from __future__ import annotations

from minitvm import ir, tir
from minitvm.script import tir as T


@T.prim_func
def copy_a(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]


@T.prim_func
def copy_b(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi]


def _store(func):
    return func.body.block.body.body.block.body


def test_stores_carry_their_file_line_and_text():
    span = _store(copy_a).span
    assert isinstance(span, ir.Span)
    assert span.source_name == __file__ and span.line_text == "B[vi] = A[vi]"
    assert _store(copy_b).span.line == span.line + 8


def test_spans_do_not_take_part_in_structural_equality_or_hashing():
    assert _store(copy_a).span != _store(copy_b).span
    a, b = copy_a.with_attr("global_symbol", "x"), copy_b.with_attr("global_symbol", "x")
    ir.assert_structural_equal(a, b)
    assert ir.structural_hash(a) == ir.structural_hash(b)


def test_a_schedule_primitive_keeps_the_span_of_the_statement_it_moves():
    sch = tir.Schedule(copy_a)
    sch.split(sch.get_loops("B")[0], factors=[2, 4])
    store = sch.get(sch.get_block("B")).body
    assert store.span == _store(copy_a).span
