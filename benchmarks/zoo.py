"""The model-zoo rows of ``benchmarks/run.py``: every ``minitvm.testing.zoo`` model exported with
``torch.export``, imported with ``relax.frontend.torch.from_exported_program``, compiled with
``minitvm.compile`` (the default pipeline) and timed against torch eager and the serving peers
of ``peers.py`` (ONNX Runtime, ``torch.compile``) at a given batch, all interleaved in one run.

A model that fails at any stage gives a result naming the stage and the first line of the
error, never an exception: one unsupported operator must not end the whole benchmark.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers as peers_mod  # noqa: E402
from common import Timing, time_interleaved  # noqa: E402

#: a minitvm output is right when max |minitvm - torch| <= ATOL + RTOL * max |torch|
ATOL, RTOL = 1e-4, 1e-4


@dataclass
class ZooResult:
    """What one (model, batch) measured: stage times in seconds, run timings by row name
    ("torch", "minitvm default"), the max |error| vs torch, and the first failure if any."""

    model: str
    batch: int
    export_s: float | None = None
    import_s: float | None = None
    compile_s: float | None = None
    timings: dict[str, Timing] = field(default_factory=dict)
    max_abs_err: float | None = None
    tolerance: float | None = None
    failed_stage: str = ""
    error: str = ""
    #: per peer (``peers.PEERS``): why it has no timing, its max |error| vs torch, its set-up seconds
    peer_errors: dict[str, str] = field(default_factory=dict)
    peer_abs_err: dict[str, float] = field(default_factory=dict)
    peer_prepare_s: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> bool | None:
        """True/False once the output was compared with torch's, None before."""
        if self.max_abs_err is None or self.tolerance is None:
            return None
        return self.max_abs_err <= self.tolerance


def first_line(exc: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message`` (tracebacks stay out of the table); a first line
    ending in ":" gets the next line too, since it announces the detail (e.g. which operators)."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    if text.endswith(":") and len(lines) > 1:
        text += " " + lines[1]
    text = f"{type(exc).__name__}: {text}".strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def to_numpy_outputs(out: Any) -> list[Any]:
    """A VM or torch result (one array or a nested tuple/list of them) as a flat list of numpy arrays."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in to_numpy_outputs(o)]
    if hasattr(out, "detach"):
        return [out.detach().numpy()]
    return [out.numpy()]


def compare_outputs(got: list[Any], want: list[Any], where: str, rtol: float = RTOL,
                    atol: float = ATOL) -> tuple[float, float]:
    """(max |got - want|, allowed = ``atol + rtol * max |want|``) over all outputs; ValueError
    naming ``where`` on a shape mismatch."""
    import numpy as np

    if len(got) != len(want):
        raise ValueError(f"{where}: {len(got)} outputs, torch gives {len(want)}")
    err, scale = 0.0, 0.0
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            raise ValueError(f"{where}: output {k} has shape {g.shape}, torch's is {w.shape}")
        finite = np.isfinite(w)
        if not np.array_equal(finite, np.isfinite(g)):
            raise ValueError(f"{where}: output {k} has inf/nan where torch's has not (or vice versa)")
        if finite.any():
            err = max(err, float(np.max(np.abs(g[finite].astype(np.float64) - w[finite]))))
            scale = max(scale, float(np.max(np.abs(w[finite]))))
    return err, atol + rtol * scale


def run_stage(result: ZooResult, name: str, fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run one stage, timing it; on failure record it in ``result`` and re-raise."""
    t0 = time.perf_counter()
    try:
        value = fn()
    except Exception as exc:
        result.failed_stage, result.error = name, first_line(exc)
        raise
    return value, time.perf_counter() - t0


def measure_model(model: Any, batch: int, torch: Any, *, export: Callable[..., Any], pipeline: str = "default",
                  repeat: int = 10, rounds: int = 3, warmup: int = 2, verbose: bool = False,
                  peers: tuple[str, ...] = (), rtol: float = RTOL, atol: float = ATOL) -> ZooResult:
    """Export, import, compile, check and time ``model`` (a ``zoo.ZooModel``) at ``batch``.

    ``export`` is ``zoo.export``; ``pipeline`` names the relax pipeline (compile time =
    pipeline + codegen); ``peers`` names rows of ``peers.py`` timed in the same interleaved
    rounds (each checked against torch like minitvm, within ``atol + rtol * max |torch|``).
    Returns a ZooResult; failures are recorded in it, not raised."""
    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    result = ZooResult(model.name, batch)
    try:
        ep, result.export_s = run_stage(result, "export", lambda: export(model, batch))
        mod, result.import_s = run_stage(result, "import",
                                      lambda: from_exported_program(ep, unwrap_unit_return_tuple=True))

        def compile_mod():
            lowered = relax.get_pipeline(pipeline)(mod)
            return minitvm.compile(lowered, minitvm.target.Target("llvm"), relax_pipeline=None)

        ex, result.compile_s = run_stage(result, "compile", compile_mod)
        module, inputs = model.build(), model.example_inputs(batch)
        want = to_numpy_outputs(module(*inputs))
        main = relax.VirtualMachine(ex, minitvm.cpu())["main"]
        nd_inputs = [minitvm.nd.array(x.numpy()) for x in inputs]
        got, _ = run_stage(result, "run", lambda: to_numpy_outputs(main(*nd_inputs)))
        (result.max_abs_err, result.tolerance), _ = run_stage(
            result, "check", lambda: compare_outputs(got, want, f"zoo model {model.name!r} at batch {batch}",
                                                     rtol, atol))
        fns = {"torch": lambda: module(*inputs), f"minitvm {pipeline}": lambda: main(*nd_inputs)}
        fns.update(_ready_peers(result, module, inputs, want, peers, rtol, atol))
        result.timings = time_interleaved(fns, repeat, rounds, warmup)
    except Exception:
        if verbose:
            traceback.print_exc()
    return result


def _ready_peers(result: ZooResult, module: Any, inputs: tuple[Any, ...], want: list[Any],
                 names: tuple[str, ...], rtol: float = RTOL, atol: float = ATOL) -> dict[str, Callable[[], Any]]:
    """The peers that built and computed torch's numbers, as ``{name: run}``; the others get
    an entry in ``result.peer_errors`` (a wrong result is an error too: it is not timed)."""
    ready = {}
    for name, peer in peers_mod.make_peers(module, inputs, names).items():
        if peer.prepare_s is not None:
            result.peer_prepare_s[name] = peer.prepare_s
        if peer.run is None:
            result.peer_errors[name] = peer.error
            continue
        try:
            err, tol = compare_outputs(peer.outputs(), want, f"{name} on {result.model!r}", rtol, atol)
        except Exception as exc:
            result.peer_errors[name] = f"check failed: {first_line(exc)}"
            continue
        result.peer_abs_err[name] = err
        if err > tol:
            result.peer_errors[name] = f"WRONG RESULT (max|err| {err:.2g})"
            continue
        ready[name] = peer.run
    return ready


def load_zoo():
    """``minitvm.testing.zoo`` (the models and their ``export``)."""
    from minitvm.testing import zoo

    return zoo
