"""tir.transform.DefaultGPUSchedule (TVM's tvm.tir / tvm.s_tir.transform.DefaultGPUSchedule): unbound
blocks of GPU functions get blockIdx.x / threadIdx.x and still compute what they did; bound or CPU
functions keep their bodies."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.ir import IRModule, replace
from minitvm.ir.structural import structural_equal
from minitvm.target import Target
from minitvm.tir import PrimFunc
from minitvm.tir.stmt import For, ForKind
from minitvm.tir.stmt_functor import block_realizes, replace_stmt, walk_stmts

RNG = np.random.default_rng(34)


def _kernels():
    a, b = te.placeholder((24, 16), name="A"), te.placeholder((16, 20), name="B")
    k = te.reduce_axis((0, 16), name="k")
    mm = te.create_prim_func([a, b, te.compute((24, 20), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")])
    # 3 * 50 * 60 = 9000 elements: more than 32 threads * 256 blocks, and not a multiple of 8192
    x = te.placeholder((3, 50, 60), name="X")
    add = te.create_prim_func([x, te.compute(x.shape, lambda i, j, m: x[i, j, m] * 2.0 + 1.0, name="Y")])
    return IRModule({"mm": mm.with_attr("global_symbol", "mm"), "add": add.with_attr("global_symbol", "add")})


def _thread_tags(func) -> dict[str, list[str]]:
    out = {}
    for realize, path in block_realizes(func.body):
        if realize.block.name_hint != "root":
            out[realize.block.name_hint] = [str(s.thread_binding) for s in path
                                            if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING]
    return out


def test_binds_every_block_and_matches_numpy_on_the_emulated_gpu():
    with Target("cuda-emulated -max_num_threads=32"):
        mod = minitvm.tir.transform.DefaultGPUSchedule()(_kernels())
    assert minitvm.s_tir.transform.DefaultGPUSchedule is minitvm.tir.transform.DefaultGPUSchedule
    for name in ("mm", "add"):
        assert mod[name].attrs["tir.is_scheduled"]
        assert all(tags == ["blockIdx.x", "threadIdx.x"] for tags in _thread_tags(mod[name]).values())
    # over the grid cap: 256 blocks of 32 threads, each thread loops over the rest (as TVM)
    extents = [int(s.extent.value) for _, path in block_realizes(mod["add"].body) for s in path
               if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING]
    assert extents == [256, 32]
    lib = minitvm.build(mod, target="cuda-emulated")
    dev = minitvm.cuda(0)
    a, b, x = RNG.standard_normal((24, 16)), RNG.standard_normal((16, 20)), RNG.standard_normal((3, 50, 60))
    a, b, x = a.astype("float32"), b.astype("float32"), x.astype("float32")
    args = [minitvm.runtime.tensor(v, dev) for v in (a, b, np.zeros((24, 20), "float32"))]
    lib["mm"](*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-5, atol=1e-5)
    xs = [minitvm.runtime.tensor(x, dev), minitvm.runtime.tensor(np.zeros_like(x), dev)]
    lib["add"](*xs)
    np.testing.assert_allclose(xs[1].numpy(), x * 2 + 1, rtol=1e-6)


def test_bound_and_cpu_functions_keep_their_bodies():
    mod = _kernels()
    sch = tir.Schedule(mod["add"])
    blk = sch.get_block("Y")
    i, j, _ = sch.get_loops(blk)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    bound = sch.mod["main"]
    cpu = mod["mm"].with_attr("target", Target("llvm"))
    with Target("cuda-emulated"):
        out = minitvm.tir.transform.DefaultGPUSchedule()(IRModule({"bound": bound, "cpu": cpu}))
    assert structural_equal(out["bound"].body, bound.body)
    assert structural_equal(out["cpu"].body, cpu.body)
    # TVM's pass marks every PrimFunc of the module scheduled, the CPU ones too
    assert out["cpu"].attrs["tir.is_scheduled"] and out["bound"].attrs["tir.is_scheduled"]


def test_no_target_anywhere_is_refused_by_name():
    with pytest.raises(ValueError, match="'mm' has no 'target' attribute and no Target is in scope"):
        minitvm.tir.transform.DefaultGPUSchedule()(IRModule({"mm": _kernels()["mm"]}))


def test_symbolic_extent_gets_a_grid_of_constant_size():
    # TVM's broadcast_to case: a symbolic output shape (fused extent unknown at compile time)
    from minitvm.script import tir as T

    @T.prim_func
    def broadcast_to(a: T.Buffer((T.int64(3), T.int64(1)), "float32"), out_handle: T.handle):
        T.func_attr({"global_symbol": "broadcast_to"})
        x_0, x_1 = T.int64(), T.int64()
        out = T.match_buffer(out_handle, (x_0, x_1))
        for ax0, ax1 in T.grid(x_0, x_1):
            with T.block("T_broadcast_to"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                out[v0, v1] = a[v0, T.int64(0)]

    with Target("cuda-emulated"):
        mod = minitvm.tir.transform.DefaultGPUSchedule()(IRModule({"broadcast_to": broadcast_to}))
    func = mod["broadcast_to"]
    bound = [s for s, _ in walk_stmts(func.body) if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING]
    # TVM's form: a grid of constant size (256 x 1024), each thread looping over the symbolic rest
    assert [(str(s.thread_binding), int(s.extent.value)) for s in bound] == [("blockIdx.x", 256),
                                                                             ("threadIdx.x", 1024)]
    # minitvm's GPU codegen does not yet read shape variables in a kernel, so check the index
    # arithmetic on the CPU: the same loops run serially, over more than one grid's worth of elements
    body = func.body
    for s in bound:
        body = replace_stmt(body, s, replace(s, kind=ForKind.SERIAL, thread_binding=None))
    cpu = PrimFunc(func.params, func.buffer_map, body, func.ret_type, dict(func.attrs))
    a = RNG.standard_normal((3, 1)).astype("float32")
    out = np.zeros((3, 100_000), "float32")
    minitvm.build(IRModule({"broadcast_to": cpu}), target="llvm")["broadcast_to"](a, out)
    np.testing.assert_array_equal(out, np.broadcast_to(a, out.shape))


def test_a_loop_free_scalar_block_gets_one_thread():
    # TVM 0.27's case: the function's body is one bare block (no loops, no iterators)
    from minitvm.script import tir as T

    @T.prim_func
    def scalar_add(a: T.Buffer((), "float32"), b: T.Buffer((), "float32"), c: T.Buffer((), "float32")):
        T.func_attr({"global_symbol": "scalar_add"})
        with T.block("scalar_add"):
            c[()] = a[()] + b[()]

    with Target("cuda-emulated"):
        mod = minitvm.tir.transform.DefaultGPUSchedule()(IRModule({"scalar_add": scalar_add}))
    assert _thread_tags(mod["scalar_add"]) == {"scalar_add": ["blockIdx.x", "threadIdx.x"]}
    dev = minitvm.cuda(0)
    a, b = RNG.standard_normal(2).astype("float32")
    args = [minitvm.runtime.tensor(np.array(v, "float32"), dev) for v in (a, b, 0.0)]
    minitvm.build(mod, target="cuda-emulated")["scalar_add"](*args)
    np.testing.assert_allclose(args[2].numpy(), a + b, rtol=1e-6)
