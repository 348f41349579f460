"""PyStmtExprVisitor / PyStmtExprMutator and @tir.functor.visitor / mutator (TVM's Python
functors): every visit_<node>_ hook exists, so ``super().visit_add_(op)`` goes on into children."""

import pytest

from minitvm import tir
from minitvm.tir import Add, Evaluate, For, IntImm, Mul, PyStmtExprMutator, PyStmtExprVisitor, Sub, Var


@tir.functor.visitor
class CountVarsUnderAdds(PyStmtExprVisitor):
    def __init__(self):
        super().__init__()
        self.vars, self.adds = 0, 0

    def visit_var_(self, op):
        self.vars += 1

    def visit_add_(self, op):
        self.adds += 1
        super().visit_add_(op)


@tir.functor.mutator
class AddToSub(PyStmtExprMutator):
    def visit_add_(self, op):
        return Sub(self.visit_expr(op.a), self.visit_expr(op.b))

    def visit_for_(self, op):
        return super().visit_for_(op)


def test_visitor_and_mutator_reach_into_children_through_super():
    x, y = Var("x", ty="int32"), Var(name_hint="y", dtype="int32")
    assert x.dtype == y.dtype == "int32" and y.name == "y"
    with pytest.raises(TypeError, match="name must be a str"):
        Var(name=1, ty="int32")
    counter = CountVarsUnderAdds()
    counter.visit_stmt(Evaluate(Add(x, Add(y, IntImm("int32", 1)))))
    assert (counter.vars, counter.adds) == (2, 2)
    loop = For(Var("i", "int32"), IntImm("int32", 0), IntImm("int32", 4), tir.ForKind.SERIAL,
               Evaluate(Add(x, Mul(y, IntImm("int32", 3)))))
    out = AddToSub().visit_stmt(loop)
    assert isinstance(out, For) and isinstance(out.body.value, Sub) and isinstance(out.body.value.b, Mul)
    assert AddToSub().visit_stmt(Evaluate(Mul(x, y))).value.a is x  # unchanged nodes are kept


def test_the_decorators_take_only_their_base_classes():
    with pytest.raises(TypeError, match="subclass of StmtExprMutator"):
        tir.functor.mutator(CountVarsUnderAdds)


def test_each_visitor_class_dispatches_to_its_own_hooks():
    # the walks remember a class's hook per node class: a subclass, and a class that defines no
    # hook for a node, must not see another class's answer
    from minitvm.tir.functor import StmtExprVisitor

    class Vars(StmtExprVisitor):
        def __init__(self):
            self.seen = []

        def visit_var_(self, op):
            self.seen.append(op.name)

    class Upper(Vars):
        def visit_var_(self, op):
            self.seen.append(op.name.upper())

    class Adds(StmtExprVisitor):
        def __init__(self):
            self.seen = []

        def visit_add_(self, op):
            self.seen.append("add")
            self.visit_children(op)

    x, y = Var("x", "int32"), Var("y", "int32")
    stmt = Evaluate(Add(x, Mul(y, IntImm("int32", 2))))
    walks = [(cls, cls()) for cls in (Vars, Upper, Adds, Vars)]
    for _, v in walks:
        v.visit(stmt)
    assert [v.seen for _, v in walks] == [["x", "y"], ["X", "Y"], ["add"], ["x", "y"]]
