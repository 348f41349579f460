"""TVM's tutorial ``optimize_llm.py``, adapted for a CPU (``tests/llm/optimize_llm_tutorial.py`` says
how), run start to end on minitvm and on TVM: each engine's prefill and decode logits against
Hugging Face's (rtol 1e-4), its greedy tokens, and its tokens per second.

    .venv/bin/python benchmarks/optimize_llm_adapted.py [--tvm-python /tmp/h3tvm/bin/python] [--rounds 5]

In minitvm's Python: Hugging Face's ``LlamaForCausalLM`` of the tutorial's tiny config (seeded)
gives the weights (an ``.npz`` by HF name) and the reference (the greedy tokens and each step's
logits of ``generate`` on the tutorial's prompt, another ``.npz``), in a temporary directory; the
tutorial runs on minitvm, then this script reruns itself with ``--tvm DIR`` under
``--tvm-python`` (skipped, with the reason printed, when that interpreter is missing), where the
same tutorial file runs on TVM against the same files -- TVM's Python needs only TVM and numpy.

``tok/s``: the tutorial's generation cell (its KV cache made, the prompt's prefill, then 19
decode steps, each with its ``embed`` and argmax) timed whole, generated tokens over seconds; and
its decode loop alone (from its "The generated token:" print), 19 tokens over its seconds;
medians of ``--rounds``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL_FILE = ROOT / "tests" / "llm" / "optimize_llm_tutorial.py"
DEFAULT_TVM_PYTHON = "/tmp/h3tvm/bin/python"


def load_tutorial(engine: str) -> Any:
    """The adapted tutorial's module, its ``tvm`` being minitvm (``engine="minitvm"``) or TVM.

    For TVM, each ``tvm.*`` module and ``tvm_ffi`` are entered in ``sys.modules`` under the
    minitvm names the file imports, and the file is loaded by path under a name of its own: its
    ``import minitvm as tvm`` then binds TVM.  Refused in a process that has imported minitvm."""
    if engine == "minitvm":
        for path in (ROOT, TUTORIAL_FILE.parent):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        import optimize_llm_tutorial  # lazy: only the minitvm engine imports minitvm

        return optimize_llm_tutorial
    if engine != "tvm":
        raise ValueError(f"load_tutorial: engine must be 'minitvm' or 'tvm', got {engine!r}")
    loaded = sys.modules.get("minitvm")
    if loaded is not None and not getattr(loaded, "__name__", "").startswith("tvm"):
        raise RuntimeError("load_tutorial('tvm'): minitvm is already imported in this process; "
                           "run TVM in a Python of its own (--tvm-python)")
    import tvm  # lazy: TVM is in its own Python only
    import tvm.relax.frontend.nn.llm.kv_cache  # noqa: F401  (the submodules the tutorial imports)
    import tvm.s_tir.dlight  # noqa: F401
    import tvm_ffi  # lazy: as tvm

    for name, module in list(sys.modules.items()):
        if name == "tvm" or name.startswith("tvm."):
            sys.modules["minitvm" + name[3:]] = module
    sys.modules["minitvm_ffi"] = tvm_ffi
    spec = importlib.util.spec_from_file_location("optimize_llm_tutorial_on_tvm", TUTORIAL_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def write_reference(directory: Path) -> None:
    """The HF model's weights (``weights.npz``, float32 by HF name) and its greedy tokens and
    per-step logits on the tutorial's prompt (``reference.npz``)."""
    import numpy as np

    t = load_tutorial("minitvm")
    hf = t.hf_model_for(t.LlamaConfig())
    np.savez(directory / "weights.npz", **{k: v.float().numpy() for k, v in hf.state_dict().items()})
    prompt = t.ByteTokenizer().apply_chat_template([{"role": "user", "content": "What's your name?"}])
    tokens, logits = t.hf_reference(hf, prompt)
    np.savez(directory / "reference.npz", tokens=np.asarray(tokens), logits=np.stack(logits))


def run_tutorial(engine: str, directory: Path, rounds: int) -> dict[str, Any]:
    """The tutorial on ``engine`` with the weights of ``directory``: checked against its
    reference (raises on a mismatch), then timed."""
    import numpy as np

    t = load_tutorial(engine)
    config = t.LlamaConfig()
    with contextlib.redirect_stdout(io.StringIO()):  # the tutorial prints IR and tokens
        vm, named_params = t.build(config)
        params = t.load_params(config, named_params, directory / "weights.npz")
        prompt, tokens, all_logits = t.generate(vm, params, t.ByteTokenizer())
    with np.load(directory / "reference.npz") as ref:
        t.compare_with_reference(all_logits, tokens, ref["tokens"].tolist(), list(ref["logits"]), config.vocab_size)
    whole, decode = [], []
    for _ in range(rounds):
        out = _Stamped()
        with contextlib.redirect_stdout(out):
            t0 = time.perf_counter()
            t.generate(vm, params, t.ByteTokenizer())
            t2 = time.perf_counter()
        whole.append(t2 - t0)
        decode.append(t2 - out.decode_starts)
    return {"engine": engine, "version": str(getattr(t.tvm, "__version__", "?")), "prompt": len(prompt),
            "tokens": len(tokens), "tok_s": len(tokens) / float(np.median(whole)),
            "decode_tok_s": (len(tokens) - 1) / float(np.median(decode)), "text": t.ByteTokenizer().decode(tokens)}


class _Stamped(io.StringIO):
    """Swallows the tutorial's prints, noting when it prints "The generated token:" -- right
    after prefill, before the decode loop."""

    decode_starts = float("nan")

    def write(self, text: str) -> int:
        if "The generated token" in text:
            self.decode_starts = time.perf_counter()
        return super().write(text)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tvm-python", default=DEFAULT_TVM_PYTHON, help="a Python with TVM installed")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--tvm", metavar="DIR", help="(internal) run on TVM with DIR's weights and reference")
    args = p.parse_args(argv)
    if args.tvm:
        print(json.dumps(run_tutorial("tvm", Path(args.tvm), args.rounds)))
        return []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        write_reference(Path(tmp))
        results.append(run_tutorial("minitvm", Path(tmp), args.rounds))
        if not os.path.exists(args.tvm_python):
            print(f"TVM: skipped, no interpreter at {args.tvm_python} (--tvm-python)")
        else:
            out = subprocess.run([args.tvm_python, __file__, "--tvm", tmp, "--rounds", str(args.rounds)],
                                 capture_output=True, text=True, check=False)
            if out.returncode:
                raise RuntimeError(f"the tutorial on TVM ({args.tvm_python}) failed:\n{out.stderr[-3000:]}")
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for r in results:
        print(f"{r['engine']} {r['version']}: logits of prefill and {r['tokens'] - 1} decode steps = HF's "
              f"(rtol 1e-4), same greedy tokens; the generation cell {r['tok_s']:.0f} tok/s ({r['tokens']} tokens "
              f"after a {r['prompt']}-token prompt), its decode loop {r['decode_tok_s']:.0f} tok/s (medians of "
              f"{args.rounds}); text {r['text']!r}")
    return results


if __name__ == "__main__":
    main()
