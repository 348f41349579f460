"""The trace replays what a schedule did: as Python, as JSON and onto another schedule."""

import json

import pytest

from minitvm import s_tir, tir
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.script import tir as T
from minitvm.script import tirx as Tx
from minitvm.tir.schedule import BlockRV, Instruction, InstructionKind, LoopRV, Trace
from minitvm.tir.schedule.testing import verify_trace_roundtrip


@T.prim_func
def scale_shift(A: T.Buffer((64, 32), "float32"), D: T.Buffer((64, 32), "float32")):
    B = T.alloc_buffer((64, 32), "float32")
    C = T.alloc_buffer((64, 32), "float32")
    for i, j in T.grid(64, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3)
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(64, 32):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] * T.float32(0.5)


@T.prim_func
def vector_scale(A: T.Buffer((96,), "float32"), B: T.Buffer((96,), "float32")):
    for i in range(96):
        with T.block("B"):
            vi = T.axis.spatial(96, i)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def mm(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    for i, j, k in T.grid(32, 16, 48):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def row_max(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 64):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.min_value("float32")
            B[vi] = T.max(B[vi], A[vi, k])


@T.prim_func
def axpy_desc(a: T.Buffer((1,), "float32"), x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("update"):
            vi = T.axis.spatial(16, i)
            y[vi] = y[vi] + a[0] * x[vi]


@T.prim_func
def axpy_impl(a: T.Buffer((1,), "float32"), x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    for i in T.vectorized(16):
        with T.block("update"):
            vi = T.axis.spatial(16, i)
            y[vi] = y[vi] + a[0] * x[vi]


tir.TensorIntrin.register("trace_test_axpy16", axpy_desc, axpy_impl, override=True)


# each schedule uses a different set of primitives; together they use every one the trace knows
def _elementwise(sch):
    (i,) = sch.get_loops("D")[:1]
    sch.get_child_blocks(sch.get_block("root"))
    sch.get_producers("C")
    sch.get_consumers("C")
    sch.get_output_blocks("root")
    sch.compute_inline("B")
    sch.reverse_compute_inline("D")
    c_i, c_j = sch.get_loops("C")
    sch.annotate(c_i, "pragma_note", "outer")
    sch.annotate(sch.get_block("C"), "note", 7)
    sch.unannotate(c_i, "pragma_note")
    fused = sch.fuse(c_i, c_j)
    outer, inner = sch.split(fused, factors=[None, 16])
    sch.parallel(outer)
    sch.vectorize(inner)


def _single_loop(sch):
    (loop,) = sch.get_loops("B")  # a single loop: the trace must unpack it
    tiles = sch.sample_perfect_tile(loop, n=3, max_innermost_factor=8)
    l0, l1, l2 = sch.split(loop, factors=tiles)
    sch.unroll(l1)
    sch.reorder(l1, l0)
    pick = sch.sample_categorical([1, 2, 4], [0.25, 0.25, 0.5])
    sch.annotate(l2, "pragma_unroll", pick)


def _caches(sch):
    block = sch.get_block("C")
    a_local = sch.cache_read(block, "A", "local")
    c_local = sch.cache_write("C", 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[4, None])
    sch.reorder(i0, j, i1, k)
    sch.compute_at(a_local, j)
    sch.reverse_compute_at(c_local, j)
    sch.decompose_reduction(block, i1)
    sch.transform_layout("C_local", ("read", 0), lambda x, y: (y, x))


def _reduction(sch):
    i, k = sch.get_loops("B")
    k0, k1 = sch.split(k, factors=[None, 8])
    rf = sch.rfactor(k1, 0)
    sch.get(rf)


def _tensorize(sch):
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)
    outer = sch.blockize(j1)
    sch.tensorize(outer, "trace_test_axpy16")


CASES = [(scale_shift, _elementwise), (vector_scale, _single_loop), (mm, _caches), (row_max, _reduction),
         (mm, _tensorize)]


def _scheduled(func, steps, seed=5):
    sch = tir.Schedule(func, seed=seed)
    steps(sch)
    return sch


@pytest.mark.parametrize("func, steps", CASES, ids=[s.__name__.strip("_") for _, s in CASES])
def test_as_python_replays_to_the_same_module(func, steps, same_numbers):
    sch = _scheduled(func, steps)
    fresh = tir.Schedule(func)
    exec("\n".join(sch.trace.as_python()), {"sch": fresh})
    assert_structural_equal(fresh.mod, sch.mod)
    same_numbers(func, sch.mod, targets=("llvm",))


@pytest.mark.parametrize("func, steps", CASES, ids=[s.__name__.strip("_") for _, s in CASES])
def test_str_is_an_apply_trace_function(func, steps):
    sch = _scheduled(func, steps)
    namespace = {"tir": tir}
    exec(str(sch.trace), namespace)
    fresh = tir.Schedule(func)
    namespace["apply_trace"](fresh)
    assert_structural_equal(fresh.mod, sch.mod)


@pytest.mark.parametrize("func, steps", CASES, ids=[s.__name__.strip("_") for _, s in CASES])
def test_json_round_trip_replays_with_the_decisions(func, steps):
    sch = _scheduled(func, steps)
    text = json.dumps(sch.trace.as_json())  # what a tuning database stores
    fresh = tir.Schedule(func, seed=123)  # another seed: only the recorded decisions can agree
    Trace.apply_json_to_schedule(json.loads(text), fresh)
    assert_structural_equal(fresh.mod, sch.mod)
    assert fresh.trace.as_python() == sch.trace.as_python()


@pytest.mark.parametrize("func, steps", CASES, ids=[s.__name__.strip("_") for _, s in CASES])
def test_apply_to_schedule_reuses_decisions(func, steps):
    sch = _scheduled(func, steps)
    fresh = tir.Schedule(func, seed=99)
    sch.trace.apply_to_schedule(fresh, remove_postproc=False)
    assert_structural_equal(fresh.mod, sch.mod)


def test_single_loop_prints_unpacked_and_decisions_print():
    sch = _scheduled(vector_scale, _single_loop)
    lines = sch.trace.as_python()
    assert lines[0] == 'b0 = sch.get_block(name="B", func_name="main")'
    assert lines[1] == "l1, = sch.get_loops(block=b0)"
    tiles = [sch.get(v) for v in sch.trace.insts[2].outputs]
    assert lines[2] == (f"v2, v3, v4 = sch.sample_perfect_tile(loop=l1, n=3, max_innermost_factor=8, "
                        f"decision={tiles})")
    assert lines[3] == ("l5, l6, l7 = sch.split(loop=l1, factors=[v2, v3, v4], preserve_unit_iters=True, "
                        "disable_predication=False)")
    assert "v8 = sch.sample_categorical(candidates=[1, 2, 4], probs=[0.25, 0.25, 0.5], decision=" in lines[6]


def test_cache_stages_print_their_resolved_index():
    sch = tir.Schedule(mm)
    sch.cache_read("C", "B", "shared")
    sch.cache_write("C", "C", "local")
    lines = sch.trace.as_python()
    # a buffer given by name is recorded by its index, as TVM records it
    assert lines[1] == 'b1 = sch.cache_read(block=b0, read_buffer_index=1, storage_scope="shared")'
    assert lines[3] == 'b3 = sch.cache_write(block=b2, write_buffer_index=0, storage_scope="local")'


def test_sampled_values_are_read_with_get_and_fixed_by_decision():
    sch = tir.Schedule(mm, seed=3)
    i, j, k = sch.get_loops("C")
    tiles = sch.sample_perfect_tile(k, n=2, decision=[6, 8])
    assert [sch.get(t) for t in tiles] == [6, 8]
    choice = sch.sample_categorical([16, 32, 64], [0.1, 0.2, 0.7], decision=1)
    assert sch.get(choice) == 32
    k0, k1 = sch.split(k, factors=[None, tiles[1]])
    assert sch.get(k1).extent.value == 8
    with pytest.raises(tir.ScheduleError, match="not 2 factors of its extent 6"):
        sch.sample_perfect_tile(k0, n=2, decision=[5, 2])


def test_sampling_is_uniformly_seeded():
    def tiles(seed):
        sch = tir.Schedule(mm, seed=seed)
        return [sch.get(v) for v in sch.sample_perfect_tile(sch.get_loops("C")[2], n=3, max_innermost_factor=4)]

    assert tiles(11) == tiles(11)
    for seed in range(20):
        t = tiles(seed)
        assert t[0] * t[1] * t[2] == 48 and t[2] <= 4


def test_trace_built_from_instructions_as_tvm_spells_it():
    """A trace built by hand prints in the era its instructions' kinds were spelled in
    (``"GetSBlock"``: TVM 0.27's, ``"GetBlock"``: the MLC course's, as TVM v0.23's own tests
    expect), TVM 0.27's where nothing says (``era="0.23"`` chooses), and replays the same in either."""
    b0, l1, l2 = BlockRV(), LoopRV(), LoopRV()

    def insts(get_block: str) -> list:
        return [Instruction(InstructionKind.get(get_block), [], ["B", "main"], [b0]),
                Instruction(InstructionKind.get("GetLoops"), [b0], [], [l1]),
                Instruction(InstructionKind.get("Split"), [l1, None, 8], [True, False], [l2, LoopRV()])]

    body = ["  l1, = sch.get_loops(block=b0)",
            "  l2, l3 = sch.split(loop=l1, factors=[None, 8], preserve_unit_iters=True, disable_predication=False)"]
    rest = [["GetLoops", ["b0"], [], ["l1"]], ["Split", ["l1", "None", 8], [True, False], ["l2", "l3"]]]
    today, mlc = Trace(insts=insts("GetSBlock"), decisions={}), Trace(insts=insts("GetBlock"), decisions={})
    assert str(Trace(insts=insts("GetSBlock"), decisions={}, era="0.23")) == str(mlc)
    assert str(Trace(insts=insts("GetLoops")[1:], decisions={})).startswith("# from tvm import s_tir")
    assert str(today).splitlines() == ["# from tvm import s_tir", "def apply_trace(sch: s_tir.Schedule) -> None:",
                                       '  b0 = sch.get_sblock(name="B", func_name="main")'] + body
    assert str(mlc).splitlines() == ["# from tvm import tir", "def apply_trace(sch: tir.Schedule) -> None:",
                                     '  b0 = sch.get_block(name="B", func_name="main")'] + body
    assert today.as_json() == [[["GetSBlock", [], ["B", "main"], ["b0"]]] + rest, []]
    assert mlc.as_json() == [[["GetBlock", [], ["B", "main"], ["b0"]]] + rest, []]
    reference = tir.Schedule(vector_scale)
    reference.split(reference.get_loops("B")[0], factors=[None, 8])
    for trace in (today, mlc):
        sch = tir.Schedule(vector_scale)
        trace.apply_to_schedule(sch, remove_postproc=False)
        assert_structural_equal(sch.mod, reference.mod)
        assert not structural_equal(sch.mod, vector_scale)
        from_json = tir.Schedule(vector_scale)
        Trace.apply_json_to_schedule(json.loads(json.dumps(trace.as_json())), from_json)
        assert_structural_equal(from_json.mod, reference.mod)


@Tx.prim_func
def vector_scale_today(A: Tx.Buffer((96,), "float32"), B: Tx.Buffer((96,), "float32")):
    for i in range(96):
        with Tx.sblock("B"):
            vi = Tx.axis.spatial(96, i)
            B[vi] = A[vi] * Tx.float32(2)


@pytest.mark.parametrize("func, era, lookup, module, kind", [
    (vector_scale_today, "0.27", "get_sblock", "s_tir", "GetSBlock"),
    (vector_scale, "0.23", "get_block", "tir", "GetBlock")], ids=["tvm027", "mlc"])
def test_a_schedule_traces_in_the_era_its_function_was_written_in(func, era, lookup, module, kind):
    """T.sblock code gets TVM 0.27's trace (sch.get_sblock, s_tir.Schedule, "GetSBlock"), T.block
    code the MLC course's; each spelling replays as Python, as JSON and through str(trace)."""
    sch = s_tir.Schedule(func)
    sch.split(sch.get_loops(sch.get_sblock("B"))[0], factors=[None, 8])
    text = str(sch.trace)
    assert sch.trace.era == era
    assert text.splitlines()[:3] == [f"# from tvm import {module}", f"def apply_trace(sch: {module}.Schedule) -> None:",
                                     f'  b0 = sch.{lookup}(name="B", func_name="main")']
    assert str(sch.trace.insts[0]) == f'_ = sch.{lookup}(name="B", func_name="main")'
    assert sch.trace.as_json()[0][0][0] == kind
    namespace = {module: s_tir if module == "s_tir" else tir}
    exec(text, namespace)  # noqa: S102 - the trace's own text
    fresh = tir.Schedule(func)
    namespace["apply_trace"](fresh)
    assert_structural_equal(fresh.mod, sch.mod)
    assert not structural_equal(fresh.mod, tir.Schedule(func).mod)
    assert str(fresh.trace) == text
    verify_trace_roundtrip(sch, func)


def test_simplified_drops_unused_lookups_and_postproc():
    sch = tir.Schedule(scale_shift)
    sch.compute_inline(sch.get_block("B"))
    sch.get_block("C")  # looked up, never used
    sch.enter_postproc()
    sch.compute_inline(sch.get_block("C"))
    assert len(sch.trace.simplified(remove_postproc=False)) == 5
    lines = sch.trace.simplified(remove_postproc=True).as_python()
    assert lines == ['b0 = sch.get_block(name="B", func_name="main")', "sch.compute_inline(block=b0)"]


def test_with_decision_changes_the_replayed_sample():
    sch = tir.Schedule(mm, seed=1)
    k = sch.get_loops("C")[2]
    tiles = sch.sample_perfect_tile(k, n=2)
    sch.split(k, factors=tiles)
    sample = sch.trace.insts[2]
    changed = sch.trace.with_decision(sample, [3, 16], remove_postproc=False)
    fresh = tir.Schedule(mm)
    changed.apply_to_schedule(fresh, remove_postproc=False)
    assert [lp.extent.value for lp in (fresh.get(x) for x in fresh.get_loops("C"))] == [32, 16, 3, 16]


def test_instructions_print_and_compare_as_tvm_does():
    kind = InstructionKind.get("GetLoops")
    assert kind.same_as(InstructionKind.get("get_loops")) and not InstructionKind.get("EnterPostproc").is_pure
    block, loops = BlockRV(), [LoopRV(), LoopRV()]
    inst = Instruction(kind, [block], [], loops)
    assert str(inst) == "_, _ = sch.get_loops(block=_)"
    assert inst.inputs[0].same_as(block) and not inst.outputs[0].same_as(loops[1])


def test_apply_to_schedule_refuses_a_function_of_another_shape():
    """Replaying get_loops on a block with fewer loops stops there, naming the instruction,
    instead of binding the loops it got and failing later on an undefined variable."""
    sch = tir.Schedule(scale_shift)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.fuse(i, j)
    other = tir.Schedule(vector_scale)  # its block "B" has one loop
    with pytest.raises(ValueError, match="GetLoops returned 1 results where the trace recorded 2"):
        sch.trace.apply_to_schedule(other, remove_postproc=False)


def test_verify_trace_roundtrip_replays_python_and_json():
    """TVM's tvm.tir.schedule.testing.verify_trace_roundtrip: the replayed schedules reach the
    same module, and a different starting module is caught."""
    sch = tir.Schedule(scale_shift)
    i, j = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 8])
    sch.reorder(j, io)
    sch.compute_inline(sch.get_block("B"))
    replayed = verify_trace_roundtrip(sch, scale_shift)
    assert_structural_equal(replayed.mod, sch.mod)
    with pytest.raises(ValueError, match="unknown text format"):
        verify_trace_roundtrip(sch, scale_shift, text_format="yaml")
    # replayed on a module where B is already inlined, the same trace reaches another module
    inlined = tir.Schedule(scale_shift)
    inlined.compute_inline(inlined.get_block("B"))
    other = tir.Schedule(scale_shift)
    other.split(other.get_loops(other.get_block("D"))[0], factors=[None, 4])
    with pytest.raises(ValueError, match="StructuralEqual"):
        verify_trace_roundtrip(other, inlined.mod["main"])
