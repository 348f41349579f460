"""Targets and code generators: where compiled kernels run and how they get there.

``Target`` names what to compile for; ``codegen`` turns lowered TIR into runnable
modules (``codegen.llvm`` for native code).  The TIR reference interpreter lives in
``minitvm.target.interpreter``.
"""

from .target import Target, TargetKind, host_cpu_features, host_cpu_name

__all__ = ["Target", "TargetKind", "host_cpu_name", "host_cpu_features"]
