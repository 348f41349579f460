"""The realistic-size section: the models people run, at the sizes they run them, in one table.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/realistic.py \
        [--models resnet18,bert_mini] [--batches 1,8] [--peers onnxruntime,torch.compile] [--profile]

Models (transformers' own classes at our configs, random seeded weights, no download; each
wrapped to return one tensor):

* ``resnet18``     -- ``ResNetForImageClassification``, basic blocks [2, 2, 2, 2] x 64..512, 224x224
* ``mobilenet_v2`` -- ``MobileNetV2ForImageClassification`` (width 1.0), 224x224
* ``vit_tiny``     -- ``ViTModel``, 12 layers x 192 (3 heads, MLP 768), 16x16 patches, 224x224
* ``bert_mini``    -- ``BertModel``, 4 layers x 256 (4 heads, FFN 1024), 128 tokens, no mask
* ``gpt2_mini``    -- ``GPT2Model``, 4 layers x 256 (4 heads), 128 tokens (causal; transformers'
  "eager" attention, see ``_gpt2_mini``)

Norm layers get random affine parameters and running statistics (``zoo._finish``), so that a
wrong BatchNorm or LayerNorm formula shows.  Batch 1 and 8 by default.

Per row, timed in the same interleaved rounds (``zoo.measure_model``, as the zoo section of
``run.py``): torch eager (2 threads), ``torch.compile`` (inductor) and ONNX Runtime
(``peers.py``: a peer that is missing or fails says why in the row), and minitvm's default
pipeline -- after minitvm's output was checked against torch's (max |err| <= 1e-4 + 1e-3 x
max |torch|; a peer is checked the same way).  ``compile`` is minitvm's cold compile (pipeline +
codegen, kernel caches cleared first, warm process).  ``GFLOP/s`` is minitvm's rate on the
model's FLOPs (``torch.utils.flop_counter``: matmuls, convolutions, attention) and ``% peak``
its share of the machine's float32 peak measured at start (``common.measured_peak_gflops``).
``load`` is the share of the cores other processes used while the row was timed.  Times and
``x peer`` ratios are medians; ``min x peer`` divides the fastest calls, which on a VM whose
second core comes and goes says what the code does when it has both (the median carries
the slow spells, and they hit minitvm's yielding thread pool harder than ORT's spinning one).

``--profile`` then prints, for each row (or the ``--profile-top`` worst by time / ORT's),
the per-kernel table of ``zoo_profile.py``: time, share, GFLOP/s and share of peak per kernel
(timed inside the native entry), and, when ORT is a peer, the kernels beside ORT's own per-node
times in the same model (``ort_profile.py``).
``--tiny`` shrinks every model (a few layers of width 32 on 32x32 images / 16 tokens), for the
smoke test.  Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_profile  # noqa: E402
import peers as peers_mod  # noqa: E402
import zoo as zoo_bench  # noqa: E402
import zoo_profile  # noqa: E402
from common import LoadMeter, busy_fraction, fmt_time, format_table, measured_peak_gflops, setup_environment  # noqa: E402
from compile_time import clear_caches  # noqa: E402

#: a minitvm output is right when max |minitvm - torch| <= ATOL + RTOL * max |torch|: ten times the
#: zoo's rtol, since these models sum over hundreds of channels in a dozen layers (float32)
RTOL, ATOL = 1e-3, 1e-4
SEED = 0


# -- the models -----------------------------------------------------------------------------------

def _images(size: int) -> Callable[[int], tuple[Any, ...]]:
    def inputs(batch: int) -> tuple[Any, ...]:
        import torch

        return (torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(1000 + batch)),)
    return inputs


def _tokens(vocab: int, length: int) -> Callable[[int], tuple[Any, ...]]:
    def inputs(batch: int) -> tuple[Any, ...]:
        import torch

        gen = torch.Generator().manual_seed(2000 + batch)
        return (torch.randint(0, vocab, (batch, length), generator=gen, dtype=torch.int64),)
    return inputs


def _one_output(model: Any) -> Any:
    """``model`` returning its logits (or last hidden state) as one tensor, in eval mode with
    random norm statistics: what export, ONNX Runtime and torch.compile all take."""
    import torch

    from minitvm.testing import zoo

    class OneOutput(torch.nn.Module):
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            out = self.inner(x)
            return out.logits if hasattr(out, "logits") else out.last_hidden_state

    return zoo._finish(OneOutput(model))


def _resnet18(tiny: bool) -> Any:
    import transformers as tf

    widths = [8, 16, 16, 32] if tiny else [64, 128, 256, 512]
    return tf.ResNetForImageClassification(tf.ResNetConfig(
        layer_type="basic", depths=[1, 1, 1, 1] if tiny else [2, 2, 2, 2], hidden_sizes=widths,
        embedding_size=widths[0], num_labels=10 if tiny else 1000))


def _mobilenet_v2(tiny: bool) -> Any:
    import transformers as tf

    return tf.MobileNetV2ForImageClassification(tf.MobileNetV2Config(
        depth_multiplier=0.35 if tiny else 1.0, image_size=32 if tiny else 224, num_labels=10 if tiny else 1000))


def _vit_tiny(tiny: bool) -> Any:
    import transformers as tf

    size = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=32,
                patch_size=8) if tiny else dict(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                                                 intermediate_size=768, image_size=224, patch_size=16)
    return tf.ViTModel(tf.ViTConfig(**size), add_pooling_layer=False)


def _bert_mini(tiny: bool) -> Any:
    import transformers as tf

    size = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                vocab_size=100) if tiny else dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                                   intermediate_size=1024)
    return tf.BertModel(tf.BertConfig(**size), add_pooling_layer=False)


def _gpt2_mini(tiny: bool) -> Any:
    import transformers as tf

    size = dict(n_embd=32, n_layer=1, n_head=2, vocab_size=100, n_positions=16, bos_token_id=0,
                eos_token_id=0) if tiny else dict(n_embd=256, n_layer=4, n_head=4, n_positions=128)
    # transformers' explicit attention (matmul, mask, softmax, matmul): with its default "sdpa",
    # torch 2.13's own ep.run_decompositions() fails at batch > 1 (it gives the attention output
    # strides (d, b*d, 1) that GPT-2's Conv1D cannot .view), before any importer sees the graph
    return tf.GPT2Model(tf.GPT2Config(**size, attn_implementation="eager"))


@dataclass(frozen=True)
class Realistic:
    """One model: its builder (``tiny`` shrinks it) and its inputs at full and tiny size."""

    name: str
    make: Callable[[bool], Any]
    inputs: Callable[[int], tuple[Any, ...]]
    tiny_inputs: Callable[[int], tuple[Any, ...]]
    description: str

    def zoo_model(self, tiny: bool = False) -> Any:
        """The model as a ``zoo.ZooModel`` (what ``zoo.measure_model`` takes), seeded."""
        from minitvm.testing import zoo

        def build() -> Any:
            import torch

            torch.manual_seed(SEED)
            return _one_output(self.make(tiny))

        return zoo.ZooModel(self.name, build, self.tiny_inputs if tiny else self.inputs, self.description)


MODELS: dict[str, Realistic] = {m.name: m for m in [
    Realistic("resnet18", _resnet18, _images(224), _images(32), "ResNet-18, 224x224, 1000 classes"),
    Realistic("mobilenet_v2", _mobilenet_v2, _images(224), _images(32), "MobileNetV2 1.0, 224x224, 1000 classes"),
    Realistic("vit_tiny", _vit_tiny, _images(224), _images(32), "ViT-tiny: 12 layers x 192, 16x16 patches, 224x224"),
    Realistic("bert_mini", _bert_mini, _tokens(30522, 128), _tokens(100, 16), "BERT-mini: 4 layers x 256, 128 tokens"),
    Realistic("gpt2_mini", _gpt2_mini, _tokens(50257, 128), _tokens(100, 16), "GPT-2-mini: 4 layers x 256, 128 tokens"),
]}


def export(model: Any, batch: int) -> Any:
    """``torch.export.export`` of a ``zoo_model()`` at ``batch`` (static shapes)."""
    import torch

    return torch.export.export(model.build(), model.example_inputs(batch))


def model_flops(model: Any, batch: int) -> float | None:
    """FLOPs of one call (``torch.utils.flop_counter``: matmuls, convolutions, attention)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model.build()(*model.example_inputs(batch))
    return float(counter.get_total_flops()) or None


