"""IRModule.from_expr names the function as TVM does: ``global_symbol``, else ``main``."""

from minitvm import IRModule, relax
from minitvm.script import relax as R


def test_from_expr_takes_the_global_symbol():
    x = relax.Var("x", R.Tensor((2,), "float32"))
    f = relax.Function([x], x)
    assert [gv.name_hint for gv in IRModule.from_expr(f).functions] == ["main"]
    named = f.with_attr("global_symbol", "func")
    assert [gv.name_hint for gv in IRModule.from_expr(named).functions] == ["func"]
    assert [gv.name_hint for gv in IRModule.from_expr(named, "other").functions] == ["other"]
