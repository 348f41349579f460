"""Fixtures of the Relax tests."""

from __future__ import annotations

import pytest

from minitvm import tir


@pytest.fixture
def n():
    return tir.Var("n", "int64")
