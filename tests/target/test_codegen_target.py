"""Target parsing and host CPU detection."""

from __future__ import annotations

import pytest

from minitvm.target import Target, host_cpu_features, host_cpu_name


def test_llvm_target_defaults_to_host():
    t = Target("llvm")
    assert t.kind.name == "llvm" and str(t) == "llvm" and t.attrs == {}
    assert t.mcpu == host_cpu_name() and t.mcpu not in ("", "generic")
    assert t.opt_level == 3


def test_options_are_parsed():
    t = Target("llvm -mcpu=native -mattr=+avx2,-fma -opt-level=2 -num-cores=2 -fast-math")
    assert t.attrs["mcpu"] == "native" and t.mcpu == host_cpu_name()
    assert t.mattr == ["+avx2", "-fma"] and t.opt_level == 2 and t.num_cores == 2
    assert t.attrs["fast-math"] is True
    assert "fma" not in t.features
    assert str(Target(str(t))) == str(t)
    assert Target(t) == t


def test_python_target_and_dict_form():
    assert Target("python").kind.name == "python"
    assert Target({"kind": "llvm", "mcpu": "skylake"}).mcpu == "skylake"


def test_bad_targets():
    with pytest.raises(ValueError, match="unsupported target kind 'rocm'"):
        Target("rocm")
    with pytest.raises(ValueError, match="-model=h100 is not a GPU minitvm knows"):
        Target("cuda-emulated -model=h100")
    with pytest.raises(ValueError, match="-key=value"):
        Target("llvm mcpu")
    with pytest.raises(ValueError, match="opt-level"):
        Target("llvm -opt-level=7")


def test_host_features_and_context():
    feats = host_cpu_features()
    assert "sse2" in feats
    assert Target.current() is None
    with Target("python") as t:
        assert Target.current() is t
    assert Target.current() is None


def test_a_feature_mattr_turns_off_stays_off_in_the_machine_code():
    """``-mattr=-avx`` reaches LLVM: this CPU brings AVX with its name, so merely leaving AVX out
    of the features would not turn it off.  The code stays SSE-only when saved and loaded too."""
    import re

    import numpy as np

    import minitvm
    from minitvm import te
    from minitvm.target.codegen.llvm_export import export_llvm, load_llvm_ir
    from minitvm.tir.transform.default_schedule import apply_default_schedule

    t = Target("llvm -mattr=-avx,+avx,-avx")
    assert t.disabled_features == ("avx",) and "avx" not in t.features
    assert Target("llvm -mattr=-avx,+avx").disabled_features == ()
    # what builds on a feature goes with it, as in LLVM: no kernel asks for a VNNI instruction then
    named = Target("llvm -mcpu=x86-64 -mattr=+avx2,+fma,+avx512f,+avx512vnni,+sse4.2,-avx")
    assert named.features == ("sse4.2",) and named.vector_unit.name == "sse"
    assert Target("llvm -mcpu=x86-64 -mattr=+avx2,+avx512f,+avx512bw,-avx512f").features == ("avx2",)
    a = te.placeholder((1024,), name="A")
    b = te.compute((1024,), lambda i: a[i] * 2.0 + 1.0, name="B")
    mod = minitvm.IRModule({"main": apply_default_schedule(te.create_prim_func([a, b]).with_attr("global_symbol",
                                                                                                   "main"))})
    wide = re.compile(r"%[yz]mm")
    assert "avx" not in host_cpu_features() or wide.search(minitvm.build(mod, target="llvm").get_source("asm"))
    lib = minitvm.build(mod, target="llvm -mattr=-avx")
    saved = export_llvm(lib)
    loaded = load_llvm_ir(saved["payload"], saved["metadata"])
    x = np.random.default_rng(3).standard_normal(1024).astype("float32")
    for m in (lib, loaded):
        assert not wide.search(m.get_source("asm"))
        out = minitvm.nd.empty((1024,), "float32")
        m["main"](minitvm.nd.array(x), out)
        np.testing.assert_allclose(out.numpy(), x * 2 + 1, rtol=1e-6)
