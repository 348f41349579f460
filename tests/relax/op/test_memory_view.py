"""R.memory.view: struct info and bounds checks as TVM's, and views that share memory at run
time (new shape, dtype and byte offset against numpy's views)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.relax.struct_info import StructInfoError
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import relax as R


def infer(call: relax.Expr) -> relax.StructInfo:
    return relax.BlockBuilder().normalize(call).struct_info


def run(build, *inputs: np.ndarray):
    params = [relax.Var(f"p{k}", relax.TensorStructInfo(a.shape, str(a.dtype))) for k, a in enumerate(inputs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(build(*params)))
    vm = relax.VirtualMachine(minitvm.compile(bb.get(), target="llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in inputs))


def test_view_struct_info_keeps_what_is_left_out():
    a = relax.Var("a", R.Tensor((16,), "uint8"))
    assert str(infer(R.memory.view(a, R.shape([4, 4])))) == 'R.Tensor((4, 4), dtype="uint8")'
    assert str(infer(R.memory.view(a, R.shape([8]), R.dtype("float16")))) == 'R.Tensor((8,), dtype="float16")'
    n = tir.Var("n", "int64")
    b = relax.Var("b", R.Tensor((n,), "float32"))
    # may hold at run time (when 4 divides n): left to the runtime check
    assert infer(R.memory.view(b, R.shape([(n + 3) // 4, 4]))).ndim == 2


@pytest.mark.parametrize("make", [
    lambda a: R.memory.view(a, R.shape([17])),                             # more elements
    lambda a: R.memory.view(a, dtype=R.dtype("float16")),                   # bigger elements
    lambda a: R.memory.view(a, R.shape([8]), relative_byte_offset=R.prim_value(9)),  # past the end
    lambda a: R.memory.view(a, R.prim_value(3)),                            # not a shape
])
def test_view_past_the_array_or_of_a_non_shape_is_refused(make):
    with pytest.raises(StructInfoError):
        infer(make(relax.Var("a", R.Tensor((16,), "uint8"))))


def test_views_share_memory_with_new_shape_dtype_and_offset():
    rng = np.random.default_rng(13)
    x = rng.integers(0, 255, size=4096).astype("uint8")
    got = run(lambda a: relax.Tuple([
        R.memory.view(a, R.shape([512]), R.dtype("int32")),
        R.memory.view(a, R.shape([16, 64]), R.dtype("float16"), R.prim_value(2048)),
        R.memory.view(a)]), x)
    np.testing.assert_array_equal(got[0].numpy(), x[:2048].view("int32"))
    np.testing.assert_array_equal(got[1].numpy(), x[2048:].view("float16").reshape(16, 64))
    np.testing.assert_array_equal(got[2].numpy(), x)


def test_lowered_view_calls_an_extern_whose_struct_info_derives_the_result():
    @I.ir_module
    class Before:
        @R.function
        def main(A: R.Tensor([4096], "uint8")):
            return R.memory.view(A, shape=R.shape([512]), dtype=R.dtype("int32"))

    after = relax.transform.LowerRuntimeBuiltin()(Before)
    call = after["main"].body.blocks[0].bindings[0].value  # the view's call, now of the runtime function
    assert call.op.global_symbol == "runtime.TVMTensorCreateView" and not call.sinfo_args
    assert str(call.struct_info) == 'R.Tensor((512,), dtype="int32")'  # derived by the callee's derive_func
    minitvm.ir.assert_structural_equal(from_source(after.script()), after)  # R.Callable(derive_func=...) reads back
