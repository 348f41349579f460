"""One batch-1 decode step of the LLM benchmark's model, taken apart: per kernel / VM builtin the
time (best over ``--steps`` steps: a shared machine preempts some of them), the bytes its tensor
arguments hold and so its GB/s against the machine's measured bandwidth, and the Python left
between the kernels (the whole step minus the sum of the calls).

    .venv/bin/python benchmarks/decode_profile.py [--size 30M|tiny] [--steps 20] [--pipeline default]

The model is ``benchmarks/llm.py``'s (TVM's ``optimize_llm.py`` Llama with a paged KV cache, fp32,
seeded random weights), after a 128-token prompt.  A kernel's bytes are those of all its tensor
arguments (weights read once, activations, the output): for a GEMV nearly all weights.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import busy_fraction, format_table, setup_environment  # noqa: E402
from llm import PROMPT_LEN, SIZES, MinitvmLM, memory_bandwidth, tutorial  # noqa: E402


def _nbytes(args: tuple) -> int:
    return sum(a.numpy().nbytes for a in args if hasattr(a, "numpy") and hasattr(a, "shape"))


def _timed(kernel, name: str, rec: dict):
    def call(*args):
        t0 = time.perf_counter()
        kernel(*args)
        entry = rec[name]
        entry[0] += 1
        entry[1] += time.perf_counter() - t0
        entry[2] += _nbytes(args)
    return call


def profile(lm: MinitvmLM, prompt: list[int], steps: int) -> tuple[dict, list[float]]:
    """callee -> (calls per step, best seconds per step, bytes per step); plain step seconds."""
    vm = lm.vm
    lm.add(lm.cache, 0)
    token = lm._step("prefill", prompt)
    plain = []
    for _ in range(steps):  # unwatched steps: the native entry, when there is one
        t0 = time.perf_counter()
        token = lm._step("decode", [token])
        plain.append(time.perf_counter() - t0)
    per_step: list[dict] = []
    kernels = dict(lm.cache.kernels)
    for _ in range(steps):
        rec: dict = defaultdict(lambda: [0, 0.0, 0])
        for role, kernel in kernels.items():  # the cache's own kernel calls, inside the attention builtin
            if kernel is not None:
                lm.cache.kernels[role] = _timed(kernel, f"  cache kernel {role}", rec)
        started: list[float] = []

        def instrument(fn, name, before, ret, *args, rec=rec, started=started):
            if before:
                started.append(time.perf_counter())
                return None
            took = time.perf_counter() - started.pop()
            entry = rec[name]
            entry[0] += 1
            entry[1] += took
            entry[2] += _nbytes(args)
            return None

        vm.set_instrument(instrument)
        try:
            token = lm._step("decode", [token])
        finally:
            vm.set_instrument(None)
            lm.cache.kernels.update(kernels)
        per_step.append(dict(rec))
    lm.remove(lm.cache, 0)
    names = per_step[0].keys()
    best = {n: (per_step[0][n][0], min(s[n][1] for s in per_step), per_step[0][n][2]) for n in names}
    return best, plain


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="30M", choices=list(SIZES))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--pipeline", default="default")
    args = p.parse_args(argv)
    setup_environment()
    t = tutorial()
    config = t.LlamaConfig(**SIZES[args.size])
    hf = t.hf_model_for(config)
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        lm = MinitvmLM(t, config, Path(tmp), args.pipeline)
    prompt = [int(x) for x in np.random.default_rng(0).integers(1, config.vocab_size, PROMPT_LEN)]
    load = busy_fraction()
    bandwidth = memory_bandwidth(256)
    best, plain = profile(lm, prompt, args.steps)
    calls = sum(b[1] for n, b in best.items() if not n.startswith(" "))
    rows = [[name, str(n), f"{s * 1e6:.1f}", f"{nbytes / 2**20:.2f}", f"{nbytes / s / 1e9:.1f}",
             f"{100 * nbytes / s / bandwidth:.0f}"]
            for name, (n, s, nbytes) in sorted(best.items(), key=lambda kv: -kv[1][1])]
    text = (f"decode step of {args.size} ({args.pipeline}): unwatched {np.median(plain) * 1e3:.2f} ms median, "
            f"{min(plain) * 1e3:.2f} ms best ({1 / np.median(plain):.1f} tok/s median) incl. embed; "
            f"sum of calls (best each) {calls * 1e3:.2f} ms; bandwidth (numpy copy) {bandwidth / 1e9:.1f} GB/s; "
            f"other load {load:.0%}\n"
            + format_table(["callee", "calls", "best us/step", "MB/step", "GB/s", "% of bw"], rows, left=1))
    print(text)
    return text


if __name__ == "__main__":
    main()
