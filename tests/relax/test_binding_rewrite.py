"""relax.binding_rewrite.DataflowBlockRewrite: edits of one dataflow block that keep the
function well formed, and the refusals that protect it."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.error import TVMError
from minitvm.relax.analysis import name_to_binding
from minitvm.relax.binding_rewrite import DataflowBlockRewrite
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(x, x)  # noqa: F841 - unused until a test redirects a use to it
            c = R.add(a, x)
            R.output(c)
        return c


def _rewriter():
    fn = Module["main"]
    return DataflowBlockRewrite(fn.body.blocks[0], fn), name_to_binding(fn)


def test_redirect_then_remove_and_run():
    rwt, n2b = _rewriter()
    a, b = n2b["a"][0].var, n2b["b"][0].var
    with pytest.raises(TVMError, match="is used by 1 vars"):
        rwt.remove_unused(a)
    rwt.replace_all_uses(a, b)  # c = b + x
    rwt.remove_unused(a)
    new = rwt.mutate_irmodule(Module)
    assert "a" not in name_to_binding(new["main"])
    assert Module["main"].body.blocks[0].bindings[0].var.name_hint == "a"  # the original is untouched
    vm = relax.VirtualMachine(minitvm.compile(new, "llvm"), minitvm.cpu())
    x = np.random.default_rng(0).standard_normal(4).astype("float32")
    np.testing.assert_allclose(vm["main"](minitvm.runtime.tensor(x)).numpy(), x * x + x, rtol=1e-6)


def test_add_goes_after_what_it_reads_and_unused_go_away():
    rwt, n2b = _rewriter()
    b = n2b["b"][0].var
    rwt.add(relax.BlockBuilder().normalize(relax.op.subtract(b, b)), name="d", is_dfvar=True)
    names = [bnd.var.name_hint for bnd in rwt.mutated_dfb().bindings]
    assert names == ["a", "b", "d", "c"]
    assert isinstance(rwt.mutated_dfb().bindings[2].var, relax.DataflowVar)
    rwt.remove_all_unused()  # d, then b (read only by d)
    assert [bnd.var.name_hint for bnd in rwt.mutated_dfb().bindings] == ["a", "c"]


def test_refusals():
    rwt, n2b = _rewriter()
    stranger = relax.Var("whatever", R.Tensor((4,), "float32"))
    with pytest.raises(TVMError, match="undefined"):
        rwt.remove_unused(stranger)
    rwt.remove_unused(stranger, allow_undef=True)
    assert rwt.mutated_root_fn() is Module["main"]
    with pytest.raises(TVMError, match="cannot find whatever"):
        rwt.replace_all_uses(n2b["a"][0].var, stranger)
    with pytest.raises(TVMError, match="has been defined"):
        rwt.add_binding(n2b["a"][0])
