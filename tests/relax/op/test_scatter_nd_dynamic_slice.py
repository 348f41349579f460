"""relax.op.scatter_nd and relax.op.dynamic_strided_slice: struct info and its errors, the
TVMScript round trip, and compiled results against numpy on seeded random data."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax.ir.instrument import WellFormedInstrument
from minitvm.relax.struct_info import StructInfoError
from minitvm.script import from_source

RNG = np.random.default_rng(34)
TS = relax.TensorStructInfo


def run(build, *arrays):
    """``build(*vars)`` as the body of ``main``, printed, parsed back, compiled and run."""
    params = [relax.Var(f"x{k}", TS(a.shape, str(a.dtype))) for k, a in enumerate(arrays)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        out = bb.emit(build(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    assert_structural_equal(from_source(mod.script()), mod)
    # every pass must leave the module well formed (a match_cast naming the run-time extents
    # of dynamic_strided_slice must survive VMShapeLower), as TVM's test conftest checks
    with minitvm.transform.PassContext(instruments=[WellFormedInstrument()]):
        exe = minitvm.compile(mod, "llvm")
    vm = relax.VirtualMachine(exe, minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in arrays)).numpy()


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "max", "min"])
def test_scatter_nd_writes_or_combines_at_the_coordinates(reduction):
    data = RNG.standard_normal((4, 5, 3)).astype("float32")
    # K = 2 leading coordinates, a (2, 3) grid of positions, so updates are (2, 3, 3)
    flat = RNG.permutation(20)[:6] if reduction == "update" else RNG.integers(0, 20, 6)
    idx = np.stack(np.unravel_index(flat, (4, 5)), axis=-1).reshape(2, 3, 2).astype("int64")
    upd = RNG.standard_normal((2, 3, 3)).astype("float32")
    want = data.copy()
    combine = {"update": lambda old, u: u, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    for a in range(2):
        for b in range(3):
            t = tuple(idx[a, b])
            want[t] = combine[reduction](want[t], upd[a, b])
    got = run(lambda d, i, u: relax.op.scatter_nd(d, i, u, reduction), data, idx, upd)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_nd_struct_info_and_errors():
    bb = relax.BlockBuilder()
    d = relax.Var("d", TS((4, 4, 4), "float32"))
    i = relax.Var("i", TS((2, 1), "int64"))
    u = relax.Var("u", TS((2, 4, 4), "float32"))
    assert_structural_equal(bb.normalize(relax.op.scatter_nd(d, i, u)).struct_info, TS((4, 4, 4), "float32"))
    bad = {"updates.shape": (i, relax.Var("u", TS((2, 4, 3), "float32"))),
           "rank": (i, relax.Var("u", TS((2, 4), "float32"))),
           "updates are float16": (i, relax.Var("u", TS((2, 4, 4), "float16"))),
           "integer": (relax.Var("i", TS((2, 1), "float32")), u)}
    for message, (idx, upd) in bad.items():
        with pytest.raises(StructInfoError, match=message):
            bb.normalize(relax.op.scatter_nd(d, idx, upd))
    with pytest.raises(StructInfoError, match="reduction"):
        bb.normalize(relax.op.scatter_nd(d, i, u, "mean"))


@pytest.mark.parametrize("begin, end, strides", [([1, -7, 0], [4, 5, 9], [2, 1, 3]),
                                                 ([3, 0, -1], [-9, 6, -12], [-1, 2, -2])])
def test_dynamic_strided_slice_reads_its_bounds_at_run_time(begin, end, strides):
    x = RNG.standard_normal((5, 6, 7)).astype("float32")
    bounds = [np.array(v, "int64") for v in (begin, end, strides)]
    got = run(relax.op.dynamic_strided_slice, x, *bounds)
    want = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_dynamic_strided_slice_struct_info_and_errors():
    bb = relax.BlockBuilder()
    x = relax.Var("x", TS((8, 9), "float32"))
    b, e, s = (relax.Var(n, TS((2,), "int64")) for n in "bes")
    out = bb.normalize(relax.op.dynamic_strided_slice(x, b, e, s)).struct_info
    assert_structural_equal(out, TS(None, "float32", None, 2))
    assert minitvm.ir.Op.get("relax.dynamic_strided_slice").get_attr("FDataDependent")
    bad = {"begin has 3 values": relax.Var("b", TS((3,), "int64")),
           "must be int64": relax.Var("b", TS((2,), "float32")),
           "1-d tensor of constant length": relax.Var("b", TS((2, 2), "int64"))}
    for message, begin in bad.items():
        with pytest.raises(StructInfoError, match=message):
            bb.normalize(relax.op.dynamic_strided_slice(x, begin, e, s))


def test_strided_slice_refuses_bounds_in_tensors():
    x = relax.Var("x", TS((8, 9), "float32"))
    b = relax.Var("b", TS((2,), "int64"))
    with pytest.raises(StructInfoError, match="dynamic_strided_slice"):
        relax.op.strided_slice(x, b, b, b, b)
