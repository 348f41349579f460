"""Graders for chapter 3 (``exercises/ch03.py``): one test per exercise, worth ``points``.

Each grader uses its own small model with fresh random weights and inputs and compares with
torch; exercise 3.2 is compared with the operator list read off an imported module.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax, tir
from minitvm.grade.mistakes import Mistake, assert_allclose_or_name
from minitvm.ir import IRModule
from minitvm.relax.frontend.torch import CONVERTERS, from_exported_program
from minitvm.testing import assert_allclose


@pytest.fixture
def ex(grade_module):
    return grade_module("ch03")


class ConvNet(torch.nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 4 * 4, classes)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))


def _vm(mod: IRModule) -> relax.VirtualMachine:
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())


@pytest.mark.points(1)
@pytest.mark.hint("sections 2 and 3 (torch.export, Import into Relax): export the model on the example, then import "
                  "what export returned",
                  "main must return a tensor, not a 1-tuple: the importer has an option that unwraps a single "
                  "output; the weights become constants unless you ask otherwise")
def test_import_model(ex):
    """Exercise 3.1: export and import a model."""
    model = ConvNet(5).eval()
    example = torch.randn(3, 2, 8, 8)
    mod = ex.import_model(model, example)
    assert isinstance(mod, IRModule), f"return an IRModule, not {type(mod).__name__}"
    params = mod["main"].params
    assert len(params) == 1, (f"main should take only the image batch (weights are constants), it takes "
                              f"{[p.name_hint for p in params]}")
    sinfo = params[0].struct_info
    assert [int(d) for d in sinfo.shape.values] == [3, 2, 8, 8], f"main's input should be (3, 2, 8, 8), not {sinfo}"
    assert isinstance(mod["main"].ret_struct_info, relax.TensorStructInfo), \
        "main should return a tensor, not a tuple (unwrap_unit_return_tuple=True)"
    x = torch.randn(3, 2, 8, 8)
    with torch.no_grad():
        assert_allclose(torch.from_dlpack(_vm(mod)["main"](x)), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.hint("section 3 (Import into Relax): main's body is a dataflow block of bindings: which kind of value "
                  "calls an operator?",
                  "a value is an operator call when it is a relax.Call whose op is an operator (minitvm.ir.Op), not "
                  "a function or a variable; the name is on the op")
@pytest.mark.points(1)
def test_relax_ops(ex):
    """Exercise 3.2: read the Relax operators of an imported model."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)

        def forward(self, x):
            return torch.softmax(torch.sigmoid(self.fc(x)) * x[:, :3], dim=-1)

    ep = torch.export.export(Net().eval(), (torch.randn(2, 6),))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    want = ["relax.permute_dims", "relax.matmul", "relax.add", "relax.sigmoid", "relax.strided_slice",
            "relax.multiply", "relax.nn.softmax"]
    got = ex.relax_ops(mod)
    assert isinstance(got, list), f"return a list of names, not {type(got).__name__}"
    assert got == want, f"operators in main, in order: expected {want}, got {got}"


class HypotNet(torch.nn.Module):
    def forward(self, x, y):
        return torch.hypot(x, y) * 0.5


def _naive_hypot(node, importer):
    """Section 8's converter: it squares the inputs as they are."""
    x, y = importer.arg(node.args[0]), importer.arg(node.args[1])
    return importer.bb.emit(relax.op.sqrt(relax.op.add(relax.op.multiply(x, x), relax.op.multiply(y, y))))


def _unguarded_hypot(node, importer):
    """Scaled by the larger magnitude, but 0 / 0 where both inputs are 0."""
    x, y = importer.arg(node.args[0]), importer.arg(node.args[1])
    big = importer.bb.emit(relax.op.maximum(relax.op.abs(x), relax.op.abs(y)))
    r = importer.bb.emit(relax.op.divide(relax.op.minimum(relax.op.abs(x), relax.op.abs(y)), big))
    return importer.bb.emit(relax.op.multiply(big, relax.op.sqrt(relax.op.add(importer.scalar(1.0, x),
                                                                              relax.op.multiply(r, r)))))


