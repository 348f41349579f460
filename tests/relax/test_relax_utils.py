"""relax.utils: convert_to_expr and the args_converter decorators (TVM's names)."""

from __future__ import annotations

from typing import List, Optional

import pytest

from minitvm import relax
from minitvm.relax import Expr
from minitvm.relax.utils import args_converter, convert_to_expr


def test_convert_to_expr_by_kind():
    assert isinstance(convert_to_expr(3), relax.PrimValue) and convert_to_expr(3).value.dtype == "int64"
    assert convert_to_expr(2.5).value.dtype == "float64"
    assert isinstance(convert_to_expr("s"), relax.StringImm)
    nested = convert_to_expr((relax.const(1), (1, 2)))
    assert isinstance(nested, relax.Tuple) and isinstance(nested.fields[1], relax.Tuple)
    assert isinstance(convert_to_expr(()), relax.Tuple) and len(convert_to_expr(()).fields) == 0
    with pytest.raises(TypeError, match="Cannot convert"):
        convert_to_expr(object())


def test_args_converter_converts_named_and_annotated_arguments():
    seen = {}

    @args_converter.auto
    def f(a: Expr, b: Optional[List[Expr]], *rest: Expr, n: int = 0, **kw: Expr):
        seen.update(a=a, b=b, rest=rest, n=n, kw=kw)

    f(1, [2, "x"], 3.0, n=4, k=(1,))
    assert isinstance(seen["a"], relax.PrimValue) and all(isinstance(v, Expr) for v in seen["b"])
    assert isinstance(seen["rest"][0], relax.PrimValue) and seen["n"] == 4  # an int parameter stays an int
    assert isinstance(seen["kw"]["k"], relax.Tuple)
    f(1, None)
    assert seen["b"] is None
    g = args_converter.to_list_expr("x")(lambda x: x)
    with pytest.raises(TypeError, match="List\\[Expr\\]"):
        g(5)
    with pytest.raises(ValueError, match="not found"):
        args_converter.to_expr("y")(lambda x: x)
