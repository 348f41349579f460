"""relax.op.ccl: the struct info TVM infers for the collectives (no worker runs them here)."""

import pytest

import minitvm
from minitvm import relax, tir
from minitvm.script import relax as R


def _sinfo(call):
    return relax.BlockBuilder().normalize(call).struct_info


def test_ccl_struct_info():
    n = tir.Var("n", "int64")
    x = relax.Var("x", R.Tensor((6, n), "float16"))
    minitvm.ir.assert_structural_equal(_sinfo(relax.op.ccl.allreduce(x, "max")), x.struct_info)
    minitvm.ir.assert_structural_equal(_sinfo(relax.op.ccl.allgather(x, 4)), relax.TensorStructInfo((24, n), "float16"))
    minitvm.ir.assert_structural_equal(_sinfo(relax.op.ccl.scatter_from_worker0(x, 3)),
                                       relax.TensorStructInfo((2, n), "float16"))
    minitvm.ir.assert_structural_equal(_sinfo(relax.op.ccl.scatter_from_worker0(x, 2, axis=1)),
                                       relax.TensorStructInfo((6, tir.div(n, 2)), "float16"))
    with pytest.raises(minitvm.TVMError, match="not divisible by num_workers=4"):
        _sinfo(relax.op.ccl.scatter_from_worker0(x, 4))
    with pytest.raises(ValueError, match="op_type must be one of"):
        relax.op.ccl.allreduce(x, "median")
