"""Graders for chapter 6 (``exercises/ch06.py``): one test per exercise, worth ``points``.

The starting programs and the targets are written here, so editing them in the exercise file
changes nothing. Structure is compared with ``assert_structural_equal(yours, target)`` (the
grader's message shows the two programs around the first difference); numbers by compiling
both and running them on random data (``minitvm.testing.assert_allclose``).
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, viz
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.relax.dpl import DFPattern, get_var2val
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.testing import assert_allclose
from minitvm.transform import PassContext, PassInstrument, Sequential


@pytest.fixture
def ex(grade_module):
    return grade_module("ch06")


# ------------------------------------------------------------------ helpers


def _run(mod: IRModule, arrays: list[np.ndarray]) -> np.ndarray:
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in arrays]).numpy()


def _random_inputs(func: relax.Function, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([int(d) for d in p.struct_info.shape.values]).astype(p.struct_info.dtype)
            for p in func.params]


def _same_numbers(original: IRModule, rewritten: IRModule, seed: int) -> None:
    arrays = _random_inputs(original["main"], seed)
    assert_allclose(_run(rewritten, arrays), _run(original, arrays), rtol=1e-5, atol=1e-5,
                    err_msg="the rewritten module computes other numbers than the original")


def _module(result, what: str) -> IRModule:
    assert isinstance(result, IRModule), f"{what} must return an IRModule, not {type(result).__name__}"
    return result


def _function(result, what: str) -> relax.Function:
    assert isinstance(result, relax.Function), f"{what} must return a relax.Function, not {type(result).__name__}"
    return result


def _as_module(func: relax.Function) -> IRModule:
    return IRModule({"main": func})


# ------------------------------------------------------------------ 6.1: fma


@I.ir_module
class MulAdd:
    @R.function
    def main(x: R.Tensor((5, 6), "float32"), y: R.Tensor((5, 6), "float32"), z: R.Tensor((5, 6), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            lv1 = R.add(lv0, z)
            lv2 = R.multiply(lv1, lv1)
            gv = R.add(lv2, x)
            R.output(gv)
        return gv


@I.ir_module
class MulAddTarget:
    @R.function
    def main(x: R.Tensor((5, 6), "float32"), y: R.Tensor((5, 6), "float32"), z: R.Tensor((5, 6), "float32")):
        with R.dataflow():
            lv1 = R.ewise_fma(x, y, z)
            gv = R.ewise_fma(lv1, lv1, x)
            R.output(gv)
        return gv


@pytest.mark.points(2)
@pytest.mark.hint("section 1 (Visitors and mutators): the add's first argument is a variable; the multiply is the "
                  "value bound to it",
                  "when visiting an add, look up what its first argument is bound to; if that is a multiply, return "
                  "the fused call instead; the bindings left unused are dropped afterwards")
def test_ewise_fma_rewrite(ex):
    """Exercise 6.1: a PyExprMutator turning add(multiply(a, b), c) into ewise_fma(a, b, c)."""
    out = _module(ex.ewise_fma_rewrite(MulAdd), "ewise_fma_rewrite")
    assert_structural_equal(out, MulAddTarget)
    _same_numbers(MulAdd, out, seed=61)


# ------------------------------------------------------------------ 6.2: fuse dense + add


@I.ir_module
class TwoLayers:
    @R.function
    def main(x: R.Tensor((3, 12), "float32"), w0: R.Tensor((12, 20), "float32"), b0: R.Tensor((20,), "float32"),
             w1: R.Tensor((20, 7), "float32"), b1: R.Tensor((7,), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w0)
            lv1 = R.add(lv0, b0)
            lv2 = R.nn.relu(lv1)
            lv3 = R.matmul(lv2, w1)
            gv = R.add(lv3, b1)
            R.output(gv)
        return gv


@I.ir_module
class TwoLayersFused:
    @R.function
    def fused_dense_add0(x: R.Tensor((3, 12), "float32"), w: R.Tensor((12, 20), "float32"),
                         b: R.Tensor((20,), "float32")) -> R.Tensor((3, 20), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.add(lv, b)
            R.output(gv)
        return gv

    @R.function
    def fused_dense_add1(x: R.Tensor((3, 20), "float32"), w: R.Tensor((20, 7), "float32"),
                         b: R.Tensor((7,), "float32")) -> R.Tensor((3, 7), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.add(lv, b)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((3, 12), "float32"), w0: R.Tensor((12, 20), "float32"), b0: R.Tensor((20,), "float32"),
             w1: R.Tensor((20, 7), "float32"), b1: R.Tensor((7,), "float32")):
        cls = TwoLayersFused
        with R.dataflow():
            lv1 = cls.fused_dense_add0(x, w0, b0)
            lv2 = R.nn.relu(lv1)
            gv = cls.fused_dense_add1(lv2, w1, b1)
            R.output(gv)
        return gv


@pytest.mark.points(3)
@pytest.mark.hint("section 3 (Fusion: one function for several operators): the pass makes a new function for each "
                  "match and calls it in the match's place",
                  "the new functions' names, parameters and attribute must be the exercise's (numbered in the order "
                  "met); the grader shows where yours still differs from the target")
def test_fuse_dense_add_pass(ex):
    """Exercise 6.2: a module pass fusing matmul + add into Primitive functions."""
    fuse = ex.fuse_dense_add_pass()
    assert isinstance(fuse, minitvm.transform.Pass), \
        f"fuse_dense_add_pass must return a pass (made with @module_pass), not {type(fuse).__name__}"
    assert fuse.info.name == "FuseDenseAdd", f"the pass is named {fuse.info.name!r}, not 'FuseDenseAdd'"
    out = _module(fuse(TwoLayers), "the pass")
    assert_structural_equal(out, TwoLayersFused)
    _same_numbers(TwoLayers, out, seed=62)
    assert fuse(out).script() == out.script(), "running the pass again must change nothing"


# ------------------------------------------------------------------ 6.3: constant folding


def _folding_start():
    rng = np.random.default_rng(63)
    c1, c2, c3 = (rng.standard_normal((4, 5)).astype("float32") for _ in range(3))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.add(relax.const(c1), relax.const(c2)))
            lv1 = bb.emit(relax.op.multiply(lv0, relax.const(c3)))
            lv2 = bb.emit(relax.op.subtract(x, lv1))
            gv = bb.emit_output(relax.op.divide(lv2, relax.const(c3)))
        bb.emit_func_output(gv)
    start = bb.get()

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 5), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv2 = bb.emit(relax.op.subtract(x, relax.const((c1 + c2) * c3)))
            gv = bb.emit_output(relax.op.divide(lv2, relax.const(c3)))
        bb.emit_func_output(gv)
    return start, bb.get()


@pytest.mark.points(2)
@pytest.mark.hint("section 4 (Constants: folding and simplification): a call folds when both of its arguments are "
                  "known",
                  "an argument may be a variable bound to a constant: look its binding up; fold the inner calls "
                  "first, so that chains become one constant")
def test_fold_constants(ex):
    """Exercise 6.3: fold calls on constants into one constant."""
    start, target = _folding_start()
    out = _function(ex.fold_constants(start["main"]), "fold_constants")
    assert_structural_equal(out, target["main"])
    _same_numbers(start, _as_module(out), seed=63)


# ------------------------------------------------------------------ 6.4: simplification


def _simplify_start():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    v = relax.Var("v", relax.TensorStructInfo((8,), "float32"))
    one, zero = relax.const(np.float32(1)), relax.const(np.float32(0))
    with bb.function("main", [x, v]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.multiply(x, one))
            lv1 = bb.emit(relax.op.add(zero, lv0))
            lv2 = bb.emit(relax.op.subtract(lv1, relax.const(np.zeros((4, 8), "float32"))))
            lv3 = bb.emit(relax.op.add(v, relax.const(np.zeros((4, 8), "float32"))))  # broadcasts: stays
            lv4 = bb.emit(relax.op.multiply(relax.const(np.ones(8, "float32")), lv2))
            lv5 = bb.emit(relax.op.multiply(lv4, relax.const(np.float32(2))))  # not neutral: stays
            gv = bb.emit_output(relax.op.add(lv5, lv3))
        bb.emit_func_output(gv)
    start = bb.get()

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    v = relax.Var("v", relax.TensorStructInfo((8,), "float32"))
    with bb.function("main", [x, v]):
        with bb.dataflow():
            lv3 = bb.emit(relax.op.add(v, relax.const(np.zeros((4, 8), "float32"))))
            lv5 = bb.emit(relax.op.multiply(x, relax.const(np.float32(2))))
            gv = bb.emit_output(relax.op.add(lv5, lv3))
        bb.emit_func_output(gv)
    return start, bb.get()


@pytest.mark.points(2)
@pytest.mark.hint("section 4 (Constants: folding and simplification): x + 0 is x only when the result looks exactly "
                  "like x",
                  "compare the kept operand's struct info with the call's: a broadcasting add must stay; repeat "
                  "until nothing changes")
def test_simplify(ex):
    """Exercise 6.4: x * 1, x + 0, x - 0 become x where the shape stays."""
    start, target = _simplify_start()
    out = _function(ex.simplify(start["main"]), "simplify")
    assert_structural_equal(out, target["main"])
    _same_numbers(start, _as_module(out), seed=64)


# ------------------------------------------------------------------ 6.5: a pattern


def _dense_cases():
    rng = np.random.default_rng(65)
    w = relax.const(rng.standard_normal((6, 3)).astype("float32"))
    b = relax.const(rng.standard_normal((3,)).astype("float32"))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 6), "float32"))
    wp = relax.Var("wp", relax.TensorStructInfo((6, 3), "float32"))
    with bb.function("main", [x, wp]):
        with bb.dataflow():
            mm = bb.emit(relax.op.matmul(x, w))
            yes1 = bb.emit(relax.op.add(mm, b))
            yes2 = bb.emit(relax.op.add(b, mm))  # add commutes
            bound_b = bb.emit(b)
            yes3 = bb.emit(relax.op.add(mm, bound_b))  # a variable bound to a constant
            mm_param = bb.emit(relax.op.matmul(x, wp))
            no1 = bb.emit(relax.op.add(mm_param, b))  # weight is a parameter
            no2 = bb.emit(relax.op.add(mm, yes1))  # bias is not a constant
            no3 = bb.emit(relax.op.multiply(mm, b))
            gv = bb.emit_output(relax.Tuple([yes1, yes2, yes3, no1, no2, no3]))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    return func, {yes1: True, yes2: True, yes3: True, no1: False, no2: False, no3: False}


@pytest.mark.points(1)
@pytest.mark.hint("section 2 (Patterns instead of tree walks): a pattern is built like the expression it matches",
                  "a wildcard matches anything, a constant pattern only constants; the matmul pattern nests inside "
                  "the add pattern")
def test_dense_add_pattern(ex):
    """Exercise 6.5: a dpl pattern for matmul + add with constant weight and bias."""
    pattern = ex.dense_add_pattern()
    assert isinstance(pattern, DFPattern), f"return a relax.dpl pattern, not {type(pattern).__name__}"
    func, cases = _dense_cases()
    var2val = get_var2val(func)
    for var, want in cases.items():
        got = pattern.match(var2val[var], var2val)
        assert got == want, (f"{pattern!r} should {'' if want else 'not '}match the value bound to "
                             f"{var.name_hint} in:\n{func.script()}")


# ------------------------------------------------------------------ 6.6: a pattern rewrite


@I.ir_module
class Transposes:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((2, 4), "float32")):
        with R.dataflow():
            lv0 = R.permute_dims(x, axes=[1, 2, 0])
            lv1 = R.permute_dims(lv0, axes=[2, 0, 1])  # undoes lv0
            lv2 = R.permute_dims(lv1, axes=[0, 2, 1])
            lv3 = R.permute_dims(lv2, axes=[2, 1, 0])  # with lv2: one permutation
            lv4 = R.permute_dims(y)
            lv5 = R.permute_dims(lv4)  # two reversals cancel
            lv6 = R.permute_dims(lv3, axes=[0, 2, 1])  # and with lv3 as well
            gv = R.add(lv6, lv5)
            R.output(gv)
        return gv


@I.ir_module
class TransposesTarget:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((2, 4), "float32")):
        with R.dataflow():
            lv6 = R.permute_dims(x, axes=[1, 0, 2])
            gv = R.add(lv6, y)
            R.output(gv)
        return gv


@pytest.mark.points(2)
@pytest.mark.hint("section 2 (Patterns instead of tree walks, rewrite_call): match a permute_dims of a "
                  "permute_dims, then work out the one permutation that does both",
                  "follow axis i of the result back through the outer permutation, then through the inner one, to "
                  "an axis of x; None stands for reversed; when every axis comes back to itself, the answer is x")
def test_remove_double_transpose(ex):
    """Exercise 6.6: rewrite_call folding two permute_dims into one (or none)."""
    out = _function(ex.remove_double_transpose(Transposes["main"]), "remove_double_transpose")
    assert_structural_equal(out, TransposesTarget["main"])
    _same_numbers(Transposes, _as_module(out), seed=66)


# ------------------------------------------------------------------ 6.7: an instrument


class _SkipFold(PassInstrument):
    def should_run(self, mod, info):
        return info.name != "FoldConstant"


@pytest.mark.points(2)
@pytest.mark.hint("section 6 (Instruments: watching passes run): an instrument has hooks for entering the context "
                  "and around each pass",
                  "count in the hook after a pass (a refused pass never gets there), and start from an empty dict "
                  "in the hook for entering the context")
def test_make_call_counter(ex):
    """Exercise 6.7: an instrument counting how often each pass ran."""
    counter = ex.make_call_counter()
    assert isinstance(counter, PassInstrument), f"return a PassInstrument, not {type(counter).__name__}"
    t = relax.transform
    seq = Sequential([t.LegalizeOps(), t.FoldConstant(), t.DeadCodeElimination(), t.FoldConstant()],
                     name="mini_pipeline")
    with PassContext(instruments=[counter, _SkipFold()]):
        seq(MulAdd)
        t.DeadCodeElimination()(MulAdd)
    want = {"mini_pipeline": 1, "LegalizeOps": 1, "DeadCodeElimination": 2}
    assert counter.counts == want, f"counts {counter.counts}, expected {want} (FoldConstant was refused by should_run)"
    with PassContext(instruments=[counter]):
        t.FoldConstant()(MulAdd)
    assert counter.counts == {"FoldConstant": 1}, f"a new PassContext starts counting afresh; got {counter.counts}"


# ------------------------------------------------------------------ 6.8: predict the memory plan


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((8, 8), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(a)
            c = R.add(a, b)
            d = R.nn.relu(c)
            e = R.multiply(d, b)
            gv = R.add(e, x)
            R.output(gv)
        return gv


@pytest.mark.points(1)
@pytest.mark.hint("section 5 (Memory planning): a storage can be reused once every reader of its tensor has run",
                  "walk the chain call by call: which storages are free at each allocation? the returned tensor "
                  "gets one of its own")
def test_predict_storages(ex):
    """Exercise 6.8: how many storages StaticPlanBlockMemory needs for Chain."""
    guess = ex.predict_storages()
    mod = relax.transform.LegalizeOps()(Chain)
    mod = relax.transform.CallTIRRewrite()(relax.transform.ToNonDataflow()(mod))
    plan = viz.memory_plan(relax.transform.StaticPlanBlockMemory()(mod))
    assert guess == plan.num_storages, (f"you predicted {guess} storages; the plan has {plan.num_storages}:\n{plan}\n"
                                        "(draw it with viz.memory_plan(plan_memory(Chain)))")


# ------------------------------------------------------------------ 6.9 (open: any module that fits)


@I.ir_module
class Branches:
    @R.function
    def main(x: R.Tensor((64, 64), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(x)
            c = R.sigmoid(x)
            d = R.negative(x)
            ab = R.add(a, b)
            cd = R.multiply(c, d)
            gv = R.add(ab, cd)
            R.output(gv)
        return gv


_BUDGET = 48 * 1024  # three 16 KiB storages; Branches as written plans five


def _plan(mod: IRModule) -> viz.MemoryPlanPicture:
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.CallTIRRewrite()(relax.transform.ToNonDataflow()(mod))
    return viz.memory_plan(relax.transform.StaticPlanBlockMemory()(mod))


def _operator_calls_only(func: relax.Function) -> None:
    """Every binding of ``func`` calls a Relax operator (or binds a variable, constant or tuple):
    no kernel of the learner's (call_tir) and no other function, whose memory main's plan would not see."""
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(value, relax.Call):
                continue
            op = value.op
            assert isinstance(op, minitvm.ir.Op), \
                f"{binding.var.name_hint} calls {op}: main must compute with Relax operators, not call other functions"
            assert not op.name.startswith("relax.call_"), \
                f"{binding.var.name_hint} = {op.name}(...): Relax operators only, no kernels of your own"


@pytest.mark.points(3)
@pytest.mark.hint("section 5 (Memory planning): draw viz.memory_plan(plan_memory(...)) of your module: at which "
                  "call are the most tensors alive, and must they all be?",
                  "a tensor's storage frees after its last reader: compute what is read soon after it is written; a "
                  "sum of three terms can be added in any order")
def test_branches_in_less_memory(ex):
    """Exercise 6.9: the same values as Branches, with a memory plan of at most 48 KiB."""
    out = _module(ex.branches_in_less_memory(), "branches_in_less_memory")
    assert "main" in out, "the module has no function main"
    main = _function(out["main"], "main")
    want = [p.struct_info for p in Branches["main"].params]
    assert len(main.params) == 1 and minitvm.ir.structural_equal(main.params[0].struct_info, want[0]), \
        f"main must take x: R.Tensor((64, 64), 'float32') as Branches does, not {[p.struct_info for p in main.params]}"
    _operator_calls_only(main)
    x = np.random.default_rng(69).standard_normal((64, 64)).astype("float32")
    assert_allclose(_run(out, [x]), np.maximum(x, 0) + np.exp(x) - x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-5,
                    err_msg="your module computes other values than Branches")
    plan = _plan(out)
    planned = sum(s.nbytes or 0 for s in plan.storages)
    assert planned <= _BUDGET, (f"your plan needs {len(plan.storages)} storages, {planned // 1024} KiB; the budget is "
                                f"{_BUDGET // 1024} KiB:\n{plan}")
