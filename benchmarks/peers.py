"""The serving-speed peers of the zoo rows: ONNX Runtime and ``torch.compile`` (inductor).

Both are benchmark-only: ``pip install minitvm[bench]`` brings onnxruntime, onnx and onnxscript
(the exporter ``torch.onnx.export(..., dynamo=True)`` needs the last two); inductor comes with
torch and needs a C compiler.  A peer that is missing or fails gives a row saying so (the
stage and the first line of the error), never an exception.

* ``onnxruntime``   -- the model exported with ``torch.onnx.export(module, inputs, dynamo=True)``
  at the row's batch (static shapes), run by an ``InferenceSession`` on the CPU provider with
  ``intra_op_num_threads=2`` (the machine's cores), ``inter_op_num_threads=1`` and every graph
  optimization enabled (``ORT_ENABLE_ALL``: BatchNorm folding, NCHWc conv layouts, attention
  fusion ...).  Inputs are numpy arrays created once, as the VM's are NDArrays created once.
* ``torch.compile`` -- ``torch.compile(module)`` (inductor, default mode, static shapes),
  compiled by its first call before timing.

``make_peers(module, inputs)`` returns ``{name: Peer}``; each Peer has ``run()`` (one timed
call), ``outputs()`` (numpy outputs to check) or ``error`` (why it has no ``run``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

#: the peers' row names, in table order
PEERS = ("onnxruntime", "torch.compile")
#: threads every peer may use (the machine has 2 cores; torch eager and minitvm use 2 too)
THREADS = 2


@dataclass
class Peer:
    """One peer ready to time: ``run()`` does one call; ``error`` says why there is none."""

    name: str
    run: Callable[[], Any] | None = None
    outputs: Callable[[], list[Any]] | None = None
    prepare_s: float | None = None
    error: str = ""
    info: dict[str, Any] = field(default_factory=dict)


def _first_line(exc: BaseException, limit: int = 140) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _flat_numpy(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _flat_numpy(o)]
    return [out.detach().numpy() if hasattr(out, "detach") else out]


def onnx_session(module: Any, inputs: tuple[Any, ...], profile_prefix: str | None = None) -> tuple[Any, dict]:
    """``module`` exported to ONNX (dynamo exporter) and loaded into an ORT CPU session as the
    peer runs it: (the session, its feed of ``inputs``).  ``profile_prefix``: ORT's own profiler
    on (per-node times; ``session.end_profiling()`` writes them)."""
    import onnxruntime as ort
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        # the exporter prints progress and logs/warns about its own internals: keep the table clean
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, path, dynamo=True, external_data=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = THREADS
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if profile_prefix is not None:
            opts.enable_profiling = True
            opts.profile_file_prefix = profile_prefix
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session, {n: x.detach().numpy() for n, x in zip(names, inputs)}


def onnxruntime_peer(module: Any, inputs: tuple[Any, ...]) -> Peer:
    """``module`` exported to ONNX (dynamo exporter) and loaded into an ORT CPU session."""
    peer = Peer("onnxruntime")
    try:
        import onnxruntime as ort
        import torch  # noqa: F401  (the exporter)
    except ImportError as exc:
        peer.error = f"not installed ({exc.name}; pip install minitvm[bench])"
        return peer
    t0 = time.perf_counter()
    try:
        session, feed = onnx_session(module, inputs)
    except Exception as exc:
        peer.error = f"export/load failed: {_first_line(exc)}"
        return peer
    peer.run = lambda: session.run(None, feed)
    peer.outputs = lambda: _flat_numpy(session.run(None, feed))
    peer.prepare_s = time.perf_counter() - t0
    peer.info["version"] = ort.__version__
    return peer


def torch_compile_peer(module: Any, inputs: tuple[Any, ...]) -> Peer:
    """``torch.compile(module)`` (inductor), compiled by one call before it is timed."""
    peer = Peer("torch.compile")
    try:
        import torch
    except ImportError:
        peer.error = "not installed (torch)"
        return peer
    # dynamo keeps compiled code per Python code object, at most 8 versions (recompile_limit): models
    # sharing a forward (benchmarks/realistic.py's wrapper, one model at two batches) would fall back
    # to eager, silently, from the ninth on.  Each peer is timed alone, so start from a clean cache.
    torch._dynamo.reset()
    t0 = time.perf_counter()
    try:
        compiled = torch.compile(module, dynamic=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*inputs)
    except Exception as exc:
        peer.error = f"compile failed: {_first_line(exc)}"
        return peer
    peer.run = lambda: compiled(*inputs)
    peer.outputs = lambda: _flat_numpy(compiled(*inputs))
    peer.prepare_s = time.perf_counter() - t0
    return peer


MAKERS: dict[str, Callable[[Any, tuple[Any, ...]], Peer]] = {
    "onnxruntime": onnxruntime_peer, "torch.compile": torch_compile_peer}


def make_peers(module: Any, inputs: tuple[Any, ...], names: tuple[str, ...] = PEERS) -> dict[str, Peer]:
    """The named peers of ``module`` on ``inputs`` (each ready, or with its ``error``)."""
    unknown = [n for n in names if n not in MAKERS]
    if unknown:
        raise ValueError(f"peers: unknown peer(s) {', '.join(unknown)}; known: {', '.join(MAKERS)}")
    return {n: MAKERS[n](module, inputs) for n in names}
