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
