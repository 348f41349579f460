"""The MLC course's workflows, written with ``import minitvm as tvm`` the way the course
writes them for TVM (issue 13): one test per chapter's way of working, on our own small
programs, each checked against numpy on seeded random data.

- TensorIR case study: a TVMScript kernel, scheduled (split, reorder, reverse_compute_at,
  decompose_reduction), built with ``tvm.compile`` and timed with ``lib.mod.time_evaluator``.
- End-to-end: a Relax module calling TIR kernels (``R.call_tir``) and packed functions
  registered in Python (``R.call_dps_packed``), parameters bound with ``BindParams``.
- Integration: ``relax.BlockBuilder`` with ``emit_te`` and a torch model through ``from_fx``.
- Graph optimization: a ``PyExprMutator`` rewrite, then LegalizeOps / FuseOps / FuseTIR.
- Automatic program optimization: a stochastic schedule (``sample_perfect_tile``) whose
  trace replays the same program, and a small random search over it.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.ir.module import IRModule
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(13)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


@tvm.script.ir_module
class ScaledMatmulRelu:
    """C = relu(A @ B * 0.5), 32x32x32: the case study's shape of kernel (reduction + epilogue)."""

    @T.prim_func
    def scaled_mm_relu(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
                       C: T.Buffer((32, 32), "float32")):
        T.func_attr({"global_symbol": "scaled_mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((32, 32), "float32")
        for i, j, k in T.grid(32, 32, 32):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(32, 32):
            with T.block("C"):
                vi = T.axis.spatial(32, i)
                vj = T.axis.spatial(32, j)
                C[vi, vj] = T.max(Y[vi, vj] * T.float32(0.5), T.float32(0))


def _expected_scaled_mm_relu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a @ b * 0.5, 0)


def test_tensorir_case_study_schedule_build_and_time():
    sch = tvm.tir.Schedule(ScaledMatmulRelu)
    block_y = sch.get_block("Y", func_name="scaled_mm_relu")
    i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_block("C", "scaled_mm_relu"), j0)
    sch.decompose_reduction(block_y, k)
    text = sch.mod.script()
    assert "Y_init" in text and "T.max" in text

    a, b = _rand(32, 32), _rand(32, 32)
    c = tvm.runtime.tensor(np.zeros((32, 32), "float32"))
    lib = tvm.compile(sch.mod, target="llvm")
    lib["scaled_mm_relu"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), _expected_scaled_mm_relu(a, b), rtol=1e-5, atol=1e-5)

    timer = lib.mod.time_evaluator("scaled_mm_relu", tvm.cpu(), number=3)
    assert timer(tvm.runtime.tensor(a), tvm.runtime.tensor(b), c).mean > 0


def test_tensorir_from_te_matches_the_script_kernel():
    A = te.placeholder((32, 32), name="A")
    B = te.placeholder((32, 32), name="B")
    k = te.reduce_axis((0, 32), name="k")
    Y = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((32, 32), lambda i, j: te.max(Y[i, j] * 0.5, 0.0), name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "scaled_mm_relu")
    lib = tvm.compile(IRModule({"scaled_mm_relu": func}), target="llvm")
    a, b = _rand(32, 32), _rand(32, 32)
    c = tvm.runtime.tensor(np.zeros((32, 32), "float32"))
    lib["scaled_mm_relu"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), _expected_scaled_mm_relu(a, b), rtol=1e-5, atol=1e-5)


