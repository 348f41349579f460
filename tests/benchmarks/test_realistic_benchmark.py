"""Smoke test of benchmarks/realistic.py (the realistic-size section): one tiny row, no peers,
is exported, compiled and checked against torch; the per-kernel profile's parts (FLOP count,
median profile) on one linear layer.  Correctness only: speed is never asserted."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import minitvm


@pytest.fixture(scope="module")
def realistic(load_benchmark):
    return load_benchmark("realistic")


def test_tiny_row_matches_torch(realistic):
    rows, text = realistic.main(["--tiny", "--models", "gpt2_mini", "--batches", "2", "--peers", "none",
                                 "--repeat", "1", "--rounds", "1", "--warmup", "0"])
    (row,) = rows
    res = row.result
    assert res.failed_stage == "" and res.error == "", res.error
    # checked against torch before timing: a real comparison (float32 rounding differs), within rtol 1e-3
    assert res.correct is True and 0 < res.max_abs_err <= res.tolerance
    model = realistic.MODELS["gpt2_mini"].zoo_model(tiny=True)
    want = model.build()(*model.example_inputs(2)).detach().numpy()
    assert res.tolerance == pytest.approx(realistic.ATOL + realistic.RTOL * float(np.abs(want).max()))
    assert set(res.timings) == {"torch", "minitvm default"} and res.compile_s > 0
    assert row.flops and row.flops > 0
    assert "gpt2_mini" in text and "% peak" in text and "measured float32 peak" in text


def test_peak_kernel_and_kernel_profile(realistic):
    common = sys.modules["common"]  # benchmarks/common.py, imported by the script
    peak = common.measured_peak_gflops(threads=1, seconds=0.005, tries=1)
    assert peak["per_core_gflops"] > 0 and peak["lanes"] in (8, 16)
    # the per-kernel FLOP count of a compiled matmul: 2*M*N*K (one multiply and one add per step),
    # plus one per output element for each block without arithmetic (the init and the write-back)
    import torch

    from minitvm.relax.frontend.torch import from_exported_program

    zoo_profile = sys.modules["zoo_profile"]
    ep = torch.export.export(torch.nn.Linear(24, 40, bias=False).eval(), (torch.randn(8, 24),))
    lowered, vm = zoo_profile.compile_for_profile(from_exported_program(ep, unwrap_unit_return_tuple=True))
    (flops,) = [f for name, f in zoo_profile.kernel_flops(lowered).items() if "matmul" in name]
    assert 2 * 8 * 40 * 24 <= flops <= 2 * 8 * 40 * 24 + 2 * 8 * 40
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 24)).astype(np.float32)
    _, rows = zoo_profile.median_profile(vm, [minitvm.nd.array(x)], profiles=1)
    assert any("matmul" in name for name in rows) and "(VM overhead)" in rows
    # a kernel called 4 times in 2 ms, 1 MFLOP a call: 2 GFLOP/s (all calls' work over all calls' time)
    table = zoo_profile.kernel_table({"k": (4, 2e-3)}, {"k": 1e6}, peak_gflops=4.0)
    assert table.splitlines()[-1].split()[-2:] == ["2.0", "50.0"], table


def test_table_gives_median_and_fastest_call_ratios(realistic):
    from types import SimpleNamespace

    timing = sys.modules["common"].Timing.of
    result = SimpleNamespace(timings={"torch": timing([0.030, 0.040, 0.050]),
                                      "onnxruntime": timing([0.010, 0.012, 0.020]),
                                      realistic.MINITVM: timing([0.009, 0.015, 0.030])},
                             peer_errors={}, failed_stage="", correct=True, compile_s=1.5, max_abs_err=1e-6)
    row = realistic.RealisticRow("resnet18", 1, result, flops=1e9)
    assert row.ratio(realistic.MINITVM, "onnxruntime") == pytest.approx(0.015 / 0.012)
    assert row.ratio(realistic.MINITVM, "onnxruntime", "min") == pytest.approx(0.009 / 0.010)
    text = realistic.table([row], peak_gflops=100.0, peers=("onnxruntime",))
    header, _rule, line = text.splitlines()[:3]
    assert "x onnxruntime" in header and "min x onnxruntime" in header
    assert "1.25x" in line and "0.90x" in line
    assert "minitvm time / onnxruntime time: 1.25x" in text
    assert "minitvm fastest call / onnxruntime fastest call: 0.9x" in text


def test_kernels_beside_ort_nodes_pair_in_call_order_or_list_ort_alone(realistic):
    ort_profile = sys.modules["ort_profile"]
    node = ort_profile.NodeTime
    assert ort_profile._shapes([{"float": [1, 3, 224, 224]}, {"float": [64]}]) == "1x3x224x224 64"
    ours = [("fused_conv2d_add_relu", 100e-6), ("reshape", 5e-6), ("fused_conv2d1_add1", 30e-6),
            ("fused_matmul_add", 8e-6)]
    theirs = [node("c0", "Conv", "1x3x8x8", "1x4x8x8", 80.0), node("r", "Reorder", "", "", 2.0),
              node("c1", "Conv", "1x4x8x8", "1x4x8x8", 40.0), node("g", "Gemm", "1x4", "1x10", 10.0)]
    text = ort_profile.side_by_side(ours, theirs)
    lines = text.splitlines()
    assert "minitvm kernels 143 us, ORT nodes 132 us" in lines[0]
    # paired in order (reshape and Reorder left out), the furthest behind ORT first: conv (+20 us) first
    assert lines[3].split()[:3] == ["100.0", "80.0", "1.25x"] and "fused_conv2d_add_relu" in lines[3]
    assert lines[3].endswith("Conv 1x3x8x8 -> 1x4x8x8")
    assert lines[4].split()[:4] == ["8.0", "10.0", "0.80x", "fused_matmul_add"]
    assert lines[5].split()[:4] == ["30.0", "40.0", "0.75x", "fused_conv2d1_add1"]
    assert "paired sums: minitvm 138 us, ORT 130 us; where minitvm is behind, by 20 us in all" in text
    # as many heavy ops on both sides or nothing is paired: ORT's slowest nodes alone
    text = ort_profile.side_by_side(ours[:1], theirs)
    assert "not paired" in text and text.splitlines()[3].split()[:2] == ["80.0", "Conv"]
