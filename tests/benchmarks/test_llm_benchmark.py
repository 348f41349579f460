"""benchmarks/llm.py --quick runs and reports (speed is never asserted: the rows have to be there,
be numbers, and minitvm's greedy tokens have to be torch's)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import llm  # noqa: E402


def test_llm_quick_table_rows_are_numbers(capsys):
    text = llm.main(["--quick", "--variants", "default,int4", "--tvm-python", "/nonexistent/python"])
    assert "TVM rows skipped: no Python at /nonexistent/python" in capsys.readouterr().out
    head, rule, *rows = text.splitlines()[1:]
    assert re.split(r"\s{2,}", head.strip()) == llm.HEAD and set(rule) <= {"-", " "}
    assert [re.split(r"\s{2,}", r.strip())[2] for r in rows] == ["minitvm default", "minitvm int4", "torch"]
    weights = {}
    for row in rows:
        model, params, impl, weights[impl], cache, prefill, decode, vs_prefill, vs_decode, bound, share, same = \
            re.split(r"\s{2,}", row.strip())
        assert model == "tiny" and params.endswith("M") and float(params[:-1]) > 0
        assert all(float(x) > 0 for x in (weights[impl], cache, prefill, decode, bound, share))
        # the tiny model's cache: 2 layers x k and v x 2 kv heads x 16 x 4 bytes x (128 + 2.5) positions
        assert cache == f"{2 * 2 * 2 * 16 * 4 * 130.5 / 2**20:.2f}"
        assert vs_prefill.endswith("x") and float(vs_prefill[:-1]) > 0 and float(vs_decode[:-1]) > 0
        assert same == "yes" or impl == "minitvm int4"  # float32 rows' greedy tokens are HF generate's
    # int4 reads its weights in about an eighth of the float32 bytes (the embedding row stays float)
    assert float(weights["minitvm int4"]) < 0.25 * float(weights["minitvm default"])
