"""Symbolic dimensions written as bare names in a signature, as TVM allows.

Python 3.11 evaluates annotations when it runs ``def``, so a bare ``n`` defined nowhere
works in a decorated function only under ``from __future__ import annotations`` (the
parser reads the annotation from the source); text given to ``from_source`` needs nothing.
"""
# ruff: noqa: F821

from __future__ import annotations

from minitvm import ir, tir
from minitvm.script import from_source
from minitvm.script import relax as R


@R.function
def bare(x: R.Tensor((n, 784), "float32"), w: R.Tensor((784, m), "float32")) -> R.Tensor((n, m), "float32"):
    y = R.matmul(x, w)
    return y


def test_bare_names_declare_int64_dimensions():
    n, k = bare.params[0].struct_info.shape_values
    assert isinstance(n, tir.Var) and n.name == "n" and n.dtype == "int64"
    m = bare.params[1].struct_info.shape_values[1]
    assert bare.ret_struct_info.shape_values[0] is n and bare.ret_struct_info.shape_values[1] is m
    ir.assert_structural_equal(bare, from_source(bare.script()))


def test_bare_names_in_text():
    f = from_source(
        "@R.function\n"
        "def f(x: R.Tensor((batch, 4), \"float32\")):\n"
        "    y = R.add(x, x)\n"
        "    return y\n")
    batch = f.params[0].struct_info.shape_values[0]
    assert f.body.blocks[0].bindings[0].var.struct_info.shape_values[0] is batch
