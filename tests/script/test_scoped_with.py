"""``with T.LetStmt(v) as x:`` and ``with T.allocate(...) as buf:``: statements scoped to the
``with`` body (TVM's spelling when more statements follow them)."""

import numpy as np

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T


def _round_trips(func):
    text = func.script()
    reparsed = from_source(text)
    assert_structural_equal(reparsed, func)
    assert reparsed.script() == text
    return text


@T.prim_func
def staged(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.allocate([4], "float32", "global") as tmp:
            for j in range(4):
                tmp[j] = A[i * 4 + j] + T.float32(1)
            for j in range(4):
                B[i * 4 + j] = tmp[3 - j]
        with T.LetStmt(i * 4) as base:
            B[base] = B[base] * T.float32(2)
        B[i * 4 + 1] = B[i * 4 + 1] - T.float32(1)


def test_scoped_allocate_and_let_round_trip():
    text = _round_trips(staged)
    assert 'with T.allocate([4], "float32", "global") as tmp:' in text
    assert "with T.LetStmt(i * 4) as base:" in text
    loop_body = staged.body.body
    assert isinstance(loop_body, tir.SeqStmt) and len(loop_body) == 3
    assert isinstance(loop_body[0], tir.Allocate) and isinstance(loop_body[1], tir.LetStmt)
    assert loop_body[1].var.name == "base"


def test_scoped_statements_compute_what_they_say():
    a = np.random.default_rng(9).standard_normal(16).astype("float32")
    b = minitvm.nd.array(np.zeros(16, "float32"))
    minitvm.build(staged, target="llvm")["staged"](minitvm.nd.array(a), b)
    expected = (a.reshape(4, 4) + 1)[:, ::-1].copy()
    expected[:, 0] *= 2
    expected[:, 1] -= 1
    np.testing.assert_allclose(b.numpy(), expected.ravel(), rtol=1e-6)
