"""``example_npu``: TVM's teaching BYOC backend for a neural processing unit -- its pattern table.

Importing it registers, under the prefix ``"example_npu"``, the operators such an NPU would take
(:mod:`.patterns`), so ``FuseOpsByPattern(get_patterns_with_prefix("example_npu"),
annotate_codegen=True)`` and ``MergeCompositeFunctions`` partition a module for it, as TVM's
bring-your-own-codegen tutorial does.  As in a TVM build without the example NPU's C++ runtime,
there is no code generator: ``get_global_func("relax.ext.example_npu", True)`` is None, and the
tutorial skips building the partitioned module.  :mod:`..ccompiler` is the backend that compiles.
"""

from . import patterns

__all__ = ["patterns"]
