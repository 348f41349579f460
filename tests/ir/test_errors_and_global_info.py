"""TVM's error names and module-level global infos (``tvm.TVMError``, ``tvm.ir.VDevice``)."""

import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import DummyGlobalInfo, VDevice
from minitvm.ir.base import assert_structural_equal, structural_equal


def test_tvm_error_is_a_runtime_error_reachable_by_tvm_names():
    assert issubclass(minitvm.TVMError, RuntimeError)
    assert minitvm.error.TVMError is minitvm.TVMError
    assert minitvm.runtime.TVMError is minitvm.TVMError
    assert issubclass(minitvm.error.DiagnosticError, minitvm.TVMError)


def test_struct_info_inference_error_is_caught_as_tvm_error_and_value_error():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((4, 5), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x, y]):
        with pytest.raises(minitvm.TVMError, match="relax.add"):
            bb.emit(relax.op.add(x, y))
        with pytest.raises(ValueError):
            bb.emit(relax.op.add(x, y))
        bb.emit_func_output(x)


def test_tvmscript_mistake_is_a_diagnostic_error():
    from minitvm.script import tir as T

    with pytest.raises(minitvm.error.DiagnosticError, match="no_such_intrinsic"):
        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.no_such_intrinsic(A[i])


def test_schedule_error_and_missing_op_are_tvm_errors():
    with pytest.raises(minitvm.TVMError):
        minitvm.ir.Op.get("relax.no_such_operator")
    assert issubclass(tir.ScheduleError, minitvm.TVMError)


def test_vdevice_compares_structurally_and_checks_its_fields():
    a, b = VDevice("llvm", 0, "global"), VDevice("llvm")
    assert a == b and not a.same_as(b) and hash(a) == hash(b)
    assert a != VDevice("llvm", 1)
    assert DummyGlobalInfo() == DummyGlobalInfo()
    assert a != DummyGlobalInfo()
    with pytest.raises(TypeError, match="vdevice_id"):
        VDevice("llvm", "zero")


def test_ir_base_names_are_the_structural_functions():
    n = tir.Var("n", "int64")
    assert structural_equal(n + 1, n + 1)
    with pytest.raises(ValueError):
        assert_structural_equal(n + 1, n + 2)
