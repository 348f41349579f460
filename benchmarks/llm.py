"""Language-model prefill and decode, tokens per second: TVM's ``optimize_llm.py`` Llama (the
model of ``tests/llm/test_optimize_llm_tutorial.py``: float32, paged KV cache, on ``llvm``)
compiled by minitvm against torch eager (Hugging Face ``LlamaForCausalLM.generate`` with its
cache), both with the same seeded random weights.

    .venv/bin/python benchmarks/llm.py [--quick] [--sizes tiny,30M] [--pipelines default,opt_llm]
                                       [--decode 64] [--rounds 3] [--threads N] [--profile]

Two sizes: ``tiny`` (the test's config: 2 layers, hidden 64) and ``30M`` (6 layers, hidden 512,
8 heads, intermediate 1376, vocab 8192).  Two minitvm rows: ``default`` (``tvm.compile``'s own
pipeline, minitvm's default CPU schedule on every kernel) and ``opt_llm`` (the tutorial's pipeline as
written: its dlight rules are GPU rules, which take no kernel on ``llvm``; minitvm's dlight then
gives each minitvm's default CPU schedule, where TVM leaves them naive loops).
Per size and implementation:

* ``prefill tok/s``: a 128-token prompt through ``embed`` + ``prefill`` and the first greedy
  token (torch: ``generate`` up to its first token, timed by a streamer) -- tokens / seconds;
* ``decode tok/s``: batch 1, ``--decode`` steps after that prompt, each ``embed`` + ``decode`` +
  the greedy choice (torch: the rest of the same ``generate`` call);
* ``% of bound``: decode tok/s over ``bandwidth / bytes of weights read per token`` (every weight
  except the embedding table, of which one row is read; fp32), with ``bandwidth`` measured here as
  a large numpy copy (bytes read + written per second, one thread);
* ``same tokens``: whether the row's greedy tokens equal torch's.

minitvm and torch run the same number of threads (``--threads``, else minitvm's pool size:
``MINITVM_NUM_THREADS`` or the CPUs; the title prints torch's) and are timed in interleaved
rounds, medians reported.  Other processes share the 2 cores: their load is printed at the start
and end; rerun when it is high (torch's OpenMP threads suffer most from a busy machine).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, busy_fraction, format_table, setup_environment  # noqa: E402

PROMPT_LEN = 128

#: LlamaConfig fields per size (the rest are the tutorial test's)
SIZES: dict[str, dict[str, int]] = {
    "tiny": dict(context_window_size=256),  # the test's model; room for prompt + decode in HF's config
    "30M": dict(hidden_size=512, intermediate_size=1376, num_attention_heads=8, num_key_value_heads=8,
                num_hidden_layers=6, vocab_size=8192, head_dim=64, context_window_size=512),
}


def tutorial() -> Any:
    """The tutorial test's module: its model classes, pipeline, weight loading and HF reference."""
    sys.path.insert(0, str(ROOT / "tests" / "llm"))
    import test_optimize_llm_tutorial

    return test_optimize_llm_tutorial


