"""viz.memory_plan: the tensors, their storages and lifetimes after StaticPlanBlockMemory."""

from __future__ import annotations

import re

import pytest

from minitvm import relax, viz
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Mlp:
    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((784, 128), "float32"), b0: R.Tensor((128,), "float32"),
             w1: R.Tensor((128, 10), "float32"), b1: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w0)
            lv1 = R.add(lv0, b0)
            lv2 = R.nn.relu(lv1)
            lv3 = R.matmul(lv2, w1)
            gv = R.add(lv3, b1)
            R.output(gv)
        return gv


def _planned(mod):
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.CallTIRRewrite()(relax.transform.ToNonDataflow()(mod))
    return relax.transform.StaticPlanBlockMemory()(mod)


def test_tensors_storages_and_lifetimes():
    pic = viz.memory_plan(_planned(Mlp))
    assert pic.steps == ["matmul", "add", "relu", "matmul1", "add1"]
    assert [t.name for t in pic.tensors] == ["lv0", "lv1", "lv2", "lv3", "gv"]
    # two storages, used alternately: each tensor is dead once the next kernel has read it
    assert [(s.name, s.nbytes, s.tensors) for s in pic.storages] == [
        ("storage", 512, ["lv0", "lv2"]), ("storage1", 512, ["lv1", "lv3"])]
    spans = {t.name: (t.first, t.last, t.returned, t.storage) for t in pic.tensors}
    assert spans == {"lv0": (0, 1, False, "storage"), "lv1": (1, 2, False, "storage1"),
                     "lv2": (2, 3, False, "storage"), "lv3": (3, 4, False, "storage1"),
                     "gv": (4, 4, True, None)}
    assert pic.num_storages == 2


def test_svg_names_every_tensor_and_storage_and_fits_a_notebook():
    pic = viz.memory_plan(_planned(Mlp))
    svg = pic._repr_svg_()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    width = int(re.search(r'width="(\d+)"', svg).group(1))
    assert width <= 900
    assert svg.count("<title>") == 5  # one bar per tensor, each with its tooltip
    for name in ("lv0", "lv1", "lv2", "lv3", "gv", "storage (512 B): lv0, lv2", "storage1 (512 B): lv1, lv3",
                 "own memory (not shared): gv", "0: matmul", "4: add1"):
        assert name in svg, name


def test_text_summary():
    text = str(viz.memory_plan(_planned(Mlp)))
    assert "5 tensors in 2 storages (+ 1 with memory of their own)" in text
    assert "gv: own memory, calls 4..end" in text


def test_a_module_not_yet_lowered_is_refused_with_the_recipe():
    with pytest.raises(ValueError, match="StaticPlanBlockMemory"):
        viz.memory_plan(relax.transform.LegalizeOps()(Mlp))


def test_many_kernels_still_fit():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((8, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = x
            for _ in range(40):
                y = bb.emit(relax.op.nn.relu(y))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    pic = viz.memory_plan(_planned(bb.get()))
    assert len(pic.tensors) == 40 and pic.num_storages == 2
    assert int(re.search(r'width="(\d+)"', pic.svg()).group(1)) <= 900
