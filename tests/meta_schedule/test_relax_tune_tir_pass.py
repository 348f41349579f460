"""relax.transform.MetaScheduleTuneTIR, as TVM's meta_schedule tutorial uses it: under ``with target``,
tune the module's kernels into a work_dir, then MetaScheduleApplyDatabase applies the records.  Run
in a fresh interpreter that never imported the tuner: the pass reaches it on its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from minitvm import relax

SCRIPT = """
import sys, tempfile
import numpy as np
import minitvm as tvm
from minitvm import relax
from minitvm.script import relax as R, tir as T

@tvm.script.ir_module
class Mod:
    @T.prim_func
    def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((64,), "float32")):
        cls = Mod
        return R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((64,), "float32"))

assert "minitvm.meta_schedule" not in sys.modules
target = tvm.target.Target("llvm --num-cores=1")
with target, tempfile.TemporaryDirectory() as work_dir:
    tuned = tvm.ir.transform.Sequential([
        relax.transform.MetaScheduleTuneTIR(work_dir=work_dir, max_trials_global=2),
        relax.transform.MetaScheduleApplyDatabase(work_dir=work_dir)])(Mod)
    records = len(tvm.s_tir.meta_schedule.database.JSONDatabase(work_dir=work_dir).get_all_tuning_records())
assert tvm.ir.structural_equal(tuned["main"], Mod["main"])  # the pass tunes, it does not rewrite
vm = relax.VirtualMachine(tvm.compile(tuned, target="llvm"), tvm.cpu())
x = np.random.default_rng(3).standard_normal(64).astype("float32")
np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), x + 1, rtol=1e-6)
print("scheduled", bool(tuned["add_one"].attrs.get("tir.is_scheduled")), "records", records)
"""


def test_tune_tir_pass_then_apply_database_from_a_fresh_interpreter(tmp_path):
    script = tmp_path / "tune_relax.py"
    script.write_text(SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    words = proc.stdout.split()
    assert words[:2] == ["scheduled", "True"] and int(words[3]) >= 1


def test_the_pass_needs_a_target_in_scope():
    with pytest.raises(ValueError, match="no target in scope"):
        relax.transform.MetaScheduleTuneTIR(work_dir="unused", max_trials_global=1)
