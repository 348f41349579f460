"""The passes that lower Relax to what the VM code generator emits, each on its own."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.relax import transform
from minitvm.relax.transform import memory_plan
from minitvm.relax.vm import module_text
from minitvm.relax.vm.ops import ALLOC_TENSOR, MEMORY_ALLOC_TENSOR

from ..vm.mlp_models import mlp_call_tir, mlp_emit_te, te_relu


def _lines(mod, name="main"):
    """The body of ``name`` in the text dump, one stripped line per binding, up to its return."""
    body = module_text(mod).split(f"def {name}(")[1].split("\n    return ")[0]
    ret = module_text(mod).split(f"def {name}(")[1].split("\n    return ")[1].splitlines()[0]
    return [line.strip() for line in body.splitlines()[1:]] + [f"return {ret}"]


def test_to_non_dataflow_removes_dataflow_blocks_and_vars():
    mod = transform.ToNonDataflow()(mlp_call_tir())
    text = module_text(mod)
    assert "R.dataflow" not in text
    func = mod["main"]
    assert all(type(b) is relax.BindingBlock for b in func.body.blocks)
    assert not any(isinstance(b.var, relax.DataflowVar) for blk in func.body.blocks for b in blk.bindings)
    assert relax.analysis.well_formed(mod)


def test_call_tir_rewrite_golden():
    mod = transform.CallTIRRewrite()(transform.ToNonDataflow()(mlp_call_tir()))
    assert _lines(mod) == [
        'alloc: R.Tensor((1, 128), "float32") = R.builtin.alloc_tensor(R.shape([1, 128]), '
        'R.dtype("float32"), R.prim_value(0))',
        '_: R.Tuple() = cls.linear0(x, w0, b0, alloc)',
        'lv: R.Tensor((1, 128), "float32") = alloc',
        'alloc1: R.Tensor((1, 128), "float32") = R.builtin.alloc_tensor(R.shape([1, 128]), '
        'R.dtype("float32"), R.prim_value(0))',
        '_1: R.Tuple() = cls.relu0(lv, alloc1)',
        'lv1: R.Tensor((1, 128), "float32") = alloc1',
        'alloc2: R.Tensor((1, 10), "float32") = R.builtin.alloc_tensor(R.shape([1, 10]), '
        'R.dtype("float32"), R.prim_value(0))',
        '_2: R.Tuple() = cls.linear1(lv1, w1, b1, alloc2)',
        'lv2: R.Tensor((1, 10), "float32") = alloc2',
        'gv: R.Tensor((1, 10), "float32") = lv2',
        'return gv',
    ]


def test_call_tir_rewrite_works_inside_dataflow_blocks_too():
    mod = transform.CallTIRRewrite()(mlp_call_tir())
    assert "R.call_tir" not in module_text(mod) and "R.dataflow" in module_text(mod)


def _count_ops(func, name):
    return sum(isinstance(b.value, relax.Call) and getattr(b.value.op, "name", None) == name
               for blk in func.body.blocks for b in blk.bindings)


def test_static_plan_block_memory_golden_and_counts():
    lowered = transform.CallTIRRewrite()(transform.ToNonDataflow()(mlp_call_tir()))
    before = _count_ops(lowered["main"], ALLOC_TENSOR)
    plan = memory_plan(lowered["main"], lowered)
    # alloc is still read by relu0 when alloc1 is made: two storages; alloc2 is returned
    assert str(plan).splitlines() == [
        "memory plan of main: 2 tensors in 2 storages (1024 bytes)",
        "  storage (512 bytes, float32): alloc",
        "  storage1 (512 bytes, float32): alloc1",
        "  not planned (own memory): alloc2",
    ]
    planned = transform.StaticPlanBlockMemory()(lowered)
    assert (before, _count_ops(planned["main"], ALLOC_TENSOR), _count_ops(planned["main"], MEMORY_ALLOC_TENSOR)) \
        == (3, 1, 2)
    lines = _lines(planned)
    # each storage is allocated right before its first tensor, sized in bytes, with the tensor's dtype
    assert lines[:2] == [
        'storage: R.Object = R.memory.alloc_storage(R.shape([512]), R.prim_value(0), R.str("global"), '
        'R.dtype("float32"))',
        'alloc: R.Tensor((1, 128), "float32") = R.memory.alloc_tensor(storage, R.prim_value(0), '
        'R.shape([1, 128]), R.dtype("float32"), R.prim_value(0))',
    ]
    assert lines[4].startswith("storage1: R.Object = R.memory.alloc_storage(R.shape([512])")


def _relu_chain(length, shape=(4, 64)):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = x
            for _ in range(length):
                lv = bb.emit_te(te_relu, lv)
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    return transform.CallTIRRewrite()(transform.ToNonDataflow()(bb.get()))


def test_static_plan_reuses_a_storage_once_its_tensor_is_dead():
    mod = _relu_chain(6)
    assert str(memory_plan(mod["main"], mod)).splitlines()[1:] == [
        "  storage (1024 bytes, float32): alloc, alloc2, alloc4",
        "  storage1 (1024 bytes, float32): alloc1, alloc3",
        "  not planned (own memory): alloc5",
    ]


def test_static_plan_needs_the_callee_to_be_a_primfunc_of_the_module():
    # without the module the callee may keep its arguments: nothing is planned
    mod = _relu_chain(3)
    assert memory_plan(mod["main"]).num_allocations == 0


def test_static_plan_sizes_symbolic_shapes_symbolically():
    n = tir.Var("n", "int64")
    lowered = transform.CallTIRRewrite()(transform.ToNonDataflow()(mlp_emit_te(n)))
    plan = memory_plan(lowered["main"], lowered)
    assert str(plan).splitlines() == [
        "memory plan of main: 2 tensors in 2 storages",
        "  storage (T.int64(512) * n bytes, float32): alloc",
        "  storage1 (T.int64(512) * n bytes, float32): alloc1",
        "  not planned (own memory): alloc2",
    ]


def _bounded_relu_chain(attrs):
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], attrs=attrs):
        lv = x
        for _ in range(4):
            lv = bb.emit_te(te_relu, lv)
        bb.emit_func_output(lv)
    return transform.CallTIRRewrite()(bb.get())


def test_static_plan_uses_the_upper_bound_of_a_symbolic_dimension():
    mod = _bounded_relu_chain({"tir_var_upper_bound": {"n": 16}})
    assert str(memory_plan(mod["main"], mod)).splitlines()[:3] == [
        "memory plan of main: 3 tensors in 2 storages (1024 bytes)",
        "  storage (512 bytes, float32): alloc, alloc2",
        "  storage1 (512 bytes, float32): alloc1",
    ]
    with pytest.raises(TypeError, match="tir_var_upper_bound.*must be an integer"):
        memory_plan(_bounded_relu_chain({"tir_var_upper_bound": {"n": "big"}})["main"], mod)


def test_static_plan_of_bounded_symbolic_shapes_runs(tmp_path):
    mod = _bounded_relu_chain({"tir_var_upper_bound": {"n": 16}, "relax.memory_plan_dynamic_func_output": True})
    planned = transform.StaticPlanBlockMemory()(mod)
    assert _count_ops(planned["main"], ALLOC_TENSOR) == 0  # even the result has an upper-bound storage
    assert "relax.memory_plan_dynamic_func_output" not in planned["main"].attrs
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    x = np.random.default_rng(3).standard_normal((5, 8)).astype("float32")
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), np.maximum(x, 0))


def test_tensors_held_in_a_returned_tuple_escape():
    x = relax.Var("x", relax.TensorStructInfo((2, 2), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit_te(te_relu, x)
            b = bb.emit_te(te_relu, a)
            gv = bb.emit_output(relax.Tuple([a, b]))
        bb.emit_func_output(gv)
    lowered = transform.CallTIRRewrite()(bb.get())
    plan = memory_plan(lowered["main"], lowered)
    assert plan.num_allocations == 0 and plan.not_planned == ["alloc", "alloc1"]


def test_vm_builtin_lower_golden():
    mod = transform.ToNonDataflow()(mlp_call_tir())
    mod = transform.VMBuiltinLower()(transform.CallTIRRewrite()(mod))
    assert _lines(mod)[:3] == [
        'storage: R.Object = R.ExternFunc("vm.builtin.alloc_storage")(R.shape([1, 128]), R.dtype("float32"), '
        'sinfo_args=R.Object)',
        'alloc: R.Tensor((1, 128), "float32") = R.ExternFunc("vm.builtin.alloc_tensor")(storage, R.prim_value(0), '
        'R.shape([1, 128]), R.dtype("float32"), sinfo_args=R.Tensor((1, 128), "float32"))',
        '_: R.Tuple() = cls.linear0(x, w0, b0, alloc)',
    ]


def test_vm_builtin_lower_refuses_call_tir_and_high_level_ops():
    with pytest.raises(ValueError, match="run CallTIRRewrite first"):
        transform.VMBuiltinLower()(mlp_call_tir())
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, x)))
    with pytest.raises(ValueError, match="operator relax.add has no VM lowering; run LegalizeOps first"):
        transform.VMBuiltinLower()(bb.get())


def test_vm_shape_lower_golden():
    n = tir.Var("n", "int64")
    mod = mlp_emit_te(n)
    for p in (transform.ToNonDataflow(), transform.CallTIRRewrite(), transform.StaticPlanBlockMemory(),
              transform.VMBuiltinLower(), transform.VMShapeLower()):
        mod = p(mod)
    lines = _lines(mod)
    assert lines[:3] == [
        # two slots: n, and the storage size 512 * n computed from it
        'shape_heap: R.Object = R.ExternFunc("vm.builtin.alloc_shape_heap")(R.prim_value(2), sinfo_args=R.Object)',
        '_: R.Object = R.ExternFunc("vm.builtin.check_tensor_info")(x, R.prim_value(2), R.str("float32"), '
        'R.str("main: argument \'x\'"), sinfo_args=R.Object)',
        # match_shape codes (TVM's): 1 = store n into slot 0, 0 = the constant 784
        '_1: R.Object = R.ExternFunc("vm.builtin.match_shape")(x, shape_heap, R.prim_value(2), R.prim_value(1), '
        'R.prim_value(0), R.prim_value(0), R.prim_value(784), R.str("main: argument \'x\'"), sinfo_args=R.Object)',
    ]
    # make_shape codes: 1 = load slot 0, 0 = the constant 128
    assert ('shape1: R.Shape((n, 128)) = R.ExternFunc("vm.builtin.make_shape")(shape_heap, R.prim_value(2), '
            'R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(128), sinfo_args=R.Shape((n, 128)))') \
        in lines
    assert sum("make_shape" in line for line in lines) == 3  # one per distinct shape
    again = transform.VMShapeLower()(mod)
    assert again is mod


def test_vm_shape_lower_computes_shape_expressions():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(relax.call_dps_packed("env.twice", (x,), relax.TensorStructInfo((n * 2,), "float32")))
        bb.emit_func_output(out)
    mod = transform.VMShapeLower()(transform.VMBuiltinLower()(transform.CallTIRRewrite()(bb.get())))
    text = mod.script()
    # n * 2 gets its own slot (1), computed from n's slot (0) in postfix, then loaded like a variable
    assert "vm.builtin.eval_shape_expr" in text and '"vm.builtin.alloc_shape_heap", R.prim_value(2)' in text

    @minitvm.register_func("env.twice", override=True)
    def twice(a, out):
        out.copyfrom(np.concatenate([a.numpy(), a.numpy()]))

    ex = relax.build(mod, "llvm", relax_pipeline=None)
    data = np.random.default_rng(0).random(5).astype("float32")
    result = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(data))
    np.testing.assert_array_equal(result.numpy(), np.concatenate([data, data]))


def test_vm_shape_lower_names_undefined_symbols():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(relax.call_dps_packed("env.twice", (x,), relax.TensorStructInfo((n * m,), "float32")))
        bb.emit_func_output(out)
    mod = transform.VMBuiltinLower()(transform.CallTIRRewrite()(bb.get()))
    with pytest.raises(NotImplementedError, match=r"main: the dimension n \* m uses m, which no parameter"):
        transform.VMShapeLower()(mod)


def test_vm_checks_argument_dimensions_that_are_expressions():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n,), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((n * 2 + 1,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        out = bb.emit(relax.op.sum(y))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(minitvm.compile(bb.get(), "llvm"), minitvm.cpu())
    rng = np.random.default_rng(1)
    a, b = rng.random(3).astype("float32"), rng.random(7).astype("float32")
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy(), b.sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="dimension 0 is 6, but the same symbolic dimension was 7"):
        vm["main"](minitvm.nd.array(a), minitvm.nd.array(b[:6]))


def test_pipelines():
    zero = relax.get_pipeline("zero")
    names = [p.info.name for p in zero.passes]
    # as TVM's zero pipeline: legalize, annotate, fold, fuse; the lowering to the VM is relax.build's
    assert names == ["LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR"]
    assert [p.info.name for p in relax.pipeline.vm_lowering_passes()] == [
        "RewriteDataflowReshape", "ToNonDataflow", "CallTIRRewrite", "StaticPlanBlockMemory", "VMBuiltinLower",
        "VMShapeLower"]
    ex = relax.build(zero(mlp_call_tir()), "llvm", relax_pipeline=None)
    assert "fused_linear0_relu0 (kernel)" in ex.as_text()
    with pytest.raises(ValueError, match="unknown pipeline 'fast'"):
        relax.get_pipeline("fast")
    relax.register_pipeline("test.only_lowering",
                            lambda: minitvm.transform.Sequential(relax.pipeline.vm_lowering_passes()), override=True)
    assert relax.build(mlp_call_tir(), relax_pipeline="test.only_lowering").vm_functions["main"]
    with pytest.raises(ValueError, match="already registered"):
        relax.register_pipeline("zero", relax.pipeline.zero_pipeline)


def test_vm_shape_lower_computes_shapes_again_in_the_other_branch():
    """A shape built from the heap in one branch of an If is not there when the other branch
    runs: each branch builds its own (regression: the else branch read the then branch's)."""
    from minitvm.script import ir as I
    from minitvm.script import relax as R

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32"), c: R.Tensor((), "bool")):
            if c:
                r = R.multiply(R.add(x, x), x)
            else:
                r = R.negative(x)
            return r

    vm = relax.VirtualMachine(minitvm.compile(Mod, "llvm"), minitvm.cpu())
    x = np.random.default_rng(4).standard_normal((3, 4)).astype("float32")
    for c, want in ((True, 2 * x * x), (False, -x)):
        np.testing.assert_allclose(vm["main"](minitvm.nd.array(x), minitvm.nd.array(np.array(c))).numpy(), want,
                                   rtol=1e-6)
