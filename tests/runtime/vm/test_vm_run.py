"""Running hand-assembled bytecode: results, control flow, calls between VM functions, builtins."""

from __future__ import annotations

import numpy as np
import pytest
from vm_programs import HIDDEN, IN, OUT, build_mlp, mlp_inputs, mlp_reference

import minitvm
from minitvm.runtime import BenchmarkResult, NDArray
from minitvm.runtime.vm import ExecBuilder, ParamInfo, ShapeTuple, VirtualMachine
from minitvm.runtime.vm import builtins as B


@pytest.mark.parametrize("n", [1, 3, 17])
def test_mlp_matches_numpy(mlp_exe, n):
    vm = VirtualMachine(mlp_exe, minitvm.cpu())
    x, w1, w2 = mlp_inputs(n, seed=n)
    out = vm["forward"](x, w1, w2)
    assert isinstance(out, NDArray) and out.shape == (n, OUT) and out.dtype == "float32"
    np.testing.assert_allclose(out.numpy(), mlp_reference(x, w1, w2), rtol=1e-5, atol=1e-5)
    again = vm.invoke("forward", minitvm.nd.array(x), minitvm.nd.array(w1), minitvm.nd.array(w2))
    np.testing.assert_allclose(again.numpy(), out.numpy(), rtol=0, atol=0)


