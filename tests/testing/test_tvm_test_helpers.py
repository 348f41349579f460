"""What TVM 0.27's test files import from tvm.testing / tvm.contrib: env probes and memoize."""

import pytest

from minitvm.contrib.pickle_memoize import memoize
from minitvm.testing import env


def test_env_answers_for_minitvm():
    assert env.has_llvm() and env.build_flag_enabled("USE_LLVM")
    assert not (env.has_cuda() or env.has_gpu() or env.has_cudnn() or env.build_flag_enabled("USE_CUTLASS"))
    assert not env.has_cuda_compute(8, 0) and env.has_llvm_min_version(1) and not env.has_llvm_min_version(999)
    assert not env.has_cpu_feature("no-such-feature")


def test_memoize_runs_a_call_once_and_never_writes_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    calls = []

    @memoize("minitvm.tests.memoize")
    def data(n, shape):
        calls.append(n)
        return [n] * shape[0]

    assert data(3, (2,)) == [3, 3] and data(3, (2,)) is data(3, (2,)) and calls == [3]
    assert list(tmp_path.iterdir()) == []  # TVM writes ~/.cache/tvm pickles; minitvm reads or writes none
    with pytest.raises(TypeError, match="not a str, int, float or tuple"):
        data([1], (2,))
    with pytest.raises(NotImplementedError, match="never writes or reads pickle"):
        memoize("k", save_at_exit=True)
