"""``tvm.contrib.cblas``: TVM's calls into an external BLAS.  minitvm has no BLAS binding."""

from __future__ import annotations

from typing import Any

__all__ = ["matmul", "batch_matmul"]


def _unavailable(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"minitvm.contrib.cblas.{name}: minitvm links no external BLAS; "
        f"use topi.nn.matmul / topi.nn.batch_matmul (compiled TensorIR) instead")


def matmul(lhs: Any, rhs: Any, transa: bool = False, transb: bool = False, **kwargs: Any) -> Any:
    """Refused: there is no external BLAS in minitvm."""
    raise _unavailable("matmul")


def batch_matmul(lhs: Any, rhs: Any, transa: bool = False, transb: bool = False, **kwargs: Any) -> Any:
    """Refused: there is no external BLAS in minitvm."""
    raise _unavailable("batch_matmul")
