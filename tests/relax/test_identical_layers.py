"""Identical layers cost one kernel: LegalizeOps legalizes a repeated call once (the same
PrimFunc, the same kernel call on the new layer's values), DefaultCPUSchedule schedules a
kernel structurally equal to one it scheduled before once per process, and the model still
computes what numpy computes."""

from __future__ import annotations

import numpy as np

import minitvm
import minitvm.driver
from minitvm import relax
from minitvm.relax.expr import Call
from minitvm.relax.expr_functor import ExprVisitor
from minitvm.script import relax as R
from minitvm.tir.function import PrimFunc
from minitvm.tir.transform.default_schedule import SCHEDULE_CACHE


def _layers(n: int, width: int = 32, dtype: str = "float32") -> minitvm.IRModule:
    """``n`` identical layers relu(x @ w_i + b_i), each with its own weights."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((4, width), dtype))
    params = [x]
    with bb.function("main"):
        with bb.dataflow():
            h = x
            for i in range(n):
                w = relax.Var(f"w{i}", R.Tensor((width, width), dtype))
                b = relax.Var(f"b{i}", R.Tensor((width,), dtype))
                params += [w, b]
                h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(h, w), b)))
            out = bb.emit_output(h)
        bb.emit_func_output(out, params=params)
    return bb.get()


class _Kernels(ExprVisitor):
    def __init__(self) -> None:
        self.called: list[str] = []

    def visit_call_(self, op: Call) -> None:
        if getattr(op.op, "name", "") == "relax.call_tir":
            self.called.append(op.args[0].name_hint)
        super().visit_call_(op)


def _called(mod: minitvm.IRModule) -> list[str]:
    seen = _Kernels()
    seen.visit_expr(mod["main"])
    return seen.called


def test_identical_layers_are_legalized_to_one_kernel_each_op():
    legal = relax.transform.LegalizeOps()(_layers(3))
    called = _called(legal)
    assert len(called) == 9  # three ops a layer
    assert called[:3] == called[3:6] == called[6:]  # every layer calls the first layer's kernels
    assert len([f for _, f in legal.items() if isinstance(f, PrimFunc)]) == 3


def test_two_identical_layers_are_scheduled_once_and_match_numpy():
    minitvm.driver.clear_kernel_cache()
    ex = minitvm.compile(_layers(2))
    kernels = [f for _, f in ex.ir_module.items() if isinstance(f, PrimFunc)]
    assert len(kernels) == 1  # matmul + add + relu fused, shared by both layers
    assert SCHEDULE_CACHE.info()["misses"] == 1
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((4, 32)).astype("float32")]
    for _ in range(2):
        args += [rng.standard_normal((32, 32)).astype("float32"), rng.standard_normal(32).astype("float32")]
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](*[minitvm.nd.array(a) for a in args]).numpy()
    h = args[0]
    for w, b in zip(args[1::2], args[2::2]):
        h = np.maximum(h @ w + b, 0)
    np.testing.assert_allclose(got, h, rtol=1e-4, atol=1e-4)


def test_a_kernel_seen_before_reuses_its_schedule():
    minitvm.driver.clear_kernel_cache()
    minitvm.compile(_layers(1))
    assert SCHEDULE_CACHE.info() | {"max_size": 0} == {"hits": 0, "misses": 1, "size": 1, "max_size": 0}
    # another model with the same layer: its kernel is scheduled from the cache
    minitvm.compile(_layers(3))
    assert SCHEDULE_CACHE.info()["hits"] == 1 and SCHEDULE_CACHE.info()["misses"] == 1


def test_a_layer_of_another_shape_or_dtype_is_scheduled_anew_and_matches_numpy():
    """The schedule cache's key tells the same layer at another width or dtype apart: each is
    scheduled (a miss), none takes another's kernel, and each computes what numpy does."""
    minitvm.driver.clear_kernel_cache()
    rng = np.random.default_rng(2)
    for k, (width, dtype) in enumerate([(32, "float32"), (48, "float32"), (32, "float64")], start=1):
        ex = minitvm.compile(_layers(1, width, dtype))
        assert SCHEDULE_CACHE.info()["misses"] == k and SCHEDULE_CACHE.info()["hits"] == 0
        x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((4, width), (width, width), (width,)))
        got = relax.VirtualMachine(ex, minitvm.cpu())["main"](*map(minitvm.nd.array, (x, w, b))).numpy()
        assert got.dtype == dtype and got.shape == (4, width)
        np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)


def test_a_repeated_argument_is_not_mistaken_for_two():
    """add(x, x) and add(y, z) have the same shapes but not the same arguments: each call keeps
    its own, and the module computes 2x + (y + z) as numpy does."""
    bb = relax.BlockBuilder()
    x, y, z = (relax.Var(n, R.Tensor((16,), "float32")) for n in "xyz")
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.add(x, x))
            b = bb.emit(relax.op.add(y, z))
            c = bb.emit(relax.op.add(a, b))
            out = bb.emit_output(relax.op.add(c, x))
        bb.emit_func_output(out)
    ex = minitvm.compile(bb.get())
    rng = np.random.default_rng(1)
    xs, ys, zs = (rng.standard_normal(16).astype("float32") for _ in range(3))
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](*map(minitvm.nd.array, (xs, ys, zs))).numpy()
    np.testing.assert_allclose(got, 2 * xs + (ys + zs) + xs, rtol=1e-6)


def test_layers_with_constant_weights_share_kernels_and_a_scalar_constant_keeps_its_value():
    """A model's weights are constants: add(h, bias_i) of each layer reuses the first layer's
    kernel on its own bias.  A 0-d constant is folded into the kernel by value, so multiply(h, 2)
    and multiply(h, 3) are kernels of their own; the module computes what numpy does."""
    rng = np.random.default_rng(3)
    biases = [rng.standard_normal(8).astype("float32") for _ in range(3)]
    scales = [2.0, 3.0, 2.0, 0.5]
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((4, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for b in biases:
                h = bb.emit(relax.op.add(h, relax.const(b)))
            for s in scales:
                h = bb.emit(relax.op.add(relax.op.multiply(h, relax.const(np.float32(s))), x))
            out = bb.emit_output(relax.op.divide(relax.const(np.float32(1.0)), h))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    called = _called(legal)
    assert called[0] == called[1] == called[2]  # one bias kernel, three biases
    multiplies = called[3:11:2]
    assert multiplies[0] == multiplies[2] and len(set(multiplies)) == 3  # by 2, 3 and 0.5
    xs = rng.standard_normal((4, 8)).astype("float32")
    want = xs + sum(biases)
    for s in scales:
        want = want * np.float32(s) + xs
    got = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())["main"](minitvm.nd.array(xs)).numpy()
    np.testing.assert_allclose(got, 1 / want, rtol=1e-5)