# -- one row ----------------------------------------------------------------------------------------

@dataclass
class RealisticRow:
    """One (model, batch): the zoo result (timings by row name, errors, compile time), the
    model's FLOPs and the share of the cores other processes used while it was measured."""

    model: str
    batch: int
    result: Any
    flops: float | None = None
    load: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def time(self, impl: str, stat: str = "median") -> float | None:
        """``impl``'s seconds per call: the median of its samples, or with ``stat="min"`` the
        fastest (what the code can do when this VM gives it both cores; the median also
        carries the VM's slow spells)."""
        t = self.result.timings.get(impl)
        return None if t is None else getattr(t, stat)

    def ratio(self, impl: str, peer: str, stat: str = "median") -> float | None:
        a, b = self.time(impl, stat), self.time(peer, stat)
        return None if a is None or b is None else a / b


MINITVM = "minitvm default"


def measure_row(name: str, batch: int, torch: Any, peers: tuple[str, ...], tiny: bool = False, repeat: int = 10,
                rounds: int = 3, warmup: int = 2, verbose: bool = False) -> RealisticRow:
    """Export, import, cold-compile, check and time one model at ``batch`` beside its peers."""
    model = MODELS[name].zoo_model(tiny)
    clear_caches()  # a cold compile: no kernel of an earlier row is reused
    meter = LoadMeter()
    result = zoo_bench.measure_model(model, batch, torch, export=export, repeat=repeat, rounds=rounds,
                                     warmup=warmup, verbose=verbose, peers=peers, rtol=RTOL, atol=ATOL)
    row = RealisticRow(name, batch, result, load=meter.fraction())
    try:
        row.flops = model_flops(model, batch)
    except Exception as exc:  # the GFLOP/s column stays empty; the timings are still good
        row.extra["flops_error"] = zoo_bench.first_line(exc)
    return row


