"""Visitors and mutators, the way the MLC course writes them."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.ir import Op, assert_structural_equal, structural_equal


def _add_multiply_module():
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv0 = bb.emit_output(relax.op.add(lv0, y))
        bb.emit_func_output(gv0)
    return bb.get()


@relax.expr_functor.mutator
class AddToMultiply(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        if call.op == Op.get("relax.add"):
            return relax.op.multiply(call.args[0], call.args[1])
        return call


@relax.expr_functor.mutator
class EwiseFMARewriter(relax.PyExprMutator):
    """The MLC course's rewrite: add(multiply(a, b), c) -> ewise_fma(a, b, c)."""

    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        add_op = tvm.ir.Op.get("relax.add")
        multiply_op = tvm.ir.Op.get("relax.multiply")
        ewise_fma_op = tvm.ir.Op.get("relax.ewise_fma")
        if call.op != add_op:
            return call
        value = self.lookup_binding(call.args[0])
        if not isinstance(value, relax.Call) or value.op != multiply_op:
            return call
        return relax.Call(ewise_fma_op, [value.args[0], value.args[1], call.args[1]], None, None)


def _ops(func):
    return [b.value.op.name for block in func.body.blocks for b in block.bindings]


def test_mutator_rewrites_add_to_multiply():
    mod = _add_multiply_module()
    new = AddToMultiply(mod).visit_expr(mod["main"])
    assert _ops(new) == ["relax.multiply", "relax.multiply"]
    assert _ops(mod["main"]) == ["relax.multiply", "relax.add"]  # the input is untouched
    assert new.body.blocks[0].bindings[1].value.struct_info is not None
    assert relax.analysis.well_formed(tvm.IRModule({"main": new}))
    # the same rewrite written with the builder gives the same function
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    y = relax.Var("y", relax.TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, y))
            gv0 = bb.emit_output(relax.op.multiply(lv0, y))
        bb.emit_func_output(gv0)
    assert_structural_equal(new, bb.get()["main"])


def test_mutator_without_changes_returns_the_same_object():
    mod = _add_multiply_module()
    assert relax.PyExprMutator().visit_expr(mod["main"]) is mod["main"]


def test_ewise_fma_rewrite_and_remove_all_unused():
    mod = _add_multiply_module()
    updated = EwiseFMARewriter().visit_expr(mod["main"])
    assert _ops(updated) == ["relax.multiply", "relax.ewise_fma"]
    cleaned = relax.analysis.remove_all_unused(updated)
    assert _ops(cleaned) == ["relax.ewise_fma"]
    fma = cleaned.body.blocks[0].bindings[0].value
    assert list(fma.args) == list(cleaned.params) + [cleaned.params[1]]


def test_mutator_with_module_adds_functions_through_the_builder():
    """The MLC fusion pattern: a new function per match, updated module from builder_.get()."""

    @relax.expr_functor.mutator
    class FuseMultiplyAdd(relax.PyExprMutator):
        def __init__(self, mod):
            super().__init__()
            self.mod_ = mod
            self.counter = 0

        def transform(self):
            for gv, func in self.mod_.functions.items():
                updated = relax.analysis.remove_all_unused(self.visit_expr(func))
                self.builder_.update_func(gv, updated)
            return self.builder_.get()

        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op != Op.get("relax.add"):
                return call
            value = self.lookup_binding(call.args[0])
            if not isinstance(value, relax.Call) or value.op != Op.get("relax.multiply"):
                return call
            a, b, c = value.args[0], value.args[1], call.args[1]
            params = [relax.Var(nm, relax.TensorStructInfo(e.struct_info.shape, e.struct_info.dtype))
                      for nm, e in zip("abc", (a, b, c))]
            bb = relax.BlockBuilder()
            name = f"fused_multiply_add{self.counter}"
            self.counter += 1
            with bb.function(name, params):
                with bb.dataflow():
                    lv = bb.emit(relax.op.multiply(params[0], params[1]))
                    gv = bb.emit_output(relax.op.add(lv, params[2]))
                bb.emit_func_output(gv)
            fused = bb.get()[name].with_attr("Primitive", 1)
            return relax.Call(self.builder_.add_func(fused, name), [a, b, c])

    new_mod = FuseMultiplyAdd(_add_multiply_module()).transform()
    assert sorted(new_mod.keys()) == ["fused_multiply_add0", "main"]
    (call,) = [b.value for block in new_mod["main"].body.blocks for b in block.bindings]
    assert call.op is new_mod.get_global_var("fused_multiply_add0")
    assert structural_equal(call.struct_info, relax.TensorStructInfo((3, 4), "float32"))
    assert relax.analysis.well_formed(new_mod)


def test_struct_info_change_creates_a_new_var_and_remaps_uses():
    mod = _add_multiply_module()

    @relax.expr_functor.mutator
    class MultiplyToRowSum(relax.PyExprMutator):
        """multiply(x, y) of shape (3, 4) -> matmul(x, ones(4, 1)) of shape (3, 1)."""

        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op == Op.get("relax.multiply"):
                return relax.op.matmul(call.args[0], relax.const([[1.0]] * 4))
            return call

    old_first = mod["main"].body.blocks[0].bindings[0]
    new = MultiplyToRowSum().visit_expr(mod["main"])
    first, second = new.body.blocks[0].bindings
    assert [v.value for v in first.var.struct_info.shape.values] == [3, 1]
    assert first.var is not old_first.var and first.var.name_hint == old_first.var.name_hint
    assert second.value.args[0] is first.var  # later uses see the new variable
    assert [v.value for v in new.ret_struct_info.shape.values] == [3, 4]  # add broadcasts back


def test_visitor_counts_calls_and_defs():
    @relax.expr_functor.visitor
    class Counter(relax.PyExprVisitor):
        def __init__(self):
            self.calls, self.defs = [], []

        def visit_call_(self, call):
            self.calls.append(call.op.name)
            super().visit_call_(call)

        def visit_var_def_(self, var):
            self.defs.append(var.name_hint)

        def visit_dataflow_var_def_(self, var):
            self.defs.append("df:" + var.name_hint)

    c = Counter()
    c.visit_expr(_add_multiply_module()["main"])
    assert c.calls == ["relax.multiply", "relax.add"]
    assert c.defs == ["x", "y", "df:lv", "gv"]


def test_decorators_check_the_base_class():
    with pytest.raises(TypeError, match="PyExprMutator"):
        relax.expr_functor.mutator(type("NotAMutator", (), {}))
    with pytest.raises(TypeError, match="PyExprVisitor"):
        relax.expr_functor.visitor(type("NotAVisitor", (), {}))
