"""save_json/load_json for nodes TVMScript cannot write at top level: the node-graph form."""

import json

import pytest

import minitvm as tvm
from minitvm import relax as rx
from minitvm import tir


def _roundtrip(node):
    back = tvm.ir.load_json(tvm.ir.save_json(node))
    tvm.ir.assert_structural_equal(node, back, map_free_vars=True)
    return back


def test_expression_and_binding_round_trip_sharing_vars():
    n = tir.Var("n", "int64")
    back = _roundtrip(rx.PrimValue(n + 1))
    assert back.value.a.name == "n" and back.value.b.value == 1
    x = rx.Var("x", rx.TensorStructInfo([n, n], "float32"))
    cast = _roundtrip(rx.MatchCast(rx.Var("v"), x, rx.TensorStructInfo([n, 4], "float32")))
    # n is one variable on both sides of the loaded binding, as it was when saved
    assert cast.value.struct_info.shape.values[0] is cast.struct_info.shape.values[0]
    assert _roundtrip(rx.StringImm("hi")).value == "hi"
    assert _roundtrip(rx.DataTypeImm("int8")).value == "int8"


def test_graph_refuses_classes_outside_minitvm():
    text = json.dumps({"minitvm_json": 1, "type": "X", "graph": {"node": "os:system", "fields": {}}})
    with pytest.raises(ValueError, match="not a minitvm IR node class"):
        tvm.ir.load_json(text)


def test_graph_never_imports_a_module_the_file_names():
    # a minitvm module that is not loaded yet (its top-level code would run on import) is refused
    import sys

    name = "minitvm.testing.tiny_llama.train"
    was_loaded = name in sys.modules
    text = json.dumps({"minitvm_json": 1, "type": "X", "graph": {"node": f"{name}:Node", "fields": {}}})
    with pytest.raises(ValueError, match="not a minitvm IR node class"):
        tvm.ir.load_json(text)
    assert (name in sys.modules) == was_loaded
