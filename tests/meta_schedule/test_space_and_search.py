"""Built-in rules, postprocessors, mutators, feature extraction and the cost models."""

import random

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.meta_schedule import search_strategy as ss
from minitvm.meta_schedule import space_generator as sg
from minitvm.script import tir as T
from minitvm.target import Target

from .workloads import matmul_64, split_j

MOD = minitvm.IRModule({"main": matmul_64})


def _design(num_cores=1):
    return sg.PostOrderApply().generate_design_space(MOD, Target(f"llvm --num-cores={num_cores}"), seed=0)[0]


def test_multi_level_tiling_is_ssrsrs_with_sampled_tiles():
    sch = _design()
    tiles = [i for i in sch.trace.insts if i.kind.name == "SamplePerfectTile"]
    assert [i.attrs[0] for i in tiles] == [4, 4, 2]  # i, j spatial in 4 levels, k in 2
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C"))]
    kinds = "".join("R" if lp.loop_var.name.startswith("k") else "S" for lp in loops)
    assert kinds == "SSSSRSSRSS"  # S0 S1 | R0 | S2 | R1 | S3 with two spatial loops a level
    assert any(i.kind.name == "CacheWrite" for i in sch.trace.insts)
    # unroll and whether to pack B; a target with several cores also samples whether to use threads
    assert sum(i.kind.name == "SampleCategorical" for i in _design(1).trace.insts) == 2
    assert sum(i.kind.name == "SampleCategorical" for i in _design(2).trace.insts) == 3


def test_replayed_candidates_compute_the_matmul_and_differ():
    design = _design()
    mods = []
    for seed in range(4):
        sch = ss.replay(design.trace, MOD, seed + 1, "default", resample=True)
        assert sch is not None
        mods.append(sch.mod)
        lib = minitvm.build(sch.mod, target="llvm")
        rng = np.random.default_rng(seed)
        a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
        c = minitvm.nd.empty((64, 64), "float32")
        lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert len({m.script() for m in mods}) > 1
    # the postprocessor turned the annotations into loop kinds and removed them
    text = mods[0].script()
    assert "T.vectorized" in text and "meta_schedule" not in text


def test_mutate_tile_size_keeps_the_product_and_the_innermost_bound():
    rng = random.Random(0)
    sch = split_j(tir.Schedule(MOD, seed=3))
    for _ in range(20):
        trace = ms.mutator.mutate(sch.trace, rng)
        inst = next(i for i in trace.insts if i.kind.name == "SamplePerfectTile")
        tiles = [int(getattr(t, "value", t)) for t in trace.get_decision(inst)]
        assert tiles[0] * tiles[1] == 64 and tiles[1] <= 16
        child = tir.Schedule(MOD)
        trace.apply_to_schedule(child)
        assert child.get(child.get_loops(child.get_block("C_update"))[-1]).extent.value == tiles[1]


def test_features_describe_the_loop_nest():
    names = ms.feature_extractor.FEATURE_NAMES
    plain = ms.feature_extractor.extract_from_mod(MOD)
    f = dict(zip(names, plain))
    assert f["log2_iterations"] == pytest.approx(18) and f["log2_flops"] == pytest.approx(19)  # 2 * 64^3
    assert f["innermost_vectorized"] == 0 and f["n_loops"] == 3
    sch = tir.Schedule(MOD)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.vectorize(j1)
    g = dict(zip(names, ms.feature_extractor.extract_from_mod(sch.mod)))
    assert g["innermost_vectorized"] == 1 and g["vector_width"] == 16
    # the innermost loop now walks B and C contiguously instead of striding through B's rows
    assert g["stride_contiguous_frac"] > f["stride_contiguous_frac"]
    assert g["log2_bytes_inner1"] < f["log2_bytes_inner2"] + 8


def test_learned_model_ranks_held_out_candidates_better_than_random():
    # a synthetic truth the features can see: time grows with the innermost footprint
    design = _design()
    cands = [ss.MeasureCandidate(s, []) for s in
             (ss.replay(design.trace, MOD, seed, "default", resample=True) for seed in range(1, 60)) if s is not None]
    feats = ms.feature_extractor.extract(cands)
    col = list(ms.feature_extractor.FEATURE_NAMES).index("log2_bytes_inner2")
    secs = 1e-3 * (1 + feats[:, col])
    train, test = slice(0, 40), slice(40, None)
    model = ms.cost_model.GBTModel(num_warmup_samples=4)
    model.update(None, cands[train], [[s] for s in secs[train]])
    learned = ms.cost_model.ranking_quality(model.predict(None, cands[test]), secs[test], k=5)
    rand = ms.cost_model.ranking_quality(ms.RandomModel(seed=0).predict(None, cands[test]), secs[test], k=5)
    assert learned["spearman"] > 0.8 and learned["spearman"] > rand["spearman"]


