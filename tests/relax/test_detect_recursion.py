"""relax.analysis.detect_recursion: the cycles of a module's call graph (references count,
PrimFuncs do not)."""

from __future__ import annotations

from minitvm.relax.analysis import detect_recursion
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

# ruff: noqa: F821 - `cls` is TVMScript's name for the module being defined


@I.ir_module
class Calls:
    @R.function
    def a(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        return cls.b(x)

    @R.function
    def b(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        return cls.a(x)

    @R.function
    def c(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        y = cls.c(x)  # calls itself
        z = cls.a(y)  # and the a-b group, which never calls back
        return z

    @R.function
    def d(x: R.Tensor((), "int32")) -> R.Callable:
        return cls.e  # a reference, not a call

    @R.function
    def e(x: R.Tensor((), "int32")) -> R.Callable:
        f = cls.d
        return f

    @R.function
    def main(x: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
        _ = R.call_tir(cls.k, (x,), out_sinfo=R.Tensor((), "int32"))
        return cls.c(x)

    @T.prim_func
    def k(x: T.Buffer((), "int32"), y: T.Buffer((), "int32")):
        y[()] = x[()]


def test_groups_are_the_cycles():
    groups = sorted(sorted(gv.name_hint for gv in g) for g in detect_recursion(Calls))
    assert groups == [["a", "b"], ["c"], ["d", "e"]]
