"""RemoveUnusedParameters (TVM's relax.transform.RemoveUnusedParameters): an internal
function loses the parameters it never reads, a symbolic variable they defined becomes an
R.Prim parameter, public functions keep their signature, and results stay the same."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Before:
    @R.function
    def main(A: R.Tensor(["m", "n"], "float32"), B: R.Tensor(["m", "n"], "float32")):
        out = Before.helper(A, B)
        return out

    @R.function(private=True)
    def helper(A: R.Tensor(["m", "n"], "float32"),
               B: R.Tensor(["m", "n"], "float32")) -> R.Tensor(["m", "n"], "float32"):
        m = T.int64()
        n = T.int64()
        ones = R.ones(R.shape([m, n]), "float32")
        out = R.add(B, ones)
        return out


def test_unused_parameter_dropped_and_results_kept():
    after = relax.transform.RemoveUnusedParameters()(Before)
    helper = after["helper"]
    assert [p.name_hint for p in helper.params] == ["B"]  # B still defines m and n
    assert [p.name_hint for p in after["main"].params] == ["A", "B"]  # public: unchanged
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((3, 5)).astype("float32") for _ in range(2))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy(), b + 1, rtol=1e-6)


def test_symbolic_variable_of_a_dropped_parameter_becomes_a_prim_parameter():
    @I.ir_module
    class Mod:
        @R.function
        def main(A: R.Tensor(["m"], "float32")):
            out = Mod.helper(A)
            return out

        @R.function(private=True)
        def helper(A: R.Tensor(["m"], "float32")) -> R.Tensor(["m"], "float32"):
            m = T.int64()
            out = R.zeros(R.shape([m]), "float32")
            return out

    after = relax.transform.RemoveUnusedParameters()(Mod)
    (param,) = after["helper"].params
    assert param.name_hint == "param_m" and isinstance(param.struct_info, relax.PrimStructInfo)
    call = after["main"].body.blocks[0].bindings[0].value
    assert isinstance(call.args[0], relax.PrimValue)
