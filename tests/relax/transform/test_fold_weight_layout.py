"""FoldWeightLayout: a scheduled kernel's copy of a constant weight into panels is done once, at
compile time; weights that are parameters keep the copy."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax, tir
from minitvm.relax.pipeline import default_kernel_passes, default_schedule_rules
from minitvm.tir.transform import DefaultCPUSchedule

RNG = np.random.default_rng(38)
M, K, N = 64, 128, 768  # enough multiply-adds and rows for the matmul rule to pack W into panels


def _dense(weights: list[np.ndarray | None]) -> tuple[minitvm.IRModule, list[relax.Var]]:
    """(x @ W_i + 1 for each weight), None standing for a function parameter: one kernel for all."""
    x = relax.Var("x", relax.TensorStructInfo((M, K), "float32"))
    params = [relax.Var(f"w{i}", relax.TensorStructInfo((K, N), "float32")) for i, w in enumerate(weights) if w is None]
    free = iter(params)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *params]):
        with bb.dataflow():
            outs = [bb.emit(relax.op.add(relax.op.matmul(x, relax.const(w) if w is not None else next(free)),
                                         relax.const(np.float32(1))))
                    for w in weights]
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    return bb.get(), params


def _scheduled(mod: minitvm.IRModule) -> minitvm.IRModule:
    for p in default_kernel_passes():
        mod = p(mod)
    return DefaultCPUSchedule(rules=default_schedule_rules())(mod)


def _copy_blocks(mod: minitvm.IRModule) -> list[str]:
    """Names of the blocks that copy a weight into panels (``W_global[j // 32, k, j % 32] = W[k, j]``)."""
    names = []
    for f in mod.functions.values():
        if isinstance(f, tir.PrimFunc):
            tir.stmt_functor.post_order_visit(f.body, lambda n: isinstance(n, tir.Block) and n.name_hint.endswith(
                "_global") and names.append(n.name_hint))
    return names


def _run(mod: minitvm.IRModule, *args: np.ndarray) -> list[np.ndarray]:
    ex = minitvm.compile(mod, "llvm", relax_pipeline=None)
    return [y.numpy() for y in relax.VirtualMachine(ex, minitvm.cpu())["main"](*args)]


def _kernels(mod: minitvm.IRModule) -> list[str]:
    return [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tir.PrimFunc)]


def test_a_constant_weight_is_packed_at_compile_time():
    w = RNG.standard_normal((K, N)).astype("float32")
    scheduled = _scheduled(_dense([w])[0])
    assert _copy_blocks(scheduled), "the matmul rule no longer packs W: this test tests nothing"
    folded = relax.transform.FoldWeightLayout()(scheduled)
    assert not _copy_blocks(folded)
    call = folded["main"].body.blocks[0].bindings[0].value
    packed = call.args[1].fields[1].data.numpy()
    width = packed.shape[-1]  # a panel: two vector registers of columns (32 with AVX-512, 16 with AVX2)
    assert packed.shape == (N // width, K, width) and width in (16, 32)
    np.testing.assert_array_equal(packed, w.reshape(K, N // width, width).transpose(1, 0, 2))
    x = RNG.standard_normal((M, K)).astype("float32")
    (got,) = _run(folded, x)
    np.testing.assert_allclose(got, x @ w + 1, rtol=1e-4, atol=1e-4)


def test_weights_that_are_parameters_keep_the_copy():
    w = RNG.standard_normal((K, N)).astype("float32")
    x = RNG.standard_normal((M, K)).astype("float32")
    # the same kernel called with a constant and with a parameter: its signature must stay
    scheduled = _scheduled(_dense([w, None])[0])
    assert len(_kernels(scheduled)) == 1 and _copy_blocks(scheduled)
    folded = relax.transform.FoldWeightLayout()(scheduled)
    assert folded is scheduled
    w1 = RNG.standard_normal((K, N)).astype("float32")
    got = _run(folded, x, w1)
    for y, want in zip(got, (x @ w + 1, x @ w1 + 1)):
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_every_call_of_a_shared_kernel_gets_its_own_packed_weight():
    ws = [RNG.standard_normal((K, N)).astype("float32") for _ in range(2)]
    mod = relax.transform.FoldWeightLayout()(_scheduled(_dense(ws)[0]))
    assert len(_kernels(mod)) == 1 and not _copy_blocks(mod)
    x = RNG.standard_normal((M, K)).astype("float32")
    for y, w in zip(_run(mod, x), ws):
        np.testing.assert_allclose(y, x @ w + 1, rtol=1e-4, atol=1e-4)
