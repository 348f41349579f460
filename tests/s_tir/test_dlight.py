"""minitvm.s_tir.dlight (TVM 0.27's tvm.s_tir.dlight, tvm.dlight before): rules and the ApplyDefaultSchedule pass.

On the emulated GPU each rule's schedule binds every block to blockIdx and threadIdx and the
kernel matches numpy; on ``llvm`` the gpu rules decline and minitvm's CPU schedule takes over.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tir, topi
from minitvm.ir import IRModule
from minitvm.s_tir import dlight as dl
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.target import Target
from minitvm.tir.stmt import BlockRealize, For, ForKind
from minitvm.tir.stmt_functor import block_realizes
from minitvm.transform import Sequential

GPU = Target("cuda-emulated")
RULES = (dl.gpu.Matmul, dl.gpu.GEMV, dl.gpu.Reduction, dl.gpu.GeneralReduction, dl.gpu.Fallback)
RNG = np.random.default_rng(33)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _unbound_blocks(func) -> list[str]:
    """Blocks not under both a blockIdx and a threadIdx loop (on a GPU every thread would run them)."""
    bad = []
    for realize, path in block_realizes(func.body):
        if not isinstance(realize, BlockRealize) or realize.block.name_hint == "root":
            continue
        tags = {str(s.thread_binding).split(".")[0] for s in path
                if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING}
        if tags != {"blockIdx", "threadIdx"}:
            bad.append(realize.block.name_hint)
    return bad


def _thread_loops(func) -> list[tuple[str, int]]:
    return [(str(s.thread_binding), int(s.extent.value)) for _, path in block_realizes(func.body) for s in path
            if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING]


# -- kernels, as Relax legalizes them (TE) --------------------------------------------------------

def _matmul_relu():
    # batched, B stored transposed (as a linear layer's weight), and two epilogues (bias, relu)
    a, b = te.placeholder((2, 32, 32), name="A"), te.placeholder((2, 64, 32), name="B")
    bias = te.placeholder((64,), name="c")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((2, 32, 64), lambda n, i, j: te.sum(a[n, i, k] * b[n, j, k], axis=k), name="C")
    d = te.compute((2, 32, 64), lambda n, i, j: c[n, i, j] + bias[j], name="D")
    e = te.compute((2, 32, 64), lambda n, i, j: te.max(d[n, i, j], 0.0), name="E")

    def ref(x, y, z):
        return np.maximum(x @ y.transpose(0, 2, 1) + z, 0)

    return te.create_prim_func([a, b, bias, e]), [(2, 32, 32), (2, 64, 32), (64,)], (2, 32, 64), ref


def _small_matmul():
    # extents the default tiles do not divide: fewer threads and smaller per-thread tiles
    a, b = te.placeholder((4, 64), name="A"), te.placeholder((64, 24), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((4, 24), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c]), [(4, 64), (64, 24)], (4, 24), lambda x, y: x @ y


def _decode_gemv():
    # one token's activations times a weight stored (out, in), as a linear layer at batch 1, plus a bias
    x, w, bias = te.placeholder((1, 96), name="x"), te.placeholder((64, 96), name="W"), te.placeholder((64,), name="b")
    k = te.reduce_axis((0, 96), name="k")
    y = te.compute((1, 64), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="y")
    z = te.compute((1, 64), lambda i, j: y[i, j] + bias[j], name="z")
    return te.create_prim_func([x, w, bias, z]), [(1, 96), (64, 96), (64,)], (1, 64), lambda x, w, b: x @ w.T + b


def _sum_of_squares():
    x = te.placeholder((8, 100), name="x")
    k = te.reduce_axis((0, 100), name="k")
    s = te.compute((8,), lambda i: te.sum(x[i, k] * x[i, k], axis=k), name="s")
    m = te.compute((8,), lambda i: s[i] / 100.0, name="mean")
    return te.create_prim_func([x, m]), [(8, 100)], (8,), lambda x: (x * x).mean(1)


def _softmax():
    x = te.placeholder((4, 100), name="x")

    def ref(a):
        e = np.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return te.create_prim_func([x, topi.nn.softmax(x)]), [(4, 100)], (4, 100), ref


def _rms_norm():
    # one reduction, then an epilogue that broadcasts it over the row
    x, w = te.placeholder((4, 64), name="x"), te.placeholder((64,), name="w")
    k = te.reduce_axis((0, 64), name="k")
    ssq = te.compute((4,), lambda i: te.sum(x[i, k] * x[i, k], axis=k), name="ssq")
    out = te.compute((4, 64), lambda i, j: x[i, j] * te.rsqrt(ssq[i] / 64.0 + 1e-5) * w[j], name="o")

    def ref(a, g):
        return a / np.sqrt((a * a).mean(1, keepdims=True) + 1e-5) * g

    return te.create_prim_func([x, w, out]), [(4, 64), (64,)], (4, 64), ref


def _layer_norm():
    # two reductions in a chain (the variance reads the mean), then the normalization
    x = te.placeholder((4, 48), name="x")
    k1, k2 = te.reduce_axis((0, 48), name="k1"), te.reduce_axis((0, 48), name="k2")
    mean = te.compute((4,), lambda i: te.sum(x[i, k1] / 48.0, axis=k1), name="mean")
    var = te.compute((4,), lambda i: te.sum((x[i, k2] - mean[i]) * (x[i, k2] - mean[i]) / 48.0, axis=k2), name="var")
    out = te.compute((4, 48), lambda i, j: (x[i, j] - mean[i]) * te.rsqrt(var[i] + 1e-5), name="o")

    def ref(a):
        return (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)

    return te.create_prim_func([x, out]), [(4, 48)], (4, 48), ref


@I.ir_module
class _GroupNorm:
    @R.function
    def main(x: R.Tensor((2, 8, 6), "float32"), gamma: R.Tensor((8,), "float32"), beta: R.Tensor((8,), "float32")):
        return R.nn.group_norm(x, gamma, beta, num_groups=2, channel_axis=1, axes=[2])


def _group_norm():
    # a tuple reduction (sum and sum of squares in one block) read through channel // 4: no rule
    # but Fallback takes it, and makes it one kernel (each thread computes its group's statistics)
    func = relax.transform.LegalizeOps()(_GroupNorm)["group_norm"]

    def ref(a, g, b):
        grouped = a.reshape(2, 2, 24)
        norm = (grouped - grouped.mean(2, keepdims=True)) / np.sqrt(grouped.var(2, keepdims=True) + 1e-5)
        return norm.reshape(2, 8, 6) * g[:, None] + b[:, None]

    return func, [(2, 8, 6), (8,), (8,)], (2, 8, 6), ref


def _elementwise():
    x = te.placeholder((8, 40), name="x")
    y = te.compute((8, 40), lambda i, j: te.exp(x[i, j]) * 2.0, name="y")
    return te.create_prim_func([x, y]), [(8, 40)], (8, 40), lambda a: np.exp(a) * 2


CASES = {  # kernel -> (its builder, the first rule of TVM's order that takes it)
    "matmul": (_matmul_relu, dl.gpu.Matmul),
    "small_matmul": (_small_matmul, dl.gpu.Matmul),
    "gemv": (_decode_gemv, dl.gpu.GEMV),
    "row_reduction": (_sum_of_squares, dl.gpu.Reduction),
    "softmax": (_softmax, dl.gpu.GeneralReduction),
    "rms_norm": (_rms_norm, dl.gpu.Reduction),
    "layer_norm": (_layer_norm, dl.gpu.GeneralReduction),
    "group_norm": (_group_norm, dl.gpu.Fallback),
    "elementwise": (_elementwise, dl.gpu.Fallback),
}


def _run_gpu(func, in_shapes, out_shape):
    lib = minitvm.build(func, target="cuda-emulated")
    dev = minitvm.cuda(0)
    inputs = [_rand(*s) for s in in_shapes]
    out = minitvm.nd.empty(out_shape, "float32", dev)
    lib["main"](*[minitvm.nd.array(a, dev) for a in inputs], out)
    return inputs, out.numpy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kernel_takes_its_rule_and_runs_on_the_emulated_gpu(case):
    build, expected_rule = CASES[case]
    func, in_shapes, out_shape, ref = build()
    taken = next(rule for rule in RULES if rule().apply(func, GPU, False) is not None)
    assert taken is expected_rule
    with GPU:
        mod = dl.ApplyDefaultSchedule(*(rule() for rule in RULES))(IRModule({"main": func}))
    scheduled = mod["main"]
    assert scheduled.attrs["tir.is_scheduled"] and _unbound_blocks(scheduled) == []
    inputs, got = _run_gpu(scheduled, in_shapes, out_shape)
    np.testing.assert_allclose(got, ref(*inputs), rtol=1e-4, atol=1e-5)


def test_matmul_tiles_over_blocks_and_threads_through_shared_memory():
    func = _matmul_relu()[0]
    sch = dl.gpu.Matmul().apply(func, GPU, False)
    loops = set(_thread_loops(sch.mod["main"]))
    # TVM's CUDA configuration: 8 x 16 threads with a 4 x 4 tile each, 32 x 64 outputs per block;
    # the batch goes with blockIdx.y, and both epilogues are applied as the tile is written back
    assert {("blockIdx.x", 1), ("blockIdx.y", 2), ("threadIdx.x", 8), ("threadIdx.y", 16)} <= loops
    scopes = {b.name: b.scope for b in _allocated(sch.mod["main"])}
    assert scopes == {"A_shared": "shared", "B_shared": "shared", "C_local": "local"}
    names = {r.block.name_hint for r, _ in block_realizes(sch.mod["main"].body)}
    assert not names & {"D", "E"}


def _allocated(func):
    return [b for realize, _ in block_realizes(func.body) for b in realize.block.alloc_buffers]


def test_reductions_keep_partials_in_shared_memory_and_combine_in_one_thread():
    func = _softmax()[0]
    sch = dl.gpu.GeneralReduction().apply(func, GPU, False)
    scopes = {b.name: b.scope for b in _allocated(sch.mod["main"])}
    assert scopes["T_softmax_maxelem_rf"] == "shared" and scopes["T_softmax_expsum_rf"] == "shared"
    # one thread block per row, 50 threads (a divisor of the row's 100 elements)
    assert set(_thread_loops(sch.mod["main"])) == {("blockIdx.x", 4), ("threadIdx.x", 50)}


@pytest.mark.parametrize("rule", RULES)
def test_gpu_rules_decline_a_cpu_target(rule):
    assert rule().apply(_softmax()[0], Target("llvm"), False) is None
    assert rule().apply(_matmul_relu()[0], Target("llvm"), False) is None


def test_rules_decline_what_is_not_their_kind():
    assert dl.gpu.Matmul().apply(_decode_gemv()[0], GPU, False) is None  # I has extent 1: a GEMV
    assert dl.gpu.GEMV().apply(_matmul_relu()[0], GPU, False) is None
    assert dl.gpu.Reduction().apply(_softmax()[0], GPU, False) is None  # two reductions
    assert dl.gpu.GeneralReduction().apply(_elementwise()[0], GPU, False) is None


@T.prim_func
def _transpose_reshape(A: T.Buffer((1, 32, 1, 128), "float32"), C: T.Buffer((1, 1, 4096), "float32")):
    B = T.alloc_buffer((1, 1, 32, 128), "float32")
    for i, j, k, m in T.grid(1, 1, 32, 128):
        with T.block("T_transpose"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, m])
            B[vi, vj, vk, vl] = A[vi, vk, vj, vl]
    for i, j, k in T.grid(1, 1, 4096):
        with T.block("T_reshape"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[0, 0, vk % 4096 // 128, vk % 128]


def test_fallback_as_tvm_and_a_function_target_wins_over_the_scope():
    # TVM's test_gpu_fallback_ignores_non_gpu_functions: the "target" attribute picks the target
    mod = IRModule({"gpu_func": _transpose_reshape, "cpu_func": _transpose_reshape.with_attr("target", "llvm")})
    with GPU:
        out = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    gpu = out["gpu_func"]
    assert gpu.attrs["tir.is_scheduled"]
    assert [r.block.name_hint for r, _ in block_realizes(gpu.body)][-1:] == ["T_reshape"]  # the transpose inlined
    assert set(_thread_loops(gpu)) == {("blockIdx.x", 4), ("threadIdx.x", 1024)}
    cpu = out["cpu_func"]  # TVM leaves it as it is; minitvm gives it the default CPU schedule (see the pass)
    assert cpu.attrs["tir.is_scheduled"] and not _thread_loops(cpu) and cpu.attrs["target"] == "llvm"
    a = _rand(1, 32, 1, 128)
    lib = minitvm.build(gpu, target="cuda-emulated")
    c = minitvm.nd.empty((1, 1, 4096), "float32", minitvm.cuda(0))
    lib["_transpose_reshape"](minitvm.nd.array(a, minitvm.cuda(0)), c)  # its global_symbol
    np.testing.assert_array_equal(c.numpy().reshape(-1), a.reshape(-1))


def test_first_rule_that_fits_wins_and_scheduled_functions_are_skipped():
    calls = []

    @dl.ScheduleRule.from_callable("Declines")
    def declines(func, target, tunable):
        calls.append("declines")
        return None

    @dl.ScheduleRule.from_callable("Splits")
    def splits(func, target, tunable):
        calls.append(("splits", str(target.kind), tunable))
        sch = tir.Schedule(func)
        sch.split(sch.get_loops("T_reshape")[-1], factors=[None, 64])
        return sch

    assert isinstance(splits, dl.ScheduleRule) and type(splits).__name__ == "Splits"
    mod = IRModule({"f": _transpose_reshape, "done": _transpose_reshape.with_attr("tir.is_scheduled", True)})
    with Target("llvm"):
        out = dl.ApplyDefaultSchedule(declines, splits, dl.gpu.Fallback())(mod)
    assert calls == ["declines", ("splits", "llvm", False)]  # once each: "done" is not offered
    assert out["done"] is mod["done"] and out["f"].attrs["tir.is_scheduled"]
    assert [int(s.extent.value) for s in _loops_of(out["f"], "T_reshape")][-2:] == [64, 64]


def _loops_of(func, name):
    return next([s for s in path if isinstance(s, For)] for r, path in block_realizes(func.body)
                if r.block.name_hint == name)


def test_apply_default_schedule_needs_a_target():
    with pytest.raises(ValueError, match="no target for PrimFunc 'f'.*with Target"):
        dl.ApplyDefaultSchedule(dl.gpu.Fallback())(IRModule({"f": _transpose_reshape}))
    with pytest.raises(TypeError, match="ScheduleRule"):
        dl.ApplyDefaultSchedule(dl.gpu.Fallback)


def test_the_older_name_is_the_same_module():
    import minitvm.dlight

    assert minitvm.dlight is dl and minitvm.dlight.gpu.GEMV is dl.gpu.GEMV


# -- a Relax model ----------------------------------------------------------------------------------

@I.ir_module
class _Model:
    @R.function
    def main(x: R.Tensor((4, 64), "float32"), gamma: R.Tensor((64,), "float32"), beta: R.Tensor((64,), "float32"),
             w1: R.Tensor((64, 32), "float32"), v: R.Tensor((1, 32), "float32"), w2: R.Tensor((16, 32), "float32")):
        with R.dataflow():
            n = R.nn.layer_norm(x, gamma, beta, axes=[-1])  # a tuple reduction (sum, sum of squares)
            h = R.nn.relu(R.matmul(n, w1))  # a prefill-like matmul with its epilogue
            s = R.nn.softmax(h, axis=-1)  # row reductions
            g = R.matmul(v, R.permute_dims(w2))  # a decode step's GEMV
            R.output(s, g)
        return (s, g)


def _model_inputs():
    return [_rand(4, 64), _rand(64), _rand(64), _rand(64, 32), _rand(1, 32), _rand(16, 32)]


def _check_model(out, x, gamma, beta, w1, v, w2):
    n = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * gamma + beta
    h = np.maximum(n @ w1, 0)
    e = np.exp(h - h.max(1, keepdims=True))
    np.testing.assert_allclose(out[0].numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), v @ w2.T, rtol=1e-5, atol=1e-5)


def _gpu_rules():
    return dl.ApplyDefaultSchedule(*(rule() for rule in RULES))


def test_a_relax_model_on_the_emulated_gpu():
    # the tutorial's shape: the zero pipeline then dlight, as compile's relax_pipeline (compile puts
    # its target in scope for the pipeline, so the rules see the GPU)
    pipeline = Sequential([relax.get_pipeline("zero"), _gpu_rules()])
    ex = minitvm.compile(_Model, target=GPU, relax_pipeline=pipeline)
    kernels = [f for _, f in ex.ir_module.functions_items() if isinstance(f, tir.PrimFunc)]
    assert kernels and all(f.attrs.get("tir.is_scheduled") and not _unbound_blocks(f) for f in kernels)
    dev = minitvm.cuda(0)
    inputs = _model_inputs()
    _check_model(relax.VirtualMachine(ex, dev)["main"](*[minitvm.nd.array(a, dev) for a in inputs]), *inputs)


def test_on_llvm_the_gpu_rules_leave_kernels_to_the_cpu_schedule():
    """Where TVM would leave a naive loop nest on a CPU target, minitvm's default CPU schedule takes
    every kernel the gpu rules decline: the tutorial's pipeline on llvm, as written, is fast."""
    with Target("llvm"):
        after = _gpu_rules()(relax.get_pipeline("zero")(_Model))
    kernels = [f for _, f in after.functions_items() if isinstance(f, tir.PrimFunc)]
    assert kernels and all(f.attrs.get("tir.is_scheduled") for f in kernels)
    assert not any(_thread_loops(f) for f in kernels)  # CPU schedules, no GPU threads
    assert any(f.attrs.get("tir.is_scheduled") and _cpu_parallel_or_vector(f) for f in kernels)
    pipeline = Sequential([relax.get_pipeline("zero"), _gpu_rules()])
    with Target("llvm"):  # as TVM's LLM tutorial compiles
        ex = minitvm.compile(_Model, target="llvm", relax_pipeline=pipeline)
    inputs = _model_inputs()
    _check_model(relax.VirtualMachine(ex, minitvm.cpu())["main"](*inputs), *inputs)


