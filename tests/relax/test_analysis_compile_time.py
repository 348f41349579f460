"""relax.analysis.computable_at_compile_time: weights after ``num_input`` and what only they
(and the symbolic variables they define) compute."""

from __future__ import annotations

import pytest

from minitvm import relax
from minitvm.script import relax as R
from minitvm.script import tir as T


def _names(func):
    return [v.name_hint for v in relax.analysis.computable_at_compile_time(func)]


def test_without_num_input_nothing_is_known():
    @R.function
    def func(A: R.Tensor([16], "int32"), B: R.Tensor([16], "int32")):
        C = R.add(A, B)
        return C

    assert _names(func) == []


def test_weights_and_bindings_reading_only_weights():
    @R.function
    def func(A: R.Tensor([16], "int32"), B: R.Tensor([16], "int32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            C = R.add(A, A)
            D = R.add(B, B)
            E = R.add(C, D)
            R.output(E)
        return E

    assert _names(func) == ["B", "D"]


def test_symbolic_variables_follow_their_definition():
    # m comes from the weight B (directly or by match_cast); n only from the input A
    @R.function
    def func(A: R.Tensor(["n"], "int32"), B: R.Tensor(ndim=1, dtype="int32")):
        R.func_attr({"num_input": 1})
        n = T.int64()
        m = T.int64()
        B2 = R.match_cast(B, R.Tensor([m], "int32"))  # noqa: F841 - a binding the analysis lists
        C = R.ones([m], "int32")
        D = R.ones([n], "int32")
        E = (C, D)
        return E

    assert _names(func) == ["B", "B2", "C"]


def test_refuses_a_module():
    with pytest.raises(TypeError, match="expected a relax.Function"):
        relax.analysis.computable_at_compile_time(object())
