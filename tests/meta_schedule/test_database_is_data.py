"""A tuning database is data people share: opening one never runs Python written in it.

Workloads are TVMScript parsed in data mode (``from_source(text, data_only=True)``); index
maps in traces are read by an arithmetic-only lambda parser.  Each crafted file below would
create a marker file if anything in it ran.
"""

import json

import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.meta_schedule import search_strategy as ss
from minitvm.meta_schedule import space_generator as sg
from minitvm.target import Target

from .workloads import check_matmul, matmul_64

MOD = minitvm.IRModule({"main": matmul_64})
RUN = '__import__("os").system("touch MARKER")'
FUNC_ATTR = 'T.func_attr({"tir.noalias": True})'
# (what to replace in the printed workload, what to put there, what the error names)
CRAFTED_WORKLOADS = {
    "import in T.evaluate": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate({RUN})", "__import__"),
    "attribute of a literal": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate(().__class__.__base__.__subclasses__())",
                               "().__class__"),
    "attribute of a string": (FUNC_ATTR, f'{FUNC_ATTR}\n        T.evaluate("touch MARKER".__class__)', "__class__"),
    "lambda": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate((lambda: {RUN})())", "lambda"),
    "comprehension": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate([{RUN} for _ in (1,)][0])", "for _ in"),
    "unknown name": (FUNC_ATTR, f'{FUNC_ATTR}\n        T.evaluate(system("touch MARKER"))', "unknown name 'system'"),
    "a module through T": (FUNC_ATTR, f'{FUNC_ATTR}\n        T.evaluate(T.sys.modules["os"].system("touch MARKER"))',
                           "T.sys"),
    "method of a buffer": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate(A.__init__.__globals__)", "A.__init__"),
    "buffer annotation": ('T.Buffer((64, 64), "float32"), B:', f'T.Buffer((64, 64), {RUN} or "float32"), B:',
                          "__import__"),
    "func attr value": ("True})", f"{RUN} == 0}})", "__import__"),
    "decorator option": ("@T.prim_func", f"@T.prim_func(private={RUN} == 1)", "__import__"),
    "loop extent": ("T.grid(64, 64, 64)", f"T.grid(64, {RUN} + 64, 64)", "__import__"),
    "class body": ("class Module:", f'class Module:\n    I.module_attrs({{"x": {RUN}}})', "__import__"),
    "a huge power": (FUNC_ATTR, f"{FUNC_ATTR}\n        T.evaluate(2 ** 10 ** 9)", "power"),
}


def _printed_workload() -> str:
    return ms.database.Workload(MOD).as_json()[1]


def _write(work_dir, workload_text, records=()):
    work_dir.mkdir(exist_ok=True)
    (work_dir / "database_workload.json").write_text(json.dumps(["0" * 16, workload_text]) + "\n")
    (work_dir / "database_tuning_record.json").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("case", sorted(CRAFTED_WORKLOADS))
