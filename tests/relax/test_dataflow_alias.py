"""Liveness and aliasing in a dataflow block (the analyses behind TVM's in-place rewrite)."""

from __future__ import annotations

import pytest

from minitvm import relax
from minitvm.relax.testing.transform import dataflow_alias_analysis, dataflow_liveness_analysis
from minitvm.script import relax as R


@R.function
def main(x: R.Tensor((60,), "int32")) -> R.Tensor((15,), "int32"):
    with R.dataflow():
        y = x                       # an alias of x
        t = R.split(y, 4)           # a fresh tuple of four fresh tensors
        a = t[1]
        r = R.reshape(a, (3, 5))    # a view: the memory of a
        s = R.add(r, r)             # fresh
        n = R.reshape(s, (15,))
        R.output(n)
    return n


def test_liveness():
    ranges = {v.name_hint: r for v, r in dataflow_liveness_analysis(main.body.blocks[0]).items()}
    # x is defined before the block and read until its end (not a DataflowVar); n is an output
    assert ranges == {"x": (-1, 6), "y": (0, 1), "t": (1, 1), "a": (2, 3), "r": (3, 4), "s": (4, 5), "n": (5, 6)}


def test_aliases_follow_copies_views_and_tuple_fields():
    sets, tuples = dataflow_alias_analysis(main.body.blocks[0], main.params)
    names = {v.name_hint: s for v, s in sets.items()}
    assert names == {"x": {0}, "y": {0}, "t": {1}, "a": {3}, "r": {3}, "s": {6}, "n": {6}}
    assert tuples == {1: [{2}, {3}, {4}, {5}]}


def test_the_rewrite_itself_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="DataflowUseInplaceCalls is not implemented"):
        relax.transform.DataflowUseInplaceCalls()
