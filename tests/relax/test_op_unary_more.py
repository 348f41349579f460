"""Element-wise unary Relax ops by TVM's names (trig, hyperbolic, sign, square, isnan/isinf/
isfinite): struct info, TVMScript round trip, and compiled results against numpy."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import relax as R

_FLOAT_OPS = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "atanh": np.arctanh, "ceil": np.ceil,
    "floor": np.floor, "round": np.rint, "sign": np.sign, "square": np.square,
}


def _run(op, x):
    xv = relax.Var("x", relax.TensorStructInfo(x.shape, str(x.dtype)))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(op(xv))
        bb.emit_func_output(out)
    mod = bb.get()
    assert_structural_equal(from_source(mod.script()), mod)
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](minitvm.nd.array(x)).numpy()


@pytest.mark.parametrize("name", sorted(_FLOAT_OPS))
def test_float_unary_ops_match_numpy(name):
    x = np.random.default_rng(8).uniform(-0.9, 0.9, (3, 5)).astype("float32")
    np.testing.assert_allclose(_run(getattr(relax.op, name), x), _FLOAT_OPS[name](x), rtol=1e-5, atol=1e-6)


def test_acosh_and_integer_sign():
    x = np.random.default_rng(9).uniform(1.1, 4.0, (6,)).astype("float32")
    np.testing.assert_allclose(_run(relax.op.acosh, x), np.arccosh(x), rtol=1e-5)
    k = np.random.default_rng(10).integers(-5, 5, (7,)).astype("int32")
    np.testing.assert_array_equal(_run(relax.op.sign, k), np.sign(k))


def test_checks_give_bool_tensors():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5], "float32")
    for name, ref in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
        out = _run(getattr(relax.op, name), x)
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, ref(x))

    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        y = R.isnan(x)
        return y

    assert f.ret_struct_info.dtype == "bool"


@pytest.mark.parametrize("name, ref", [("trunc", np.trunc), ("ceil", np.ceil), ("floor", np.floor),
                                       ("round", np.rint)])
def test_rounding_ops_on_a_wide_range(name, ref):
    x = np.random.default_rng(11).uniform(-4.0, 4.0, (4, 6)).astype("float32")
    np.testing.assert_array_equal(_run(getattr(relax.op, name), x), ref(x))