def memory_bandwidth(megabytes: int = 256, repeat: int = 5) -> float:
    """Bytes per second of a large numpy copy (each byte read once and written once), best of
    ``repeat``: the rate at which one thread streams memory here."""
    import numpy as np

    src = np.ones(megabytes * 2**20 // 4, "float32")
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best


def decode_weight_bytes(named_params: list[tuple[str, Any]], hidden: int) -> int:
    """Bytes of fp32 weights one decode step reads: all but the embedding table, one row of it."""
    total = 0
    for name, param in named_params:
        n = 1
        for s in param.shape:
            n *= int(s)
        total += 4 * (hidden if name.endswith("embed_tokens.weight") else n)
    return total


class MinitvmLM:
    """The tutorial's model compiled with its pipeline, driven as its cells drive it."""

    def __init__(self, t: Any, config: Any, weight_dir: Path, pipeline: str):
        if pipeline == "opt_llm":
            with contextlib.redirect_stdout(io.StringIO()):  # the tutorial prints the IR
                self.vm, named_params = t.build(config)
        else:  # the same export, compiled with a pipeline of minitvm's
            model = t.LlamaForCausalLM(config)
            mod, named_params = model.export_tvm(spec=model.get_default_spec())
            with t.target:
                self.vm = t.relax.VirtualMachine(t.tvm.compile(mod, t.target, relax_pipeline=pipeline), t.dev)
        self.named_params = named_params
        self.params = t.load_params(config, named_params, weight_dir)
        self.tvm, self.Shape = t.tvm, t.Shape
        self.cache = self.vm["create_tir_paged_kv_cache"](
            t.Shape([1]), t.Shape([1024]), t.Shape([PROMPT_LEN]), t.Shape([16]))  # room for prompt + decode
        f = self.tvm.get_global_func
        self.reshape = f("vm.builtin.reshape")
        self.add, self.remove = f("vm.builtin.kv_state_add_sequence"), f("vm.builtin.kv_state_remove_sequence")
        self.begin, self.end = f("vm.builtin.kv_state_begin_forward"), f("vm.builtin.kv_state_end_forward")

    def _step(self, fn: str, tokens: Any) -> int:
        import numpy as np

        e = self.vm["embed"](self.tvm.runtime.tensor(np.asarray(tokens, "int32")), self.params)
        e = self.reshape(e, self.Shape([1, e.shape[0], e.shape[1]]))
        self.begin(self.cache, self.Shape([0]), self.Shape([len(tokens)]))
        logits, self.cache = self.vm[fn](e, self.cache, self.params)
        self.end(self.cache)
        return int(np.argmax(logits.numpy()))

    def run(self, prompt: list[int], n_decode: int) -> tuple[float, float, list[int]]:
        """Prefill seconds, decode seconds for ``n_decode`` steps, and the greedy tokens."""
        self.add(self.cache, 0)
        t0 = time.perf_counter()
        out = [self._step("prefill", prompt)]
        t1 = time.perf_counter()
        for _ in range(n_decode):
            out.append(self._step("decode", [out[-1]]))
        t2 = time.perf_counter()
        self.remove(self.cache, 0)
        return t1 - t0, t2 - t1, out

    def profile_decode(self, prompt: list[int], steps: int = 7) -> Any:
        """The VM profiler's report of the decode step of median total time among ``steps``
        profiled steps (after two warm ones): a single step on a shared machine may be the one a
        burst of other load hit."""
        import numpy as np

        self.add(self.cache, 0)
        token = self._step("prefill", prompt)
        for _ in range(2):
            token = self._step("decode", [token])
        reports = []
        for _ in range(steps):
            e = self.vm["embed"](self.tvm.runtime.tensor(np.asarray([token], "int32")), self.params)
            e = self.reshape(e, self.Shape([1, 1, e.shape[1]]))
            self.begin(self.cache, self.Shape([0]), self.Shape([1]))
            reports.append(self.vm.profile("decode", e, self.cache, self.params))
            self.end(self.cache)
            token = token % 7 + 1  # any next token: the profile does not return the logits
        self.remove(self.cache, 0)
        return sorted(reports, key=lambda r: r.total)[len(reports) // 2]


class _Stamps:
    """A ``generate`` streamer that notes the time of each ``put``: the prompt's, then one per
    generated token (the first right after prefill)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value: Any) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


class TorchLM:
    """Hugging Face's model, greedy ``generate`` with its KV cache, torch eager."""

    def __init__(self, hf_model: Any):
        self.model = hf_model

    def run(self, prompt: list[int], n_decode: int) -> tuple[float, float, list[int]]:
        """Prefill seconds (to the first token), decode seconds for the ``n_decode`` after it, tokens."""
        import torch

        stamps = _Stamps()
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = self.model.generate(torch.tensor([prompt]), max_new_tokens=1 + n_decode,
                                      min_new_tokens=1 + n_decode, do_sample=False, streamer=stamps)
        if len(stamps.times) != 2 + n_decode:
            raise RuntimeError(f"generate's streamer saw {len(stamps.times)} puts, expected {2 + n_decode}")
        return stamps.times[1] - t0, stamps.times[-1] - stamps.times[1], out[0, len(prompt):].tolist()


@dataclasses.dataclass
class Result:
    size: str
    params: int
    weight_bytes: int
    prefill: dict[str, float]  # impl -> median seconds for the prompt
    decode: dict[str, float]  # impl -> median seconds per decode step
    same_tokens: dict[str, bool]  # impl -> its greedy tokens are torch's
    profile: Any = None


def measure(size: str, pipelines: list[str], n_decode: int, rounds: int, profile: bool = False) -> Result:
    """Each implementation once untimed (its tokens), then ``rounds`` interleaved timed runs."""
    import numpy as np

    t = tutorial()
    config = t.LlamaConfig(**SIZES[size])
    hf = t.hf_model_for(config)
    impls: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        for pipeline in pipelines:
            impls[f"minitvm {pipeline}"] = MinitvmLM(t, config, Path(tmp), pipeline)
    impls["torch"] = TorchLM(hf)
    prompt = [int(x) for x in np.random.default_rng(0).integers(1, config.vocab_size, PROMPT_LEN)]
    tokens = {name: impl.run(prompt, n_decode)[2] for name, impl in impls.items()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in impls}
    for _ in range(rounds):
        for name, impl in impls.items():
            times[name].append(impl.run(prompt, n_decode)[:2])
    first = impls[f"minitvm {pipelines[0]}"]
    return Result(size, sum(p.numel() for p in hf.parameters()),
                  decode_weight_bytes(first.named_params, config.hidden_size),
                  {k: float(np.median([p for p, _ in v])) for k, v in times.items()},
                  {k: float(np.median([d for _, d in v])) / n_decode for k, v in times.items()},
                  {k: v == tokens["torch"] for k, v in tokens.items()},
                  first.profile_decode(prompt) if profile else None)


HEAD = ["model", "params", "weights MB/token", "impl", "prefill tok/s", "decode tok/s", "prefill vs torch",
        "decode vs torch", "decode bound tok/s", "% of bound", "same tokens"]


def rows_of(r: Result, bandwidth: float) -> list[list[str]]:
    bound = bandwidth / r.weight_bytes
    rows = []
    for impl in r.prefill:
        prefill, decode = PROMPT_LEN / r.prefill[impl], 1 / r.decode[impl]
        rows.append([r.size, f"{r.params / 1e6:.2f}M", f"{r.weight_bytes / 2**20:.2f}", impl, f"{prefill:.1f}",
                     f"{decode:.1f}", f"{r.prefill['torch'] / r.prefill[impl]:.2f}x",
                     f"{r.decode['torch'] / r.decode[impl]:.2f}x", f"{bound:.0f}", f"{100 * decode / bound:.1f}",
                     "yes" if r.same_tokens[impl] else "no"])
    return rows


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="seconds: the tiny model, 4 decode steps, 1 round")
    p.add_argument("--sizes", default="tiny,30M", help=f"comma list of {', '.join(SIZES)}")
    p.add_argument("--pipelines", default="default,opt_llm",
                   help="minitvm rows: 'default' (tvm.compile's pipeline) and/or 'opt_llm' (the tutorial's)")
    p.add_argument("--decode", type=int, default=64, help="decode steps timed after the prompt")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="threads of both (default: minitvm's pool size)")
    p.add_argument("--profile", action="store_true", help="print the VM profiler's table of one decode step")
    args = p.parse_args(argv)
    sizes = ["tiny"] if args.quick else [s.strip() for s in args.sizes.split(",") if s.strip()]
    pipelines = [s.strip() for s in args.pipelines.split(",") if s.strip()]
    n_decode, rounds = (4, 1) if args.quick else (args.decode, args.rounds)
    if args.threads:  # before minitvm's pool starts
        os.environ["MINITVM_NUM_THREADS"] = str(args.threads)
    setup_environment()
    import torch

    from minitvm.runtime.cpu import parallel_threads

    threads = parallel_threads()
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    load = busy_fraction()
    bandwidth = memory_bandwidth(64 if args.quick else 256)
    results = [measure(s, pipelines, n_decode, rounds, args.profile) for s in sizes]
    after = busy_fraction()
    rows = [row for r in results for row in rows_of(r, bandwidth)]
    text = (f"LLM prefill ({PROMPT_LEN} tokens) and batch-1 decode ({n_decode} steps), fp32, medians of {rounds} "
            f"rounds; threads: minitvm {threads}, torch {torch.get_num_threads()}; memory bandwidth (numpy copy) "
            f"{bandwidth / 1e9:.1f} GB/s; other load: {load:.0%} at start, {after:.0%} at end\n"
            + format_table(HEAD, rows, left=1))
    print("\n" + text, flush=True)
    for r in results:
        if r.profile is not None:
            print(f"\none decode step of {r.size} (minitvm {pipelines[0]}), by callee (bytecode VM, profiled):"
                  f"\n{r.profile}")
    return text


if __name__ == "__main__":
    main()