@tvm.script.ir_module
class TwoLayerMixture:
    """x -> linear (a TIR kernel) -> a packed function in Python -> linear (packed)."""

    @T.prim_func
    def dense(X: T.handle, W: T.handle, Bias: T.handle, Z: T.handle):
        n = T.int64()
        x = T.match_buffer(X, (n, T.int64(6)), "float32")
        w = T.match_buffer(W, (T.int64(5), T.int64(6)), "float32")
        bias = T.match_buffer(Bias, (T.int64(5),), "float32")
        z = T.match_buffer(Z, (n, T.int64(5)), "float32")
        acc = T.alloc_buffer((n, T.int64(5)), "float32")
        for i, j, k in T.grid(n, T.int64(5), T.int64(6)):
            with T.block("acc"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    acc[vi, vj] = T.float32(0)
                acc[vi, vj] = acc[vi, vj] + x[vi, vk] * w[vj, vk]
        for i, j in T.grid(n, T.int64(5)):
            with T.block("z"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = acc[vi, vj] + bias[vj]

    @R.function
    def main(x: R.Tensor(("n", 6), "float32"), w0: R.Tensor((5, 6), "float32"), b0: R.Tensor((5,), "float32"),
             w1: R.Tensor((3, 5), "float32"), b1: R.Tensor((3,), "float32")):
        n = T.int64()
        cls = TwoLayerMixture
        with R.dataflow():
            lv0 = R.call_tir(cls.dense, (x, w0, b0), out_sinfo=R.Tensor((n, 5), "float32"))
            lv1 = R.call_dps_packed("course.tanh", (lv0,), out_sinfo=R.Tensor((n, 5), "float32"))
            out = R.call_dps_packed("course.linear", (lv1, w1, b1), out_sinfo=R.Tensor((n, 3), "float32"))
            R.output(out)
        return out


@pytest.fixture
def course_packed_functions():
    """The chapter's Python kernels: they write their DPS output through DLPack views."""
    @tvm.register_global_func("course.linear", override=True)
    def linear(x, w, b, out):
        np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=np.from_dlpack(out))
        np.add(np.from_dlpack(out), np.from_dlpack(b), out=np.from_dlpack(out))

    @tvm.register_global_func("course.tanh", override=True)
    def tanh(x, out):
        np.tanh(np.from_dlpack(x), out=np.from_dlpack(out))


def _mixture_reference(x, w0, b0, w1, b1):
    return np.tanh(x @ w0.T + b0) @ w1.T + b1


def test_end_to_end_call_tir_and_packed_functions(course_packed_functions):
    params = [_rand(5, 6), _rand(5), _rand(3, 5), _rand(3)]
    x = _rand(4, 6)
    vm = relax.VirtualMachine(tvm.compile(TwoLayerMixture, target="llvm"), tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(x), *map(tvm.runtime.tensor, params))
    np.testing.assert_allclose(out.numpy(), _mixture_reference(x, *params), rtol=1e-5, atol=1e-5)


def test_end_to_end_bound_parameters(course_packed_functions):
    params = [_rand(5, 6), _rand(5), _rand(3, 5), _rand(3)]
    bound = relax.transform.BindParams("main", dict(zip(["w0", "b0", "w1", "b1"], params)))(TwoLayerMixture)
    assert [p.name_hint for p in bound["main"].params] == ["x"]
    vm = relax.VirtualMachine(tvm.compile(bound, target="llvm"), tvm.cpu())
    x = _rand(7, 6)  # a batch size the module never saw: n is symbolic
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(),
                               _mixture_reference(x, *params), rtol=1e-5, atol=1e-5)


def test_integration_block_builder_with_emit_te():
    w, b = _rand(8, 4), _rand(8)
    x = relax.Var("x", relax.TensorStructInfo((2, 4), "float32"))
    bb = relax.BlockBuilder()

    def te_dense(data, weight, bias):
        k = te.reduce_axis((0, 4), name="k")  # a reduction is a compute of its own, as in TVM
        acc = te.compute((2, 8), lambda i, j: te.sum(data[i, k] * weight[j, k], axis=k), name="acc")
        return te.compute((2, 8), lambda i, j: acc[i, j] + bias[j], name="dense")

    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit_te(te_dense, x, relax.const(w, "float32"), relax.const(b, "float32"))
            gv = bb.emit_output(relax.op.nn.relu(lv))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert any(name.startswith("te_dense") for name in mod.keys())
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    data = _rand(2, 4)
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(data)).numpy(),
                               np.maximum(data @ w.T + b, 0), rtol=1e-5, atol=1e-5)