def _wide_pairs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two float32 tensors of magnitudes from 1e-30 to 1e30 (their squares leave float32's range)
    and signs mixed; a few zeros in one of them, a few in both."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(-1, 1, (2, 4, 32)) * 10.0 ** rng.integers(-30, 31, (2, 4, 32))
    xy[0, 0, :4] = 0
    xy[:, 0, 4:8] = 0
    return tuple(torch.from_numpy(v.astype("float32")) for v in xy)


@pytest.mark.hint("section 8 (When an operator is missing): what is x * x in float32 for x = 1e20, and for x = "
                  "1e-25?",
                  "the result is about as large as the larger of |x| and |y|: which numbers could you square "
                  "instead, so that the squares stay near 1? (and mind the pair 0, 0)")
@pytest.mark.points(2)
def test_convert_hypot(ex):
    """Exercise 3.3: a converter for aten.hypot, right for every float32 input with a finite result."""
    x, y = _wide_pairs(33)
    ep = torch.export.export(HypotNet(), (x, y))
    calls = []

    def learners(node, importer):
        calls.append(node)
        return ex.convert_hypot(node, importer)

    def compiled(converter):
        mod = from_exported_program(ep, unwrap_unit_return_tuple=True,
                                    custom_convert_map={"aten.hypot.default": converter})
        return _vm(mod)["main"]

    main = compiled(learners)
    assert calls, "the custom converter was not used"
    mistakes = [
        Mistake("x * x overflows float32 above about 1.8e19 (to inf) and underflows below about 1e-19 (to 0), "
                "before the square root could bring it back into range", lambda: main_of(_naive_hypot)),
        Mistake("where both inputs are 0 the formula divides 0 by 0 (nan); hypot(0, 0) is 0",
                lambda: main_of(_unguarded_hypot)),
    ]

    def main_of(converter):
        return torch.from_dlpack(compiled(converter)(x, y))

    small = torch.randn(4, 32), torch.randn(4, 32)
    assert_allclose(torch.from_dlpack(main(*small)), HypotNet()(*small), rtol=1e-5, atol=1e-6,
                    err_msg="everyday numbers (randn)")
    assert_allclose_or_name(torch.from_dlpack(main(x, y)), HypotNet()(x, y), mistakes, rtol=1e-5, atol=0,
                            err_msg="magnitudes from 1e-30 to 1e30")


@pytest.mark.hint("section 7 (One compile, any batch size): the batch must be symbolic from the export on",
                  "torch.export takes an argument naming which dimension of which input varies; the importer then "
                  "gives main a symbolic batch, and one compile serves every size")
@pytest.mark.points(2)
def test_compile_dynamic_batch(ex):
    """Exercise 3.4: one executable for every batch size."""
    model = ConvNet(3).eval()
    vm = ex.compile_dynamic_batch(model, torch.randn(2, 2, 8, 8))
    assert isinstance(vm, relax.VirtualMachine), f"return a relax.VirtualMachine, not {type(vm).__name__}"
    for n in (1, 5, 9):
        x = torch.randn(n, 2, 8, 8)
        try:
            got = torch.from_dlpack(vm["main"](x))
        except ValueError as err:
            raise AssertionError(f"batch {n} was refused; is dimension 0 dynamic (torch.export.Dim)? {err}") from None
        with torch.no_grad():
            assert_allclose(got, model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.points(1)
@pytest.mark.hint("section 8 (When an operator is missing): the importer converts the graph after decompositions, "
                  "not the one export returns",
                  "keep the call_function nodes whose target's name starts with aten. and that the converter table "
                  "lacks; each name once, sorted")
def test_missing_ops(ex):
    """Exercise 3.5: list the operators the importer does not know."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 5)

        def forward(self, x):
            return torch.hypot(torch.erfinv(torch.tanh(self.fc(x))), torch.special.i0(x)) + torch.lgamma(x.abs() + 1)

    missing = ["aten.erfinv.default", "aten.hypot.default", "aten.i0.default", "aten.lgamma.default"]
    assert not set(missing) & set(CONVERTERS), "minitvm converts one of these now: this grader needs other operators"
    got = ex.missing_ops(Net(), torch.randn(3, 5))
    assert isinstance(got, list), f"return a sorted list of names, not {type(got).__name__}"
    assert got == missing, f"expected {missing}, got {got}"
    assert ex.missing_ops(ConvNet(2), torch.randn(1, 2, 8, 8)) == [], "ConvNet's operators are all supported"


@pytest.mark.points(1)
@pytest.mark.hint("sections 4 and 5 (the pipeline's fusion, What a default schedule is): FuseOps groups operators, "
                  "FuseTIR makes one TensorIR function of each group",
                  "after the pipeline, look at the module's TensorIR functions and keep those whose names say they "
                  "were fused")
def test_fused_kernels(ex):
    """Exercise 3.6: the kernels that operator fusion produced."""
    ep = torch.export.export(ConvNet(4).eval(), (torch.randn(2, 2, 8, 8),))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    lowered = relax.get_pipeline("zero")(mod)
    want = sorted(gv.name_hint for gv, f in lowered.items()
                  if isinstance(f, tir.PrimFunc) and gv.name_hint.startswith("fused_"))
    assert any("conv2d" in n for n in want)  # the convolution is fused with its bias add and ReLU
    got = ex.fused_kernels(mod)
    assert isinstance(got, list), f"return a sorted list of names, not {type(got).__name__}"
    assert got == want, f"expected {want}, got {got}"