def test_ranking_quality_of_a_perfect_and_a_reversed_order():
    secs = np.array([1.0, 2.0, 3.0, 4.0])
    assert ms.cost_model.ranking_quality(1 / secs, secs, k=2) == {"spearman": 1.0, "top_k_recall": 1.0}
    assert ms.cost_model.ranking_quality(secs, secs, k=2) == {"spearman": -1.0, "top_k_recall": 0.0}


# -- packing the right operand into panels (multi_level_tiling's sampled pack_read) -----------


@T.prim_func
def _dense_32x48x64(A: T.Buffer((32, 64), "float32"), W: T.Buffer((48, 64), "float32"),
                    C: T.Buffer((32, 48), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(32, 48, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * W[vj, vk]


@T.prim_func
def _batch_matmul_2x16(A: T.Buffer((2, 16, 16), "float32"), B: T.Buffer((2, 16, 16), "float32"),
                       C: T.Buffer((2, 16, 16), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for b, i, j, k in T.grid(2, 16, 16, 16):
        with T.block("C"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                C[vb, vi, vj] = T.float32(0)
            C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]


def _with_decisions(mod, tiles, pack):
    """The PostOrderApply design of ``mod`` replayed with the given tile sizes and pack decision."""
    design = sg.PostOrderApply().generate_design_space(mod, Target("llvm --num-cores=1"), seed=0)[0]
    trace = design.trace
    for inst, tile in zip([i for i in trace.insts if i.kind.name == "SamplePerfectTile"], tiles):
        trace = trace.with_decision(inst, tile, remove_postproc=True)
    pack_inst = next(i for i in trace.insts if i.kind.name == "SampleCategorical" and list(i.attrs[0]) == [0, 1])
    trace = trace.with_decision(pack_inst, pack, remove_postproc=True)
    sch = ss.replay(trace, mod, 1, "default", resample=False)
    assert sch is not None
    return sch


def _run_matmul_like(mod, a, b, out_shape):
    lib = minitvm.build(mod, target="llvm")
    c = minitvm.nd.empty(out_shape, "float32")
    lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    return c.numpy()


def test_packable_read_is_the_2d_operand_along_the_innermost_spatial_iterator():
    from minitvm.meta_schedule.schedule_rule import packable_read

    def block_c(func):
        sch = tir.Schedule(func)
        return sch.get(sch.get_block("C"))

    index, j, k = packable_read(block_c(matmul_64))  # B[k, j], not A[i, k]
    assert index == 1 and (j.name, k.name) == ("vj", "vk")
    index, j, k = packable_read(block_c(_dense_32x48x64))  # W[j, k]
    assert index == 1 and (j.name, k.name) == ("vj", "vk")
    assert packable_read(block_c(_batch_matmul_2x16)) is None  # 3-D operands


def test_pack_decision_packs_b_into_register_tile_wide_panels_and_stays_correct():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    # j tiles: S2 x S3 = 2 x 8 -> panels 16 wide: B_global[j // 16, k, j % 16]
    sch = _with_decisions(MOD, [[2, 4, 4, 2], [2, 2, 2, 8], [16, 4]], pack=1)
    text = sch.mod.script()
    assert "B_global = T.alloc_buffer((4, 64, 16))" in text
    assert "B_global[v1 // 16, v0, v1 % 16] = B[v0, v1]" in text
    assert "meta_schedule" not in text
    np.testing.assert_allclose(_run_matmul_like(sch.mod, a, b, (64, 64)), a @ b, rtol=1e-4, atol=1e-4)
    # a mutated tile size gets its own panels: the width is read from the loops by the postproc
    sch = _with_decisions(MOD, [[2, 4, 4, 2], [8, 1, 1, 8], [16, 4]], pack=1)
    assert "B_global = T.alloc_buffer((8, 64, 8))" in sch.mod.script()
    np.testing.assert_allclose(_run_matmul_like(sch.mod, a, b, (64, 64)), a @ b, rtol=1e-4, atol=1e-4)
    # decision 0: B read in place
    sch = _with_decisions(MOD, [[2, 4, 4, 2], [2, 2, 2, 8], [16, 4]], pack=0)
    assert "B_global" not in sch.mod.script()


def test_pack_decision_on_a_dense_transposes_w_into_panels():
    mod = minitvm.IRModule({"main": _dense_32x48x64})
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((32, 64)).astype("float32"), rng.standard_normal((48, 64)).astype("float32")
    sch = _with_decisions(mod, [[2, 2, 2, 4], [3, 2, 1, 8], [8, 8]], pack=1)
    text = sch.mod.script()
    assert "W_global = T.alloc_buffer((6, 64, 8))" in text
    np.testing.assert_allclose(_run_matmul_like(sch.mod, a, w, (32, 48)), a @ w.T, rtol=1e-4, atol=1e-4)


def test_batch_matmul_samples_no_pack_decision():
    design = sg.PostOrderApply().generate_design_space(minitvm.IRModule({"main": _batch_matmul_2x16}),
                                                       Target("llvm --num-cores=1"), seed=0)[0]
    assert not any(i.kind.name == "SampleCategorical" and list(i.attrs[0]) == [0, 1] for i in design.trace.insts)
    assert "pack_read" not in str(design.trace)


def test_unroll_counts_a_vector_loop_as_one_step_and_keeps_loops_around_a_rolled_loop():
    # i3 = 4 rows x an 8-lane vector: 4 steps, unrolled at max step 16; the S1 loop i_1 (2)
    # holds the k loop of the update and is never unrolled, though the write-back under it is small
    sch = _with_decisions(MOD, [[4, 2, 2, 4], [8, 1, 1, 8], [64, 1]], pack=0)
    trace = sch.trace
    unroll = next(i for i in trace.insts if i.kind.name == "SampleCategorical" and list(i.attrs[0]) == [0, 16, 64])
    sch = ss.replay(trace.with_decision(unroll, 1, remove_postproc=True), MOD, 1, "default", resample=False)
    kinds = {sch.get(lp).loop_var.name: sch.get(lp).kind for lp in sch.get_loops(sch.get_block("C_update"))}
    assert kinds["i_3"] == "unrolled" and kinds["j_3"] == "vectorized"
    assert kinds["i_1"] == "serial" and kinds["k_0"] == "serial"


@T.prim_func
def _pad_conv1d_relu(A: T.Buffer((16,), "float32"), W: T.Buffer((3,), "float32"), C: T.Buffer((16,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    P = T.alloc_buffer((18,))
    B = T.alloc_buffer((16,))
    for i in range(18):
        with T.block("P"):
            vi = T.axis.spatial(18, i)
            P[vi] = T.if_then_else(1 <= vi and vi < 17, A[vi - 1], T.float32(0))
    for i, r in T.grid(16, 3):
        with T.block("B"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + P[vi + vr] * W[vr]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = T.max(B[vi], T.float32(0))


def test_padding_before_a_reduction_is_placed_not_inlined_and_the_write_back_stays_put():
    # TVM's CPU AutoInline refuses if-then-else blocks (disallow_if_then_else) unless the function
    # is purely spatial; RandomComputeLocation samples where the padding goes, and leaves the
    # write cache's write-back (already inside the conv's loops) where tiling put it
    mod = minitvm.IRModule({"main": _pad_conv1d_relu})
    design = sg.PostOrderApply().generate_design_space(mod, Target("llvm --num-cores=1"), seed=0)[0]
    insts = design.trace.insts
    located = [insts[k + 1].inputs[0] for k, i in enumerate(insts) if i.kind.name == "SampleComputeLocation"]
    assert [b.name for b in located] == ["P"]
    assert not any(i.kind.name == "ComputeInline" for i in insts)
    assert any(i.kind.name == "CacheWrite" for i in insts)  # B is not the output, it still accumulates locally
    rng = np.random.default_rng(2)
    a, w = rng.standard_normal(16).astype("float32"), rng.standard_normal(3).astype("float32")
    want = np.maximum(np.convolve(np.pad(a, 1), w[::-1], mode="valid"), 0)
    # a resampled location can leave the recorded loops of a later step behind: that replay is
    # dropped (None), as the search drops it; the others must compute the function
    replayed = [ss.replay(design.trace, mod, seed + 1, "default", resample=True) for seed in range(6)]
    replayed = [sch for sch in replayed if sch is not None]
    assert len(replayed) >= 3
    for sch in replayed:
        lib = minitvm.build(sch.mod, target="llvm")
        c = minitvm.nd.empty((16,), "float32")
        lib["main"](minitvm.nd.array(a), minitvm.nd.array(w), c)
        np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-5)
