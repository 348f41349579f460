"""Smoke test of benchmarks/run.py (the one-table benchmark suite): a --quick run on tiny sizes
writes the JSON and the chart, every minitvm row computed the right numbers, and the targets,
ratios and failure rows are filled in as documented.  Speed is never asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from minitvm.runtime.cpu import host_cpu_features

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run():
    return _load("run")


@pytest.fixture(scope="module")
def quick_run(run, tmp_path_factory):
    """One --quick run on tiny sizes, TVM reported missing whatever the machine has."""
    out = tmp_path_factory.mktemp("bench")
    find = run.tvm_ref.find_tvm_python
    run.tvm_ref.find_tvm_python = lambda explicit=None: None
    try:
        entries, path = run.main(["--quick", "--only", "matmul,tensorize,mlp,zoo", "--matmul-size", "128",
                                  "--mlp-batches", "1,3",
                                  "--models", "mlp,embedding_posenc", "--zoo-batches", "2",
                                  "--repeat", "2", "--peers", "onnxruntime", "--out-dir", str(out)])
    finally:
        run.tvm_ref.find_tvm_python = find
    return entries, path, json.loads(path.read_text())


def _rows(data, section, case=None):
    return {e["impl"]: e for e in data["entries"] if e["section"] == section and (case is None or e["case"] == case)}


def test_quick_run_writes_table_json_and_chart(quick_run):
    entries, path, data = quick_run
    assert path.name == "latest.json" and (path.parent / "latest.png").stat().st_size > 1000
    assert {"utc", "config", "env", "goals", "entries", "table", "other_load", "tvm"} <= set(data)
    assert data["config"]["sections"] == ["matmul", "tensorize", "mlp", "zoo"]
    assert [e["impl"] for e in data["entries"] if e["section"] == "matmul"] == [
        "numpy", "torch", "minitvm naive", "minitvm default", "minitvm best"]
    # the tensorize section: the plain vectorized schedule, the same tile vectorized and tensorized,
    # each checked against numpy before it was timed
    assert list(_rows(data, "tensorize", "128^3")) == [
        "numpy", "torch", "minitvm tiled", "minitvm vectorized", "minitvm tensorized"]
    # then the u8 x s8 -> int32 matmul: the int8 tile vectorized and tensorized with dot_16x4_vnni
    int8 = _rows(data, "tensorize", "128^3 u8s8")
    assert list(int8) == ["numpy", "torch", "minitvm int8 vectorized", "minitvm int8 tensorized"]
    assert all(e["max_abs_err"] == 0 for e in int8.values())  # exact integer results
    # tensorized rows run on every CPU; where the instruction is missing, the note says LLVM emulates it
    for row, feature in ((_rows(data, "tensorize", "128^3")["minitvm tensorized"], "avx512f"),
                         (int8["minitvm int8 tensorized"], "avx512vnni")):
        emulated = f"this CPU lacks {feature}: LLVM emulates the intrinsic with narrower instructions"
        assert (emulated in row["note"]) == (feature not in host_cpu_features()), row["note"]
    assert all(e["correct"] for e in data["entries"] if e["section"] == "tensorize" and "minitvm" in e["impl"])
    assert set(_rows(data, "mlp", "b=1")) == {"numpy", "torch", "minitvm default", "minitvm zero", "tvm zero"}
    assert set(_rows(data, "mlp", "compile b=3")) == {"minitvm default", "minitvm zero"}
    zoo_rows = _rows(data, "zoo", "embedding_posenc b=2")
    assert set(zoo_rows) == {"torch", "minitvm default", "onnxruntime"}
    ort = zoo_rows["onnxruntime"]  # measured beside the others, or a row saying why not
    assert ort["error"].startswith("not installed") or ort["timing"] is not None and ort["max_abs_err"] < 1e-3
    assert "zoo geometric mean of minitvm default time / peer time" in data["table"]
    assert data["zoo_summary"]["torch"]["cases"] == 2
    for e in data["entries"]:
        assert e["status"] or e["target"] is None  # every targeted row says met / not met / why not
        assert e["error"] or e["timing"] is not None and e["timing"]["min"] <= e["timing"]["median"]
    for row in ("section", "x torch", "target", "status", "not installed", "minitvm default"):
        assert row in data["table"]


def test_every_minitvm_row_is_numerically_right(quick_run):
    entries, _, data = quick_run
    minitvm_rows = [e for e in data["entries"] if e["impl"].startswith("minitvm") and e["timing"] is not None
                    and not e["case"].startswith("compile")]
    assert len(minitvm_rows) == 3 + 3 + 2 + 2 * 2 + 2  # matmul, tensorize (+ int8), mlp (2 batches x 2), zoo
    for e in minitvm_rows:
        assert e["error"] == "" and e["correct"] is True, e
        assert e["max_abs_err"] is not None and e["max_abs_err"] < 1e-3, e
    # the recorded errors are real comparisons: the MLP's torch row matches numpy, not exactly
    assert 0 < _rows(data, "mlp", "b=3")["torch"]["max_abs_err"] < 1e-4


def test_targets_and_ratios(quick_run):
    entries, _, data = quick_run
    mlp = _rows(data, "mlp", "b=1")
    want = mlp["minitvm default"]["timing"]["median"] / mlp["torch"]["timing"]["median"]
    assert mlp["minitvm default"]["x_torch"] == pytest.approx(want)
    assert mlp["minitvm default"]["target"]["text"] == "<= 1.0x torch"
    assert mlp["minitvm default"]["status"] in ("met", "NOT MET")
    assert _rows(data, "mlp", "b=3")["minitvm default"]["target"]["limit"] == 1.5
    assert _rows(data, "mlp", "compile b=1")["minitvm default"]["target"]["text"] == "<= 0.5 s"
    mm = _rows(data, "matmul")
    assert mm["minitvm default"]["target"]["limit"] == 0.5 and mm["minitvm best"]["target"]["limit"] == 0.75
    assert [g["row"] for g in data["goals"]] == [e.label for e in entries if e.goal is not None]
    assert _rows(data, "mlp", "b=1")["tvm zero"]["status"] == "not installed"


def test_failing_model_gets_a_row_not_an_exception(run):
    class Broken:
        name = "broken"

        @staticmethod
        def build():
            raise AssertionError("never built: export fails first")

    def export(model, batch):
        raise ValueError("cannot export\nsecond line")

    r = run.zoo_bench.measure_model(Broken, 1, None, export=export)
    assert (r.failed_stage, r.error) == ("export", "ValueError: cannot export")


def test_wrong_result_and_goal_status(run):
    t = run.Timing(2.0, 2.0, 2.0, 1)
    rows = [run.Entry("zoo", "m b=8", "torch", run.Timing(1.0, 1.0, 1.0, 1)),
            run.Entry("zoo", "m b=8", "minitvm default", t, goal=run.Goal("x_torch", 1.5)),
            run.Entry("zoo", "m b=8", "other", t, max_abs_err=0.5, correct=False, goal=run.Goal("x_torch", 3.0)),
            run.Entry("matmul", "n", "numpy", run.Timing(1.0, 1.0, 1.0, 1)),
            run.Entry("matmul", "n", "minitvm best", run.Timing(1.25, 1.25, 1.25, 1),
                      goal=run.Goal("share_numpy", 0.75))]
    run.finish(rows)
    assert [r.status for r in rows] == ["", "NOT MET", "WRONG RESULT (max|err| 0.5)", "", "met (80%)"]
    assert rows[1].x_torch == 2.0 and rows[4].x_numpy == 1.25


def test_conv_case_times_packed_generic_and_torch(run):
    torch = pytest.importorskip("torch")
    r = run.conv_bench.measure_case(3, 16, 3, 2, 12, 2, torch, repeat=2, rounds=1, warmup=1)
    assert r.case == "3->16 3x3/2 12x12 b=2" and r.flops == 2 * 2 * 16 * 6 * 6 * 27
    assert set(r.timings) == {"torch", "minitvm default", "minitvm generic"}
    assert all(err < 1e-4 for err in r.errors.values()), r.errors
    entry = run.Entry("conv", r.case, "minitvm default", r.timings["minitvm default"], r.flops)
    peak = run.PEAK_GFLOPS
    assert peak is None or run._gflops_cell(entry).endswith("%)")


def test_best_peer_ratio_and_geometric_mean(run):
    def row(case, impl, t):
        return run.Entry("zoo", case, impl, run.Timing(t, t, t, 1))

    rows = [row("a b=1", "torch", 4.0), row("a b=1", "onnxruntime", 1.0), row("a b=1", "torch.compile", 2.0),
            row("a b=1", "minitvm default", 2.0),
            row("b b=1", "torch", 1.0), row("b b=1", "minitvm default", 8.0),
            run.Entry("zoo", "b b=1", "onnxruntime", error="not installed")]
    run.finish(rows)
    assert rows[3].x_best == 2.0 and rows[5].x_best == 8.0 and rows[0].x_best is None  # peers get none
    summary = run.zoo_summary(rows)
    assert summary["best peer"] == {"geomean": pytest.approx(4.0), "cases": 2}  # sqrt(2 * 8)
    assert summary["onnxruntime"] == {"geomean": pytest.approx(2.0), "cases": 1}
    assert summary["torch"]["geomean"] == pytest.approx(2.0)  # sqrt(0.5 * 8)
    assert "best peer: 4.00x (2 cases)" in run.summary_text(summary)


def test_onnxruntime_peer_computes_torchs_numbers(run):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(12, 7), torch.nn.ReLU()).eval()
    x = torch.randn(3, 12)
    peer = run.peers_bench.onnxruntime_peer(module, (x,))
    assert peer.error == "" and peer.prepare_s > 0
    np.testing.assert_allclose(peer.outputs()[0], module(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unknown peer"):
        run.peers_bench.make_peers(module, (x,), ("tensorrt",))


def test_compare_outputs_catches_differences(run):
    compare = run.zoo_bench.compare_outputs
    rng = np.random.default_rng(0)
    want = rng.standard_normal((3, 5)).astype(np.float32)
    err, tol = compare([want + 1e-7], [want], "here")
    assert err <= tol
    err, tol = compare([want + 1e-2], [want], "here")
    assert err > tol
    with pytest.raises(ValueError, match="here: output 0 has shape"):
        compare([want.T], [want], "here")
    bad = want.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="inf/nan"):
        compare([bad], [want], "here")


def test_tvm_rows_go_after_their_case(run):
    rows = [run.Entry("mlp", "b=1", "torch"), run.Entry("mlp", "b=1", "minitvm default"),
            run.Entry("mlp", "compile b=1", "minitvm default"), run.Entry("zoo", "m b=1", "torch")]
    out = run._insert_after_cases(rows, [run.Entry("mlp", "b=1", "tvm zero"), run.Entry("zoo", "all", "tvm zero")])
    assert [(e.case, e.impl) for e in out] == [("b=1", "torch"), ("b=1", "minitvm default"), ("b=1", "tvm zero"),
                                               ("compile b=1", "minitvm default"), ("m b=1", "torch"),
                                               ("all", "tvm zero")]
    result = run.zoo_bench.ZooResult("m", 1, timings={"tvm zero": run.Timing.of([1.0, 3.0, 2.0])})
    back = run.tvm_ref.result_from_json(json.loads(json.dumps(run.dataclasses.asdict(result))))
    assert back == result


def test_mlp_script_still_runs():
    mlp = _load("mlp")
    rows = mlp.main(["--batch", "2", "--repeat", "1", "--rounds", "1", "--warmup", "0", "--compile-repeat", "1",
                     "--wait-idle", "0", "--no-torch", "--no-json"])
    names = [r.name for r in rows]
    assert names == ["numpy b=2", "minitvm default b=2", "minitvm zero b=2", "minitvm default (n) b=2"]
    for r in rows[1:4]:
        assert r.max_abs_err < mlp.MLP_ATOL
