"""ComputePrimValue (TVM's relax.transform.ComputePrimValue): a compound symbolic prim value
becomes a host PrimFunc returning it; the PrimFunc computes the same number."""

import minitvm
from minitvm import relax, tir
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.tir.functor import substitute


def test_assert_condition_moves_into_a_host_prim_func():
    @I.ir_module
    class Mod:
        @R.function(pure=False)
        def main(A: R.Tensor(["N"])):
            N = T.int64()
            _ = R.assert_op(N % 16 == 0)
            return A

    after = relax.transform.ComputePrimValue()(Mod)
    kernel = after["compute_symbolic_expr"]
    assert kernel.attrs["tir.is_host_func"] and len(kernel.params) == 1
    binding = after["main"].body.blocks[0].bindings[0]
    assert isinstance(binding.value, relax.Call) and binding.value.op.name_hint == "compute_symbolic_expr"
    # the function returns the expression: evaluate it for a few N in the interpreter
    n = kernel.params[0]
    expr = kernel.body.value.args[0]
    for value, expected in ((32, True), (33, False)):
        got = substitute(expr, {n: tir.IntImm("int64", value)})
        assert bool(minitvm.arith.Analyzer().simplify(got).value) is expected
