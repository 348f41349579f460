"""The benchmark scripts set torch up for timing (no autograd, two threads) process-wide, as a
script should; the tests call their ``main`` in the test process (some from module-scoped
fixtures), so each test module gives torch back as it found it: a later test on the same worker,
e.g. a gradient check, needs autograd."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def restore_torch_globals():
    grad, threads = torch.is_grad_enabled(), torch.get_num_threads()
    yield
    torch.set_grad_enabled(grad)
    torch.set_num_threads(threads)
