"""BindSymbolicVars (TVM's relax.transform.BindSymbolicVars): names or variables fixed to
values in struct info and shapes (simplified), unused keys refused, numbers unchanged."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")) -> R.Tensor(("n", "m * 2"), "float32"):
        n = T.int64()
        m = T.int64()
        y = R.concat((x, x), axis=1)
        z = R.reshape(y, R.shape([n, m * 2]))
        return z


def test_bound_by_name_and_same_numbers():
    after = relax.transform.BindSymbolicVars({"m": 3})(Mod)
    sinfo = after["main"].params[0].struct_info
    assert int(sinfo.shape_values[1]) == 3
    assert int(after["main"].ret_struct_info.shape_values[1]) == 6  # m * 2, simplified
    x = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), np.concatenate([x, x], axis=1))


def test_unused_key_is_an_error():
    with pytest.raises(minitvm.TVMError, match="no symbolic variable matches"):
        relax.transform.BindSymbolicVars({"batch": 1})(Mod)