def test_integration_torch_model_through_from_fx():
    torch = pytest.importorskip("torch")  # a project dependency; the guard only names it
    from torch import fx

    from minitvm.relax.frontend.torch import from_fx

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(6, 4)

        def forward(self, x):
            return torch.relu(self.lin(x)) * 2.0

    torch.manual_seed(13)
    net = Net().eval()
    mod = from_fx(fx.symbolic_trace(net), [((3, 6), "float32")], keep_params_as_input=False)
    mod = relax.get_pipeline("zero")(mod)
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    data = torch.randn(3, 6)
    with torch.no_grad():
        expected = net(data).numpy()
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(data.numpy())).numpy(), expected,
                               rtol=1e-5, atol=1e-5)


@relax.expr_functor.mutator
class MultiplyAddToFMA(relax.PyExprMutator):
    """``add(multiply(a, b), c)`` becomes ``ewise_fma(a, b, c)``: the chapter's first rewrite."""

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if call.op != tvm.ir.Op.get("relax.add"):
            return call
        producer = self.lookup_binding(call.args[0])
        if not isinstance(producer, relax.Call) or producer.op != tvm.ir.Op.get("relax.multiply"):
            return call
        return relax.Call(tvm.ir.Op.get("relax.ewise_fma"), [producer.args[0], producer.args[1], call.args[1]])


@tvm.script.ir_module
class MultiplyAdd:
    @R.function
    def main(x: R.Tensor((3, 5), "float32"), y: R.Tensor((3, 5), "float32")):
        with R.dataflow():
            prod = R.multiply(x, y)
            out = R.add(prod, y)
            R.output(out)
        return out


def test_graph_optimization_rewrite_then_fuse():
    rewritten = relax.analysis.remove_all_unused(MultiplyAddToFMA().visit_expr(MultiplyAdd["main"]))
    ops = [b.value.op.name for b in rewritten.body.blocks[0].bindings]
    assert ops == ["relax.ewise_fma"]

    mod = IRModule({"main": rewritten})
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod = relax.transform.FuseOps()(mod)
    mod = relax.transform.FuseTIR()(mod)
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    x, y = _rand(3, 5), _rand(3, 5)
    out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(y))
    np.testing.assert_allclose(out.numpy(), x * y + y, rtol=1e-6)


@tvm.script.ir_module
class PlainMatmul:
    @T.prim_func
    def main(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def stochastic_schedule(mod: IRModule, seed: int) -> tvm.tir.Schedule:
    sch = tvm.tir.Schedule(mod, seed=seed)
    block = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(loop=j, n=2))
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)
    return sch


def test_auto_program_optimization_trace_replays_and_search_keeps_numbers():
    a, b = _rand(64, 64), _rand(64, 64)
    best = None
    for seed in range(3):  # a random search in miniature: every candidate must compute the same
        sch = stochastic_schedule(PlainMatmul, seed)
        (decision,) = sch.trace.decisions.values()  # the trace keeps what was sampled
        assert np.prod([f.value for f in decision]) == 64

        replay = tvm.tir.Schedule(PlainMatmul)
        sch.trace.apply_to_schedule(replay, remove_postproc=False)
        tvm.ir.assert_structural_equal(replay.mod, sch.mod)

        lib = tvm.compile(sch.mod, target="llvm")
        c = tvm.runtime.tensor(np.zeros((64, 64), "float32"))
        lib["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
        cost = lib.mod.time_evaluator("main", tvm.cpu(), number=2)(
            tvm.runtime.tensor(a), tvm.runtime.tensor(b), c).mean
        if best is None or cost < best[0]:
            best = (cost, sch)
    assert best is not None and "sample_perfect_tile" in str(best[1].trace)
