"""The printer answers in the era of TVM's names a function was written in (minitvm.eras)."""

from __future__ import annotations

import pytest

import minitvm
from minitvm import te
from minitvm.ir import assert_structural_equal, structural_equal, structural_hash
from minitvm.script import from_source

#: one program in TVM 0.27's spelling; the MLC course's is the same text respelled
_TODAY = """
@T.prim_func
def today(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    C = T.sblock_alloc_buffer((8,))
    for i in range(8):
        with T.sblock("C"):
            vi = T.axis.spatial(8, i)
            T.sblock_attr({"note": 1})
            C[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.sblock("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = C[vi] + T.float32(1)
"""
_MLC = _TODAY.replace("T.sblock_alloc_buffer", "T.alloc_buffer").replace("T.sblock", "T.block").replace(
    "def today", "def mlc")
today, mlc = from_source(_TODAY), from_source(_MLC)


@pytest.mark.parametrize("func, era, module, names, other_era", [
    (today, "0.27", "tirx", ('# with T.sblock("root"):', "C = T.sblock_alloc_buffer((8,))", 'with T.sblock("C"):',
                             'T.sblock_attr({"note": 1})'), ("T.block(", "T.alloc_buffer")),
    (mlc, "0.23", "tir", ('# with T.block("root"):', "C = T.alloc_buffer((8,))", 'with T.block("C"):',
                          'T.block_attr({"note": 1})'), ("sblock",)),
], ids=["sblock", "block"])
def test_a_function_prints_in_the_spelling_it_was_written_in(func, era, module, names, other_era):
    text = func.script()
    assert func.era == era and text.startswith(f"# from minitvm.script import {module} as T\n")
    assert all(name in text for name in names), text
    assert not any(name in text for name in other_era), text


@pytest.mark.parametrize("func", [today, mlc], ids=["0.27", "0.23"])
def test_each_era_round_trips_and_keeps_its_era(func):
    again = from_source(func.script())
    assert_structural_equal(again, func)
    assert again.era == func.era and again.script() == func.script()


def test_structural_equality_and_hash_do_not_depend_on_the_era():
    assert structural_equal(today, mlc.with_attr("global_symbol", "today"))
    assert structural_hash(today) == structural_hash(mlc.with_attr("global_symbol", "today"))
    # the other era's text of the same function parses to an equal function of that era
    other = from_source(mlc.script(era="0.27"))
    assert other.era == "0.27" and structural_equal(other, mlc)


def test_schedules_and_passes_keep_the_era():
    for func, spelling in ((today, 'T.sblock("C")'), (mlc, 'T.block("C")')):
        sch = minitvm.s_tir.Schedule(func)
        sch.split(sch.get_loops(sch.get_sblock("C"))[0], factors=[None, 4])
        sch.transform_layout("C", ("write", 0), lambda i: [i // 4, i % 4])
        assert spelling in sch.mod.script()
        assert minitvm.lower(sch.mod)["main"].era == func.era


def test_what_nothing_dates_prints_in_tvm_027s_names():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    func = te.create_prim_func([A, B])
    assert func.era is None
    assert 'with T.sblock("B"):' in func.script()
    mixed = minitvm.IRModule({"a": today, "b": mlc})
    assert "import tirx as T" in mixed.script() and 'T.block("C")' not in mixed.script()
    # a module whose dated functions agree prints in their era, undated ones with them
    assert 'with T.block("B"):' in minitvm.IRModule({"a": mlc, "b": func}).script()


def test_script_era_chooses_and_refuses_an_unknown_era():
    assert 'with T.block("C"):' in today.script(era="0.23")
    assert 'with T.sblock("C"):' in mlc.script(era="0.27")
    with pytest.raises(ValueError, match="era"):
        today.script(era="0.25")


def test_a_function_without_blocks_takes_the_era_of_its_texts_import():
    lowered = minitvm.lower(mlc)["mlc"]
    text = lowered.script()
    assert "import tir as T" in text and "T.block" not in text
    assert from_source(text).era == "0.23"
    assert from_source(lowered.script(era="0.27")).era == "0.27"


def test_default_era_dates_undated_ir_and_the_header_names_the_imported_package(monkeypatch):
    # a PrimFunc built from Python calls names no era: TVM 0.27's unless the default says otherwise
    a = te.placeholder((4,), name="A")
    undated = te.create_prim_func([a, te.compute((4,), lambda i: a[i] * 2.0, name="B")])
    assert "T.sblock(" in undated.script()
    monkeypatch.setattr(minitvm.eras, "_DEFAULT_ERA", ["0.23"])
    text = undated.script()
    assert text.startswith("# from minitvm.script import tir as T\n") and "T.block(" in text
    with pytest.raises(ValueError, match="the eras are"):
        minitvm.eras.set_default_era("0.19")
    # where `import tvm` is answered by minitvm, the header says tvm; the parser reads it back
    monkeypatch.setitem(__import__("sys").modules, "tvm", minitvm)
    text = undated.script()
    assert text.startswith("# from tvm.script import tir as T\n")
    assert_structural_equal(from_source(text), undated)
