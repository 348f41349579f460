"""``tvm.contrib``'s place: bindings to external libraries.

minitvm links no external library; the modules here exist so code that imports them
loads, and each function says by name that it is not available.
"""
