"""Shared inputs of the viz tests: the TVM quick-start MLP, built with relax.frontend.nn."""

import pytest

from minitvm.testing.nn_models import export_quick_start_mlp


@pytest.fixture
def mlp():
    """(IRModule with a ``forward`` Relax function, parameter spec) of the quick-start MLP at batch 1."""
    return export_quick_start_mlp(1)
