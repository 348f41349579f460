"""Every chapter runs top to bottom on a fresh kernel, without errors, and is committed without outputs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbclient
import nbformat
import pytest

import minitvm

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def test_the_chapters_exist():
    names = {p.name for p in CHAPTERS}
    assert {"00_overview.ipynb", "01_tensor_programs.ipynb", "02_schedule_transformations.ipynb",
            "03_from_pytorch.ipynb"} <= names


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_on_a_fresh_kernel(path):
    nb = nbformat.read(path, as_version=4)
    # the kernel imports the minitvm of this checkout, and runs where a learner would (chapters/)
    pkg_parent = str(Path(minitvm.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [pkg_parent, os.environ.get("PYTHONPATH")])))
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    # raises CellExecutionError naming the cell on any error; a hung cell fails after `timeout`.
    # (The "under a minute" budget is watched in the CI log, not asserted: no wall-clock tests.)
    start = time.perf_counter()
    client.execute(env=env)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")
