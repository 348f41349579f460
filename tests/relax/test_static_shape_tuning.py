"""relax.get_pipeline("static_shape_tuning") (TVM's static_shape_tuning_pipeline): a tiny MLP
"tuned" (a stand-in tuner) computes what numpy does, and its kernels come from the tuning database."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import relax
from minitvm.meta_schedule.database import JSONDatabase
from minitvm.script import relax as R
from minitvm.target import Target
from minitvm.tir import PrimFunc
from minitvm.transform import tuning_database as hook

RNG = np.random.default_rng(34)


@minitvm.script.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w1: R.Tensor((16, 32), "float32"), b1: R.Tensor((32,), "float32"),
             w2: R.Tensor((32, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, w1), b1))
            y = R.matmul(h, w2)
            R.output(y)
        return y


def test_static_shape_tuning_tunes_the_kernels_and_matches_numpy(tmp_path, monkeypatch):
    # the tuner itself is tested in tests/meta_schedule; here a stand-in records each kernel's
    # unchanged schedule (no worker pool to start), so what matters is what the pipeline hands
    # it and that the kernels it compiles are the database's
    calls = []

    def tune(mod, target, work_dir, max_trials_global, max_trials_per_task=None):
        calls.append((sorted(gv.name_hint for gv in mod.get_global_vars()), work_dir, max_trials_global,
                      max_trials_per_task))
        db = JSONDatabase(work_dir=work_dir)
        for _, func in mod.functions_items():
            workload = minitvm.IRModule({"main": func.with_attr("global_symbol", "main")})
            db.commit_tuning_record(ms.database.TuningRecord(minitvm.s_tir.Schedule(workload).trace,
                                                             ms.database.Workload(workload), [1e-6], Target(target)))

    monkeypatch.setattr(hook, "_tuner", [tune])
    pipeline = relax.get_pipeline("static_shape_tuning", target="llvm", work_dir=str(tmp_path), total_trials=4,
                                  max_trials_per_task=2, cpu_weight_prepack=False)
    mod = pipeline(MLP)
    kernels = sorted(gv.name_hint for gv, f in mod.functions_items() if isinstance(f, PrimFunc))
    assert calls == [(kernels, str(tmp_path), 4, 2)], "one tuning run over every kernel, with the trial budgets"
    assert all(mod[k].attrs.get("tir.is_scheduled") for k in kernels), "every kernel comes from the database"
    x, w1, b1, w2 = (RNG.standard_normal(s).astype("float32") for s in [(4, 16), (16, 32), (32,), (32, 8)])
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(a) for a in (x, w1, b1, w2))).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w1 + b1, 0) @ w2, rtol=1e-5, atol=1e-5)
    # no trials: no tuning, only the records work_dir holds already are applied
    again = relax.pipeline.static_shape_tuning_pipeline(0, "llvm", work_dir=str(tmp_path))(MLP)
    assert len(calls) == 1 and all(again[k].attrs.get("tir.is_scheduled") for k in kernels)


def test_static_shape_tuning_refuses_weight_prepacking():
    with pytest.raises(NotImplementedError, match="cpu_weight_prepack"):
        relax.get_pipeline("static_shape_tuning", target="llvm", total_trials=4, cpu_weight_prepack=True)


def test_decompose_ops_for_inference_uses_the_moving_statistics():
    x, gamma, beta = (RNG.standard_normal(s).astype("float32") for s in [(2, 3, 4), (3,), (3,)])
    mean, var = RNG.standard_normal(3).astype("float32"), RNG.uniform(0.5, 2, 3).astype("float32")
    params = [relax.Var(n, relax.TensorStructInfo(a.shape, "float32"))
              for n, a in zip(["x", "g", "b", "m", "v"], [x, gamma, beta, mean, var])]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        out = bb.emit(relax.op.nn.batch_norm(*params, axis=1, epsilon=1e-3)[0])
        bb.emit_func_output(out)
    mod = relax.transform.DecomposeOpsForInference()(bb.get())
    assert "batch_norm" not in mod.script()
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(a) for a in (x, gamma, beta, mean, var))).numpy()
    c = (slice(None), None)
    want = (x - mean[c]) / np.sqrt(var[c] + 1e-3) * gamma[c] + beta[c]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
