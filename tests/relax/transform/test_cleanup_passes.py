"""The cleanup passes (TVM's names): FoldConstant, DeadCodeElimination, BindParams,
CanonicalizeBindings, EliminateCommonSubexpr, ConvertToDataflow.

Each test builds a small module with the BlockBuilder, checks the printed main (golden
lines of ``mod.script()``) after the pass, and checks on random data that the module
computes the same before and after (``relax_eval.evaluate`` kernel by kernel, or the VM)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir, topi
from minitvm.relax import op as R
from minitvm.relax import transform
from minitvm.testing.relax_eval import evaluate

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.uniform(-2, 2, shape).astype("float32")


def tensor(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(list(shape), dtype))


def lines(mod, name="main"):
    """The printed body of ``name``: one stripped line per statement, through ``return``."""
    text = mod.script()
    body = text.split(f"    def {name}(")[1]
    out = []
    for line in body.splitlines()[1:]:
        s = line.strip()
        if not s or s == f"cls = {text.split('class ')[1].split(':')[0]}":
            continue
        out.append(s)
        if s.startswith("return"):
            break
    return out


def run_vm(mod, *args, name="main"):
    """Legalize when needed, compile (the "zero" pipeline: nothing but these passes
    rewrites the module), run on the VM; numpy results."""
    vm = relax.VirtualMachine(minitvm.compile(mod, relax_pipeline="zero"))
    return _numpy(vm[name](*args))


def _numpy(out):
    return [_numpy(o) for o in out] if isinstance(out, (list, tuple)) else out.numpy()


def same_tree(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            same_tree(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def same_result(before, after, *args, after_args=None):
    same_tree(run_vm(after, *(args if after_args is None else after_args)), run_vm(before, *args))


def func_names(mod):
    return sorted(gv.name_hint for gv in mod.get_global_vars())


C0 = np.arange(6, dtype="float32").reshape(2, 3) / 4
C1 = np.full((2, 3), 0.5, "float32")


# -- FoldConstant ------------------------------------------------------------------------------

def _const_call_tir_module():
    """main(x) = x + (c0 * c1 + c0), the constant part as call_tir of emit_te kernels."""
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c0, c1 = relax.const(C0), relax.const(C1)
            lv = bb.emit_te(topi.multiply, c0, c1)
            lv1 = bb.emit_te(topi.add, lv, c0)
            lv2 = bb.emit_te(topi.add, x, lv1)
            gv = bb.emit_output(lv2)
        bb.emit_func_output(gv)
    return bb.get()


def test_fold_constant_call_tir_golden_and_numbers():
    mod = _const_call_tir_module()
    folded = transform.FoldConstant()(mod)
    want = C0 * C1 + C0
    # the folded values flow into their use; the bindings left unused go (as in TVM)
    assert lines(folded) == [
        "with R.dataflow():",
        "lv2 = R.call_tir(cls.add, (x, R.const([[0.0, 0.375, 0.75], [1.125, 1.5, 1.875]], \"float32\")), "
        "out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))",
        "gv: R.Tensor((2, 3), dtype=\"float32\") = lv2",
        "R.output(gv)",
        "return gv",
    ]
    np.testing.assert_allclose(folded["main"].body.blocks[0].bindings[0].value.args[1].fields[1].data.numpy(), want)
    # the kernel of the folded multiply is dead now (add is shared); DCE removes it
    assert func_names(folded) == ["add", "main", "multiply"]
    cleaned = transform.DeadCodeElimination()(folded)
    assert func_names(cleaned) == ["add", "main"]
    assert lines(cleaned) == lines(folded)
    x = rand(2, 3)
    np.testing.assert_allclose(evaluate(cleaned, "main", x), x + want, rtol=1e-6)
    np.testing.assert_allclose(evaluate(mod, "main", x), evaluate(cleaned, "main", x), rtol=1e-6)
    same_result(mod, cleaned, x)


def test_fold_constant_compiles_the_kernels_on_constants_together(monkeypatch):
    # the kernels called on constants alone, or on what such a call returns (a fold will make it
    # constant), are compiled as one module (one LLVM run, not one per kernel)
    from minitvm.relax.transform import fold_constant

    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c0, c1 = relax.const(C0), relax.const(C1)
            product = bb.emit_te(topi.multiply, c0, c1)
            difference = bb.emit_te(topi.subtract, c0, c1)
            chained = bb.emit_te(topi.exp, product)
            lv = bb.emit_te(topi.add, x, difference)
            gv = bb.emit_output(bb.emit_te(topi.add, lv, chained))
        bb.emit_func_output(gv)
    mod = bb.get()
    built = []
    real_build = fold_constant.build

    def counting_build(mod_or_func, target="llvm"):
        built.append(sorted(gv.name_hint for gv, _ in mod_or_func.items()) if hasattr(mod_or_func, "items") else 1)
        return real_build(mod_or_func, target=target)

    monkeypatch.setattr(fold_constant, "build", counting_build)
    folded = transform.DeadCodeElimination()(transform.FoldConstant()(mod))
    assert built == [["fold_constant_kernel_0", "fold_constant_kernel_1", "fold_constant_kernel_2"]]
    assert func_names(folded) == ["add", "main"]
    x = rand(2, 3)
    np.testing.assert_allclose(evaluate(folded, "main", x), x + (C0 - C1) + np.exp(C0 * C1), rtol=1e-6)
    same_result(mod, folded, x)


def test_fold_constant_compiles_a_chain_as_one_llvm_module(monkeypatch):
    # a chain of MIN_KERNELS folds or more is one LLVM module even when builds go in pieces: the
    # kernels are needed at once, and each piece would pay LLVM's set-up (same values either way)
    from minitvm.relax.transform import fold_constant
    from minitvm.target import tir_build
    from minitvm.target.codegen import llvm_parallel

    monkeypatch.setattr(llvm_parallel, "LLVM_THREADS", 2)
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = relax.const(C0)
            for op in (topi.exp, topi.sigmoid, topi.tanh, topi.sqrt, topi.negative):
                c = bb.emit_te(op, c)
            gv = bb.emit_output(bb.emit_te(topi.add, x, c))
        bb.emit_func_output(gv)
    mod = bb.get()
    libs = []
    real_build = fold_constant.build

    def watching_build(mod_or_func, target="llvm"):
        libs.append(real_build(mod_or_func, target=target))
        return libs[-1]

    monkeypatch.setattr(fold_constant, "build", watching_build)
    clear = tir_build._KERNEL_CACHE.entries.clear
    clear()
    folded = transform.FoldConstant()(mod)
    assert len(libs) == 1 and len(libs[0].function_names()) == 5 >= llvm_parallel.MIN_KERNELS
    assert len(libs[0]._texts["optimized"]) == 1  # (a build in pieces keeps one text per piece)
    x = rand(2, 3)
    want = -np.sqrt(np.tanh(1 / (1 + np.exp(-np.exp(C0)))))
    np.testing.assert_allclose(evaluate(folded, "main", x), x + want, rtol=1e-5)
    clear()


def test_fold_constant_compiles_kernels_that_only_move_data_at_a_lower_llvm_level(monkeypatch):
    # a transpose or a pad computes nothing (the same bits at any LLVM level): compiled at
    # MOVING_DATA_OPT_LEVEL; a kernel that computes keeps the default level (O3)
    from minitvm.relax.transform import fold_constant

    x = tensor("x", 3, 2)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            moved = bb.emit_te(topi.transpose, relax.const(C0), [1, 0])
            padded = bb.emit_te(topi.nn.pad, relax.const(C1[:, :2].copy()), [0, 0], [0, 1])
            squared = bb.emit_te(topi.multiply, moved, moved)  # on a fold's result: built alone
            lv = bb.emit_te(topi.add, x, squared)
            gv = bb.emit_output(bb.emit_te(topi.add, lv, bb.emit_te(topi.transpose, padded, [1, 0])))
        bb.emit_func_output(gv)
    mod = bb.get()
    kernels = {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, tir.PrimFunc)}
    assert fold_constant._moves_data_only(kernels["transpose"])
    assert fold_constant._moves_data_only(kernels["pad"])  # (if_then_else(in bounds, load, 0))
    assert not fold_constant._moves_data_only(kernels["multiply"])
    levels = []
    real_build = fold_constant.build

    def watching_build(mod_or_func, target="llvm"):
        levels.append(target.opt_level)
        return real_build(mod_or_func, target=target)

    monkeypatch.setattr(fold_constant, "build", watching_build)
    monkeypatch.setattr(fold_constant, "may_copy_with_numpy", lambda func: False)  # (else numpy copies them)
    folded = transform.FoldConstant()(mod)
    # transpose and pad on constants, built together at the lower level; the multiply of the
    # transposed constant (and the transpose of the padded one, the same kernel) after
    assert levels == [fold_constant.MOVING_DATA_OPT_LEVEL, 3]
    x = rand(3, 2)
    np.testing.assert_array_equal(evaluate(folded, "main", x), evaluate(mod, "main", x))


def test_fold_constant_compiles_small_kernels_without_llvm_vectorizers(monkeypatch):
    # a kernel of at most SCALAR_FOLD_STORES stores runs once on little data: LLVM's vectorizers
    # are off for its build (tir.disable_vectorize), a larger one keeps them (and is built apart);
    # the values are the same bits either way (nothing reassociates)
    from minitvm.relax.transform import fold_constant
    from minitvm.transform import PassContext

    rng = np.random.default_rng(5)
    small, large = rng.standard_normal((16, 16)).astype("float32"), rng.standard_normal((300, 300)).astype("float32")
    small[3, :5] = 0.0
    x, y = tensor("x", 16, 16), tensor("y", 300, 300)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            mask = bb.emit_te(topi.not_equal, relax.const(small), relax.const(0.0, "float32"))
            lv = bb.emit_te(topi.where, mask, x, relax.const(np.float32(-1e9)))
            big = bb.emit_te(topi.exp, relax.const(large))
            gv = bb.emit_output(relax.Tuple([lv, bb.emit_te(topi.add, y, big)]))
        bb.emit_func_output(gv)
    mod = bb.get()
    kernels = {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, tir.PrimFunc)}
    assert fold_constant._stores(kernels["not_equal"].body) == 256
    assert fold_constant._stores(kernels["exp"].body) == 90000 > fold_constant.SCALAR_FOLD_STORES
    seen = []
    real_build = fold_constant.build

    def watching_build(mod_or_func, target="llvm"):
        count = len(mod_or_func.functions) if hasattr(mod_or_func, "functions") else 1
        seen.append((count, PassContext.current().get_config("tir.disable_vectorize", False)))
        return real_build(mod_or_func, target=target)

    monkeypatch.setattr(fold_constant, "build", watching_build)
    folded = transform.FoldConstant()(mod)
    assert seen == [(1, True), (1, False)]  # the exp's 90000 stores keep the vectorizers
    monkeypatch.setattr(fold_constant, "SCALAR_FOLD_STORES", 100_000)
    seen.clear()
    scalar = transform.FoldConstant()(mod)
    assert seen == [(2, True)]  # both small now: one module
    assert PassContext.current().get_config("tir.disable_vectorize", False) is False  # only around the build
    xs, ys = rand(16, 16), rand(300, 300)
    want = evaluate(mod, "main", xs, ys)
    for got in (evaluate(folded, "main", xs, ys), evaluate(scalar, "main", xs, ys)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(want[0], np.where(small != 0, xs, np.float32(-1e9)))


def test_fold_constant_copies_kernels_that_only_move_data_with_numpy(monkeypatch):
    # a transpose, a pad (its if_then_else reads out of bounds where not taken) and a split of
    # an axis with a padded tail are copied by numpy, no kernel built: the same bits as the
    # kernels compiled (numpy refused) and as numpy's own transpose and pad
    from minitvm.relax.transform import fold_constant

    weight = RNG.uniform(-2, 2, (10, 3)).astype("float32")
    x = tensor("x", 3, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            moved = bb.emit_te(topi.transpose, relax.const(weight), [1, 0])
            padded = bb.emit_te(topi.nn.pad, relax.const(weight), [1, 0], [0, 2])
            split = bb.emit_te(lambda w: minitvm.te.compute(
                (3, 3, 4), lambda o, i, oi: minitvm.tir.if_then_else(o * 4 + oi < 10, w[o * 4 + oi, i], 0.0)),
                relax.const(weight))
            gv = bb.emit_output(relax.Tuple([moved, padded, split]))
        bb.emit_func_output(gv)
    mod = bb.get()
    built = []
    real_build = fold_constant.build

    def counting_build(mod_or_func, target="llvm"):
        built.append(target.opt_level)
        return real_build(mod_or_func, target=target)

    def folded_values(folded):
        return [c.data.numpy() for c in folded["main"].body.blocks[0].bindings[-1].value.fields]

    monkeypatch.setattr(fold_constant, "build", counting_build)
    copied = folded_values(transform.FoldConstant()(mod))
    assert built == []
    monkeypatch.setattr(fold_constant, "may_copy_with_numpy", lambda func: False)
    compiled = folded_values(transform.FoldConstant()(mod))
    assert built == [fold_constant.MOVING_DATA_OPT_LEVEL]
    for a, b in zip(copied, compiled):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert copied[0].tobytes() == weight.T.tobytes()
    assert copied[1].tobytes() == np.pad(weight, [(1, 0), (0, 2)]).tobytes()
    want = np.zeros((12, 3), "float32")
    want[:10] = weight
    assert copied[2].tobytes() == want.reshape(3, 4, 3).transpose(0, 2, 1).tobytes()


def test_numpy_copy_refuses_what_it_cannot_copy_exactly():
    from minitvm.relax.transform._numpy_copy import copy_with_numpy, may_copy_with_numpy
    from minitvm.script import tirx as T

    @T.prim_func
    def half(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(2):
            with T.sblock("b"):
                vi = T.axis.spatial(2, i)
                B[vi] = A[vi]

    @T.prim_func
    def twice(A: T.Buffer((4,), "float32"), B: T.Buffer((2,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                B[vi // 2] = A[vi]

    @T.prim_func
    def beyond(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi + 1]

    @T.prim_func
    def doubled(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(2)

    a = np.arange(4, dtype="float32")
    for func, out in [(half, (4,)), (twice, (2,)), (beyond, (4,))]:
        assert may_copy_with_numpy(func)
        assert copy_with_numpy(func, [a], [(out, "float32")]) is None
    assert copy_with_numpy(doubled, [a], [((4,), "float32")]) is None
    assert copy_with_numpy(half, [a.astype("float64")], [((4,), "float32")]) is None


def test_numpy_copy_of_a_where_on_a_bool_mask():
    # ViT's attention mask: a choice between two scalars by a bool cast to int
    from minitvm.relax.transform._numpy_copy import copy_with_numpy, may_copy_with_numpy
    from minitvm.script import tirx as T

    @T.prim_func
    def pick(C: T.Buffer((4,), "bool"), A: T.Buffer((), "float32"), B: T.Buffer((), "float32"),
             D: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("o"):
                vi = T.axis.spatial(4, i)
                D[vi] = T.Select(T.int64(0) < T.Cast("int64", C[vi]), A[()], B[()])

    c = np.array([True, False, False, True])
    a, b = np.array(1.5, "float32"), np.array(-2.0, "float32")
    assert may_copy_with_numpy(pick)
    (got,) = copy_with_numpy(pick, [c, a, b], [((4,), "float32")])
    assert got.tobytes() == np.where(c, a, b).astype("float32").tobytes()


def _const_ops_module():
    """main(x) = x + exp(C0 * C1), the constant part written as two high-level ops."""
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.multiply(relax.const(C0), relax.const(C1)))
            lv1 = bb.emit(R.exp(lv))
            lv2 = bb.emit(R.add(x, lv1))
            gv = bb.emit_output(lv2)
        bb.emit_func_output(gv)
    return bb.get()


def test_fold_constant_high_level_ops_without_new_kernels():
    mod = _const_ops_module()
    folded = transform.FoldConstant()(mod)
    assert func_names(folded) == ["main"]  # legalized on the side: no PrimFunc added
    text = lines(folded)
    assert len(text) == 5 and text[1].startswith('lv2: R.Tensor((2, 3), dtype="float32") = R.add(x, R.const(')
    np.testing.assert_allclose(folded["main"].body.blocks[0].bindings[0].value.args[1].data.numpy(),
                               np.exp(C0 * C1), rtol=1e-6)
    same_result(mod, transform.DeadCodeElimination()(folded), rand(2, 3))


def test_fold_constant_surfaces_a_lowering_bug(monkeypatch):
    from minitvm.relax.transform import fold_constant

    def buggy_legalize(bb, call):
        raise KeyError("injected bug")  # a bug in a legalization must not read as "not folded"

    monkeypatch.setattr(fold_constant, "legalize_call", buggy_legalize)
    with pytest.raises(KeyError, match="injected bug"):
        transform.FoldConstant()(_const_ops_module())


def test_fold_constant_leaves_a_call_whose_legalization_refuses(monkeypatch):
    from minitvm.relax.transform import fold_constant

    def refuse(bb, call):
        raise NotImplementedError("no legalization for these attributes")

    mod = _const_ops_module()
    assert "R.multiply(" not in "\n".join(lines(transform.FoldConstant()(mod)))  # folds as a rule
    monkeypatch.setattr(fold_constant, "legalize_call", refuse)
    kept = transform.FoldConstant()(mod)
    assert lines(kept)[1].startswith('lv: R.Tensor((2, 3), dtype="float32") = R.multiply(R.const(')


def test_fold_constant_tuple_outputs_and_items():
    x = tensor("x", 2, 3)

    def two(a, b):
        return [topi.add(a, b), topi.multiply(a, b)]

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            t = bb.emit_te(two, relax.const(C0), relax.const(C1))
            s = bb.emit(relax.TupleGetItem(t, 0))
            p = bb.emit(relax.TupleGetItem(t, 1))
            lv = bb.emit_te(topi.add, x, s)
            gv = bb.emit_output(bb.emit_te(topi.multiply, lv, p))
        bb.emit_func_output(gv)
    mod = bb.get()
    folded = transform.DeadCodeElimination()(transform.FoldConstant()(mod))
    assert "two" not in func_names(folded)
    body = lines(folded)
    assert body[1].startswith("lv3 = R.call_tir(cls.add, (x, R.const([[0.5, 0.75, 1.0]")
    x = rand(2, 3)
    np.testing.assert_allclose(evaluate(folded, "main", x), (x + C0 + C1) * (C0 * C1), rtol=1e-5)
    same_result(mod, folded, x)


def test_fold_constant_leaves_calls_on_parameters():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(topi.add, x, relax.const(C1)))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert transform.FoldConstant()(mod) is mod


def test_fold_constant_astype_float64_to_float16_matches_numpy():
    # the float64 -> float16 kernel calls __truncdfhf2, which the JIT once left at address 0:
    # FoldConstant calling it killed the process
    values = np.concatenate([[1.2345, 65519.9, 65520.0, -3e-8, 1e6, 1 + 2.0**-11 + 2.0**-30],
                             RNG.standard_normal(58) * 100.0])
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        with bb.dataflow():
            gv = bb.emit_output(R.astype(relax.const(values, "float64"), "float16"))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(minitvm.compile(bb.get(), target="llvm"), minitvm.cpu())
    got = vm["main"]().numpy()
    with np.errstate(over="ignore"):
        want = values.astype("float16")
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view("uint16"), want.view("uint16"))


# -- DeadCodeElimination -------------------------------------------------------------------------

def test_dead_code_elimination_bindings_and_functions():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    h, u, v = tensor("h", 2, 3), tensor("u", 2, 3), tensor("v", 2, 3)
    with bb.function("helper", [h], private=True):
        bb.emit_func_output(bb.emit(R.exp(h)))
    with bb.function("unused_private", [u], private=True):
        bb.emit_func_output(u)
    with bb.function("public_api", [v]):
        bb.emit_func_output(v)
    helper = bb.get().get_global_var("helper")
    with bb.function("main", [x]):
        with bb.dataflow():
            dead = bb.emit(R.multiply(x, x))
            bb.emit(R.add(dead, x))
            lv = bb.emit(relax.Call(helper, [x]))
            gv = bb.emit_output(R.add(lv, x))
        bb.emit(R.subtract(x, x))  # pure, unused, outside dataflow: removed too
        bb.emit_func_output(gv)
    mod = bb.get()
    out = transform.DeadCodeElimination()(mod)
    assert func_names(out) == ["helper", "main", "public_api"]
    assert lines(out) == [
        "with R.dataflow():",
        'lv2: R.Tensor((2, 3), dtype="float32") = cls.helper(x)',
        # one name table per builder, as TVM's: helper already took "gv"
        'gv1: R.Tensor((2, 3), dtype="float32") = R.add(lv2, x)',
        "R.output(gv1)",
        "return gv1",
    ]
    # a public function is an entry too; entry_functions adds private ones
    assert "unused_private" in func_names(transform.DeadCodeElimination(["unused_private"])(mod))
    x_np = rand(2, 3)
    same_result(mod, out, x_np)
    np.testing.assert_allclose(run_vm(out, x_np), np.exp(x_np) + x_np, rtol=1e-5)


def test_dead_code_elimination_drops_private_kernels_after_legalize():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            bb.emit(R.exp(x))
            gv = bb.emit_output(R.add(x, x))
        bb.emit_func_output(gv)
    mod = transform.LegalizeOps()(bb.get())
    assert func_names(mod) == ["add", "main", "tir_exp"]
    out = transform.DeadCodeElimination()(mod)
    assert func_names(out) == ["add", "main"]
    assert transform.DeadCodeElimination()(out) is out
    same_result(mod, out, rand(2, 3))


# -- BindParams ----------------------------------------------------------------------------------

def _linear_module(symbolic=False):
    n = tir.Var("n", "int64") if symbolic else 2
    x, w = tensor("x", n, 3), tensor("w", 3, 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(R.matmul(x, w))
            gv = bb.emit_output(R.nn.relu(lv))
        bb.emit_func_output(gv)
    return bb.get()


def test_bind_params_by_name_golden_and_numbers():
    mod = _linear_module()
    w = rand(3, 4)
    bound = transform.BindParams("main", {"w": w})(mod)
    main = bound["main"]
    assert [p.name for p in main.params] == ["x"]
    text = lines(bound)
    assert text[1].startswith('lv: R.Tensor((2, 4), dtype="float32") = R.matmul(x, R.const([[')
    assert 'gv: R.Tensor((2, 4), dtype="float32") = R.nn.relu(lv)' in text
    assert relax.analysis.well_formed(bound)
    x = rand(2, 3)
    same_result(mod, bound, x, w, after_args=(x,))
    np.testing.assert_allclose(run_vm(bound, x), np.maximum(x @ w, 0), rtol=1e-5)


def test_bind_params_by_var_fixes_symbolic_dims():
    mod = _linear_module(symbolic=True)
    x_var = mod["main"].params[0]
    x = rand(5, 3)
    bound = transform.BindParams("main", {x_var: minitvm.nd.array(x)})(mod)
    assert [p.name for p in bound["main"].params] == ["w"]
    assert 'def main(w: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((5, 4), dtype="float32"):' \
        in bound.script()
    w = rand(3, 4)
    np.testing.assert_allclose(evaluate(transform.LegalizeOps()(bound), "main", w), np.maximum(x @ w, 0),
                               rtol=1e-5)
    same_result(mod, bound, x, w, after_args=(w,))


def test_bind_params_checks_the_value():
    mod = _linear_module()
    with pytest.raises(TypeError, match="dtype"):
        transform.BindParams("main", {"w": np.zeros((3, 4), "int32")})(mod)
    with pytest.raises(ValueError, match="shape"):
        transform.BindParams("main", {"w": np.zeros((4, 4), "float32")})(mod)
    with pytest.raises(ValueError, match="no function"):
        transform.BindParams("nope", {"w": np.zeros((3, 4), "float32")})(mod)
    assert transform.BindParams("main", {"not_a_param": np.zeros(1)})(mod) is mod


# -- CanonicalizeBindings ----------------------------------------------------------------------

def test_canonicalize_bindings_chains_and_output_vars():
    x, y = tensor("x", 2, 3), tensor("y", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        a = bb.emit(x, "a")                # a = x (outside dataflow)
        with bb.dataflow():
            lv = bb.emit(R.add(a, y))
            lv1 = bb.emit(lv)
            lv2 = bb.emit(lv1)
            t = bb.emit(relax.Tuple([lv2, y]), "t")
            lv3 = bb.emit(relax.TupleGetItem(t, 0))
            lv4 = bb.emit(R.multiply(lv3, lv1))
            gv = bb.emit_output(lv4)
            gv1 = bb.emit_output(gv)
        bb.emit_func_output(gv1)
    mod = bb.get()
    out = transform.CanonicalizeBindings()(mod)
    assert lines(out) == [
        "with R.dataflow():",
        'lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)',
        "t: R.Tuple(R.Tensor((2, 3), dtype=\"float32\"), R.Tensor((2, 3), dtype=\"float32\")) = (lv, y)",
        # as TVM: gv is only read inside the block, so gv1 (the copy the function returns)
        # takes lv4's binding
        'gv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, lv)',
        "R.output(gv1)",
        "return gv1",
    ]
    assert relax.analysis.well_formed(out)
    args = rand(2, 3), rand(2, 3)
    same_result(mod, out, *args)
    # then DCE removes the unused tuple
    assert lines(transform.DeadCodeElimination()(out))[1:3] == [
        'lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)',
        'gv1: R.Tensor((2, 3), dtype="float32") = R.multiply(lv, lv)']


def test_canonicalize_keeps_output_copy_of_var_from_another_block():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            gv = bb.emit_output(R.add(lv, x))
            gv1 = bb.emit_output(lv)  # lv's binding becomes gv1's
        bb.emit_func_output(relax.Tuple([gv, gv1]))
    mod = bb.get()
    out = transform.CanonicalizeBindings()(mod)
    assert lines(out)[1:3] == ['gv1: R.Tensor((2, 3), dtype="float32") = R.exp(x)',
                               'gv: R.Tensor((2, 3), dtype="float32") = R.add(gv1, x)']
    assert relax.analysis.well_formed(out)
    same_result(mod, out, rand(2, 3))
    assert transform.CanonicalizeBindings()(out) is out


# -- EliminateCommonSubexpr --------------------------------------------------------------------

def _cse_module():
    x, y = tensor("x", 2, 3), tensor("y", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv = bb.emit(R.add(x, y))
            lv1 = bb.emit(R.add(x, y))
            lv2 = bb.emit(R.multiply(lv, y))
            lv3 = bb.emit(R.multiply(lv1, y))       # the same once lv1 is lv
            t = bb.emit(relax.Tuple([lv2, lv3]), "t")
            t1 = bb.emit(relax.Tuple([lv2, lv3]), "t1")
            gv = bb.emit_output(R.add(lv2, lv3))
            gv1 = bb.emit_output(R.add(lv2, lv3))   # an output: kept as a copy
            gv2 = bb.emit_output(relax.Tuple([t, t1]))
        bb.emit_func_output(relax.Tuple([gv, gv1, gv2]))
    return bb.get()


def test_eliminate_common_subexpr_golden_and_numbers():
    mod = _cse_module()
    out = transform.EliminateCommonSubexpr()(mod)
    # as TVM's: a repeated value becomes a trivial binding of the first variable bound to it
    # (CanonicalizeBindings removes those), later uses read the first variable
    T = 'R.Tensor((2, 3), dtype="float32")'
    TT = f"R.Tuple({T}, {T})"
    assert lines(out) == [
        "with R.dataflow():",
        f"lv: {T} = R.add(x, y)",
        f"lv1: {T} = lv",
        f"lv2: {T} = R.multiply(lv, y)",
        f"lv3: {T} = lv2",
        f"t: {TT} = (lv2, lv2)",
        f"t1: {TT} = t",
        f"gv: {T} = R.add(lv2, lv2)",
        f"gv1: {T} = gv",
        f"gv2: R.Tuple({TT}, {TT}) = (t, t)",
        "R.output(gv, gv1, gv2)",
        "return (gv, gv1, gv2)",
    ]
    canonical = transform.CanonicalizeBindings()(out)
    assert "lv1" not in "\n".join(lines(canonical)) and "lv3" not in "\n".join(lines(canonical))
    args = rand(2, 3), rand(2, 3)
    same_tree(run_vm(out, *args), run_vm(mod, *args))


def test_eliminate_common_subexpr_call_only_keeps_tuples():
    out = transform.EliminateCommonSubexpr(call_only=True)(_cse_module())
    text = "\n".join(lines(out))
    assert "lv1: R.Tensor((2, 3), dtype=\"float32\") = lv\n" in text
    assert ") = (lv2, lv2)\nt1: R.Tuple" in text and "t1: R.Tuple(R.Tensor((2, 3), dtype=\"float32\"), " \
        "R.Tensor((2, 3), dtype=\"float32\")) = (lv2, lv2)" in text   # a tuple is not a call: kept


def test_eliminate_common_subexpr_outside_dataflow_and_not_impure_calls():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x], pure=False):
        a = bb.emit(R.add(x, x))
        b = bb.emit(R.add(x, x))   # outside dataflow too (TVM): b = a
        p1 = bb.emit(relax.Call(relax.ExternFunc("f"), [a], sinfo_args=[relax.ObjectStructInfo()]))
        p2 = bb.emit(relax.Call(relax.ExternFunc("f"), [a], sinfo_args=[relax.ObjectStructInfo()]))
        with bb.dataflow():
            lv = bb.emit(R.add(x, x))   # known from before the block: lv = a
            gv = bb.emit_output(R.add(lv, R.add(a, b)))
        bb.emit_func_output(relax.Tuple([gv, p1, p2]))
    out = transform.EliminateCommonSubexpr()(bb.get())
    T = 'R.Tensor((2, 3), dtype="float32")'
    assert lines(out) == [
        f"gv: {T} = R.add(x, x)",
        f"gv1: {T} = gv",
        'gv2 = R.call_packed("f", gv, sinfo_args=R.Object)',
        'gv3 = R.call_packed("f", gv, sinfo_args=R.Object)',   # two effects stay two
        "with R.dataflow():",
        f"lv: {T} = gv",
        f"lv1: {T} = R.add(gv, gv)",
        f"gv4: {T} = R.add(gv, lv1)",
        "R.output(gv4)",
        "return (gv4, gv2, gv3)",
    ]


# -- ConvertToDataflow ---------------------------------------------------------------------------

def test_convert_to_dataflow_golden_and_numbers():
    x, y = tensor("x", 2, 3), tensor("y", 2, 3)
    bb = relax.BlockBuilder()
    z = tensor("z", 2, 3)
    with bb.function("impure_id", [z], pure=False):
        bb.emit_func_output(z)
    impure = bb.get().get_global_var("impure_id")
    with bb.function("main", [x, y], pure=False):
        a = bb.emit(R.add(x, y), "a")
        b = bb.emit(R.multiply(a, y), "b")
        c = bb.emit(R.subtract(b, x), "c")
        d = bb.emit(relax.Call(impure, [c]), "d")
        e = bb.emit(R.exp(d), "e")                  # a run of one: stays (min_size=2)
        f = bb.emit(relax.Call(impure, [e]), "f")
        g = bb.emit(R.add(f, a), "g")
        h = bb.emit(R.multiply(g, g), "h")
        bb.emit_func_output(h)
    mod = bb.get()
    out = transform.ConvertToDataflow()(mod)
    T = 'R.Tensor((2, 3), dtype="float32")'
    assert lines(out) == [
        "with R.dataflow():",
        f"a: {T} = R.add(x, y)",
        f"b: {T} = R.multiply(a, y)",
        f"c: {T} = R.subtract(b, x)",
        "R.output(a, c)",
        f"d: {T} = cls.impure_id(c)",
        f"e: {T} = R.exp(d)",
        f"f: {T} = cls.impure_id(e)",
        "with R.dataflow():",
        f"g: {T} = R.add(f, a)",
        f"h: {T} = R.multiply(g, g)",
        "R.output(h)",
        "return h",
    ]
    main = out["main"]
    kinds = [(type(blk).__name__, [type(b.var).__name__ for b in blk.bindings]) for blk in main.body.blocks]
    assert kinds == [("DataflowBlock", ["Var", "DataflowVar", "Var"]),
                     ("BindingBlock", ["Var", "Var", "Var"]),
                     ("DataflowBlock", ["DataflowVar", "Var"])]
    assert relax.analysis.well_formed(out)
    args = rand(2, 3), rand(2, 3)
    same_result(mod, out, *args)
    # min_size=1 makes the single pure binding a block of its own too
    one = transform.ConvertToDataflow(min_size=1)(mod)
    assert [type(b).__name__ for b in one["main"].body.blocks] == \
        ["DataflowBlock", "BindingBlock", "DataflowBlock", "BindingBlock", "DataflowBlock"]
    same_result(mod, one, *args)


def test_convert_to_dataflow_round_trips_to_non_dataflow():
    mod = _const_call_tir_module()
    flat = transform.ToNonDataflow()(mod)
    back = transform.ConvertToDataflow()(flat)
    # as TVM, the pass ends with CanonicalizeBindings, which folds the output copy `gv = lv2`
    canonical = transform.CanonicalizeBindings()(mod)
    assert not minitvm.ir.structural_equal(canonical, mod)
    assert minitvm.ir.structural_equal(back, canonical)
    assert transform.ConvertToDataflow()(canonical) is canonical


# -- together ------------------------------------------------------------------------------------

def test_cleanup_pipeline_end_to_end():
    mod = _cse_module()
    seq = minitvm.transform.Sequential([
        transform.EliminateCommonSubexpr(), transform.CanonicalizeBindings(),
        transform.LegalizeOps(), transform.FoldConstant(), transform.DeadCodeElimination()])
    out = seq(mod)
    assert relax.analysis.well_formed(out)
    args = rand(2, 3), rand(2, 3)
    same_tree(run_vm(out, *args), run_vm(mod, *args))


def test_fold_constant_whole_function_returns_a_constant():
    x = tensor("x", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.add(relax.const(C0), relax.const(C1)))
            gv = bb.emit_output(R.multiply(lv, relax.const(C1)))
        bb.emit_func_output(gv)
    mod = transform.LegalizeOps()(bb.get())
    out = transform.DeadCodeElimination()(transform.FoldConstant()(mod))
    assert func_names(out) == ["main"]
    assert lines(out) == ['return R.const([[0.25, 0.375, 0.5], [0.625, 0.75, 0.875]], "float32")']
    same_result(mod, out, rand(2, 3))


def _if_module():
    x, c = tensor("x", 2, 3), relax.Var("c", relax.TensorStructInfo((), "bool"))
    t1, t2, t3 = tensor("t1", 2, 3), tensor("t2", 2, 3), tensor("t3", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, c]):
        a = bb.emit(R.add(x, x), "a")
        a1 = bb.emit(a, "a1")
        then = relax.SeqExpr([relax.BindingBlock([
            relax.VarBinding(t1, bb.normalize(R.multiply(a1, a1))), relax.VarBinding(t2, t1),
            relax.VarBinding(t3, bb.normalize(R.exp(t2)))])], t3)
        r = bb.emit(relax.If(c, then, relax.SeqExpr([], a1)), "r")
        bb.emit_func_output(bb.emit(R.add(r, a1), "r1"))
    return bb.get()


@pytest.mark.parametrize("make_pass", [
    transform.CanonicalizeBindings, lambda: transform.ConvertToDataflow(min_size=1),
    transform.DeadCodeElimination, transform.EliminateCommonSubexpr, transform.FoldConstant])
def test_passes_inside_if_branches(make_pass):
    mod = _if_module()
    out = make_pass()(mod)
    assert relax.analysis.well_formed(out)
    for cond in (True, False):
        same_result(mod, out, rand(2, 3), np.array(cond))


def test_canonicalize_and_convert_inside_if_golden():
    mod = _if_module()
    canon = transform.CanonicalizeBindings()(mod)
    assert [s for s in lines(canon) if "=" in s or s.startswith(("if", "else"))][:4] == [
        'a: R.Tensor((2, 3), dtype="float32") = R.add(x, x)',
        "if c:",
        't1: R.Tensor((2, 3), dtype="float32") = R.multiply(a, a)',
        't3: R.Tensor((2, 3), dtype="float32") = R.exp(t1)',
    ]
    flow = transform.ConvertToDataflow(min_size=1)(canon)
    then = flow["main"].body.blocks[1].bindings[0].value.true_branch
    assert [type(b).__name__ for b in then.blocks] == ["DataflowBlock"]
    assert [type(b.var).__name__ for b in then.blocks[0].bindings] == ["DataflowVar", "Var"]


def test_canonicalize_trivial_match_cast():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = tensor("x", n, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            same = bb.match_cast(x, relax.TensorStructInfo([n, 3], "float32"))  # checks nothing
            lv = bb.emit(R.exp(same))
            # m is pinned to n (lv is (n, 3)): m becomes n, then this match_cast checks nothing
            new = bb.match_cast(lv, relax.TensorStructInfo([m, 3], "float32"))
            gv = bb.emit_output(R.add(new, new))
        bb.emit_func_output(gv)
    mod = bb.get()
    out = transform.CanonicalizeBindings()(mod)
    text = [s for s in lines(out) if not s.endswith("T.int64()")]
    assert text[1] == 'lv1: R.Tensor((n, 3), dtype="float32") = R.exp(x)'
    assert text[2] == 'gv: R.Tensor((n, 3), dtype="float32") = R.add(lv1, lv1)'
    assert relax.analysis.well_formed(out)
    same_result(mod, out, rand(4, 3))


def test_dead_code_elimination_unused_calls_of_pure_functions_outside_dataflow():
    x, h, k = tensor("x", 2, 3), tensor("h", 2, 3), tensor("k", 2, 3)
    bb = relax.BlockBuilder()
    with bb.function("pure_helper", [h], private=True):
        bb.emit_func_output(bb.emit(R.exp(h)))
    with bb.function("impure_helper", [k], pure=False, private=True):
        bb.emit_func_output(k)
    pure_gv, impure_gv = bb.get().get_global_var("pure_helper"), bb.get().get_global_var("impure_helper")
    with bb.function("main", [x], pure=False):
        unused = bb.emit(relax.Call(pure_gv, [x]), "unused")
        bb.emit(R.add(unused, x), "also_unused")
        bb.emit(relax.Call(impure_gv, [x]), "kept")
        bb.emit_func_output(bb.emit(R.multiply(x, x), "out"))
    mod = bb.get()
    out = transform.DeadCodeElimination()(mod)
    T = 'R.Tensor((2, 3), dtype="float32")'
    assert lines(out) == [f"kept: {T} = cls.impure_helper(x)", f"out: {T} = R.multiply(x, x)", "return out"]
    assert func_names(out) == ["impure_helper", "main"]
    same_result(mod, out, rand(2, 3))
