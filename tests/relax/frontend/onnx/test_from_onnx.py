"""from_onnx's contract, as TVM's: input names, parameters as constants or inputs, symbolic
dimensions, the one error that lists every unsupported operator, what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import minitvm
from minitvm import relax
from minitvm.relax.expr import Constant
from minitvm.relax.frontend.onnx import OpNotImplemented, from_onnx
from minitvm.tir.expr import Var as TirVar

from ._check import compile_vm, init, model_of, ort_run, random_inputs, tvm_run

F = "float32"


@pytest.mark.parametrize("names, expected", [([".", "123"], ["_", "input_123"]), ([".", "_"], ["_", "__1"]),
                                             (["123", "input_123"], ["input_123", "input_123_1"])])
def test_input_names_are_sanitized_as_tvm_does(names, expected):
    model = model_of([helper.make_node("Add", names, ["out"])], {n: (F, [4]) for n in names}, {"out": (F, [4])})
    with pytest.warns(UserWarning, match="renaming input"):
        mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == expected
    kept = from_onnx(model, sanitize_input_names=False)
    assert [p.name_hint for p in kept["main"].params] == names


def _linear_model():
    w = np.random.default_rng(0).standard_normal([4, 3]).astype(F)
    return model_of([helper.make_node("MatMul", ["x", "onnx::MatMul_1"], ["y"])], {"x": (F, [2, 4])},
                    {"y": (F, [2, 3])}, [init("onnx::MatMul_1", w)]), w


def test_params_are_constants_or_inputs():
    model, w = _linear_model()
    mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    assert mod["main"].attrs["num_input"] == 1
    assert "params" not in mod["main"].attrs
    consts = [a for b in mod["main"].body.blocks for bind in b.bindings for a in getattr(bind.value, "args", ())
              if isinstance(a, Constant)]
    assert any(np.array_equal(c.data.numpy(), w) for c in consts)

    kept = from_onnx(model, keep_params_in_input=True)
    assert [p.name_hint for p in kept["main"].params] == ["x", "MatMul_1"]  # torch's "onnx::" prefix dropped
    assert kept["main"].attrs["num_input"] == 1
    bare, params = relax.frontend.detach_params(kept)
    np.testing.assert_array_equal(params["main"][0].numpy(), w)
    inputs = random_inputs(model)
    vm = compile_vm(bare)
    got = vm["main"](minitvm.nd.array(inputs["x"]), params["main"][0])
    np.testing.assert_allclose(got.numpy(), ort_run(model, inputs)[0], rtol=1e-5, atol=1e-6)


def test_dim_params_become_shared_symbolic_dims():
    model = model_of([helper.make_node("Add", ["a", "b"], ["c"])], {"a": (F, ["N", 3]), "b": (F, ["N", 3])},
                     {"c": (F, ["N", 3])})
    mod = from_onnx(model)
    (n_a, _), (n_b, _) = (p.struct_info.shape_values for p in mod["main"].params)
    assert isinstance(n_a, TirVar) and n_a.name == "N" and n_a is n_b
    vm = compile_vm(mod)
    for n in (1, 4):
        inputs = random_inputs(model, sizes={"N": n})
        np.testing.assert_allclose(tvm_run(vm, model, inputs)[0], ort_run(model, inputs)[0])


def test_question_mark_dims_are_each_a_variable_of_their_own():
    # "?" marks a size nobody named: (?, ?, ?) takes (3, 2, 2), as in TVM
    model = model_of([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=1)], {"x": (F, ["?", "?", "?"])},
                     {"y": (F, ["?", "?", "?"])}, opset=13)
    mod = from_onnx(model)
    dims = mod["main"].params[0].struct_info.shape_values
    assert [d.name for d in dims] == ["?"] * 3 and len({id(d) for d in dims}) == 3
    inputs = {"x": np.random.default_rng(0).standard_normal([3, 2, 2]).astype(F)}
    np.testing.assert_allclose(tvm_run(compile_vm(mod), model, inputs)[0], inputs["x"].sum(keepdims=True),
                               rtol=1e-5)


def test_a_single_slash_in_a_dim_param_floor_divides():
    model = model_of([helper.make_node("Identity", ["x"], ["y"])], {"x": (F, ["A", "B", "A / B"])},
                     {"y": (F, ["A", "B", "A / B"])})
    a, b, ratio = from_onnx(model)["main"].params[0].struct_info.shape_values
    assert type(ratio).__name__ == "FloorDiv" and ratio.a is a and ratio.b is b


def test_shape_dict_and_dtype_dict_override_inputs():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], {"x": (F, ["N", 3])}, {"y": (F, ["N", 3])})
    mod = from_onnx(model, shape_dict={"x": [5, 3]}, dtype_dict={"x": "float64"})
    sinfo = mod["main"].params[0].struct_info
    assert [int(d) for d in sinfo.shape_values] == [5, 3] and sinfo.dtype == "float64"
    # a dtype_dict that is a string changes nothing (TVM's behaviour): the graph's dtype stays
    assert from_onnx(model, dtype_dict="float16")["main"].params[0].struct_info.dtype == F


def test_unsupported_operators_are_all_named_in_one_error():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Det", ["a"], ["b"]),
             helper.make_node("Relu", ["b"], ["c"]), helper.make_node("ReverseSequence", ["c", "c"], ["d"]),
             helper.make_node("Det", ["d"], ["e"]),
             helper.make_node("MyOp", ["e"], ["f"], domain="my.domain")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("f", 1, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("my.domain", 1)])
    with pytest.raises(OpNotImplemented) as err:
        from_onnx(model)
    msg = str(err.value)
    assert "The following operators are not supported for frontend ONNX" in msg
    for name in ("Det", "ReverseSequence", "my.domain.MyOp"):
        assert name in msg
    assert msg.count("Det") == 1 and "Relu" not in msg


def test_refusals_name_the_node():
    model = model_of([helper.make_node("Reshape", ["x", "s"], ["y"], name="r1")], {"x": (F, [6]), "s": ("int64", [1])},
                     {"y": (F, [6])})
    with pytest.raises(ValueError, match="Reshape node 'r1'.*target shape.*run time"):
        from_onnx(model)
    old, _ = _linear_model()
    old.ir_version = 2
    with pytest.raises(ValueError, match="IR version 2"):
        from_onnx(old)
    with pytest.raises(TypeError, match="ModelProto"):
        from_onnx(old.graph)


def test_multiple_outputs_come_back_as_a_tuple():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])]
    model = model_of(nodes, {"x": (F, [3])}, {"a": (F, [3]), "b": (F, [3])})
    got = tvm_run(compile_vm(from_onnx(model)), model, inputs := random_inputs(model))
    for g, w in zip(got, ort_run(model, inputs)):
        np.testing.assert_array_equal(g, w)


def test_backend_case_runner_tallies_outcomes():
    """minitvm.testing.onnx_node_cases (the sweep over ONNX's own backend cases) on hand-made
    cases: one that passes, one whose expected output is wrong, one with an unknown operator."""
    from types import SimpleNamespace

    from minitvm.testing.onnx_node_cases import run_case

    model = model_of([helper.make_node("Relu", ["x"], ["y"])], {"x": (F, [5])}, {"y": (F, [5])})
    x = random_inputs(model)["x"]
    x[0] = -abs(x[0])  # relu and abs differ somewhere
    assert run_case(SimpleNamespace(model=model, data_sets=[([x], [np.maximum(x, 0)])])) == ("pass", "")
    outcome, _ = run_case(SimpleNamespace(model=model, data_sets=[([x], [np.abs(x)])]))
    assert outcome == "wrong values"
    unknown = model_of([helper.make_node("Det", ["x"], ["y"])], {"x": (F, [5, 5])}, {"y": (F, [])})
    assert run_case(SimpleNamespace(model=unknown, data_sets=[])) == ("unsupported operator", "Det.")


def test_kept_params_still_give_shapes_their_values():
    """With keep_params_in_input, a Reshape whose target is an initializer (as torch's exporter
    writes it) still imports: the value is read where needed, the parameter stays an input."""
    w = np.random.default_rng(1).standard_normal([6, 4]).astype(F)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Reshape", ["h", "target"], ["y"])]
    model = model_of(nodes, {"x": (F, [2, 6])}, {"y": (F, [4, 2])}, [init("w", w), init("target", np.array([4, 2]))])
    mod, params = relax.frontend.detach_params(from_onnx(model, keep_params_in_input=True))
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "target"]
    x = random_inputs(model)["x"]
    got = compile_vm(mod)["main"](minitvm.nd.array(x), *params["main"])
    np.testing.assert_allclose(got.numpy(), ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_backend_case_runner_can_freeze_integer_inputs():
    """A case passing a Reshape's target as an input is refused as it is, and passes once its
    small integer inputs are made constants (``--freeze-int-inputs``)."""
    from types import SimpleNamespace

    from minitvm.testing.onnx_node_cases import run_case

    model = model_of([helper.make_node("Reshape", ["x", "s"], ["y"])], {"x": (F, [2, 3]), "s": ("int64", [2])},
                     {"y": (F, [3, 2])})
    x = random_inputs(model)["x"]
    case = SimpleNamespace(model=model, data_sets=[([x, np.array([3, 2])], [x.reshape(3, 2)])])
    assert run_case(case)[0] == "refused"
    assert run_case(case, freeze_int_inputs=True) == ("pass", "")


def test_backend_case_docs_table_counts_passes_per_operator():
    """The docs table (``--markdown``): a case counts for every operator of its graph, per run."""
    from minitvm.testing.onnx_node_cases import markdown

    rows = [("a", ["Add", "Relu"], "pass", ""), ("b", ["Relu"], "wrong values", ""), ("c", ["Loop"],
            "unsupported operator", "Loop.")]
    tvm = [("a", ["Add", "Relu"], "pass", ""), ("b", ["Relu"], "pass", ""), ("c", ["Loop"], "pass", "")]
    table = markdown(rows, tvm=tvm)
    assert "| `Relu` | element-wise | 2 | 1 | 2 |" in table
    assert "| `Loop` | — | 1 | 0 | 1 |" in table
    assert "- TVM 0.27: 3 cases: pass 3" in table
