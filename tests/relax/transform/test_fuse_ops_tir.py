"""FuseOps + FuseTIR on legalized models: what groups, what the fused PrimFuncs look like,
and that the numbers do not change."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.relax import op as R
from minitvm.relax.transform import AnnotateTIROpPattern, FuseOps, FuseTIR, LegalizeOps
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.testing.relax_eval import evaluate
from minitvm.tir import For, PrimFunc
from minitvm.tir.functor import post_order_visit

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def tensor(name, *shape):
    return relax.Var(name, relax.TensorStructInfo(shape, "float32"))


def build_mlp():
    """matmul + add + relu + matmul + add, static shapes."""
    x, w0, b0 = tensor("x", 4, 16), tensor("w0", 16, 32), tensor("b0", 32)
    w1, b1 = tensor("w1", 32, 8), tensor("b1", 8)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            h = bb.emit(R.matmul(x, w0))
            h = bb.emit(R.add(h, b0))
            h = bb.emit(R.nn.relu(h))
            h = bb.emit(R.matmul(h, w1))
            out = bb.emit_output(R.add(h, b1))
        bb.emit_func_output(out)
    return bb.get()


def fuse_ops(mod):
    return FuseOps()(AnnotateTIROpPattern()(LegalizeOps()(mod)))


def prim_funcs(mod):
    return sorted(gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc))


def relax_funcs(mod):
    return sorted(gv.name_hint for gv, f in mod.items() if isinstance(f, relax.Function))


def run_vm(mod, *args):
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in args]).numpy()


def test_mlp_fuse_ops_groups_matmul_with_its_epilogue():
    mod = fuse_ops(build_mlp())
    assert relax_funcs(mod) == ["fused_matmul1_add1", "fused_matmul_add_relu", "main"]
    fused = mod["fused_matmul_add_relu"]
    assert fused.attrs["Primitive"] is True
    assert [p.name_hint for p in fused.params] == ["x", "w0", "b0"]
    text = mod.script()
    assert "cls.fused_matmul_add_relu(x, w0, b0)" in text
    # the fused calls bind new variables, named as TVM's FuseOps names them
    assert [b.var.name_hint for b in mod["main"].body.blocks[0].bindings] == ["lv", "gv"]
    assert "cls.fused_matmul_add_relu(x, w0, b0)" in text
    assert "cls.fused_matmul1_add1(lv, w1, b1)" in text
    assert text.count("R.call_tir") == 5   # all inside the fused functions now


def test_mlp_fuse_tir_makes_one_primfunc_per_group():
    legal = AnnotateTIROpPattern()(LegalizeOps()(build_mlp()))
    assert prim_funcs(legal) == ["add", "add1", "matmul", "matmul1", "relu"]
    mod = FuseTIR()(FuseOps()(legal))
    assert prim_funcs(mod) == ["fused_matmul1_add1", "fused_matmul_add_relu"]
    assert relax_funcs(mod) == ["main"]
    text = mod.script()
    assert 'R.call_tir(cls.fused_matmul_add_relu, (x, w0, b0), out_sinfo=R.Tensor((4, 32), dtype="float32"))' in text
    fused = mod["fused_matmul_add_relu"]
    # TVM's names: buffers after the Relax parameters, each kernel output + "_intermediate"
    assert [fused.buffer_map[p].name for p in fused.params] == ["x", "w0", "b0", "compute_intermediate"]
    assert [p.name for p in fused.params] == ["p_x", "p_w0", "p_b0", "p_output0"]
    root = fused.body.block
    assert [b.name for b in root.alloc_buffers] == ["T_matmul_intermediate", "T_add_intermediate"]
    for block in ("T_matmul", "T_add", "compute"):
        assert f'T.sblock("{block}")' in text
    # the printed module parses back to the same module
    assert_structural_equal(from_source(text), mod)


def test_mlp_numbers_do_not_change():
    args = [rand(4, 16), rand(16, 32), rand(32), rand(32, 8), rand(8)]
    x, w0, b0, w1, b1 = args
    want = np.maximum(x @ w0 + b0, 0) @ w1 + b1
    legal = LegalizeOps()(build_mlp())
    fused = FuseTIR()(FuseOps()(AnnotateTIROpPattern()(legal)))
    np.testing.assert_allclose(evaluate(fused, "main", *args), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_vm(fused, *args), run_vm(legal, *args), rtol=1e-5, atol=1e-5)


def test_zero_pipeline_fuses_and_runs():
    mod = build_mlp()
    lowered = relax.get_pipeline("zero")(mod)
    assert prim_funcs(lowered) == ["fused_matmul1_add1", "fused_matmul_add_relu"]
    args = [rand(4, 16), rand(16, 32), rand(32), rand(32, 8), rand(8)]
    vm = relax.VirtualMachine(relax.build(lowered, "llvm", relax_pipeline=None), minitvm.cpu())
    got = vm["main"](*[minitvm.nd.array(a) for a in args]).numpy()
    x, w0, b0, w1, b1 = args
    np.testing.assert_allclose(got, np.maximum(x @ w0 + b0, 0) @ w1 + b1, rtol=1e-4, atol=1e-4)


def test_symbolic_batch_is_fused_and_runs_for_several_batches():
    n = tir.Var("n", "int64")
    x, w, b = tensor("x", n, 16), tensor("w", 16, 8), tensor("b", 8)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            out = bb.emit_output(R.nn.relu(R.add(R.matmul(x, w), b)))
        bb.emit_func_output(out)
    lowered = relax.get_pipeline("zero")(bb.get())
    assert prim_funcs(lowered) == ["fused_matmul_add_relu"]
    fused = lowered["fused_matmul_add_relu"]
    assert str(fused.buffer_map[fused.params[0]].shape[0]) == "n"
    vm = relax.VirtualMachine(relax.build(lowered, "llvm", relax_pipeline=None), minitvm.cpu())
    wv, bv = rand(16, 8), rand(8)
    for batch in (1, 5):
        xv = rand(batch, 16)
        got = vm["main"](*[minitvm.nd.array(a) for a in (xv, wv, bv)]).numpy()
        np.testing.assert_allclose(got, np.maximum(xv @ wv + bv, 0), rtol=1e-4, atol=1e-4)


def test_a_diamond_fuses_into_its_post_dominator():
    x, y = tensor("x", 8, 8), tensor("y", 8, 8)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(R.add(x, y))          # read by relu and by the last add
            b = bb.emit(R.nn.relu(a))
            out = bb.emit_output(R.add(a, b))
        bb.emit_func_output(out)
    mod = fuse_ops(bb.get())
    # every path from `a` meets again at the last add, which post-dominates it: one group
    assert relax_funcs(mod) == ["fused_add_relu_add", "main"]
    assert [p.name_hint for p in mod["fused_add_relu_add"].params] == ["x", "y"]
    fused = FuseTIR()(mod)
    assert prim_funcs(fused) == ["fused_add_relu_add"]
    xv, yv = rand(8, 8), rand(8, 8)
    s = xv + yv
    np.testing.assert_allclose(run_vm(fused, xv, yv), s + np.maximum(s, 0), rtol=1e-6)


def test_output_of_the_dataflow_block_is_not_fused_into_its_consumer():
    x = tensor("x", 8)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit_output(R.exp(x))      # leaves the block
            b = bb.emit_output(R.nn.relu(a))
        bb.emit_func_output(relax.Tuple([a, b]))
    mod = fuse_ops(bb.get())
    assert relax_funcs(mod) == ["main"]


@T.prim_func
def clip_if(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    # a store indexed by an expression the loads do not share: opaque by TVM's rules
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[7 - vi] = T.min(A[vi], T.float32(1))


def test_an_opaque_kernel_stands_alone():
    x = tensor("x", 8)
    bb = relax.BlockBuilder()
    clip = bb.add_func(clip_if, "clip_if")
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.exp(x))
            b = bb.emit(relax.call_tir(clip, (a,), relax.TensorStructInfo((8,), "float32")))
            c = bb.emit(R.nn.relu(b))
            out = bb.emit_output(R.negative(c))
        bb.emit_func_output(out)
    mod = fuse_ops(bb.get())
    assert mod["clip_if"].attrs["op_pattern"] == 8
    assert relax_funcs(mod) == ["fused_relu_tir_negative", "main"]   # exp alone, clip_if alone
    fused = FuseTIR()(mod)
    assert prim_funcs(fused) == ["clip_if", "fused_relu_tir_negative", "tir_exp"]
    xv = rand(8)
    np.testing.assert_allclose(run_vm(fused, xv), -np.maximum(np.minimum(np.exp(xv), 1)[::-1], 0), rtol=1e-6)


def test_elementwise_ops_feed_a_reduction_but_a_late_injective_op_stays_apart():
    x, y = tensor("x", 4, 6), tensor("y", 6, 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(R.exp(x))
            b = bb.emit(R.permute_dims(y, [1, 0]))
            c = bb.emit(R.add(a, b))
            out = bb.emit_output(R.sum(c, axis=[1]))
        bb.emit_func_output(out)
    mod = fuse_ops(bb.get())
    # exp and add join the sum in the first sweep; the transpose (injective) waits for the
    # second, when add's group is already a reduction group, which injective ops do not enter
    assert relax_funcs(mod) == ["fused_tir_exp_add_sum", "main"]
    fused = FuseTIR()(mod)
    assert prim_funcs(fused) == ["fused_tir_exp_add_sum", "transpose"]
    xv, yv = rand(4, 6), rand(6, 4)
    np.testing.assert_allclose(run_vm(fused, xv, yv), (np.exp(xv) + yv.T).sum(1), rtol=1e-5)


@T.prim_func
def vadd(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] + B[vi]


def test_a_kernel_called_twice_in_a_group_gets_two_copies():
    x = tensor("x", 8)
    bb = relax.BlockBuilder()
    add = bb.add_func(vadd, "vadd")
    sinfo = relax.TensorStructInfo((8,), "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.call_tir(add, (x, x), sinfo))
            out = bb.emit_output(relax.call_tir(add, (a, x), sinfo))
        bb.emit_func_output(out)
    mod = FuseTIR()(fuse_ops(bb.get()))
    # vadd is public (it has a global_symbol): DeadCodeElimination keeps it, as in TVM
    assert prim_funcs(mod) == ["fused_vadd_vadd", "vadd"]
    text = mod.script()
    assert 'T.block("C")' in text and 'T.block("C1")' in text    # a repeated name gets a number
    loop_vars = []
    post_order_visit(mod["fused_vadd_vadd"].body,
                     lambda n: loop_vars.append(n.loop_var) if isinstance(n, For) else None)
    assert len({id(v) for v in loop_vars}) == len(loop_vars) == 2   # each copy has its own loop variable
    assert_structural_equal(from_source(text), mod)
    xv = rand(8)
    np.testing.assert_allclose(run_vm(mod, xv), 3 * xv, rtol=1e-6)


def test_a_reduction_ends_a_group():
    x, y = tensor("x", 4, 6), tensor("y", 4, 6)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(R.sum(x, axis=[1]))
            b = bb.emit(R.sum(y, axis=[1]))
            out = bb.emit_output(R.add(a, b))    # after the reductions: no group
        bb.emit_func_output(out)
    mod = fuse_ops(bb.get())
    assert relax_funcs(mod) == ["main"]
    fused = FuseTIR()(mod)
    assert prim_funcs(fused) == ["add", "sum"]   # both sums call one PrimFunc
    xv, yv = rand(4, 6), rand(4, 6)
    np.testing.assert_allclose(run_vm(fused, xv, yv), xv.sum(1) + yv.sum(1), rtol=1e-5)
