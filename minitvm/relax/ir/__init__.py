"""Relax IR helpers at TVM's paths (``tvm.relax.ir.instrument``)."""
