"""Property test: random sequences of schedule primitives never change what a kernel computes.

A primitive whose preconditions fail raises ScheduleError and leaves the schedule as
it was; every sequence that applies must give the unscheduled numbers, on the LLVM
backend and on the interpreter.
"""

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minitvm
from minitvm import tir
from minitvm.driver.build_module import export_name
from minitvm.testing import tir_builders as kernels
from minitvm.testing.tir_builders import random_arguments

KERNELS = {
    "elementwise": lambda: kernels.broadcast_add(8, 12),
    "matmul": lambda: kernels.mm_relu(8, 12, 10),
    "conv2d": lambda: kernels.conv2d_int64(),
    "softmax": lambda: kernels.softmax(4, 10),
}
PRIMITIVES = ["split", "fuse", "reorder", "parallel", "vectorize", "unroll", "compute_inline",
              "compute_at", "reverse_compute_at", "decompose_reduction", "cache_write", "rfactor"]


def _apply(sch: tir.Schedule, step: str, data: st.DataObject) -> None:
    blocks = [b for b in _block_names(sch) if b != "root"]
    block = sch.get_block(data.draw(st.sampled_from(blocks)))
    loops = sch.get_loops(block)
    if not loops and step not in ("compute_inline", "cache_write"):
        return
    pick = lambda: data.draw(st.sampled_from(loops))  # noqa: E731
    if step == "split":
        loop = pick()
        factor = data.draw(st.integers(1, 7))
        sch.split(loop, factors=[None, factor] if data.draw(st.booleans()) else [factor, None])
    elif step == "fuse" and len(loops) >= 2:
        start = data.draw(st.integers(0, len(loops) - 2))
        sch.fuse(loops[start], loops[start + 1])
    elif step == "reorder" and len(loops) >= 2:
        a, b = data.draw(st.lists(st.sampled_from(loops), min_size=2, max_size=2, unique_by=id))
        sch.reorder(b, a)
    elif step in ("parallel", "vectorize", "unroll"):
        getattr(sch, step)(pick())
    elif step == "compute_inline":
        sch.compute_inline(block)
    elif step in ("compute_at", "reverse_compute_at"):
        other = data.draw(st.sampled_from(blocks))
        target_loops = sch.get_loops(sch.get_block(other))
        if target_loops:
            getattr(sch, step)(block, data.draw(st.sampled_from(target_loops)))
    elif step == "decompose_reduction":
        sch.decompose_reduction(block, pick())
    elif step == "cache_write":
        sch.cache_write(block, 0, "local")
    elif step == "rfactor":
        sch.rfactor(pick(), 0)


def _block_names(sch: tir.Schedule) -> list[str]:
    from minitvm.tir.schedule.tree import block_realizes

    return [r.block.name_hint for r, _ in block_realizes(sch.mod["main"].body)]


def _run(mod, args, target):
    arrays = [a.copy() for a in args]
    minitvm.build(mod, target=target)[export_name("main", mod["main"])](*arrays)
    return arrays


# CI runs a fixed (derandomized) set of 40 cases; a longer random run:
#   MINITVM_FUZZ_EXAMPLES=2000 ./dev test tests/tir/schedule/test_property.py
EXAMPLES = int(os.environ.get("MINITVM_FUZZ_EXAMPLES", "40"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize="MINITVM_FUZZ_EXAMPLES" not in os.environ)
@given(kernel=st.sampled_from(sorted(KERNELS)), steps=st.lists(st.sampled_from(PRIMITIVES), min_size=1,
                                                              max_size=5), data=st.data())
def test_random_schedules_keep_the_numbers(kernel, steps, data):
    func = KERNELS[kernel]()
    mod = minitvm.IRModule({"main": func})
    sch = tir.Schedule(mod)
    applied = []
    for step in steps:
        before = sch.mod
        try:
            _apply(sch, step, data)
            applied.append(step)
        except tir.ScheduleError:
            assert sch.mod is before, f"{step} failed but changed the schedule"
    args = random_arguments(func, seed=1)
    expected = _run(mod, args, "python")
    # the interpreter first: it raises on an out-of-bounds access where native code would corrupt memory
    for target in ("python", "llvm"):
        got = _run(sch.mod, args, target)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{kernel} after {applied} on {target}\n{sch.trace}")
