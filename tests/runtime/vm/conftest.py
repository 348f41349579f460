"""Fixtures of the VM tests; the programs themselves are in vm_programs.py."""

import pytest
from vm_programs import build_mlp, build_sum_loop


@pytest.fixture
def mlp_exe():
    return build_mlp()


@pytest.fixture
def sum_exe():
    return build_sum_loop()
