"""Every chapter is committed without outputs.

That every chapter runs top to bottom on a fresh kernel without errors is checked once, in a real
browser (tests/viz/test_chapters_in_browser.py: Run All in JupyterLab, then no error or stderr
output), together with the width of its outputs: running each chapter a second time here, with
nbclient, checked nothing more and cost minutes of CI."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

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
