"""Every chapter is committed without outputs.

The committed notebooks are read (``tests/committed.py``): the outputs JupyterLab autosaves while
a learner runs the chapters in this clone are theirs, not the repository's.

That every chapter runs top to bottom on a fresh kernel without errors is checked once, in a real
browser (tests/viz/test_chapters_in_browser.py: Run All in JupyterLab, then no error or stderr
output), together with the width of its outputs: running each chapter a second time here, with
nbclient, checked nothing more and cost minutes of CI."""

from __future__ import annotations

import nbformat
import pytest
from committed import committed_paths, committed_text

CHAPTERS = committed_paths("chapters", "[0-9][0-9]_*.ipynb")


def test_the_chapters_exist():
    names = {p.name for p in CHAPTERS}
    assert {"00_overview.ipynb", "01_tensor_programs.ipynb", "02_schedule_transformations.ipynb",
            "03_from_pytorch.ipynb"} <= names


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.reads(committed_text(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, \
                f"{path.name} is committed with outputs: clear them and commit again"
