"""CUDA library backends' pattern tables (TVM's ``relax.backend.cuda``): :mod:`.cublas` and
:mod:`.cutlass`.  Importing one registers its ``"<library>.<op>"`` patterns; its
``partition_for_*`` groups what they match into functions annotated ``Codegen="<library>"``.
minitvm has neither library's code generator: the partitioned module can be printed and
inspected, not built for the GPU."""

from . import cublas, cutlass

__all__ = ["cublas", "cutlass"]
