"""ms.relax_integration: tune every kernel of a model, compile it with the tuned kernels."""

import numpy as np

import minitvm
from minitvm import meta_schedule as ms
from minitvm import relax
from minitvm.testing.nn_models import export_quick_start_mlp

FAST = ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)


def _inputs(spec, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 784)).astype("float32")
    params = [(rng.standard_normal(tuple(int(s) for s in p.shape)) * 0.1).astype("float32") for _, p in spec]
    w1, b1, w2, b2 = params
    return x, params, np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def test_extract_tasks_finds_each_kernel_once():
    mod, _ = export_quick_start_mlp(1)
    tasks = ms.relax_integration.extract_tasks(mod, "llvm")
    assert len(tasks) >= 2 and all(t.weight >= 1 for t in tasks)
    assert all(list(t.mod.keys()) == ["main"] for t in tasks)


def test_tune_relax_then_the_tuned_kernels_replace_the_default_ones(tmp_path):
    mod, spec = export_quick_start_mlp(1)
    target = "llvm --num-cores=1"
    db = ms.relax_integration.tune_relax(mod, None, target, str(tmp_path), max_trials_global=4,
                                         num_trials_per_iter=2, runner=ms.runner.LocalRunner(evaluator_config=FAST),
                                         progress=False, seed=0)
    tasks = ms.relax_integration.extract_tasks(mod, target)
    tuned = [t for t in tasks if db.query_tuning_record(t.mod, target, "main") is not None]
    assert tuned  # every trial went to some kernel
    # the tuning plot names each curve by its task (the kernel), not "workload k"
    assert set(ms.viz.tuning_curve(db)) == {t.task_name for t in tuned}
    x, params, want = _inputs(spec)
    ex = ms.relax_integration.compile_relax(db, mod, target)
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    got = vm["forward"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)



def test_zero_pipeline_applies_a_database_in_scope():
    mod, _ = export_quick_start_mlp(1)
    plain = relax.get_pipeline("zero")(mod)
    name, func = next((gv.name_hint, f) for gv, f in plain.items() if isinstance(f, minitvm.tir.PrimFunc))
    workload = minitvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    sch = minitvm.tir.Schedule(workload)
    loops = sch.get_loops(sch.get_block(ms.postproc.leaf_blocks(sch)[0].name))
    sch.split(loops[-1], factors=[None, 2])  # any recorded schedule will do
    db = ms.database.MemoryDatabase()
    db.commit_tuning_record(ms.TuningRecord(sch.trace, db.commit_workload(workload), [1e-3], "llvm"))
    with minitvm.target.Target("llvm"), db, minitvm.transform.PassContext(opt_level=3):
        zero = relax.get_pipeline("zero")(mod)
    assert zero[name].attrs["tir.is_scheduled"]
    assert zero[name].attrs.get("global_symbol") == func.attrs.get("global_symbol")
    minitvm.ir.assert_structural_equal(zero[name].body, sch.mod["main"].body, map_free_vars=True)
    untouched = [gv.name_hint for gv, f in zero.items() if isinstance(f, minitvm.tir.PrimFunc) and gv.name_hint != name]
    assert all(not zero[n].attrs.get("tir.is_scheduled") for n in untouched)
