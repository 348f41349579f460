"""Relax ops added for the torch frontend: bitwise and shift ops, mod / floor_mod,
bitwise_not, gather_elements, scatter_elements and conv3d: struct info, the TVMScript round
trip, and compiled results against numpy on seeded random data."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source

RNG = np.random.default_rng(18)


def run(build, *arrays):
    """``build(*vars)`` as the body of ``main``, printed, parsed back, compiled and run."""
    params = [relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, str(a.dtype))) for k, a in enumerate(arrays)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    assert_structural_equal(from_source(mod.script()), mod)
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in arrays)).numpy()


@pytest.mark.parametrize("name, ref", [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                                       ("bitwise_xor", np.bitwise_xor), ("left_shift", np.left_shift),
                                       ("right_shift", np.right_shift)])
def test_bitwise_and_shift_ops_broadcast_like_numpy(name, ref):
    a = RNG.integers(-100, 100, (3, 4)).astype("int32")
    b = RNG.integers(0, 5, (4,)).astype("int32")
    np.testing.assert_array_equal(run(getattr(relax.op, name), a, b), ref(a, b))


def test_bitwise_ops_of_bools_and_bitwise_not():
    p, q = RNG.random((5,)) > 0.5, RNG.random((5,)) > 0.5
    np.testing.assert_array_equal(run(relax.op.bitwise_xor, p, q), p ^ q)
    k = RNG.integers(-50, 50, (6,)).astype("int64")
    np.testing.assert_array_equal(run(relax.op.bitwise_not, k), ~k)
    np.testing.assert_array_equal(run(relax.op.bitwise_not, p), ~p)


def test_bitwise_ops_of_floats_are_typed_but_not_lowered():
    # as TVM: struct info takes float operands (the result is float32), LegalizeOps refuses them
    x = relax.Var("x", relax.TensorStructInfo((3,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(relax.op.bitwise_and(x, x))
        inv = bb.emit(relax.op.bitwise_not(out))
        bb.emit_func_output(inv)
    mod = bb.get()
    assert mod["main"].ret_struct_info.dtype == "float32"
    with pytest.raises(TypeError, match="relax.bitwise_and needs integer or bool tensors, got dtype float32"):
        relax.transform.LegalizeOps()(mod)


def test_mod_keeps_the_dividends_sign_and_floor_mod_the_divisors():
    a = RNG.uniform(-10, 10, (4, 5)).astype("float32")
    b = RNG.uniform(0.5, 3, (5,)).astype("float32") * np.array([1, -1, 1, -1, 1], "float32")
    np.testing.assert_allclose(run(relax.op.mod, a, b), np.fmod(a, b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run(relax.op.floor_mod, a, b), np.mod(a, b), rtol=1e-5, atol=1e-5)
    i, j = RNG.integers(-20, 20, (7,)).astype("int64"), RNG.integers(1, 6, (7,)).astype("int64") * -1
    np.testing.assert_array_equal(run(relax.op.mod, i, j), np.fmod(i, j))
    np.testing.assert_array_equal(run(relax.op.floor_mod, i, j), np.mod(i, j))


def test_gather_elements_reads_along_an_axis():
    x = RNG.standard_normal((3, 5)).astype("float32")
    idx = RNG.integers(0, 5, (3, 4)).astype("int64")
    np.testing.assert_array_equal(run(lambda a, i: relax.op.gather_elements(a, i, axis=1), x, idx),
                                  np.take_along_axis(x, idx, axis=1))


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "max", "min"])
def test_scatter_elements_writes_or_combines_at_the_indices(reduction):
    data = RNG.standard_normal((4, 6)).astype("float32")
    upd = RNG.standard_normal((4, 3)).astype("float32")
    # distinct indices per row for "update" (a collision's winner is unspecified), repeats otherwise
    idx = np.stack([RNG.permutation(6)[:3] if reduction == "update" else RNG.integers(0, 6, 3)
                    for _ in range(4)]).astype("int64")
    want = data.copy()
    for r in range(4):
        for c in range(3):
            t = idx[r, c]
            want[r, t] = {"update": lambda old, u: u, "add": np.add, "mul": np.multiply,
                          "max": np.maximum, "min": np.minimum}[reduction](want[r, t], upd[r, c])
    got = run(lambda d, i, u: relax.op.scatter_elements(d, i, u, axis=1, reduction=reduction), data, idx, upd)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_conv3d_matches_a_direct_sum():
    x = RNG.standard_normal((1, 2, 4, 5, 5)).astype("float32")
    w = RNG.standard_normal((4, 1, 2, 3, 3)).astype("float32")  # grouped: 2 groups
    got = run(lambda a, b: relax.op.nn.conv3d(a, b, strides=(1, 2, 1), padding=1, groups=2), x, w)
    import torch

    want = torch.nn.functional.conv3d(torch.from_numpy(x), torch.from_numpy(w), stride=(1, 2, 1), padding=1,
                                      groups=2).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
