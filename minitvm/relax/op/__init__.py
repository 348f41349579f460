"""Relax operators: builders returning ``relax.Call``s, each op registered with its
struct-info inference (``relax.op.add(x, y)``, ``relax.op.nn.relu(x)``)."""

from . import nn
from .base import call_dps_packed, call_pure_packed, call_tir
from .binary import add, divide, multiply, subtract
from .linear_algebra import matmul
from .registry import OpPattern, register
from .ternary import ewise_fma
from .unary import exp

__all__ = ["nn", "call_tir", "call_dps_packed", "call_pure_packed", "add", "subtract",
           "multiply", "divide", "exp", "matmul", "ewise_fma", "OpPattern", "register"]
