"""relax.unique / relax.nonzero: struct info as TVM infers it, and the values the VM computes
(through the ops' packed functions) against numpy on seeded random data."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import relax as R


def _sinfo(call):
    return relax.BlockBuilder().normalize(call).struct_info


def test_unique_struct_info():
    x = relax.Var("x", R.Tensor((2, 3, 4), "float32"))
    assert _sinfo(relax.op.unique(x)) == relax.TensorStructInfo(dtype="float32", ndim=1)
    got = _sinfo(relax.op.unique(x, return_inverse=True, return_counts=True, axis=1))
    minitvm.ir.assert_structural_equal(got, relax.TupleStructInfo([
        relax.TensorStructInfo(dtype="float32", ndim=3), relax.TensorStructInfo(dtype="int64", ndim=1),
        relax.TensorStructInfo(dtype="int64", ndim=1)]))
    scalar = relax.Var("s", R.Tensor((), "int32"))
    minitvm.ir.assert_structural_equal(_sinfo(relax.op.unique(scalar)), relax.TensorStructInfo((1,), "int32"))
    with pytest.raises(minitvm.TVMError, match="axis 3 is out of range"):
        _sinfo(relax.op.unique(x, axis=3))
    shape = relax.Var("s", relax.ShapeStructInfo((2, 3)))
    with pytest.raises(TypeError, match="relax.unique expects a tensor"):
        _sinfo(relax.op.unique(shape))
    assert _sinfo(relax.op.nonzero(x)) == relax.TensorStructInfo(dtype="int64", ndim=2)


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique_and_nonzero_run(is_sorted):
    @R.function
    def main(x: R.Tensor((6, 5), "int64")):
        u = R.unique(x, sorted=is_sorted, return_index=True, return_inverse=True, return_counts=True)
        nz = R.nonzero(x)
        return u, nz

    data = np.random.default_rng(7).integers(0, 9, (6, 5))
    vm = relax.VirtualMachine(relax.build(minitvm.IRModule.from_expr(main), "llvm"), minitvm.cpu())
    (values, index, inverse, counts), nz = vm["main"](minitvm.nd.array(data))
    flat = data.reshape(-1)
    want, want_index, want_inverse, want_counts = np.unique(flat, return_index=True, return_inverse=True,
                                                            return_counts=True)
    if not is_sorted:  # first-appearance order; the inverse indexes the reordered values
        order = np.argsort(want_index)
        want, want_index, want_counts = want[order], want_index[order], want_counts[order]
        want_inverse = np.argsort(order)[want_inverse]
    np.testing.assert_array_equal(values.numpy(), want)
    np.testing.assert_array_equal(index.numpy(), want_index)
    np.testing.assert_array_equal(inverse.numpy(), want_inverse)
    np.testing.assert_array_equal(values.numpy()[inverse.numpy()], flat)  # rebuilds the input
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_array_equal(nz.numpy(), np.stack(np.nonzero(data)))