def test_each_call_gets_fresh_outputs(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    x, w1, w2 = mlp_inputs(2)
    first = vm["forward"](x, w1, w2)
    kept = first.numpy()
    vm["forward"](x * 2, w1, w2)
    np.testing.assert_array_equal(first.numpy(), kept)  # the second call did not overwrite the first result


def test_weights_as_constants():
    x, w1, w2 = mlp_inputs(4, seed=1)
    vm = VirtualMachine(build_mlp(weights=(w1, w2)))
    np.testing.assert_allclose(vm["forward"](x).numpy(), mlp_reference(x, w1, w2), rtol=1e-5, atol=1e-5)


def test_torch_tensors_are_accepted(mlp_exe):
    import torch
    x, w1, w2 = mlp_inputs(5, seed=2)
    vm = VirtualMachine(mlp_exe)
    out = vm["forward"](torch.from_numpy(x), torch.from_numpy(w1), torch.from_numpy(w2))
    np.testing.assert_allclose(torch.from_dlpack(out).numpy(), mlp_reference(x, w1, w2), rtol=1e-5, atol=1e-5)
    # a transposed (non-contiguous) tensor is copied into a contiguous one
    out = vm["forward"](torch.from_numpy(np.ascontiguousarray(x.T)).T, torch.from_numpy(w1), torch.from_numpy(w2))
    np.testing.assert_allclose(out.numpy(), mlp_reference(x, w1, w2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 10, 37])
def test_loop_with_if_and_goto(sum_exe, n):
    vm = VirtualMachine(sum_exe)
    assert vm["total"](n) == sum(range(n))


def test_if_accepts_a_0d_tensor():
    minitvm.register_func("test.vm.pick", lambda c: minitvm.nd.array(np.array(c, dtype="bool")), override=True)
    eb = ExecBuilder()
    with eb.function("choose", ["c"]):
        cond = eb.emit_call("test.vm.pick", [eb.r(0)])
        no = eb.label("no")
        eb.emit_if(cond, no)
        yes = eb.emit_call("tests.vm.add_ints", [eb.imm(1), eb.imm(0)])
        eb.emit_ret(yes)
        eb.place(no)
        other = eb.emit_call("tests.vm.add_ints", [eb.imm(2), eb.imm(0)])
        eb.emit_ret(other)
    vm = VirtualMachine(eb.get())
    assert vm["choose"](True) == 1 and vm["choose"](False) == 2


def test_calls_between_vm_functions_and_recursion():
    eb = ExecBuilder()
    # fact(k) = 1 if k < 1 else k * fact(k - 1); "fact" is called before it is defined
    with eb.function("main", ["k"]):
        r = eb.emit_call("fact", [eb.r(0)])
        eb.emit_ret(r)
    with eb.function("fact", ["k"]):
        small = eb.emit_call("tests.vm.less_ints", [eb.r(0), eb.imm(1)])
        recurse = eb.label("recurse")
        eb.emit_if(small, recurse)
        one = eb.emit_call("tests.vm.add_ints", [eb.imm(1), eb.imm(0)])
        eb.emit_ret(one)
        eb.place(recurse)
        k1 = eb.emit_call("tests.vm.add_ints", [eb.r(0), eb.imm(-1)])
        sub = eb.emit_call("fact", [k1])
        r = eb.emit_call("tests.vm.mul_ints", [eb.r(0), sub])
        eb.emit_ret(r)
    vm = VirtualMachine(eb.get())
    assert [vm["main"](k) for k in range(6)] == [1, 1, 2, 6, 24, 120]
    assert vm["fact"](7) == 5040


def test_call_with_wrong_argument_count_to_vm_function_is_rejected_at_load():
    eb = ExecBuilder()
    with eb.function("main", ["a"]):
        eb.emit_ret(eb.emit_call("helper", [eb.r(0), eb.r(0)]))
    with eb.function("helper", ["a"]):
        eb.emit_ret(0)
    with pytest.raises(ValueError, match=r"@helper takes 1 arguments, the call passes 2"):
        VirtualMachine(eb.get())


def test_tuples_shapes_copy_reshape():
    eb = ExecBuilder()
    with eb.function("main", ["x", "s"], [ParamInfo.tensor((2, 6), "float32"), ParamInfo.shape_of(("a", "b"))]):
        y = eb.emit_call("vm.builtin.reshape", [eb.r(0), eb.r(1)])
        z = eb.emit_call("vm.builtin.copy", [eb.r(0)])
        first = eb.emit_call("vm.builtin.tuple_getitem", [eb.r(1), eb.imm(0)])
        nothing = eb.emit_call("vm.builtin.null_value", [])
        t = eb.emit_call("vm.builtin.make_tuple", [y, z, first, nothing])
        eb.emit_ret(t)
    vm = VirtualMachine(eb.get())
    x = np.arange(12, dtype="float32").reshape(2, 6)
    y, z, first, nothing = vm["main"](x, (3, 4))
    assert y.shape == (3, 4) and first == 3 and nothing is None
    np.testing.assert_array_equal(y.numpy(), x.reshape(3, 4))
    x[0, 0] = 100.0  # y shares x's memory, z is a copy
    assert y.numpy()[0, 0] == 100.0 and z.numpy()[0, 0] == 0.0
    with pytest.raises(ValueError, match=r"reshape: cannot view 12 elements of shape \(2, 6\) as \(5, 5\)"):
        vm["main"](x, (5, 5))


def test_alloc_tensor_views_share_one_storage():
    eb = ExecBuilder()
    with eb.function("main", []):
        storage = eb.emit_call("vm.builtin.alloc_storage", [eb.imm(64), "uint8"])
        a = eb.emit_call("vm.builtin.alloc_tensor", [storage, eb.imm(0), ShapeTuple((4,)), "float32"])
        b = eb.emit_call("vm.builtin.alloc_tensor", [storage, eb.imm(16), ShapeTuple((2, 2)), "int32"])
        eb.emit_ret(eb.emit_call("vm.builtin.make_tuple", [storage, a, b]))
    storage, a, b = VirtualMachine(eb.get())["main"]()
    assert storage.nbytes == 64 and a.data_ptr % 64 == 0 and b.data_ptr == a.data_ptr + 16
    assert a.shape == (4,) and b.shape == (2, 2) and b.dtype == "int32"


def test_builtin_errors_are_clear():
    with pytest.raises(ValueError, match=r"shape \(5, 4\) \(80 bytes\) at offset 0 does not fit in a storage of 64"):
        B.alloc_tensor(B.alloc_storage(16, "float32"), 0, (5, 4), "float32")
    with pytest.raises(ValueError, match="offset 2 is not a multiple of the float32 size 4"):
        B.alloc_tensor(B.alloc_storage(16, "float32"), 2, (1,), "float32")
    with pytest.raises(ValueError, match="'object' is not a numeric type"):
        B.alloc_storage(4, "object")
    x = minitvm.nd.array(np.zeros((3, 4), "float32"))
    heap = B.alloc_shape_heap(2)
    B.match_shape(x, heap, 2, B.MATCH_STORE, 0, B.MATCH_STORE, 1, "f: x")
    assert heap == [3, 4]
    assert B.make_shape(heap, 3, B.MAKE_LOAD, 1, B.MAKE_IMM, 7, B.MAKE_LOAD, 0) == ShapeTuple((4, 7, 3))
    with pytest.raises(ValueError, match=r"f: y: dimension 1 is 4, but the same symbolic dimension was 3 earlier"):
        B.match_shape(x, heap, 2, B.MATCH_ANY, 0, B.MATCH_HEAP, 0, "f: y")
    with pytest.raises(ValueError, match=r"f: y: dimension 0 is 3, expected 5"):
        B.match_shape(x, heap, 2, B.MATCH_IMM, 5, B.MATCH_ANY, 0, "f: y")
    with pytest.raises(ValueError, match=r"f: y: expected 3 dimensions, got \(3, 4\)"):
        B.match_shape(x, heap, 3, 0, 0, 0, 0, 0, 0, "f: y")
    # TVM's classes: a wrong dtype or ndim is a ValueError, a wrong kind of value a TypeError
    with pytest.raises(ValueError, match="check_tensor_info: f: z expects a tensor with dtype int32, got float32"):
        B.check_tensor_info(x, 2, "int32", "f: z")
    with pytest.raises(ValueError, match=r"f: z expects a tensor with ndim 3, got shape \(3, 4\) \(2-D\)"):
        B.check_tensor_info(x, 3, "", "f: z")
    with pytest.raises(ValueError, match="f: z expects a tensor with ndim 3"):
        B.check_tensor_info(x, 3, "f: z")  # TVM's short form: (value, ndim, err_ctx)
    with pytest.raises(TypeError, match="check_tensor_info: expects a tensor, got list"):
        B.check_tensor_info([], 2, "")
    B.check_tensor_info(x, -1, "", "f: z")
    with pytest.raises(IndexError, match="index 2 is out of range for a tuple of 2"):
        B.tuple_getitem((1, 2), 2)


def test_callee_errors_name_the_vm_instruction(mlp_exe):
    def broken(x, w, out):
        raise RuntimeError("kernel failed")

    minitvm.register_func("test.vm.linear", broken, override=True)
    try:
        vm = VirtualMachine(mlp_exe)  # resolves the broken function now
    finally:
        from vm_programs import linear
        minitvm.register_func("test.vm.linear", linear, override=True)
    with pytest.raises(RuntimeError, match="kernel failed") as info:
        vm["forward"](*mlp_inputs(1))
    assert "in VM function @forward, instruction 9 (call test.vm.linear)" in "\n".join(info.value.__notes__)


def test_missing_function_is_reported_at_construction():
    eb = ExecBuilder()
    with eb.function("main", ["x"]):
        eb.emit_ret(eb.emit_call("test.vm.does_not_exist", [eb.r(0)]))
    with pytest.raises(ValueError, match="'test.vm.does_not_exist' is in neither the global function registry"):
        VirtualMachine(eb.get())


def test_stateful_calls(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    x, w1, w2 = mlp_inputs(2, seed=5)
    with pytest.raises(ValueError, match="call set_input"):
        vm.invoke_stateful("forward")
    vm.set_input("forward", x, w1, w2)
    vm.invoke_stateful("forward")
    np.testing.assert_allclose(vm.get_outputs("forward").numpy(), mlp_reference(x, w1, w2), rtol=1e-5, atol=1e-5)
    with pytest.raises(AttributeError, match="no VM function 'nope'; it has: forward"):
        vm["nope"]


def test_time_evaluator(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    args = mlp_inputs(1)
    res = vm.time_evaluator("forward", minitvm.cpu(), number=5, repeat=3)(*args)
    assert isinstance(res, BenchmarkResult) and len(res.results) == 3 and 0 < res.min <= res.max < 0.1
    res = vm.module.time_evaluator("forward", minitvm.cpu(), number=2)(*args)  # the MLC course's spelling
    assert res.mean > 0


def test_shapes_in_and_out():
    eb = ExecBuilder()
    with eb.function("main", ["s"], [ParamInfo.shape_of(("n", 4))]):
        heap = eb.emit_call("vm.builtin.alloc_shape_heap", [eb.imm(1)])
        eb.emit_call("vm.builtin.match_shape", [eb.r(0), heap, eb.imm(2), eb.imm(B.MATCH_STORE), eb.imm(0),
                                                eb.imm(B.MATCH_ANY), eb.imm(0)], dst=None)
        out = eb.emit_call("vm.builtin.make_shape", [heap, eb.imm(2), eb.imm(B.MAKE_IMM), eb.imm(HIDDEN),
                                                     eb.imm(B.MAKE_LOAD), eb.imm(0)])
        eb.emit_ret(out)
    vm = VirtualMachine(eb.get())
    result = vm["main"]((7, 4))
    assert isinstance(result, ShapeTuple) and result == (HIDDEN, 7)
    assert vm["main"](ShapeTuple([2, 4])) == (HIDDEN, 2)
    with pytest.raises(ValueError, match=r"main: argument 's' expects shape value \(n, 4\), got \(7, 5\)"):
        vm["main"]((7, 5))
    with pytest.raises(TypeError, match=r"argument 's' expects a shape \(a tuple of ints\), got NDArray"):
        vm["main"](minitvm.nd.array(np.zeros(IN, "float32")))
