"""minitvm.relax.testing (TVM's tvm.relax.testing): the nn module API, the matmul workload,
the test.vm.* functions and ApplyEmptyCppMutator, as TVM's own Relax tests use them."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax.testing import get_relax_matmul_module, nn, transform
from minitvm.runtime import get_global_func
from minitvm.script import ir as I
from minitvm.script import relax as R


def test_nn_modules_build_relax_in_the_current_builder():
    class ReLU(nn.Module):
        def forward(self, input):
            return nn.emit(relax.op.nn.relu(input))

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((32, 32), dtype="float32")) -> R.Tensor((32, 32), dtype="float32"):
            gv: R.Tensor((32, 32), dtype="float32") = R.nn.relu(x)
            return gv

    bb = relax.BlockBuilder()
    with bb.function("main"):
        model = ReLU()
        x = nn.Placeholder((32, 32), dtype="float32", name="x")
        bb.emit_func_output(model(x), [x] + model.parameters())
    assert_structural_equal(bb.get(), Expected)
    assert type(x) is relax.Var and isinstance(x, nn.Placeholder) and not isinstance(x, nn.Parameter)


def test_a_linear_stack_runs_and_lists_its_parameters():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.LogSoftmax())
    data = nn.Placeholder((2, 4), name="data")
    params = model.parameters()
    assert [p.name for p in params] == ["linear_weight", "linear_bias"] and isinstance(params[0], nn.Parameter)
    bb = relax.BlockBuilder()
    with bb.function("main", [data, *params]):
        bb.emit_func_output(model(data))
    mod = bb.get()
    assert [p.shape for p in nn.init_params(mod)] == [(4, 3), (3,)]
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in [(2, 4), (4, 3), (3,)])
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    got = vm["main"](*map(minitvm.nd.array, (x, w, b))).numpy()
    z = np.maximum(x @ w + b, 0)
    np.testing.assert_allclose(got, z - np.log(np.exp(z).sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="define_subroutine"):
        type("Sub", (nn.ReLU,), {"define_subroutine": True})()(data)
    # checkpoints are built now (tests/relax/transform/test_gradient.py); outside a function they say so
    with pytest.raises(RuntimeError, match="needs an open `with bb.function"):
        nn.checkpoint(model, data)


def test_matmul_module_with_its_epilogue_computes_numpys_numbers():
    mod = get_relax_matmul_module((4, 8), (6, 8), "float32", transposed_y=True, bias_shape=(6,),
                                  activation=R.nn.relu, residual_bin_op=None)
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype("float32") for s in [(4, 8), (6, 8), (6,)])
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    got = vm["main"](*map(minitvm.nd.array, (a, b, c))).numpy()
    np.testing.assert_allclose(got, np.maximum(a @ b.T + c, 0), rtol=1e-5, atol=1e-6)
    assert_structural_equal(transform.ApplyEmptyCppMutator()(mod), mod)


def test_the_test_vm_functions_are_registered():
    from minitvm.relax.testing import vm  # noqa: F401 - registers test.vm.*

    a = np.random.default_rng(2).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(get_global_func("test.vm.add")(minitvm.nd.array(a), minitvm.nd.array(a)).numpy(), 2 * a)
    out = minitvm.nd.empty((2, 6), "float32")
    get_global_func("test.vm.tile")(minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), np.tile(a, (1, 2)))
