"""Built-in rules, postprocessors, mutators, feature extraction and the cost models."""

import random

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.meta_schedule import search_strategy as ss
from minitvm.meta_schedule import space_generator as sg
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
    # a target with several cores also samples whether to use threads
    assert sum(i.kind.name == "SampleCategorical" for i in _design(2).trace.insts) == 2


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
