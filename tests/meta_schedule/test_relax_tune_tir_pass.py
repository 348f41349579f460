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
from minitvm.testing import programs
from minitvm.transform import tuning_database as hook


def _softmax_module():
    """``main(x) = call_tir(softmax, x)`` over the testing programs' softmax kernel (4 x 16)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, programs.N), "float32"))
    with bb.function("main", [x]):
        gv = bb.add_func(programs.softmax, "softmax")
        bb.emit_func_output(bb.emit(relax.op.call_tir(gv, (x,), relax.TensorStructInfo((4, programs.N), "float32"))))
    return bb.get()


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
        mod = _softmax_module()
        tuned = tvm.ir.transform.Sequential([relax.transform.MetaScheduleTuneTIR(work_dir, max_trials_global=3),
                                             relax.transform.MetaScheduleApplyDatabase(work_dir)])(mod)
    assert calls == [(["main"], "llvm -num-cores=1", work_dir, 3)]
    assert tuned["softmax"].attrs["tir.is_scheduled"]
    assert tvm.ir.structural_equal(tuned["main"], mod["main"])  # the pass tunes, it does not rewrite
    vm = relax.VirtualMachine(tvm.compile(tuned, target="llvm"), tvm.cpu())
    x = np.random.default_rng(3).standard_normal((4, programs.N)).astype("float32")
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)


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


def test_a_gpu_target_is_refused_by_name(tmp_path):
    # TVM's meta_schedule tutorial tunes for Target.from_device(cuda(0)): minitvm's search space
    # holds CPU schedules only, so the emulated GPU is refused up front, naming the way that works
    with tvm.target.Target.from_device(tvm.cuda(0)):
        with pytest.raises(NotImplementedError, match=r"for target 'cuda-emulated'.*CPU schedules only.*dlight"):
            relax.transform.MetaScheduleTuneTIR(str(tmp_path / "tune"), max_trials_global=2)(_softmax_module())
