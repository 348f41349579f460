"""Relax analyses: well-formedness, variables, unused bindings, struct-info reasoning."""

from .computable_at_compile_time import computable_at_compile_time
from .detect_recursion import detect_recursion
from .purity import contains_impure_call
from .remove_unused import remove_all_unused
from .reshape_pattern import has_reshape_pattern
from .struct_info_analysis import (
                                   BaseCheckResult,
                                   collect_non_negative_expressions,
                                   definable_tir_vars_in_struct_info,
                                   derive_call_ret_struct_info,
                                   erase_to_well_defined,
                                   get_static_type,
                                   is_base_of,
                                   struct_info_base_check,
                                   struct_info_lca,
                                   tir_vars_in_struct_info,
)
from .symbolic_vars import defined_symbolic_vars, free_symbolic_vars
from .var2val import get_var2val
from .vars import (
    all_global_vars,
    all_vars,
    bound_vars,
    free_vars,
    name_to_binding,
    post_order_visit,
    udchain,
    used_vars,
)
from .well_formed import well_formed, well_formed_errors

__all__ = ["well_formed", "well_formed_errors", "free_vars", "bound_vars", "all_vars",
           "all_global_vars", "remove_all_unused", "contains_impure_call", "is_base_of", "struct_info_lca",
           "erase_to_well_defined", "get_static_type", "tir_vars_in_struct_info",
           "definable_tir_vars_in_struct_info", "derive_call_ret_struct_info", "get_var2val",
           "BaseCheckResult", "struct_info_base_check", "collect_non_negative_expressions",
           "defined_symbolic_vars", "free_symbolic_vars", "has_reshape_pattern", "used_vars", "udchain",
           "name_to_binding", "detect_recursion", "post_order_visit", "computable_at_compile_time"]
