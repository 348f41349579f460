"""relax.transform.MetaScheduleTuneTIR, as TVM's meta_schedule tutorial uses it: under ``with target``,
tune the module's kernels into a work_dir, then MetaScheduleApplyDatabase applies the records.  The
passes reach the tuner through ``transform.tuning_database``, loading it when nobody imported it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import meta_schedule as ms
from minitvm import relax
from minitvm.meta_schedule.database import JSONDatabase
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.transform import tuning_database as hook


@tvm.script.ir_module
class AddOne:
    @T.prim_func
    def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((64,), "float32")):
        cls = AddOne
        return R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((64,), "float32"))


def test_tune_tir_pass_tunes_each_kernel_alone_for_the_target_in_scope(tmp_path, monkeypatch):
    # the tuner itself is tested in test_tune_tir.py; here: what the pass hands it, and that the
    # records it leaves are what MetaScheduleApplyDatabase applies (a stand-in tuner records the
    # unchanged schedule: no worker pool to start)
    calls = []

    def tune(mod, target, work_dir, max_trials_global):
        calls.append((sorted(gv.name_hint for gv in mod.get_global_vars()), str(target), work_dir, max_trials_global))
        sch = tvm.s_tir.Schedule(mod)
        JSONDatabase(work_dir=work_dir).commit_tuning_record(
            ms.database.TuningRecord(sch.trace, ms.database.Workload(mod), [1e-6], tvm.target.Target(target)))

    monkeypatch.setattr(hook, "_tuner", [tune])
    work_dir = str(tmp_path / "tune")
    with tvm.target.Target("llvm --num-cores=1"):
        tuned = tvm.ir.transform.Sequential([relax.transform.MetaScheduleTuneTIR(work_dir, max_trials_global=3),
                                             relax.transform.MetaScheduleApplyDatabase(work_dir)])(AddOne)
    assert calls == [(["main"], "llvm -num-cores=1", work_dir, 3)]
    assert tuned["add_one"].attrs["tir.is_scheduled"]
    assert tvm.ir.structural_equal(tuned["main"], AddOne["main"])  # the pass tunes, it does not rewrite
    vm = relax.VirtualMachine(tvm.compile(tuned, target="llvm"), tvm.cpu())
    x = np.random.default_rng(3).standard_normal(64).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), x + 1, rtol=1e-6)


def test_the_pass_needs_a_target_in_scope():
    with pytest.raises(ValueError, match="no target in scope"):
        relax.transform.MetaScheduleTuneTIR(work_dir="unused", max_trials_global=1)


def test_the_hook_loads_the_tuner_in_an_interpreter_that_never_imported_it(tmp_path):
    code = ("import sys, minitvm\n"
            "from minitvm.transform import tuning_database as hook\n"
            "assert 'minitvm.meta_schedule' not in sys.modules\n"
            f"db = hook.open_work_dir({str(tmp_path)!r})\n"
            "print(type(db).__name__, 'minitvm.meta_schedule' in sys.modules)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=root))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["JSONDatabase", "True"]
