"""TVM's VM forms minitvm runs as TVM does: closures, function values, in-place packed calls,
call_builtin_with_ctx / null_value, symbolic R.Prim values, return checks, error classes."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime.vm.builtins import ShapeTuple
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(7)


def _vm(mod, exec_mode="bytecode"):
    return relax.VirtualMachine(relax.build(mod, "llvm", exec_mode=exec_mode), minitvm.cpu())


@minitvm.register_func("test.forms.add", override=True)
def _add(a, b):
    return minitvm.nd.array(a.numpy() + b.numpy())


@minitvm.register_func("test.forms.inplace_add", override=True)
def _inplace_add(a, b):
    a.copyfrom(a.numpy() + b.numpy())
    return a


@I.ir_module
class Closure:
    @R.function
    def lifted(x: R.Tensor((2, 3), "float32"), env: R.Tensor((2, 3), "float32")):
        return R.call_pure_packed("test.forms.add", x, env, sinfo_args=R.Tensor((2, 3), "float32"))

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        clo = R.make_closure(Closure.lifted, (x,))
        return R.invoke_pure_closure(clo, (y,), sinfo_args=R.Tensor((2, 3), "float32"))


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_closure_made_and_invoked(exec_mode):
    x, y = RNG.random((2, 3), "float32"), RNG.random((2, 3), "float32")
    out = _vm(Closure, exec_mode)["main"](minitvm.nd.array(x), minitvm.nd.array(y))
    np.testing.assert_allclose(out.numpy(), x + y, rtol=1e-6)


def test_vm_invoke_closure_binds_the_captured_values_first():
    eb = relax.ExecBuilder()
    with eb.function("sub", num_inputs=2):
        eb.emit_call("test.forms.add", args=[eb.r(0), eb.r(1)], dst=eb.r(2))
        eb.emit_ret(eb.r(2))
    with eb.function("main", num_inputs=1):
        eb.emit_call("vm.builtin.make_closure", args=[eb.f("sub"), eb.r(0)], dst=eb.r(1))
        eb.emit_ret(eb.r(1))
    vm = relax.VirtualMachine(eb.get(), minitvm.cpu())
    a, b = RNG.random(4, "float32"), RNG.random(4, "float32")
    clo = vm["main"](minitvm.nd.array(a))
    np.testing.assert_allclose(vm.invoke_closure(clo, minitvm.nd.array(b)).numpy(), a + b, rtol=1e-6)
    with pytest.raises(TypeError, match="expected a closure, got NDArray"):
        vm.invoke_closure(minitvm.nd.array(a))


def test_exec_builder_vm_state_and_tvms_alloc_storage_form():
    eb = relax.ExecBuilder()
    with eb.function("main", num_inputs=0):
        eb.emit_call("vm.builtin.alloc_storage", args=[eb.vm_state(), (24,), eb.convert_constant(0),
                                                       "float32", eb.convert_constant("global")], dst=eb.r(1))
        eb.emit_call("vm.builtin.alloc_tensor", args=[eb.r(1), eb.imm(0), (4, 6), "float32"], dst=eb.r(2))
        eb.emit_ret(eb.r(2))
    out = relax.VirtualMachine(eb.get(), minitvm.cpu())["main"]()
    assert out.shape == (4, 6) and out.dtype == "float32"  # 24 float32 elements: the storage fits exactly


@I.ir_module
class Callback:
    @R.function(pure=False)
    def main():
        callback = R.ExternFunc("test.vm.check_if_defined")
        storage = R.vm.alloc_storage(R.shape([16]), R.prim_value(0), R.dtype("uint8"))
        alias = storage
        before = callback(storage)
        _ = R.vm.kill_object(storage)
        after = callback(storage)
        alias_after = callback(alias)
        return (before, after, alias_after)


def test_function_value_called_and_alias_outlives_a_kill():
    import minitvm.relax.testing.vm  # noqa: F401 - registers test.vm.check_if_defined

    out = _vm(Callback)["main"]()
    assert [bool(v) for v in out] == [True, False, True]


@I.ir_module
class Inplace:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        z = R.call_inplace_packed("test.forms.inplace_add", x, y, inplace_indices=0,
                                  sinfo_args=R.Tensor((3, 4), "float32"))
        return z


def test_call_inplace_packed_writes_its_argument_and_round_trips():
    a, b = RNG.random((3, 4), "float32"), RNG.random((3, 4), "float32")
    x = minitvm.nd.array(a)
    out = _vm(Inplace)["main"](x, minitvm.nd.array(b))
    np.testing.assert_allclose(out.numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), a + b, rtol=1e-6)  # written in place
    text = Inplace.script()
    assert 'R.call_inplace_packed("test.forms.inplace_add", x, y, inplace_indices=[0]' in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), Inplace)
    with pytest.raises(Exception, match="inplace index 2 is not an argument"):
        relax.BlockBuilder().normalize(relax.op.call_inplace_packed(
            "f", Inplace["main"].params[0], inplace_indices=2, sinfo_args=R.Tensor((3, 4), "float32")))


@I.ir_module
class WithCtx:
    @R.function(pure=False)
    def main(x: R.Tensor(["n"], "float32")):
        heap = R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", [R.prim_value(1)],
                                       sinfo_args=[R.Tensor(ndim=1, dtype="int64")])
        _ = R.call_packed("vm.builtin.match_shape", x, heap, 1, 1, 0, "", sinfo_args=[R.Tuple()])
        nothing = R.null_value()
        s = R.call_packed("vm.builtin.make_shape", heap, 2, 1, 0, 0, 3, sinfo_args=[R.Shape(ndim=2)])
        return (s, nothing)


def test_call_builtin_with_ctx_and_null_value_run_and_round_trip():
    text = WithCtx.script()
    assert 'R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", (R.prim_value(1),)' in text
    assert "R.null_value()" in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), WithCtx)
    exe = relax.build(WithCtx, "llvm", relax_pipeline=None)
    out = relax.VirtualMachine(exe, minitvm.cpu())["main"](minitvm.nd.array(RNG.random(5, "float32")))
    assert out[0] == ShapeTuple([5, 3]) and out[1] is None


@I.ir_module
class PrimParams:
    @R.function
    def square(n_: R.Prim(value="n")):
        n = T.int64()
        return R.prim_value(n * n)

    @R.function
    def both(_n: R.Prim(value="n"), s: R.Shape(["n*2", "m*2"]), _m: R.Prim(value="m")):
        n = T.int64()
        m = T.int64()
        return R.shape([n * n, m + 1])

    @R.function
    def branch(x: R.Tensor(["N"], "int64")):
        N = T.int64()
        if R.prim_value(N % 4 == 0):
            out = R.prim_value(5)
        else:
            out = R.prim_value(10)
        return out


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_symbolic_prim_values(exec_mode):
    vm = _vm(PrimParams, exec_mode)
    assert vm["square"](7) == 49
    with pytest.raises(TypeError, match="expected dtype int64"):
        vm["square"](ShapeTuple([2]))
    # m is read from the last parameter; the shape's m*2 is checked after it
    assert tuple(vm["both"](3, ShapeTuple([6, 10]), 5)) == (9, 6)
    with pytest.raises(RuntimeError, match="dimension 1 is 10"):
        vm["both"](3, ShapeTuple([6, 10]), 4)
    with pytest.raises(minitvm.TVMError, match="expects 3 arguments"):
        vm["both"](ShapeTuple([2]))
    assert vm["branch"](minitvm.nd.array(np.arange(8))) == 5
    assert vm["branch"](minitvm.nd.array(np.arange(6))) == 10


@I.ir_module
class ReturnCheck:
    @R.function
    def foo(x: R.Tensor(["n", "m"], "int32"), y: R.Object) -> R.Tensor(["m", "n"], dtype=None):
        return y


def test_result_checked_against_the_return_annotation():
    vm = _vm(ReturnCheck)
    x = minitvm.nd.array(np.zeros((1, 2), "int32"))
    y = RNG.random((2, 1), "float32")
    np.testing.assert_array_equal(vm["foo"](x, minitvm.nd.array(y)).numpy(), y)
    with pytest.raises(RuntimeError, match="foo: return value: dimension 0 is 1, but the same symbolic"):
        vm["foo"](x, minitvm.nd.array(np.zeros((1, 2), "float32")))
    with pytest.raises(ValueError, match="foo: return value expects a tensor with ndim 2"):
        vm["foo"](x, minitvm.nd.array(np.zeros((2, 1, 1), "float32")))


def test_entry_errors_carry_tvms_classes_too():
    vm = _vm(Inplace)
    good = minitvm.nd.array(RNG.random((3, 4), "float32"))
    with pytest.raises(ValueError, match="expects dtype float32, got int32") as info:
        vm["main"](minitvm.nd.array(np.zeros((3, 4), "int32")), good)
    assert isinstance(info.value, TypeError)  # minitvm's class before
    with pytest.raises(RuntimeError, match=r"expects shape \(3, 4\), got \(5, 4\)") as info:
        vm["main"](minitvm.nd.array(np.zeros((5, 4), "float32")), good)
    assert isinstance(info.value, ValueError)
    vm["main"](good, good)  # and the VM runs on after a failed call


def test_to_device_copies():
    x = minitvm.nd.array(RNG.random((3, 4), "float32"))
    y = minitvm.get_global_func("vm.builtin.to_device")(x, 1, 0)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y.device == minitvm.cpu(0) and y.device.index == 0 and y.device.dlpack_device_type() == 1
    y.copyfrom(np.zeros((3, 4), "float32"))
    assert x.numpy().any()  # a copy, not a view


@I.ir_module
class TakesCallback:
    @R.function
    def main(callback: R.Callable([], R.Tensor([4], "float32"))):
        a = callback()
        b = R.multiply(a, R.const(2, "float32"))
        return b


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_python_function_passed_for_a_callable_parameter(exec_mode):
    data = RNG.random(4, "float32")
    out = _vm(TakesCallback, exec_mode)["main"](lambda: minitvm.nd.array(data))
    np.testing.assert_allclose(out.numpy(), data * 2, rtol=1e-6)
    with pytest.raises(TypeError, match="argument 'x' expects an array .*, got function"):  # a tensor parameter
        _vm(Inplace)["main"](lambda: None, minitvm.nd.array(data.reshape(1, 4).repeat(3, 0)))


@minitvm.register_func("test.forms.copy_into", override=True)
def _copy_into(src, dst):
    dst.copyfrom(src.numpy())
    return dst


@I.ir_module
class UnusedPureCall:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        # its result is unused, but it writes y: TVM's default build keeps it (no DCE there)
        z = R.call_pure_packed("test.forms.copy_into", x, y, sinfo_args=R.Tensor((3, 4), "float32"))  # noqa: F841
        with R.dataflow():
            unused = R.add(x, x)  # noqa: F841 - inside a dataflow block: still removed
            gv = R.multiply(y, R.const(2, "float32"))
            R.output(gv)
        return gv


def test_default_pipeline_keeps_unused_calls_outside_dataflow_blocks():
    exe = relax.build(UnusedPureCall, "llvm")
    x = RNG.random((3, 4), "float32")
    y = minitvm.nd.array(np.zeros((3, 4), "float32"))
    out = relax.VirtualMachine(exe, minitvm.cpu())["main"](minitvm.nd.array(x), y)
    np.testing.assert_allclose(out.numpy(), x * 2, rtol=1e-6)
    assert "test.forms.copy_into" in exe.as_text()
    assert "add" not in " ".join(exe.func_names)  # the dataflow block's unused R.add went
    # outside the default pipeline DeadCodeElimination removes both, as TVM's does
    pruned = relax.transform.DeadCodeElimination()(UnusedPureCall)
    assert "copy_into" not in pruned.script() and "R.add" not in pruned.script()
