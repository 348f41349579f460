"""One batch-1 decode step of the LLM benchmark's model, taken apart: per kernel / VM builtin the
time (best over ``--steps`` steps: a shared machine preempts some of them), the bytes its tensor
arguments hold and so its GB/s against the machine's measured bandwidth, and the Python left
between the kernels (the whole step minus the sum of the calls).

    .venv/bin/python benchmarks/decode_profile.py [--size 30M|tiny] [--steps 20] [--variant default]
                                                  [--threads N] [--clock wall|cpu]

The model is ``benchmarks/llm.py``'s (TVM's ``optimize_llm.py`` Llama with a paged KV cache, fp32,
seeded random weights), after a 128-token prompt.  A kernel's bytes are those of all its tensor
arguments (weights read once, activations, the output): for a GEMV nearly all weights; for the
cache's kernels (indented, timed inside the attention builtin) all its pages, of which a step reads
the sequence's only.  Watched, each call pays for the instrument, and the cache's kernels run
their checked calls: small kernels and the attention builtin read slower than they run unwatched.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm  # noqa: E402
from common import busy_fraction, format_table, setup_environment  # noqa: E402
from llm import PROMPT_LEN, SIZES, CompiledLM, memory_bandwidth  # noqa: E402
from optimize_llm_adapted import load_tutorial  # noqa: E402


def _nbytes(args: tuple) -> int:
    """Bytes of the tensor arguments (read from their shapes: copying the cache's pages per call
    would slow the attention builtin that the profile times)."""
    return sum(int(np.prod(a.shape)) * np.dtype(str(a.dtype)).itemsize
               for a in args if hasattr(a, "shape") and hasattr(a, "dtype"))


def _timed(kernel, name: str, rec: dict):
    clock = llm.CLOCKS[llm._clock]

    def call(*args):
        t0 = clock()
        kernel(*args)
        entry = rec[name]
        entry[0] += 1
        entry[1] += clock() - t0
        entry[2] += _nbytes(args)
    return call


def profile(lm: CompiledLM, prompt: list[int], steps: int) -> tuple[dict, list[float]]:
    """callee -> (calls per step, best seconds per step, bytes per step); plain step seconds."""
    vm, clock = lm.vm, llm.CLOCKS[llm._clock]
    lm.add(lm.cache, 0)
    token = lm._step("prefill", prompt)
    plain = []
    for _ in range(steps):  # unwatched steps: the native entry, when there is one
        t0 = clock()
        token = lm._step("decode", [token])
        plain.append(clock() - t0)
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
                started.append(clock())
                return None
            took = clock() - started.pop()
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
    p.add_argument("--variant", "--pipeline", default="default", help="a minitvm row of benchmarks/llm.py")
    p.add_argument("--threads", type=int, default=0, help="minitvm's threads (default: its pool size)")
    p.add_argument("--clock", choices=sorted(llm.CLOCKS), default="wall",
                   help="wall seconds, or CPU seconds of this process (with --threads 1: an idle core's time)")
    args = p.parse_args(argv)
    if args.threads:  # before minitvm's pool starts
        os.environ["MINITVM_NUM_THREADS"] = str(args.threads)
    llm._clock = args.clock
    setup_environment()
    t = load_tutorial("minitvm")
    config = t.LlamaConfig(**SIZES[args.size])
    hf = t.hf_model_for(config)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "weights.npz", **{k: v.float().numpy() for k, v in hf.state_dict().items()})
        lm = CompiledLM(t, config, Path(tmp) / "weights.npz", args.variant)
    prompt = [int(x) for x in np.random.default_rng(0).integers(1, config.vocab_size, PROMPT_LEN)]
    load = busy_fraction()
    bandwidth = memory_bandwidth(256)
    best, plain = profile(lm, prompt, args.steps)
    calls = sum(b[1] for n, b in best.items() if not n.startswith(" "))
    rows = [[name, str(n), f"{s * 1e6:.1f}", f"{nbytes / 2**20:.2f}", f"{nbytes / s / 1e9:.1f}",
             f"{100 * nbytes / s / bandwidth:.0f}"]
            for name, (n, s, nbytes) in sorted(best.items(), key=lambda kv: -kv[1][1])]
    text = (f"decode step of {args.size} ({args.variant}, {args.clock} clock): unwatched "
            f"{np.median(plain) * 1e3:.2f} ms median, "
            f"{min(plain) * 1e3:.2f} ms best ({1 / np.median(plain):.1f} tok/s median) incl. embed; "
            f"sum of calls (best each) {calls * 1e3:.2f} ms; bandwidth (numpy copy) {bandwidth / 1e9:.1f} GB/s; "
            f"other load {load:.0%}\n"
            + format_table(["callee", "calls", "best us/step", "MB/step", "GB/s", "% of bw"], rows, left=1))
    print(text)
    return text


if __name__ == "__main__":
    main()
