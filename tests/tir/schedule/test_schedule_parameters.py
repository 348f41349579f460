"""Every TVM parameter a schedule primitive takes does what TVM does with it, or raises
NotImplementedError naming it: none is accepted and silently ignored."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def add_3d(A: T.Buffer((128, 4, 16), "float32"), B: T.Buffer((128, 4, 16), "float32")):
    for i, u, j in T.grid(128, 1, 16):
        with T.block("B"):
            vi, vu, vj = T.axis.remap("SSS", [i, u, j])
            B[vi, vu, vj] = A[vi, vu, vj] * T.float32(2)


@T.prim_func
def two_stage(A: T.Buffer((64, 32), "float32"), C: T.Buffer((64, 32), "float32")):
    B = T.alloc_buffer((64, 32), "float32")
    for i, j in T.grid(64, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(3)


def _binding(sch: tir.Schedule, block: str) -> list[str]:
    realize = next(r for r in _realizes(sch.mod["main"].body) if r.block.name_hint == block)
    return [v.script() for v in realize.iter_values]


def _realizes(stmt):
    from minitvm.tir.schedule.tree import blocks_under

    return blocks_under(stmt)


# -- split / fuse: preserve_unit_iters, disable_predication -------------------------------


@pytest.mark.parametrize("preserve, expected", [(True, "i_0 * 64 + i_1 * 64 + i_2"), (False, "i_0 * 64 + i_2")])
def test_split_preserve_unit_iters_keeps_or_drops_the_unit_loop_in_bindings(same_numbers, preserve, expected):
    sch = tir.Schedule(add_3d)
    i, _, _ = sch.get_loops("B")
    sch.split(i, factors=[2, 1, 64], preserve_unit_iters=preserve)
    assert _binding(sch, "B")[0] == expected
    assert len(sch.get_loops("B")) == 5  # the unit loop itself stays either way, as in TVM
    same_numbers(add_3d, sch.mod)


def test_split_without_preserve_unit_iters_also_folds_unit_loops_above(same_numbers):
    # TVM simplifies every binding under the split with all enclosing loops known
    sch = tir.Schedule(add_3d)
    _, _, j = sch.get_loops("B")
    sch.split(j, factors=[4, 4], preserve_unit_iters=False)
    assert _binding(sch, "B")[1] == "0"
    same_numbers(add_3d, sch.mod)


@pytest.mark.parametrize("disable", [False, True])
def test_split_disable_predication_leaves_out_the_padding_guard(disable):
    sch = tir.Schedule(two_stage)
    i, _ = sch.get_loops("B")
    sch.split(i, factors=[None, 10], disable_predication=disable)
    realize = next(r for r in _realizes(sch.mod["main"].body) if r.block.name_hint == "B")
    assert realize.predicate.script() == ("T.bool(True)" if disable else "i_0 * 10 + i_1 < 64")


@pytest.mark.parametrize("preserve, expected", [(True, "u"), (False, "0")])
def test_fuse_preserve_unit_iters(same_numbers, preserve, expected):
    sch = tir.Schedule(add_3d)
    i, u, j = sch.get_loops("B")
    sch.reorder(u, i, j)
    _, i, j = sch.get_loops("B")
    sch.fuse(i, j, preserve_unit_iters=preserve)
    assert _binding(sch, "B")[1] == expected  # the unit loop u around the fused one
    same_numbers(add_3d, sch.mod)


@pytest.mark.parametrize("preserve, expected", [(True, ["i", "u", "0"]), (False, ["i", "0", "0"])])
def test_blockize_preserve_unit_iters_binds_the_outer_block(same_numbers, preserve, expected):
    sch = tir.Schedule(add_3d)
    _, _, j = sch.get_loops("B")
    sch.blockize(j, preserve_unit_iters=preserve)
    assert _binding(sch, "B_o") == expected
    same_numbers(add_3d, sch.mod)


# -- compute_at(index) ----------------------------------------------------------------------


@T.prim_func
def producer_beside_other_work(A: T.Buffer((16, 8), "float32"), F: T.Buffer((16, 8), "float32"),
                               C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8), "float32")
    for i in range(16):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for j in range(8):
            with T.block("E"):
                vi, vj = T.axis.remap("SS", [i, j])
                F[vi, vj] = A[vi, vj] * T.float32(5)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(3)


@pytest.mark.parametrize("index, order", [(-1, ["B", "E", "C"]), (-2, ["B", "C", "E"]),
                                          (1, ["B", "C", "E"]), (2, ["B", "E", "C"])])
def test_reverse_compute_at_index_chooses_among_the_legal_places(same_numbers, index, order):
    sch = tir.Schedule(producer_beside_other_work)
    i = sch.get_loops("B")[0]
    sch.reverse_compute_at("C", i, index=index)
    loop = sch.get(sch.get_loops("B")[0])
    assert [_realizes(s)[0].block.name_hint for s in loop.body.seq] == order
    same_numbers(producer_beside_other_work, sch.mod)


def test_reverse_compute_at_index_out_of_range_is_refused():
    sch = tir.Schedule(producer_beside_other_work)
    i = sch.get_loops("B")[0]
    with pytest.raises(tir.ScheduleError, match="index 0 is not a valid position"):
        sch.reverse_compute_at("C", i, index=0)  # before its producer B


# -- cache_read / cache_write(consumer_blocks) ----------------------------------------------


def test_cache_read_consumer_blocks_redirects_only_those_consumers(same_numbers):
    sch = tir.Schedule(two_stage)
    sch.cache_read("C", 0, "local", consumer_blocks=["C"])
    reads = {r.block.name_hint: [x.buffer.name for x in r.block.reads] for r in _realizes(sch.mod["main"].body)}
    assert reads["C"] == ["B_local"]
    same_numbers(two_stage, sch.mod)


def test_cache_write_consumer_blocks_is_recorded_and_replayed():
    sch = tir.Schedule(two_stage)
    sch.cache_write("B", 0, "local", consumer_blocks=["C"])
    reads = {r.block.name_hint: [x.buffer.name for x in r.block.reads] for r in _realizes(sch.mod["main"].body)}
    assert reads["C"] == ["B_local"]  # the named consumer reads the cache directly
    assert "consumer_blocks" in str(sch.trace)


# -- Schedule(debug_mask, enable_check) -----------------------------------------------------


@pytest.mark.parametrize("mask", ["all", "none", 0, 1, 3, -1])
def test_schedule_accepts_tvms_debug_masks(mask):
    sch = tir.Schedule(two_stage, debug_mask=mask)
    sch.compute_inline("B")
    assert len(_realizes(sch.mod["main"].body)) == 2  # the root block and C


@pytest.mark.parametrize("mask, error", [("some", ValueError), (1.5, TypeError), (-2, ValueError)])
def test_schedule_refuses_what_tvm_refuses_as_debug_mask(mask, error):
    with pytest.raises(error, match="debug_mask"):
        tir.Schedule(two_stage, debug_mask=mask)


def test_debug_mask_verifies_the_state_after_each_primitive():
    """With the checks on, a primitive that left two blocks of one name (blocks are found by
    name) is caught as it commits; with debug_mask="none" it is not; a function that came in
    with a repeated name is not the primitive's fault."""
    from minitvm.ir import replace
    from minitvm.tir.schedule.tree import replace_stmt

    for mask, should_raise in (("all", True), ("none", False)):
        sch = tir.Schedule(two_stage, debug_mask=mask)
        body = sch.mod["main"].body
        c = next(r for r in _realizes(body) if r.block.name_hint == "C")
        broken = replace_stmt(body, c.block, replace(c.block, name_hint="B"))  # as a buggy primitive would
        if should_raise:
            with pytest.raises(tir.ScheduleError, match="2 blocks named B"):
                sch._commit("main", broken)
        else:
            sch._commit("main", broken)