def _cpu_parallel_or_vector(func) -> bool:
    kinds = []
    tir.post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, tir.For) else None)
    return any(k in (tir.ForKind.PARALLEL, tir.ForKind.VECTORIZED) for k in kinds)


@I.ir_module
class _Rows:
    @R.function
    def main(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((8, 16), "float32")):
        with R.dataflow():
            y = R.nn.softmax(R.matmul(x, R.permute_dims(w)), axis=-1)
            R.output(y)
        return y


def test_tutorial_pipeline_with_dlight_on_llvm_and_symbolic_rows():
    # optimize_llm.py's phases 1-4 (relax.build does the VM lowering, its phase 5, after them)
    t = relax.transform
    pipeline = Sequential([t.FuseTransposeMatmul(), t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(),
                           t.FuseOps(), t.FuseTIR(), t.DeadCodeElimination(), _gpu_rules()])
    with Target("llvm"):
        ex = minitvm.compile(_Rows, "llvm", relax_pipeline=pipeline)
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    w = _rand(8, 16)
    for n in (3, 10):
        x = _rand(n, 16)
        y = x @ w.T
        e = np.exp(y - y.max(1, keepdims=True))
        np.testing.assert_allclose(vm["main"](x, w).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# -- cpu rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, rule", [("gemv", dl.cpu.GEMV), ("softmax", dl.cpu.Reduction)])
def test_cpu_rules_schedule_for_llvm_only(case, rule):
    func, in_shapes, out_shape, ref = CASES[case][0]()
    assert rule().apply(func, GPU, False) is None
    sch = rule().apply(func, Target("llvm"), False)
    assert sch is not None and not structural_equal_funcs(sch.mod["main"], func)
    inputs = [_rand(*s) for s in in_shapes]
    out = np.zeros(out_shape, "float32")
    minitvm.build(sch.mod, target="llvm")["main"](*inputs, out)
    np.testing.assert_allclose(out, ref(*inputs), rtol=1e-4, atol=1e-5)


def structural_equal_funcs(a, b):
    return minitvm.ir.structural_equal(a, b, map_free_vars=True)
