"""Both eras of TVM's names (minitvm.eras): each TVM 0.27 name is the same object as its older twin."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm
from minitvm.eras import ATTRIBUTE_RENAMES, MODULE_RENAMES


def _resolve(path: str) -> object:
    module_name, _, attrs = path.partition(":")
    obj: object = importlib.import_module(module_name)
    for attr in attrs.split(".") if attrs else []:
        obj = getattr(obj, attr)
    return obj


@pytest.mark.parametrize("new, old", sorted(MODULE_RENAMES.items()))
def test_a_renamed_module_is_the_module(new, old):
    assert importlib.import_module(new) is importlib.import_module(old)


@pytest.mark.parametrize("new, old", ATTRIBUTE_RENAMES)
def test_a_renamed_name_is_the_same_object(new, old):
    assert _resolve(new) is _resolve(old)


def test_submodules_of_a_renamed_package_are_the_same_modules():
    import minitvm.tirx.transform
    from minitvm.s_tir.meta_schedule import database

    assert minitvm.tirx.transform is minitvm.tir.transform
    assert database is importlib.import_module("minitvm.meta_schedule.database")
    assert minitvm.s_tir.meta_schedule is minitvm.meta_schedule


def test_tvm_027_code_builds_and_runs():
    # TVM 0.27's spelling end to end: tirx script, sblock, s_tir schedule, tirx.build, runtime.tensor
    from minitvm.script import tirx as T

    @T.prim_func
    def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("C"):
                vi = T.axis.spatial(64, i)
                C[vi] = A[vi] + B[vi]

    sch = minitvm.s_tir.Schedule(add)
    (i,) = sch.get_loops(sch.get_sblock("C"))
    sch.split(i, factors=[None, 16])
    lib = minitvm.tirx.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(64).astype("float32") for _ in range(2))
    c = minitvm.runtime.tensor(np.zeros(64, "float32"))
    lib["add"](minitvm.runtime.tensor(a), minitvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)


def _copy4(name: str):
    from minitvm.script import tir as T

    @T.prim_func
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    return copy.with_attr("global_symbol", name)


def test_tir_build_refuses_another_pipeline_by_name():
    with pytest.raises(NotImplementedError, match="pipeline"):
        minitvm.tir.build(_copy4("copy"), pipeline="my_pipeline")


def test_ffi_registration_under_tvm_027_spelling():
    import minitvm_ffi as tvm_ffi

    @tvm_ffi.register_global_func("test_eras.twice", override=True)
    def twice(x):
        return 2 * x

    assert tvm_ffi.get_global_func("test_eras.twice")(21) == 42
    assert minitvm.get_global_func("test_eras.twice")(4) == 8


def test_tempdir_holds_files_and_is_removed(tmp_path):
    from minitvm.support import utils

    temp = utils.tempdir()
    with open(temp.relpath("x.txt"), "w") as f:
        f.write("x")
    assert temp.listdir() == ["x.txt"] and (temp / "x.txt").read_text() == "x"
    where = temp.path
    temp.remove()
    assert not where.exists()
    with pytest.raises(FileExistsError):
        utils.tempdir(custom_path=str(tmp_path))  # as TVM: a custom path must be new


def test_renamed_paths_work_in_a_fresh_interpreter():
    # the import system alone (no prior ``import minitvm.tir``) resolves TVM 0.27's deep paths
    code = textwrap.dedent("""
        from minitvm.tirx.transform import Simplify
        from minitvm.s_tir.meta_schedule.database import JSONDatabase
        import minitvm
        assert Simplify is minitvm.tir.transform.Simplify
        assert JSONDatabase is minitvm.meta_schedule.database.JSONDatabase
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_functions_items_lists_functions_alphabetically():
    # TVM's tutorials print a module function by function with it
    mod = minitvm.IRModule({"zeta": _copy4("zeta"), "alpha": _copy4("alpha"), "mid": _copy4("mid")})
    items = mod.functions_items()
    assert [gv.name_hint for gv, _ in items] == ["alpha", "mid", "zeta"]
    assert all(func is mod[gv] for gv, func in items)


def test_prim_func_takes_tvm_027_flags():
    from minitvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def double(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.sblock("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)

    a = np.random.default_rng(1).standard_normal(8).astype("float32")
    b = np.zeros(8, "float32")
    minitvm.tirx.build(double)["double"](a, b)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="persistent"):
        T.prim_func(persistent=True)


def test_call_dps_packed_takes_out_ty():
    from minitvm import relax

    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    call = relax.call_dps_packed("my_func", (x,), out_ty=relax.TensorStructInfo((4,), "float32"))
    assert call.sinfo_args[0].shape.values[0] == 4
    with pytest.raises(TypeError, match="out_sinfo is required"):
        relax.call_dps_packed("my_func", (x,))


def test_ffi_array_is_what_the_vm_returns_for_a_tuple():
    import minitvm_ffi as tvm_ffi
    from minitvm.script import ir as I
    from minitvm.script import relax as R

    @I.ir_module
    class Pair:
        @R.function
        def main(x: R.Tensor((3,), "float32")):
            y = R.add(x, x)
            return (x, y)

    vm = minitvm.relax.VirtualMachine(minitvm.compile(Pair, target="llvm"), minitvm.cpu())
    x = np.random.default_rng(2).standard_normal(3).astype("float32")
    out = vm["main"](x)
    assert isinstance(out, tvm_ffi.Array) and not isinstance(out[1], tvm_ffi.Array)
    np.testing.assert_allclose(out[1].numpy(), 2 * x, rtol=1e-6)
    assert tvm_ffi.Array((1, 2)) == [1, 2] and isinstance(tvm_ffi.Map({"a": 1}), tvm_ffi.Map)