def test_enable_check_false_is_not_implemented():
    with pytest.raises(NotImplementedError, match="enable_check"):
        tir.Schedule(two_stage, enable_check=False)
    with pytest.raises(TypeError, match="enable_check"):
        tir.Schedule(two_stage, enable_check=1)
    assert tir.Schedule(two_stage, enable_check=True).mod is not None


# -- Trace.show(style, black_format) ------------------------------------------------------


def test_trace_show_refuses_styles_it_cannot_apply(capsys):
    sch = tir.Schedule(two_stage)
    sch.compute_inline("B")
    sch.trace.show()
    assert "compute_inline" in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="black_format"):
        sch.trace.show(black_format=True)
    with pytest.raises(NotImplementedError, match="style"):
        sch.trace.show(style="monokai")


def test_debug_mask_does_not_blame_a_primitive_for_names_the_function_repeated():
    from minitvm.ir import replace
    from minitvm.tir.schedule.tree import replace_stmt

    body = two_stage.body
    c = next(r for r in _realizes(body) if r.block.name_hint == "C")
    repeated = two_stage.with_body(replace_stmt(body, c.block, replace(c.block, name_hint="B")))
    sch = tir.Schedule(repeated, debug_mask="all")
    sch.annotate(sch.get_loops(sch.get_child_blocks(sch.get_block("root"))[0])[0], "k", 1)
    assert "k" in sch.get(sch.get_loops(sch.get_child_blocks(sch.get_block("root"))[0])[0]).annotations