def test_a_crafted_workload_is_refused_and_nothing_runs(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `touch MARKER` would land here
    old, new, culprit = CRAFTED_WORKLOADS[case]
    text = _printed_workload()
    assert old in text
    _write(tmp_path / "db", text.replace(old, new, 1))
    with pytest.raises(ValueError) as err:
        ms.database.JSONDatabase(work_dir=str(tmp_path / "db"))
    message = str(err.value)
    assert "database_workload.json:1: cannot read this workload" in message and culprit in message
    if culprit != "unknown name 'system'":
        assert "is not TVMScript" in message and "a file is parsed as data, never run" in message
    assert not (tmp_path / "MARKER").exists()


def test_python_outside_the_module_class_is_never_run(tmp_path, monkeypatch):
    """The parser reads the class or function only: a statement beside it is not even looked at."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "db", f"{RUN}\n{_printed_workload()}")
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "db"))
    assert db.has_workload(MOD)
    assert not (tmp_path / "MARKER").exists()


def _candidates():
    """The tuner's own candidates for the matmul (its design space replayed with fresh samples);
    seeds 2 and 3 pack B with transform_layout, whose trace holds an index-map lambda."""
    design = sg.PostOrderApply().generate_design_space(MOD, Target("llvm --num-cores=1"), seed=0)[0]
    return [ss.replay(design.trace, MOD, seed, "default", resample=True) for seed in (1, 2, 3, 4)]


def test_a_database_written_by_minitvm_opens_with_the_same_best_schedule(tmp_path):
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    workload = db.commit_workload(MOD)
    candidates = _candidates()
    assert any(i.kind.name == "TransformLayout" for i in candidates[2].trace.insts)
    for sch, secs in zip(candidates, ([3e-3], [2e-3, 2.1e-3], [1e-3, 1.1e-3], [4e-3])):
        db.commit_tuning_record(ms.TuningRecord(sch.trace, workload, secs, "llvm"))
    again = ms.database.JSONDatabase(work_dir=str(tmp_path))
    assert len(again) == 4
    best = again.query_schedule(MOD, "llvm")
    assert_structural_equal(best.mod, candidates[2].mod)
    assert str(best.trace) == str(candidates[2].trace)
    check_matmul(best.mod, seed=3)


ESCAPE = ('lambda i, j: [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_wrap_close"][0]'
          '.__init__.__globals__["system"]("touch MARKER")')
CRAFTED_MAPS = {
    "subclasses escape": ESCAPE,
    "import": f"lambda i, j: {RUN}",
    "attribute of a parameter": "lambda i, j: (i.__class__, j)",
    "a default argument": f"lambda i, j, k={RUN}: (j, i)",
    "unknown call": 'lambda i, j: (system("touch MARKER"), i)',
}


@pytest.mark.parametrize("case", sorted(CRAFTED_MAPS))
@pytest.mark.parametrize("run_secs", [[5e-4], None])
def test_a_crafted_index_map_skips_its_record_with_a_warning_and_nothing_runs(case, run_secs, tmp_path,
                                                                              monkeypatch):
    """As a record that no longer replays, a record whose index map is not arithmetic is skipped;
    it is always reported (a failed record that does not replay is skipped silently)."""
    monkeypatch.chdir(tmp_path)
    db = ms.database.JSONDatabase(work_dir=str(tmp_path / "db"))
    good = tir.Schedule(MOD)
    good.transform_layout("C", ("write", 0), lambda i, j: (j, i))
    db.commit_tuning_record(ms.TuningRecord(good.trace, db.commit_workload(MOD), [1e-3], "llvm"))
    path = tmp_path / "db" / "database_tuning_record.json"
    index, (trace, _, target, args_info) = json.loads(path.read_text())
    crafted = json.dumps([index, [trace, run_secs, target, args_info]])
    assert "lambda i, j: (j, i)" in crafted
    with open(path, "a") as f:
        f.write(crafted.replace("lambda i, j: (j, i)", CRAFTED_MAPS[case].replace('"', '\\"')) + "\n")
    with pytest.warns(UserWarning, match=r"database_tuning_record.json:2: skipped a record whose trace is not "
                                         r"data \(index map 'lambda i, j.*a trace is read as data, never run"):
        again = ms.database.JSONDatabase(work_dir=str(tmp_path / "db"))
    assert len(again) == 1
    assert_structural_equal(again.query_schedule(MOD, "llvm").mod, good.mod)
    assert not (tmp_path / "MARKER").exists()


def test_malformed_lines_name_their_file_and_line(tmp_path):
    _write(tmp_path / "a", _printed_workload(), records=[[0, ["not a trace"]]])
    with pytest.raises(ValueError, match=r"database_tuning_record.json:1: a record line is \[workload index"):
        ms.database.JSONDatabase(work_dir=str(tmp_path / "a"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "database_workload.json").write_text('["0", "unterminated\n')
    with pytest.raises(ValueError, match=r"database_workload.json:1: not a line of JSON"):
        ms.database.JSONDatabase(work_dir=str(tmp_path / "b"))
    _write(tmp_path / "c", _printed_workload(), records=[[True, [[[], []], [1e-3], "llvm", None]]])
    with pytest.raises(ValueError, match=r"database_tuning_record.json:1: workload index True is not in"):
        ms.database.JSONDatabase(work_dir=str(tmp_path / "c"))
