"""Argument arrays are never written unless they are outputs: compiled kernels and a compiled
Relax model leave their inputs bit-identical (copied before, compared after)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
import minitvm.testing.programs as programs
from minitvm import relax
from minitvm.tir import PrimFunc
from minitvm.transform import PassContext

RNG = np.random.default_rng(2)

#: what each test program writes (its outputs); every other argument must come back unchanged
OUTPUTS = {"mm_relu": {"C"}, "broadcast_add": {"C"}, "conv2d_int64": {"Y"}, "batch_matmul_relu": {"D"},
           "softmax": {"B"}, "split_with_where": {"B"}, "loop_kinds": {"B"}, "branches": {"B"},
           "select_and_cast": {"B"}, "scalar_param": {"A"}, "int64_shapes": {"B"},
           "explicit_regions": {"B"}, "lowered": {"B"}}


def _random(dtype: str, shape: tuple) -> np.ndarray:
    if dtype.startswith("float"):
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-50, 50, shape).astype(dtype)


def _arguments(sig) -> list:
    """Random arrays (and scalars) for every parameter of a compiled function."""
    args = []
    for p in sig.params:
        if p.is_buffer:
            args.append(_random(p.dtype, p.static_shape))
        elif p.dtype.startswith("float"):
            args.append(float(RNG.uniform(0.5, 2)))
        else:
            args.append(int(RNG.integers(1, 20)))
    return args


def test_every_program_is_covered():
    names = {n for n in dir(programs) if isinstance(getattr(programs, n), PrimFunc)}
    assert names == set(OUTPUTS)


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "bounds-checked"])
@pytest.mark.parametrize("target", ["llvm", "python"])
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_kernels_leave_their_inputs_bit_identical(name, target, checked):
    with PassContext(config={"tir.bounds_check": checked}):
        lib = minitvm.build(getattr(programs, name), target=target)
    (fname,) = lib.function_names()
    fn = lib[fname]
    sig = fn._fn.signature
    assert {p.name for p in sig.params if p.written} == OUTPUTS[name]
    args = _arguments(sig)
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    fn(*args)
    changed = set()
    for p, a, b in zip(sig.params, args, before):
        if p.is_buffer and a.tobytes() != b.tobytes():
            changed.add(p.name)
    inputs = [p.name for p in sig.params if p.is_buffer and p.name not in OUTPUTS[name]]
    assert changed & set(inputs) == set(), f"{name} wrote its inputs {sorted(changed & set(inputs))}"
    assert changed, f"{name} wrote nothing: the test would not see a write"


def _mlp_module():
    """relu(x @ w1 + b1) @ w2 with every weight an argument."""
    x = relax.Var("x", relax.TensorStructInfo((5, 32), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((32, 16), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((16,), "float32"))
    w2 = relax.Var("w2", relax.TensorStructInfo((16, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w1, b1, w2]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(x, w1), b1)))
            out = bb.emit_output(relax.op.matmul(h, w2))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "bounds-checked"])
def test_a_compiled_relax_model_leaves_its_inputs_bit_identical(checked):
    with PassContext(config={"tir.bounds_check": checked}):
        exe = minitvm.compile(_mlp_module(), target="llvm")
    vm = relax.VirtualMachine(exe, minitvm.cpu())
    arrays = [_random("float32", s) for s in ((5, 32), (32, 16), (16,), (16, 4))]
    before = [a.copy() for a in arrays]
    nd_args = [minitvm.nd.array(a) for a in arrays]
    out = vm["main"](*nd_args).numpy()
    x, w1, b1, w2 = before
    np.testing.assert_allclose(out, np.maximum(x @ w1 + b1, 0) @ w2, rtol=1e-4, atol=1e-4)
    for name, nd, a, b in zip(("x", "w1", "b1", "w2"), nd_args, arrays, before):
        assert nd.numpy().tobytes() == b.tobytes(), f"the VM wrote its argument {name}"
        assert a.tobytes() == b.tobytes()
    again = vm["main"](*nd_args).numpy()
    np.testing.assert_array_equal(again, out)  # nothing the first run touched changed the second
