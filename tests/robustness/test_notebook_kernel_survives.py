"""The fatal mistakes of chapter 1, made the chapter's way in a real Jupyter kernel (nbclient):
each cell ends in an error that names the problem, and the kernel is still alive afterwards.

Unchecked, the index read from ``idx`` writes 400 MB past the array and kills the kernel
("The kernel appears to have died"); inside a notebook ``minitvm.build`` checks what it cannot
prove, so it is a ``BoundsError`` instead.  The loop one past the buffer is refused at build.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]

_CELLS = [
    '''import numpy as np
import minitvm
from minitvm.script import tir as T''',
    '''@T.prim_func
def scatter(A: T.Buffer((8,), "float32"), idx: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[idx[vi]] = A[vi]

lib = minitvm.build(scatter)
lib["scatter"](np.ones(8, "float32"), np.full(8, 100_000_000, "int32"), np.zeros(8, "float32"))''',
    '''@T.prim_func
def one_past(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(17):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)

minitvm.build(one_past)''',
    'print("the kernel is alive")',
]


def _error(cell) -> str:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    return f"{errors[0].ename}: {errors[0].evalue}" if errors else ""


def test_out_of_bounds_mistakes_raise_and_the_kernel_survives(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in _CELLS])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.km_kwargs = {"env": {**os.environ, "PYTHONPATH": str(ROOT)}}
    client.execute()
    _, scatter, one_past, alive = nb.cells
    assert _error(scatter).startswith("BoundsError: scatter: buffer B: index 100000000 is out of bounds for "
                                      "extent 8"), _error(scatter)
    assert "block B binding vi: vi = i reaches [0, 16]" in _error(one_past), _error(one_past)
    assert alive.outputs[0].text == "the kernel is alive\n"
