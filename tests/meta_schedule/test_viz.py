"""ms.viz: the best-so-far curve, the best loop nest, the diff against the default schedule."""

import matplotlib

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir

from .workloads import matmul_64, split_j

matplotlib.use("Agg")


def _db():
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.MemoryDatabase()
    workload = db.commit_workload(mod)
    for seed, secs in ((1, [4e-3]), (2, None), (5, [1e-3]), (9, [2e-3])):  # four different splits
        db.commit_tuning_record(ms.TuningRecord(split_j(tir.Schedule(mod, seed=seed)).trace, workload, secs, "llvm"))
    return db


def test_tuning_curve_is_the_best_gflops_after_each_trial():
    curve = next(iter(ms.viz.tuning_curve(_db(), matmul_64).values()))
    flops = 2 * 64**3
    assert curve == [flops / 4e-3 / 1e9] * 2 + [flops / 1e-3 / 1e9] * 2
    ax = ms.viz.plot_tuning_curve(_db())
    assert list(ax.get_lines()[0].get_ydata()) == curve


def test_diff_against_default_and_loop_nest_show_the_tuned_schedule():
    db = _db()
    d = ms.viz.diff_against_default(db, matmul_64)
    text = str(d)
    assert "default schedule" in text and "tuned" in text
    best = db.query_schedule(minitvm.IRModule({"main": matmul_64}), "llvm", "main")
    dot = minitvm.viz.loop_nest_dot(best.mod["main"])
    assert "j_1" in dot or "j_0" in dot