# -- the table ----------------------------------------------------------------------------------------

def _time_cell(row: RealisticRow, impl: str) -> str:
    t = row.result.timings.get(impl)
    if t is not None:
        return fmt_time(t.median)
    why = row.result.peer_errors.get(impl)
    return f"({why})" if why else "-"


def _ratio_cell(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def table(rows: list[RealisticRow], peak_gflops: float | None, peers: tuple[str, ...]) -> str:
    """The section's table: one line per (model, batch), and the geometric means under it."""
    head = ["model", "batch", "load", "torch eager", *peers, "minitvm", *(f"x {p}" for p in peers),
            *(f"min x {p}" for p in peers), "GFLOP/s", "% peak", "compile", "max|err|", "status"]
    lines = []
    for r in rows:
        res = r.result
        t = r.time(MINITVM)
        gflops = None if t is None or not r.flops else r.flops / t / 1e9
        status = f"{res.failed_stage} failed: {res.error}" if res.failed_stage else \
            "ok" if res.correct else "WRONG RESULT" if res.correct is False else "-"
        lines.append([r.model, str(r.batch), f"{r.load:.0%}", _time_cell(r, "torch"),
                      *(_time_cell(r, p) for p in peers), _time_cell(r, MINITVM),
                      *(_ratio_cell(r.ratio(MINITVM, p)) for p in peers),
                      *(_ratio_cell(r.ratio(MINITVM, p, "min")) for p in peers),
                      "-" if gflops is None else f"{gflops:.1f}",
                      "-" if gflops is None or not peak_gflops else f"{100 * gflops / peak_gflops:.0f}%",
                      "-" if res.compile_s is None else f"{res.compile_s:.1f} s",
                      "-" if res.max_abs_err is None else f"{res.max_abs_err:.1e}", status])
    out = [format_table(head, lines, left=1)]
    for p in ("torch", *peers):
        for stat, what in (("median", "time"), ("min", "fastest call")):
            ratios = [x for r in rows if (x := r.ratio(MINITVM, p, stat))]
            if ratios:
                out.append(f"geometric mean of minitvm {what} / {p} {what}: "
                           f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3g}x over {len(ratios)} rows")
    compiles = [r.result.compile_s for r in rows if r.result.compile_s is not None]
    if compiles:
        median = sorted(compiles)[len(compiles) // 2]
        out.append(f"minitvm cold compile: max {max(compiles):.1f} s, median {median:.1f} s")
    return "\n".join(out)


def worst_rows(rows: list[RealisticRow], count: int, peers: tuple[str, ...]) -> list[RealisticRow]:
    """The ``count`` rows where minitvm is furthest behind its fastest peer (ORT, torch.compile,
    torch eager), worst first; rows without a minitvm time are left out."""
    def behind(r: RealisticRow) -> float:
        ratios = [x for p in ("torch", *peers) if (x := r.ratio(MINITVM, p))]
        return max(ratios, default=0.0)

    timed = [r for r in rows if r.time(MINITVM) is not None]
    return sorted(timed, key=behind, reverse=True)[:count]


def profile_row(row: RealisticRow, peak_gflops: float | None, tiny: bool = False, top: int | None = 15,
                repeat: int = 20, with_ort: bool = False) -> str:
    """The per-kernel table of ``zoo_profile.py`` for one row's model and batch; ``with_ort``:
    beside ORT's per-node times (``ort_profile.py``), when ORT runs the model."""
    from minitvm.relax.frontend.torch import from_exported_program

    model = MODELS[row.model].zoo_model(tiny)
    mod = from_exported_program(export(model, row.batch), unwrap_unit_return_tuple=True)
    inputs = [x.numpy() for x in model.example_inputs(row.batch)]
    nodes = None
    if with_ort:
        try:
            nodes = ort_profile.node_times(model.build(), model.example_inputs(row.batch))
        except Exception as exc:  # a peer that fails says so; the profile stands without it
            print(f"ORT's per-node profile of {row.model} b={row.batch} failed: {peers_mod._first_line(exc)}")
    return zoo_profile.profile_text(f"{row.model} b={row.batch}", mod, inputs, repeat=repeat,
                                    peak_gflops=peak_gflops, top=top, peer_nodes=nodes)


# -- command line ---------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma list from {','.join(MODELS)}")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--peers", default=",".join(peers_mod.PEERS),
                   help=f"comma list from {','.join(peers_mod.PEERS)}, or 'none'")
    p.add_argument("--repeat", type=int, default=10, help="timed calls per row and round")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="tiny configs of every model (a smoke test)")
    p.add_argument("--profile", action="store_true", help="per-kernel profiles after the table")
    p.add_argument("--profile-top", type=int, default=0,
                   help="profile only this many rows, furthest behind a peer first (default: every row)")
    p.add_argument("--kernels", type=int, default=15, help="kernels per profile table (0: all)")
    p.add_argument("--verbose", action="store_true", help="print the traceback of a failed stage")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> tuple[list[RealisticRow], str]:
    args = parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"realistic.py --models: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    peers = () if args.peers.strip() == "none" else tuple(x.strip() for x in args.peers.split(",") if x.strip())
    setup_environment(None)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")  # torch.export's own deprecation noise
    import torch

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    measured = measured_peak_gflops()
    peak = zoo_profile.peak_of(measured)
    head = f"{zoo_profile.peak_line(measured)} | other load at start {busy_fraction():.0%}"
    print(head, flush=True)
    rows = []
    for batch in (int(b) for b in args.batches.split(",") if b.strip()):  # every model at batch 1 first
        for name in names:
            rows.append(measure_row(name, batch, torch, peers, args.tiny, args.repeat, args.rounds, args.warmup,
                                    args.verbose))
            print(table(rows[-1:], peak, peers).splitlines()[2], flush=True)  # the row's line, as it comes
    text = head + "\n" + table(rows, peak, peers)
    print("\n" + text, flush=True)
    if args.profile:
        chosen = worst_rows(rows, args.profile_top, peers) if args.profile_top else rows
        for row in chosen:
            prof = profile_row(row, peak, args.tiny, args.kernels or None, with_ort="onnxruntime" in peers)
            print("\n" + prof, flush=True)
            text += "\n\n" + prof
    return rows, text


if __name__ == "__main__":
    main()
