"""``R.builtin.alloc_tensor`` / ``R.memory.alloc_storage`` / ``R.memory.alloc_tensor`` take
TVM's arguments, so lowered Relax written for TVM parses, and match what the lowering passes emit."""

import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


def test_builtin_alloc_tensor_from_python_values_and_relax_leaves():
    a = relax.op.builtin.alloc_tensor((2, 3), "float32", 0)
    b = relax.op.builtin.alloc_tensor(relax.ShapeExpr([2, 3]), relax.DataTypeImm("float32"), relax.PrimValue(0))
    minitvm.ir.assert_structural_equal(a, b)
    bb = relax.BlockBuilder()
    with bb.function("f", []):
        t = bb.emit(a)
        bb.emit_func_output(t)
    assert t.struct_info == relax.TensorStructInfo((2, 3), "float32")


def test_memory_ops_give_storage_object_and_placed_tensor():
    bb = relax.BlockBuilder()
    with bb.function("f", []):
        storage = bb.emit(relax.op.memory.alloc_storage((96,), 0, "global", "uint8"))
        t = bb.emit(relax.op.memory.alloc_tensor(storage, 32, (4, 4), "float32"))
        bb.emit_func_output(t)
    assert storage.struct_info == relax.ObjectStructInfo()
    assert t.struct_info == relax.TensorStructInfo((4, 4), "float32")


def test_other_scopes_and_devices_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="storage_scope"):
        relax.op.builtin.alloc_tensor((2,), "float32", 0, "shared")
    with pytest.raises(NotImplementedError, match="virtual_device_index"):
        relax.op.memory.alloc_storage((8,), 1, "global", "uint8")
    with pytest.raises(NotImplementedError, match="runtime_device_ind"):
        relax.op.memory.alloc_tensor(relax.Var("s", relax.ObjectStructInfo()), 0, (2,), "float32", 1)


def test_tvmscript_with_memory_ops_parses_like_the_planner_output():
    @I.ir_module
    class Planned:
        @R.function
        def main(x: R.Tensor((2, 4), "float32")) -> R.Tensor((2, 4), "float32"):
            storage = R.memory.alloc_storage(R.shape([32]), R.prim_value(0), R.str("global"), R.dtype("float32"))
            y = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 4]), R.dtype("float32"))
            z = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), R.prim_value(0))
            w = R.add(y, z)
            return w

    body = Planned["main"].body.blocks[0].bindings
    assert [b.value.op.name for b in body] == [
        "relax.memory.alloc_storage", "relax.memory.alloc_tensor", "relax.builtin.alloc_tensor", "relax.add"]
    assert body[1].var.struct_info == relax.TensorStructInfo((2, 4), "float32")
