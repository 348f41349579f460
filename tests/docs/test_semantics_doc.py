"""docs/semantics.md is executable: every row of its table computes the documented value in the
interpreter and in LLVM code (scalar and vectorized loops)."""

import re
from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm.testing.fuzz import OpCase

DOC = Path(__file__).resolve().parents[2] / "docs" / "semantics.md"
ROW = re.compile(r"^\| ([^|]+?) \| `([^`]+)` \| (\w+) \| `([^`]+)` \| `([^`]+)`[^|]*\|", re.M)
ROWS = ROW.findall(DOC.read_text())


def _case(expression: str, dtype: str, n: int, vectorized: bool) -> OpCase:
    cast = re.fullmatch(r'cast\("(\w+)", x\)', expression)
    if cast:
        return OpCase("cast", dtype, seed=0, n=n, vectorized=vectorized, to=cast.group(1))
    call = re.fullmatch(r"(min|max)\(x, y\)|(exp)\(x\)", expression)
    assert call, f"docs/semantics.md: no test reading for the expression {expression!r}"
    return OpCase(call.group(1) or call.group(2), dtype, seed=0, n=n, vectorized=vectorized)


def test_the_table_covers_the_decided_float_edges():
    edges = {edge for edge, *_ in ROWS}
    assert {"NaN → int", "min of signed zeros", "exp underflow", "float64 → float16"} <= edges
    assert len(ROWS) >= 12


@pytest.mark.parametrize("target", ["python", "llvm"])
@pytest.mark.parametrize("edge, expression, dtype, operands, value", ROWS,
                         ids=[f"{r[0]}:{r[3]}" for r in ROWS])
def test_each_documented_edge_computes_its_value(edge, expression, dtype, operands, value, target):
    n = 8  # one value repeated: the vectorized loop runs it in every lane
    inputs = [np.full(n, float(v), dtype) for v in operands.split(", ")]
    for vectorized in (False, True):
        case = _case(expression, dtype, n, vectorized)
        want = np.full(n, float(value) if "." in value or "e" in value or value == "nan" else int(value),
                       case.result_dtype())
        got = np.zeros(n, case.result_dtype())
        minitvm.build(case.build(), target=target)["main"](*inputs, got)
        where = f"{edge}: {expression} on {operands} ({target}, vectorized={vectorized})"
        if np.issubdtype(got.dtype, np.floating):
            assert (np.isnan(got) == np.isnan(want)).all(), f"{where}: {got[0]}, documented {value}"
            ok = ~np.isnan(want)
            np.testing.assert_array_max_ulp(got[ok], want[ok], maxulp=1 if expression.startswith("exp") else 0)
            assert (np.signbit(got) == np.signbit(want)).all(), f"{where}: {got[0]}, documented {value}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
