"""Function.bind_symbolic_vars: TVM's checks on the binding map, and the bound function."""

import pytest

import minitvm
from minitvm import relax, tir
from minitvm.script import relax as R


def test_bind_by_name_or_var_and_refusals():
    @R.function(private=True)
    def before(A: R.Tensor(("M", "K")), B: R.Tensor(("K", "N"))) -> R.Tensor(("M", "N")):
        return R.matmul(A, B)

    @R.function(private=True)
    def expected(A: R.Tensor((128, 64)), B: R.Tensor((64, 32))) -> R.Tensor((128, 32)):
        return R.matmul(A, B)

    m, k = before.params[0].struct_info.shape
    minitvm.ir.assert_structural_equal(before.bind_symbolic_vars({m: 128, "K": 64, "N": 32}), expected)
    with pytest.raises(minitvm.TVMError, match="given twice"):
        before.bind_symbolic_vars({m: 1, "M": 1})
    with pytest.raises(minitvm.TVMError, match="not a symbolic variable"):
        before.bind_symbolic_vars({tir.Var("M", "int64"): 1})
    with pytest.raises(minitvm.TVMError, match="never defined"):
        before.bind_symbolic_vars({"M": tir.Var("outside", "int64") * 2})
    n1, n2 = tir.Var("N", "int64"), tir.Var("N", "int64")
    x = relax.Var("x", R.Tensor((n1, n2), "float32"))
    with pytest.raises(minitvm.TVMError, match="2 symbolic variables are named 'N'"):
        relax.Function([x], x).bind_symbolic_vars({"N": 4})
