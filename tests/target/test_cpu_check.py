"""Code compiled for a CPU this machine is not refuses to run, with an error, never SIGILL: the
features a target enables against this CPU's, and for another named CPU the instructions its
assembly uses (minitvm.target.codegen.cpu_check).  Each test checks the same on a machine with
AVX-512 and on one without: either it picks a feature this CPU lacks, or it pretends a CPU."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime.cpu import host_cpu_features, host_cpu_name
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.target.codegen.cpu_check import features_in_assembly
from minitvm.testing import feature_this_cpu_lacks
from minitvm.testing.pretend_cpu import AVX2_CPU, AVX512_CPU, MASKED_AVX512_CPU, pretend_cpu
from minitvm.tir.tensor_intrin import x86


@T.prim_func
def mul_add(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "mul_add", "tir.noalias": True})
    for i in T.vectorized(1024):
        with T.block("B"):
            vi = T.axis.spatial(1024, i)
            B[vi] = A[vi] * A[vi] + B[vi]


def _args():
    a = np.random.default_rng(7).standard_normal(1024).astype("float32")
    return a, np.ones(1024, "float32")


@pytest.fixture
def cpu_without_avx512():
    """Pretend this process runs on a CPU without AVX-512 (what is checked, not what runs)."""
    with pretend_cpu(AVX2_CPU):
        yield


def test_avx512_build_runs_only_on_a_cpu_with_avx512():
    lib = minitvm.build(mul_add, target=x86.AVX512_TARGET)
    assert re.search(r"vfmadd\d+ps\s+[^\n]*%zmm", lib.get_source("asm"))  # readable on every machine
    a, b = _args()
    if "avx512f" in host_cpu_features():
        lib["mul_add"](a, b)
        np.testing.assert_allclose(b, a * a + 1, rtol=1e-6)
    else:
        with pytest.raises(RuntimeError, match=rf"mul_add: compiled for skylake-avx512 with avx512f, which this "
                                               rf"CPU \({host_cpu_name()}\) lacks: running it would stop the "
                                               r"process on an illegal instruction \(SIGILL\)\. Its code can still "
                                               r"be read \(get_source\('asm'\)\)"):
            lib["mul_add"](a, b)
        np.testing.assert_array_equal(b, 1)  # nothing ran


def test_a_cpu_whose_name_brings_avx512_that_it_lacks_gets_no_avx512(tmp_path):
    """A virtual machine may hide a Zen 4's AVX-512: LLVM still names the CPU ``znver4``, a name
    that alone brings AVX-512.  Code for this CPU must turn off what it lacks, so it runs here --
    built, and saved then loaded -- with no zmm register in it."""
    from minitvm.target.codegen.llvm_export import export_llvm, load_llvm_ir

    a, b = _args()
    with pretend_cpu(MASKED_AVX512_CPU):
        target = minitvm.target.Target("llvm")
        assert "avx512f" in target.features_off and "avx512f" not in target.features
        lib = minitvm.build(mul_add, target="llvm")
        saved = export_llvm(lib)
        loaded = load_llvm_ir(saved["payload"], saved["metadata"])
        for m in (lib, loaded):
            asm = m.get_source("asm")
            assert "ymm" in asm and not re.search(r"%zmm|%k[1-7]", asm), "AVX-512 in code for a CPU without it"
            out = minitvm.nd.array(b)
            m["mul_add"](minitvm.nd.array(a), out)
            np.testing.assert_allclose(out.numpy(), a * a + b, rtol=1e-6)


def test_a_feature_this_cpu_lacks_is_refused_by_name():
    lacking = feature_this_cpu_lacks()
    lib = minitvm.build(mul_add, target=f"llvm -mattr=+{lacking}")
    assert lacking in lib.cpu_mismatch and host_cpu_name() in lib.cpu_mismatch
    with pytest.raises(RuntimeError, match=rf"compiled with -mattr=\S*\+{lacking}\b"):
        lib["mul_add"](*_args())
    with pytest.raises(RuntimeError, match="illegal instruction"):
        lib.time_evaluator("mul_add", minitvm.cpu())(*_args())


def test_code_using_only_what_this_cpu_has_runs():
    for target in ("llvm", f"llvm -mcpu={host_cpu_name()}", "llvm -mattr=+prefer-256-bit", "llvm -mcpu=x86-64"):
        lib = minitvm.build(mul_add, target=target)
        if "-mcpu=" in target and lib.cpu_mismatch:
            # this CPU's name brings what the CPU lacks (a Zen 4 with AVX-512 hidden): refused by name
            assert "avx512f" not in host_cpu_features() and f"for {host_cpu_name()} with avx512" in lib.cpu_mismatch
            continue
        assert lib.cpu_mismatch == "", target
        a, b = _args()
        lib["mul_add"](a, b)
        np.testing.assert_allclose(b, a * a + 1, rtol=1e-6, err_msg=target)


def test_another_cpu_is_judged_by_the_instructions_its_code_uses(cpu_without_avx512):
    # -mcpu=skylake-avx512 alone prefers 256-bit vectors: its code is AVX2 + FMA and may run here
    lib = minitvm.build(mul_add, target="llvm -mcpu=skylake-avx512")
    assert "zmm" not in lib.get_source("asm") and lib.cpu_mismatch == ""
    a, b = _args()
    lib["mul_add"](a, b)
    np.testing.assert_allclose(b, a * a + 1, rtol=1e-6)
    # with +avx512f it uses zmm registers: refused
    wide = minitvm.build(mul_add, target=x86.AVX512_TARGET)
    assert "compiled for skylake-avx512 with avx512f, which this CPU (x86-64-v3) lacks" in wide.cpu_mismatch
    with pytest.raises(RuntimeError, match="illegal instruction"):
        wide["mul_add"](*_args())


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((4, 64), "float32"), w: R.Tensor((64, 32), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y


def test_compiled_model_for_another_cpu_refuses_in_the_vm_and_after_loading(cpu_without_avx512, tmp_path):
    ex = minitvm.compile(Dense, target=x86.AVX512_TARGET)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 64)).astype("float32"), rng.standard_normal((64, 32)).astype("float32")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    assert vm.native_entries == {}  # a native entry would run the kernels' instructions directly
    with pytest.raises(RuntimeError, match="compiled for skylake-avx512 with avx512f"):
        vm["main"](x, w)
    path = os.fspath(tmp_path / "dense.so")
    ex.export_library(path)  # still works
    loaded = minitvm.runtime.load_module(path)
    assert "zmm" in loaded.lib.get_source("asm")
    with pytest.raises(RuntimeError, match="compiled for skylake-avx512 with avx512f"):
        relax.VirtualMachine(loaded, minitvm.cpu())["main"](x, w)
    # the same model for this CPU runs, natively
    here = relax.VirtualMachine(minitvm.compile(Dense, target="llvm"), minitvm.cpu())
    assert here.native_entries
    np.testing.assert_allclose(here["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cpu", [AVX2_CPU, AVX512_CPU])
def test_the_native_entry_decision_follows_the_cpu_the_process_runs_on(cpu):
    # On either CPU, a model compiled for this CPU runs as one native entry, and one compiled for
    # AVX-512 does exactly when the CPU has AVX-512.  Pretended: nothing compiled for AVX-512 runs
    # unless the real CPU has it too.
    x = np.random.default_rng(5).standard_normal((4, 64)).astype("float32")
    w = np.random.default_rng(6).standard_normal((64, 32)).astype("float32")
    with pretend_cpu(cpu):
        assert host_cpu_name() == cpu and ("avx512f" in host_cpu_features()) == (cpu == AVX512_CPU)
        here = relax.VirtualMachine(minitvm.compile(Dense, target="llvm"), minitvm.cpu())
        assert here.native_entries
        if cpu == AVX2_CPU or "avx512f" in _real_features():  # its code runs on the real CPU too
            np.testing.assert_allclose(here["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-5)
        wide = relax.VirtualMachine(minitvm.compile(Dense, target=x86.AVX512_TARGET), minitvm.cpu())
        assert bool(wide.native_entries) == (cpu == AVX512_CPU)


def _real_features() -> tuple[str, ...]:
    import llvmlite.binding as llvm

    return tuple(f for f, on in llvm.get_host_cpu_features().items() if on)


@pytest.mark.parametrize("line, features", [
    ("vfmadd231ps\t%zmm1, %zmm2, %zmm3", {"avx", "avx512f", "fma"}),
    ("vfmadd213ps\t(%rdi,%rax), %ymm0, %ymm1", {"avx", "fma"}),
    ("vaddps\t%ymm0, %ymm1, %ymm2", {"avx"}),
    ("vpaddd\t%ymm0, %ymm1, %ymm2", {"avx", "avx2"}),
    ("vpaddd\t%xmm0, %xmm1, %xmm2", {"avx"}),
    ("vpdpbusd\t%zmm1, %zmm2, %zmm3", {"avx", "avx512f", "avx512vnni"}),
    ("{vex}\tvpdpbusd\t%ymm1, %ymm2, %ymm3", {"avx", "avx2", "avxvnni"}),
    ("vgatherdps\t(%rdi,%zmm1,4), %zmm0 {%k1}", {"avx", "avx2", "avx512f"}),
    ("vcmpltps\t%ymm1, %ymm0, %k1", {"avx", "avx512f", "avx512vl"}),
    ("vpternlogd\t$255, %ymm0, %ymm0, %ymm0", {"avx", "avx2", "avx512f", "avx512vl"}),
    ("vmovups\t%ymm16, (%rax)", {"avx", "avx512f", "avx512vl"}),
    ("vpbroadcastd\t%eax, %ymm0", {"avx", "avx2", "avx512f"}),
    ("vbroadcastss\t%xmm0, %ymm0", {"avx", "avx2"}),
    ("vbroadcastss\t(%rdi), %ymm0", {"avx"}),
    ("vcvtph2ps\t%xmm0, %ymm1", {"avx", "f16c"}),
    ("vaddph\t%zmm0, %zmm1, %zmm2", {"avx", "avx512f", "avx512fp16"}),
    ("kmovq\t%k1, %rax", {"avx512f", "avx512bw"}),
    ("shlxq\t%rax, %rbx, %rcx", {"bmi2"}),
    ("pmulld\t%xmm0, %xmm1", {"sse4.1"}),
    ("mulps\t%xmm0, %xmm1", set()),
    ("andnps\t%xmm0, %xmm1", set()),
])
def test_features_read_from_assembly(line, features):
    assert features_in_assembly(f"mul_add:\n\t.p2align\t4\n\t# %bb.0:\n\t{line}\n\tretq\n") == features
