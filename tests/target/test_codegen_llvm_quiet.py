"""LLVM's own messages (optimization remarks such as "loop not vectorized") never reach the
user's stderr unless asked for; they are kept on the module and logged."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import numpy as np

import minitvm
from minitvm.script import tir as T


@T.prim_func
def _unvectorizable(A: T.Buffer((64,), "float32"), B: T.Buffer((65,), "float32"), n: T.int32):
    # asked to vectorize an outer loop around a loop-carried dependence: LLVM gives up and says so
    for i in T.vectorized(64):
        for k in range(n):
            with T.block("b"):
                vi, vk = T.axis.remap("SR", [i, k])
                B[vi + 1] = B[vi] * A[(vi * vk) % 64]


_SCRIPT = textwrap.dedent("""
    import numpy as np, minitvm
    from tests.target.test_codegen_llvm_quiet import _unvectorizable
    lib = minitvm.build(_unvectorizable)
    print(len(lib.llvm_messages))
""")


def _run(env_extra: dict) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_remarks_stay_off_stderr_and_are_kept_on_the_module():
    done = _run({})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert int(done.stdout.split()[-1]) >= 1  # LLVM did say something: it was kept, not shown


def test_remarks_print_when_asked():
    done = _run({"MINITVM_LLVM_REMARKS": "1"})
    assert done.returncode == 0, done.stderr
    assert "loop not vectorized" in done.stderr


def test_remarks_are_logged_and_the_kernel_still_runs(caplog):
    from minitvm.driver import clear_kernel_cache  # (not minitvm.driver: a lazy attribute, alone unset)
    from minitvm.target.codegen import llvm_jit

    clear_kernel_cache()

    llvm_jit._optimized_text.cache_clear()
    with caplog.at_level(logging.INFO, logger="minitvm.llvm"):
        lib = minitvm.build(_unvectorizable)
    assert any("loop not vectorized" in r.getMessage() for r in caplog.records)
    a = np.random.default_rng(1).standard_normal(64).astype("float32")
    b = np.random.default_rng(2).standard_normal(65).astype("float32")
    want = b.copy()
    for i in range(64):
        for k in range(3):
            want[i + 1] = want[i] * a[(i * k) % 64]
    lib["_unvectorizable"](a, b, 3)
    np.testing.assert_allclose(b, want, rtol=1e-5)


_WARNS_WHILE_CAPTURED = textwrap.dedent("""
    import os, sys, warnings
    from minitvm.target.codegen.llvm_jit import quiet_llvm
    said = []
    with quiet_llvm(said):
        os.write(2, b"what LLVM writes to fd 2\\n")
        warnings.warn("a warning of the compiling thread")
        print("a print to sys.stderr", file=sys.stderr)
    print(said)
    print(sys.stderr.fileno())
""")


def test_python_stderr_is_not_captured_with_llvms():
    # The early build captures fd 2 from its first LLVM piece to the build's end while the
    # compiling thread goes on scheduling: a warning it raises meanwhile reaches the terminal.
    import os

    done = subprocess.run([sys.executable, "-c", _WARNS_WHILE_CAPTURED], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, MINITVM_LLVM_REMARKS="0"))
    assert done.returncode == 0, done.stderr
    assert "a warning of the compiling thread" in done.stderr
    assert "a print to sys.stderr" in done.stderr
    assert "what LLVM writes" not in done.stderr
    assert done.stdout.splitlines() == ["['what LLVM writes to fd 2']", "2"]  # kept, and stderr restored
