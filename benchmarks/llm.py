"""Language-model prefill and decode, tokens per second: TVM's ``optimize_llm.py`` Llama (the
adapted tutorial of ``tests/llm/optimize_llm_tutorial.py``: float32, paged KV cache, on
``llvm``) compiled by minitvm -- float32, and int8 / int4 weights -- against torch eager (Hugging
Face ``LlamaForCausalLM.generate`` with its cache) and TVM 0.27, all with the same seeded random
weights.

    .venv/bin/python benchmarks/llm.py [--quick] [--sizes tiny,30M] [--variants default,opt_llm,plain,int8,int4]
                                       [--decode 64] [--rounds 3] [--threads N] [--profile VARIANT]
                                       [--tvm-python /tmp/h3tvm/bin/python] [--tvm-variants opt_llm,default]

Two sizes: ``tiny`` (the test's config: 2 layers, hidden 64) and ``30M`` (6 layers, hidden 512,
8 heads, intermediate 1376, vocab 8192).  minitvm rows: ``default`` (``tvm.compile``'s own
pipeline, minitvm's default CPU schedule on every kernel), ``opt_llm`` (the tutorial's pipeline as
written: its dlight rules are GPU rules, which take no kernel on ``llvm``; minitvm's dlight then
gives each minitvm's default CPU schedule, where TVM leaves them naive loops), ``plain`` (the
export with each weight its own parameter, not the tutorial's packed tuple, default pipeline:
the quantized rows' float32 baseline) and ``int8`` / ``int4`` (that export with
``relax.transform.QuantizeLinearWeights`` on every linear layer -- per-row int8, packed int4 with
scales per 32 -- then the default pipeline).  TVM rows (``--tvm-variants``: the tutorial's
``opt_llm`` pipeline and/or TVM's ``default``) run the same tutorial file in TVM's own Python
(``--tvm-python``; the rows are left out, with the reason printed, when it is missing), on the
same weights, after minitvm's and torch's rounds.  Per size and implementation:

* ``prefill tok/s``: a 128-token prompt through ``embed`` + ``prefill`` and the first greedy
  token (torch: ``generate`` up to its first token, timed by a streamer) -- tokens / seconds;
* ``decode tok/s``: batch 1, ``--decode`` steps after that prompt, each ``embed`` + ``decode`` +
  the greedy choice (torch: the rest of the same ``generate`` call);
* ``% of bound``: decode tok/s over ``bandwidth / bytes read per token``: the weights (every
  weight except the embedding table, of which one row is read; the row's own bytes: int8 / int4
  weights and their scales for the quantized rows) and the KV cache (every layer's keys and values
  of the sequence so far, float32, averaged over the decode steps), with ``bandwidth`` measured
  here as a large numpy copy (bytes read + written per second, one thread);
* ``same tokens``: whether the row's greedy tokens equal torch's (quantized rows need not).

minitvm and torch run the same number of threads (``--threads``, else minitvm's pool size:
``MINITVM_NUM_THREADS`` or the CPUs; TVM gets it as ``TVM_NUM_THREADS``; the title prints
torch's) and are timed in interleaved rounds, medians reported.  Torch's OpenMP threads wait
as libgomp does by default (they spin a moment after each parallel region, then sleep): the
benchmarks' usual ``OMP_WAIT_POLICY=active`` would keep them spinning through minitvm's rounds,
on the core minitvm's second thread needs (an ``OMP_WAIT_POLICY`` set by the caller is kept and
printed).  Other processes share the 2
cores: their load is printed at the start and end; rerun when it is high (torch's OpenMP threads
suffer most from a busy machine), or time single-threaded runs in CPU seconds (``--threads 1
--clock cpu``: each process's own CPU time, the bandwidth's copy too -- what an idle core would
take, less what other processes' memory traffic costs).  ``--profile VARIANT`` prints the top kernels of one decode
step of that minitvm row (bytecode VM, profiled) with the bytes of their tensor arguments per
second, and the step's time outside kernels.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import busy_fraction, format_table, setup_environment  # noqa: E402
from optimize_llm_adapted import DEFAULT_TVM_PYTHON, load_tutorial  # noqa: E402

PROMPT_LEN = 128

#: ``--clock``: ``wall`` seconds, or ``cpu`` seconds of this process (all its threads): on a
#: machine other processes keep busy, single-threaded runs timed in CPU seconds are what they
#: would take on an idle core (less the cache other processes evict), where wall seconds
#: include the time the scheduler gave to others
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = "wall"

#: LlamaConfig fields per size (the rest are the tutorial test's)
SIZES: dict[str, dict[str, int]] = {
    "tiny": dict(context_window_size=256),  # the test's model; room for prompt + decode in HF's config
    "30M": dict(hidden_size=512, intermediate_size=1376, num_attention_heads=8, num_key_value_heads=8,
                num_hidden_layers=6, vocab_size=8192, head_dim=64, context_window_size=512),
}


def memory_bandwidth(megabytes: int = 256, repeat: int = 5) -> float:
    """Bytes per second of a large numpy copy (each byte read once and written once), best of
    ``repeat``: the rate at which one thread streams memory here (timed by ``--clock``'s clock,
    as the rows it bounds)."""
    import numpy as np

    clock = CLOCKS[_clock]
    src = np.ones(megabytes * 2**20 // 4, "float32")
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        np.copyto(dst, src)
        best = min(best, clock() - t0)
    return 2 * src.nbytes / best


def decode_cache_bytes(config: Any, n_decode: int) -> float:
    """Bytes of KV cache one decode step reads, averaged over ``n_decode`` steps after the prompt:
    every layer's float32 keys and values of the sequence so far (step ``i`` attends over
    ``PROMPT_LEN + i`` positions)."""
    per_position = config.num_hidden_layers * 2 * config.num_key_value_heads * config.head_dim * 4
    return per_position * (PROMPT_LEN + (n_decode + 1) / 2)


def decode_weight_bytes(named_arrays: list[tuple[str, Any]], hidden: int) -> int:
    """Bytes of weights one decode step reads: all but the embedding table (fp32, its one row)."""
    total = 0
    for name, array in named_arrays:
        embedding = name.replace(".", "_").endswith("embed_tokens_weight")
        total += 4 * hidden if embedding else int(array.nbytes)
    return total


class CompiledLM:
    """The tutorial's model compiled by ``t.tvm`` (minitvm or TVM), driven as its cells drive it.

    ``variant``: ``opt_llm`` (the tutorial's pipeline), ``default`` (the same export, the
    compiler's default pipeline), ``int8`` / ``int4`` (minitvm only: the export with plain
    parameters, its linear layers' weights quantized by ``QuantizeLinearWeights``)."""

    def __init__(self, t: Any, config: Any, weights: Path, variant: str):
        self.t, self.tvm, self.Shape = t, t.tvm, t.Shape
        if variant in ("plain", "int8", "int4"):
            self.vm, self.args, named = self._quantized(config, weights, variant)
        else:
            if variant == "opt_llm":
                with contextlib.redirect_stdout(io.StringIO()):  # the tutorial prints the IR
                    self.vm, named_params = t.build(config)
            else:
                model = t.LlamaForCausalLM(config)
                mod, named_params = model.export_tvm(spec=model.get_default_spec())
                with t.target:
                    self.vm = t.relax.VirtualMachine(t.tvm.compile(mod, t.target, relax_pipeline=variant), t.dev)
            params = t.load_params(config, named_params, weights)
            self.args = {fn: (params,) for fn in ("embed", "prefill", "decode")}
            named = [(n, p.numpy()) for (n, _), p in zip(named_params, params)]
        self.weight_bytes = decode_weight_bytes(named, config.hidden_size)
        self.cache = self.vm["create_tir_paged_kv_cache"](
            self.Shape([1]), self.Shape([1024]), self.Shape([PROMPT_LEN]), self.Shape([16]))  # prompt + decode
        f = self.tvm.get_global_func
        self.reshape = f("vm.builtin.reshape")
        self.add, self.remove = f("vm.builtin.kv_state_add_sequence"), f("vm.builtin.kv_state_remove_sequence")
        self.begin, self.end = f("vm.builtin.kv_state_begin_forward"), f("vm.builtin.kv_state_end_forward")

    def _quantized(self, config: Any, weights: Path, mode: str) -> tuple[Any, dict[str, tuple], list]:
        """VM, each function's arguments after the cache, and decode's weights by name."""
        from minitvm.relax.frontend import detach_params  # lazy: minitvm's pass; TVM's Python has none
        from minitvm.relax.transform import QuantizeLinearWeights  # lazy: as detach_params

        t = self.t
        model = t.LlamaForCausalLM(config)
        spec = model.get_default_spec()
        for method in spec.method_specs:  # the pass quantizes a parameter, not a tuple's field
            if method.param_mode == "packed":
                method.param_mode = "plain"
        mod, named_params = model.export_tvm(spec=spec)
        params = t.load_params(config, named_params, weights)
        by_name = {n: p.numpy() for (n, _), p in zip(named_params, params)}
        if mode == "plain":  # float32 weights, each its own parameter: the quantized rows' baseline
            flat = {n.replace(".", "_"): p for n, p in zip(by_name, params)}
            values = {fn: [flat[v.name_hint] for v in mod[fn].params[int(mod[fn].attrs["num_input"]):]]
                      for fn in ("embed", "prefill", "decode")}
        else:
            mod, values = detach_params(QuantizeLinearWeights(mode, params=by_name)(mod))
        vm = t.relax.VirtualMachine(t.tvm.compile(mod, t.target), t.dev)
        names = [p.name_hint for p in mod["decode"].params[2:]]
        return vm, {fn: tuple(values[fn]) for fn in ("embed", "prefill", "decode")}, \
            [(n, v.numpy()) for n, v in zip(names, values["decode"])]

    def _embed(self, tokens: Any) -> Any:
        import numpy as np

        e = self.vm["embed"](self.tvm.runtime.tensor(np.asarray(tokens, "int32")), *self.args["embed"])
        return self.reshape(e, self.Shape([1, e.shape[0], e.shape[1]]))

    def _step(self, fn: str, tokens: Any) -> int:
        import numpy as np

        e = self._embed(tokens)
        self.begin(self.cache, self.Shape([0]), self.Shape([len(tokens)]))
        logits, self.cache = self.vm[fn](e, self.cache, *self.args[fn])
        self.end(self.cache)
        return int(np.argmax(logits.numpy()))

    def run(self, prompt: list[int], n_decode: int) -> tuple[float, float, list[int]]:
        """Prefill seconds, decode seconds for ``n_decode`` steps, and the greedy tokens."""
        self.add(self.cache, 0)
        t0 = CLOCKS[_clock]()
        out = [self._step("prefill", prompt)]
        t1 = CLOCKS[_clock]()
        for _ in range(n_decode):
            out.append(self._step("decode", [out[-1]]))
        t2 = CLOCKS[_clock]()
        self.remove(self.cache, 0)
        return t1 - t0, t2 - t1, out

    def profile_decode(self, prompt: list[int], steps: int = 7) -> list[dict[str, tuple[int, float, int]]]:
        """``steps`` decode steps (after two warm ones) with every call of the VM timed by the
        clock of ``--clock``: per step, callee -> (calls, seconds, bytes of tensor arguments per
        call -- whole buffers: for the cache's kernels, all its pages), the step's own time under
        ``"(step)"``.  Instrumented calls run on the bytecode VM, not the native entry."""
        import numpy as np

        clock = CLOCKS[_clock]
        step: dict[str, list] = {}
        sizes: dict[str, int] = {}
        started: list[float] = []

        def instrument(func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> None:
            if before:
                if symbol not in sizes:  # once per callee (its calls' shapes agree here), outside the timing
                    sizes[symbol] = sum(int(np.prod(a.shape)) * np.dtype(str(a.dtype)).itemsize
                                        for a in args if hasattr(a, "shape") and hasattr(a, "dtype"))
                row = step.setdefault(symbol, [0, 0.0, sizes[symbol]])
                row[0] += 1
                started.append(clock())
            else:
                step[symbol][1] += clock() - started.pop()

        self.add(self.cache, 0)
        token = self._step("prefill", prompt)
        for _ in range(2):
            token = self._step("decode", [token])
        steps_seen = []
        self.vm.set_instrument(instrument)
        try:
            for _ in range(steps):
                step = {}
                e = self._embed([token])
                self.begin(self.cache, self.Shape([0]), self.Shape([1]))
                t0 = clock()
                self.vm["decode"](e, self.cache, *self.args["decode"])
                step["(step)"] = [1, clock() - t0, 0]
                self.end(self.cache)
                steps_seen.append({k: tuple(v) for k, v in step.items()})
                token = token % 7 + 1  # any next token: the logits are not needed
        finally:
            self.vm.set_instrument(None)
            self.remove(self.cache, 0)
        return steps_seen


class _Stamps:
    """A ``generate`` streamer that notes the time of each ``put``: the prompt's, then one per
    generated token (the first right after prefill)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value: Any) -> None:
        self.times.append(CLOCKS[_clock]())

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
            t0 = CLOCKS[_clock]()
            out = self.model.generate(torch.tensor([prompt]), max_new_tokens=1 + n_decode,
                                      min_new_tokens=1 + n_decode, do_sample=False, streamer=stamps)
        if len(stamps.times) != 2 + n_decode:
            raise RuntimeError(f"generate's streamer saw {len(stamps.times)} puts, expected {2 + n_decode}")
        return stamps.times[1] - t0, stamps.times[-1] - stamps.times[1], out[0, len(prompt):].tolist()


@dataclasses.dataclass
class Result:
    size: str
    params: int
    weight_bytes: dict[str, int]  # impl -> bytes of weights a decode step reads
    cache_bytes: float  # bytes of KV cache a decode step reads, on average
    prefill: dict[str, float]  # impl -> median seconds for the prompt
    decode: dict[str, float]  # impl -> median seconds per decode step
    same_tokens: dict[str, bool]  # impl -> its greedy tokens are torch's
    profile: Any = None  # (profile_decode's steps, the variant)


def timed_runs(impls: dict[str, Any], prompt: list[int], n_decode: int, rounds: int) -> dict[str, Any]:
    """impl -> (greedy tokens of an untimed run, [(prefill s, decode s)] of ``rounds`` interleaved runs)."""
    tokens = {name: impl.run(prompt, n_decode)[2] for name, impl in impls.items()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in impls}
    for _ in range(rounds):
        for name, impl in impls.items():
            times[name].append(impl.run(prompt, n_decode)[:2])
    return {name: (tokens[name], times[name]) for name in impls}


def tvm_worker(job_dir: str) -> None:
    """(In TVM's Python) the job of ``job.json`` on TVM: JSON of each variant's tokens, times and bytes."""
    global _clock
    job = json.loads((Path(job_dir) / "job.json").read_text())
    _clock = job["clock"]
    t = load_tutorial("tvm")
    config = t.LlamaConfig(**job["config"])
    impls = {v: CompiledLM(t, config, Path(job_dir) / "weights.npz", v) for v in job["variants"]}
    runs = timed_runs(impls, job["prompt"], job["n_decode"], job["rounds"])
    print(json.dumps({"version": t.tvm.__version__, "runs": {
        v: {"tokens": runs[v][0], "times": runs[v][1], "weight_bytes": impls[v].weight_bytes} for v in impls}}))


def run_tvm(tvm_python: str, variants: list[str], threads: int, job: dict[str, Any], job_dir: Path) -> dict[str, Any]:
    """TVM's runs of ``job`` (see :func:`tvm_worker`), by impl name; {} with the reason printed
    when ``tvm_python`` is missing."""
    if not variants:
        return {}
    if not os.path.exists(tvm_python):
        print(f"TVM rows skipped: no Python at {tvm_python} (--tvm-python)", flush=True)
        return {}
    (job_dir / "job.json").write_text(json.dumps(dict(job, variants=variants)))
    env = dict(os.environ, TVM_NUM_THREADS=str(threads))
    out = subprocess.run([tvm_python, os.path.abspath(__file__), "--tvm-worker", str(job_dir)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"benchmarks/llm.py on TVM ({tvm_python}) failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    version = result["version"].split(".post")[0]
    return {f"tvm {version} {v}": r for v, r in result["runs"].items()}


def measure(size: str, variants: list[str], n_decode: int, rounds: int, profile: str | None = None,
            tvm_python: str = DEFAULT_TVM_PYTHON, tvm_variants: tuple[str, ...] = (), threads: int = 1) -> Result:
    """Each implementation once untimed (its tokens), then ``rounds`` interleaved timed runs;
    TVM's (in its own Python) after them."""
    import numpy as np

    t = load_tutorial("minitvm")
    config = t.LlamaConfig(**SIZES[size])
    hf = t.hf_model_for(config)
    prompt = [int(x) for x in np.random.default_rng(0).integers(1, config.vocab_size, PROMPT_LEN)]
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "weights.npz", **{k: v.float().numpy() for k, v in hf.state_dict().items()})
        impls: dict[str, Any] = {f"minitvm {v}": CompiledLM(t, config, Path(tmp) / "weights.npz", v)
                                 for v in variants}
        impls["torch"] = TorchLM(hf)
        runs = timed_runs(impls, prompt, n_decode, rounds)
        job = {"config": SIZES[size], "prompt": prompt, "n_decode": n_decode, "rounds": rounds, "clock": _clock}
        tvm_runs = run_tvm(tvm_python, list(tvm_variants), threads, job, Path(tmp))
    times = {k: v[1] for k, v in runs.items()} | {k: r["times"] for k, r in tvm_runs.items()}
    tokens = {k: v[0] for k, v in runs.items()} | {k: r["tokens"] for k, r in tvm_runs.items()}
    fp32_bytes = decode_weight_bytes([(k, v.numpy()) for k, v in hf.state_dict().items()], config.hidden_size)
    weight_bytes = {k: fp32_bytes if k == "torch" else impls[k].weight_bytes for k in runs} \
        | {k: r["weight_bytes"] for k, r in tvm_runs.items()}
    prof = (impls[f"minitvm {profile}"].profile_decode(prompt), profile) if profile else None
    return Result(size, sum(p.numel() for p in hf.parameters()), weight_bytes, decode_cache_bytes(config, n_decode),
                  {k: float(np.median([p for p, _ in v])) for k, v in times.items()},
                  {k: float(np.median([d for _, d in v])) / n_decode for k, v in times.items()},
                  {k: v == tokens["torch"] for k, v in tokens.items()}, prof)


HEAD = ["model", "params", "impl", "weights MB/token", "cache MB/token", "prefill tok/s", "decode tok/s",
        "prefill vs torch", "decode vs torch", "decode bound tok/s", "% of bound", "same tokens"]


def rows_of(r: Result, bandwidth: float) -> list[list[str]]:
    rows = []
    for impl in r.prefill:
        bound = bandwidth / (r.weight_bytes[impl] + r.cache_bytes)
        prefill, decode = PROMPT_LEN / r.prefill[impl], 1 / r.decode[impl]
        rows.append([r.size, f"{r.params / 1e6:.2f}M", impl, f"{r.weight_bytes[impl] / 2**20:.2f}",
                     f"{r.cache_bytes / 2**20:.2f}", f"{prefill:.1f}",
                     f"{decode:.1f}", f"{r.prefill['torch'] / r.prefill[impl]:.2f}x",
                     f"{r.decode['torch'] / r.decode[impl]:.2f}x", f"{bound:.0f}", f"{100 * decode / bound:.1f}",
                     "yes" if r.same_tokens[impl] else "no"])
    return rows


def profile_text(r: Result, top: int = 10) -> str:
    """The top callees of the profiled decode step of median time, their arguments' bytes per
    second, and the step's time outside kernels against the unprofiled step."""
    steps, variant = r.profile
    prof = sorted(steps, key=lambda p: p["(step)"][1])[len(steps) // 2]
    total = prof["(step)"][1]
    calls = sorted(((k, v) for k, v in prof.items() if k != "(step)"), key=lambda kv: -kv[1][1])
    kernels = sum(v[1] for _, v in calls)
    rows = []
    for name, (n, seconds, nbytes) in calls[:top]:
        rows.append([name, str(n), f"{seconds * 1e6:.0f}", f"{100 * seconds / total:.1f}", f"{nbytes / 2**20:.2f}",
                     f"{nbytes * n / seconds / 1e9:.1f}" if seconds > 0 and nbytes else ""])
    step = r.decode[f"minitvm {variant}"]
    return (f"one decode step of {r.size} (minitvm {variant}), every call timed ({_clock} clock, bytecode VM; "
            f"median of {len(steps)} steps): {total * 1e6:.0f} us, of it {kernels * 1e6:.0f} us in "
            f"{sum(v[0] for _, v in calls)} calls ({100 * kernels / total:.0f}%); the unprofiled step (native "
            f"entry, with embed and argmax): {step * 1e6:.0f} us\n"
            + format_table(["callee", "calls", "us", "% of step", "MB args/call", "GB/s"], rows, left=1))


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="seconds: the tiny model, 4 decode steps, 1 round")
    p.add_argument("--sizes", default="tiny,30M", help=f"comma list of {', '.join(SIZES)}")
    p.add_argument("--variants", "--pipelines", default="default,opt_llm,plain,int8,int4",
                   help="minitvm rows: default, opt_llm (the tutorial's pipeline), plain, int8, int4")
    p.add_argument("--decode", type=int, default=64, help="decode steps timed after the prompt")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="threads of all (default: minitvm's pool size)")
    p.add_argument("--profile", metavar="VARIANT", default=None,
                   help="print the top kernels of one decode step of this minitvm row")
    p.add_argument("--tvm-python", default=DEFAULT_TVM_PYTHON, help="a Python with TVM 0.27 installed")
    p.add_argument("--tvm-variants", default="opt_llm", help="TVM rows: opt_llm and/or default ('' for none)")
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="wall seconds, or CPU seconds of each process (with --threads 1: an idle core's time)")
    p.add_argument("--tvm-worker", metavar="DIR", help=argparse.SUPPRESS)  # in TVM's Python: run DIR's job
    args = p.parse_args(argv)
    global _clock
    _clock = args.clock
    if args.tvm_worker:
        tvm_worker(args.tvm_worker)
        return ""
    sizes = ["tiny"] if args.quick else [s.strip() for s in args.sizes.split(",") if s.strip()]
    variants = [s.strip() for s in args.variants.split(",") if s.strip()]
    tvm_variants = tuple(s.strip() for s in args.tvm_variants.split(",") if s.strip())
    n_decode, rounds = (4, 1) if args.quick else (args.decode, args.rounds)
    if args.threads:  # before minitvm's pool starts
        os.environ["MINITVM_NUM_THREADS"] = str(args.threads)
    setup_environment(omp_wait_policy=None)  # torch waits as libgomp does by default (see the docstring)
    import torch

    from minitvm.runtime.cpu import parallel_threads

    threads = parallel_threads()
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    load = busy_fraction()
    bandwidth = memory_bandwidth(64 if args.quick else 256)
    results = [measure(s, variants, n_decode, rounds, args.profile, args.tvm_python, tvm_variants, threads)
               for s in sizes]
    after = busy_fraction()
    rows = [row for r in results for row in rows_of(r, bandwidth)]
    text = (f"LLM prefill ({PROMPT_LEN} tokens) and batch-1 decode ({n_decode} steps), medians of {rounds} "
            f"rounds, {_clock} clock; threads: minitvm {threads}, torch {torch.get_num_threads()} (OMP_WAIT_POLICY "
            f"{os.environ.get('OMP_WAIT_POLICY', 'unset: libgomp default')}), TVM {threads}; "
            f"memory bandwidth (numpy copy) {bandwidth / 1e9:.1f} GB/s; other load: {load:.0%} at start, "
            f"{after:.0%} at end, load average {os.getloadavg()[0]:.1f}\n" + format_table(HEAD, rows, left=3))
    print("\n" + text, flush=True)
    for r in results:
        if r.profile is not None:
            print("\n" + profile_text(r))
    return text


if __name__ == "__main__":
    main()
