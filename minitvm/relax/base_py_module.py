"""BasePyModule: Python functions, TensorIR kernels and Relax functions in one module (TVM 0.27).

    @I.ir_module
    class Model(BasePyModule):
        @T.prim_func
        def add_tir(A: T.Buffer((4,), "float32"), ...): ...

        @I.pyfunc
        def forward(self, x, y):
            out = self.call_tir(self.add_tir, [x, y], out_ty=R.Tensor((4,), "float32"))
            return self._convert_tvm_to_pytorch(out)

    mod = Model(device=tvm.cpu(0))   # compiles the PrimFuncs and the Relax functions (LLVM, JIT)
    mod.forward(x, y)                # a plain Python method; x, y may be torch tensors

``@I.ir_module`` on a class deriving from ``BasePyModule`` gives a :class:`ModuleFactory`
(the IRModule, with each ``@I.pyfunc`` as an ``R.ExternFunc`` of its name); calling it builds
a ``BasePyModule``.  Tensors cross between torch and minitvm through DLPack, sharing memory.
The compiled Relax functions can call the Python ones back (``R.call_py_func``): each
``@I.pyfunc`` is registered with the VM under its name when the module is created.
torch is imported only when a conversion needs it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from ..ir.module import GlobalVar, IRModule
from ..runtime import ndarray as _nd
from ..runtime.device import Device, cpu
from ..runtime.ndarray import NDArray
from ..runtime.registry import get_global_func
from ..runtime.vm import builtins as _vm_builtins
from ..target import Target
from ..target.tir_build import build as _tir_build
from ..tir.expr import IntImm
from ..tir.function import PrimFunc
from .expr import ExternFunc, Function
from .struct_info import TensorStructInfo, TupleStructInfo
from .vm_build import VirtualMachine
from .vm_build import build as _relax_build

__all__ = ["BasePyModule", "ModuleFactory", "make_module_factory"]


def _torch() -> Any:
    """torch, or None when it is not installed (the module then works on minitvm tensors)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _target_for(device: Device, target: Any) -> Target:
    """``target`` as a Target; by default the one that compiles for ``device`` (TVM's
    ``Target.from_device``)."""
    if isinstance(target, Target):
        return target
    if target is not None:
        return Target(target)
    if device.device_type == Device.kDLCPU:
        return Target("llvm")
    if device.device_type == Device.kDLCUDA:
        return Target("cuda")
    raise ValueError(f"BasePyModule: no default target for {device}; pass target=")


class BasePyModule:
    """A module whose PrimFuncs and Relax functions are compiled when it is created and whose
    Python functions run as methods, with DLPack conversions between torch and minitvm tensors.

    Only modules deriving from this class may hold ``@I.pyfunc`` functions (as TVM).
    """

    def __init__(self, ir_mod: IRModule, device: Device | None = None, target: Any = None):
        if isinstance(ir_mod, ModuleFactory):  # TVM takes what @I.ir_module gave too
            ir_mod = ir_mod.ir_module
        if not isinstance(ir_mod, IRModule):
            raise TypeError(f"BasePyModule needs an IRModule, got {type(ir_mod).__name__}")
        self.device = device if device is not None else cpu(0)
        self.ir_mod = ir_mod
        self.functions = ir_mod.functions
        self.attrs = ir_mod.attrs
        self.target = _target_for(self.device, target)
        self.compiled_tir_funcs: dict[str, Any] = {}
        self.extern_funcs: dict[str, Any] = {}
        self.tir_func_names: list[str] = []
        self.relax_func_names: list[str] = []
        self.relax_vm: VirtualMachine | None = None
        self.pyfuncs: dict[str, Callable[..., Any]] = {}
        self._compile_errors: dict[str, str] = {}
        self._registered: dict[str, Callable[..., Any]] = {}
        self._collect_function_names()
        self._compile_functions()
        self._wrap_tir_functions()
        self._wrap_relax_functions()
        for name, func in getattr(ir_mod, "pyfuncs", {}).items():
            self.add_python_function(name, func)

    # -- compiling ------------------------------------------------------------------------------
    def _collect_function_names(self) -> None:
        for gv, func in self.ir_mod.functions_items():
            if isinstance(func, PrimFunc):
                self.tir_func_names.append(gv.name_hint)
            elif isinstance(func, Function):
                self.relax_func_names.append(gv.name_hint)

    def _compile_functions(self) -> None:
        """PrimFuncs -> one kernel library; Relax functions (with the PrimFuncs they call) -> a
        VM.  As TVM, a failure is a warning: the module is still made, and calling a function
        that did not compile says why."""
        prims = {gv: f for gv, f in self.ir_mod.functions_items() if isinstance(f, PrimFunc)}
        if prims:
            try:
                lib = _tir_build(IRModule(prims), self.target)
                for name in self.tir_func_names:
                    self.compiled_tir_funcs[name] = lib[name]
            except Exception as err:  # noqa: BLE001 - TVM goes on without the kernels, and says so
                self._compile_failed(self.tir_func_names, "TIR functions", err)
        if self.relax_func_names:
            # the Python functions are ExternFuncs of the module: the VM reaches them by name instead
            compiled = IRModule({gv: f for gv, f in self.ir_mod.functions_items() if not isinstance(f, ExternFunc)},
                                self.ir_mod.attrs)
            try:
                self.relax_vm = VirtualMachine(_relax_build(compiled, self.target), self.device)
            except Exception as err:  # noqa: BLE001 - as above
                self._compile_failed(self.relax_func_names, "Relax VM", err)

    def _compile_failed(self, names: list[str], what: str, err: Exception) -> None:
        message = f"{type(err).__name__}: {err}"
        for name in names:
            self._compile_errors[name] = message
        warnings.warn(f"BasePyModule: failed to compile the {what} ({', '.join(names)}): {message}", stacklevel=4)

    def _wrap_tir_functions(self) -> None:
        for name, func in self.compiled_tir_funcs.items():
            setattr(self, name, func)

    def _wrap_relax_functions(self) -> None:
        for name in self.relax_func_names:
            setattr(self, name, self._relax_wrapper(name))

    def _relax_wrapper(self, name: str) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            if self.relax_vm is None:
                why = self._compile_errors.get(name, "it was not compiled")
                raise RuntimeError(f"Relax function {name!r} has no compiled VM: {why}")
            # the registry is one table by name (as TVM's): another module may hold a name of ours
            _vm_builtins._PY_FUNCS.update(self._registered)
            result = self.relax_vm[name](*self._convert_pytorch_to_tvm(list(args)))
            return self._convert_tvm_to_pytorch(result)

        wrapper.__name__ = name
        wrapper.__doc__ = f"The compiled Relax function {name!r}: tensors in, tensors out (torch when given torch)."
        return wrapper

    # -- Python functions -----------------------------------------------------------------------
    def add_python_function(self, name: str, func: Callable[..., Any]) -> None:
        """Make ``func`` the module's Python function ``name``: a method of the module when its
        first parameter is ``self``, and what ``R.call_py_func(name, ...)`` calls in the VM."""
        if not callable(func):
            raise TypeError(f"add_python_function({name!r}): expected a callable, got {type(func).__name__}")
        self.pyfuncs[name] = func
        bound = _bind(func, self)
        setattr(self, name, bound)
        self._register_with_vm(name, func)

    def _register_with_vm(self, name: str, func: Callable[..., Any]) -> None:
        """The VM calls ``name`` with minitvm tensors: the wrapper hands torch tensors to ``func``
        and its result back as minitvm tensors.  It holds the module weakly, so registering does
        not keep the module alive."""
        ref = weakref.ref(self)
        takes_self = _takes_self(func)

        def from_vm(*args: Any) -> Any:
            module = ref()
            if module is None:
                raise RuntimeError(f"R.call_py_func({name!r}): the BasePyModule that defined it is gone")
            values = [module._convert_tvm_to_pytorch(a) for a in args]
            result = func(module, *values) if takes_self else func(*values)
            converted = module._convert_pytorch_to_tvm(result)
            return tuple(converted) if isinstance(converted, list) else converted

        from_vm.__name__ = name
        _vm_builtins.register_py_func(name, from_vm)
        self._registered[name] = from_vm

    def __del__(self) -> None:
        # forget this module's callbacks (unlike TVM, which clears every module's): only names
        # still pointing at them, a newer module may have taken a name over
        table = getattr(_vm_builtins, "_PY_FUNCS", None)  # (None while the interpreter shuts down)
        for name, wrapper in getattr(self, "_registered", {}).items():
            if table is not None and table.get(name) is wrapper:
                del table[name]

    def call_py_func(self, func_name: str, args: Any) -> Any:
        """Call the module's Python function ``func_name`` with ``args`` (a list), as is."""
        if func_name not in self.pyfuncs:
            raise ValueError(f"Python function '{func_name}' not found in module pyfuncs "
                             f"(it has: {', '.join(sorted(self.pyfuncs)) or 'none'})")
        return _bind(self.pyfuncs[func_name], self)(*args)

    # -- calling compiled code from Python ------------------------------------------------------
    def call_tir(self, tir_func: Any, args: Any, out_ty: Any) -> Any:
        """Run the compiled PrimFunc ``tir_func`` (its name or ``self.<name>``) on ``args`` in
        destination-passing style: the outputs described by ``out_ty`` (a TensorType, a list of
        them, or a shape of ints) are allocated here, symbolic dimensions taken from the
        arguments' shapes.  Returns the output as a torch tensor (a list for several)."""
        name = self._resolve_tir_name(tir_func)
        if name is None:
            raise ValueError(f"Could not resolve or find compiled TIR function: {tir_func}. "
                             f"Available functions: {list(self.compiled_tir_funcs)}{self._why_missing(tir_func)}")
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        outs = self._create_output_tensors(out_ty, args)
        self.compiled_tir_funcs[name](*self._convert_pytorch_to_tvm(args), *self._convert_pytorch_to_tvm(outs))
        result = self._convert_tvm_to_pytorch(outs)
        return result[0] if len(result) == 1 else result

    def _resolve_tir_name(self, tir_func: Any) -> str | None:
        if isinstance(tir_func, str):
            name = tir_func
        elif isinstance(tir_func, GlobalVar):
            name = tir_func.name_hint
        elif isinstance(tir_func, PrimFunc):  # the PrimFunc object itself: its name in the module
            name = next((gv.name_hint for gv, f in self.ir_mod.functions_items() if f is tir_func),
                        (tir_func.attrs or {}).get("global_symbol"))
        else:
            name = next((n for n, f in self.compiled_tir_funcs.items() if f is tir_func), None)
        return name if name in self.compiled_tir_funcs else None

    def _why_missing(self, tir_func: Any) -> str:
        name = tir_func if isinstance(tir_func, str) else getattr(tir_func, "name_hint", None)
        return f" ({name} did not compile: {self._compile_errors[name]})" if name in self._compile_errors else ""

    def call_dps_packed(self, func_name: str, args: Any, out_ty: Any) -> Any:
        """Call the function ``func_name`` in destination-passing style: a Python or compiled
        function of the module of that name is called directly with ``args``; else the global
        function registered under it gets the arguments and the outputs allocated here (filled
        in place, returned as torch tensors)."""
        own = self.pyfuncs.get(func_name) or self.compiled_tir_funcs.get(func_name)
        if own is not None or func_name in self.relax_func_names:
            return getattr(self, func_name)(*args)
        if func_name not in self.extern_funcs:
            func = get_global_func(func_name, allow_missing=True)
            if func is None:
                raise ValueError(f"Function '{func_name}' not found as a global function. "
                                 "Please implement it as a method or register it.")
            self.extern_funcs[func_name] = func
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        outs = self._create_output_tensors(out_ty, args)
        self.extern_funcs[func_name](*self._convert_pytorch_to_tvm(args), *self._convert_pytorch_to_tvm(outs))
        return outs[0] if len(outs) == 1 else outs

    # -- output allocation ----------------------------------------------------------------------
    def _create_output_tensors(self, out_ty: Any, in_args: list | None = None) -> list:
        """Zero-filled outputs (torch tensors when torch is installed) for each type in ``out_ty``."""
        if isinstance(out_ty, TupleStructInfo):
            types = list(out_ty.fields)
        elif isinstance(out_ty, list):
            types = out_ty
        else:
            types = [out_ty]
        outs = []
        for ty in types:
            if isinstance(ty, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in ty):
                shape, dtype = [int(d) for d in ty], "float32"  # a bare shape: float32, as TVM
            elif isinstance(ty, TensorStructInfo) and ty.shape_values is not None:
                shape = self._infer_concrete_shape_from_args(ty.shape_values, in_args)
                dtype = ty.dtype
            else:
                raise TypeError(f"out_ty must be R.Tensor(shape, dtype) with a known shape (or a list of them, "
                                f"or a tuple of ints), got {ty!r}")
            outs.append(_zeros(shape, dtype))
        return outs

    def _infer_concrete_shape_from_args(self, shape: Any, in_args: Any) -> list[int]:
        """``shape`` with each symbolic dimension taken from the same position of the first
        argument that has as many dimensions (as TVM)."""
        concrete: list[int | None] = []
        for dim in shape:
            if isinstance(dim, (int, np.integer)):
                concrete.append(int(dim))
            elif isinstance(dim, IntImm):
                concrete.append(int(dim.value))
            else:
                concrete.append(None)
        if None not in concrete:
            return concrete  # type: ignore[return-value]
        args = in_args if isinstance(in_args, (list, tuple)) else [in_args] if in_args is not None else []
        for arg in args:
            arg_shape = getattr(arg, "shape", None)
            if arg_shape is not None and len(arg_shape) == len(concrete):
                return [int(a) if d is None else d for d, a in zip(concrete, arg_shape)]
        raise ValueError("Cannot infer concrete output shape from symbolic shape and inputs. "
                         "Please provide a concrete `out_ty` (e.g., a tuple/list of ints) "
                         "or ensure input tensors carry shapes that determine output extents.")

    # -- DLPack conversions ---------------------------------------------------------------------
    def _convert_pytorch_to_tvm(self, tensors: Any) -> Any:
        """torch tensors (or lists of them) as minitvm tensors sharing their memory."""
        if isinstance(tensors, (list, tuple)):
            return [self._convert_single_pytorch_to_tvm(t) for t in tensors]
        return self._convert_single_pytorch_to_tvm(tensors)

    def _convert_single_pytorch_to_tvm(self, tensor: Any) -> NDArray:
        if isinstance(tensor, NDArray):
            return tensor
        torch = _torch()
        if torch is not None and isinstance(tensor, torch.Tensor):
            # detach: DLPack refuses tensors that require grad; the view shares the same memory
            return _nd.from_dlpack(tensor.detach())
        if isinstance(tensor, np.ndarray):
            return _nd.from_dlpack(tensor) if tensor.flags.writeable else _nd.array(tensor, self.device)
        try:  # numbers and nested lists: float32, as TVM
            return _nd.array(np.array(tensor, dtype=np.float32), self.device)
        except (TypeError, ValueError) as err:
            raise TypeError(f"Unsupported type for conversion to TVM Tensor: {type(tensor)}") from err

    def _convert_tvm_to_pytorch(self, tvm_tensors: Any) -> Any:
        """minitvm tensors (or lists of them) as torch tensors sharing their memory."""
        if isinstance(tvm_tensors, (list, tuple)):
            return [self._convert_single_tvm_to_pytorch(t) for t in tvm_tensors]
        return self._convert_single_tvm_to_pytorch(tvm_tensors)

    def _convert_single_tvm_to_pytorch(self, tensor: Any) -> Any:
        torch = _torch()
        if torch is None:
            return tensor  # without torch, minitvm tensors are what Python code gets
        if isinstance(tensor, torch.Tensor):
            return tensor
        if isinstance(tensor, NDArray):
            try:
                return torch.from_dlpack(tensor)
            except (BufferError, RuntimeError, TypeError):  # e.g. a read-only array: a copy, as TVM falls back
                return torch.from_numpy(tensor.numpy())
        return torch.tensor(tensor)

    # -- looking around -------------------------------------------------------------------------
    def get_function(self, name: str) -> Any:
        """A compiled function (TIR kernel, registered function, Relax wrapper) by name, else None."""
        if name in self.compiled_tir_funcs:
            return self.compiled_tir_funcs[name]
        if name in self.extern_funcs:
            return self.extern_funcs[name]
        if self.relax_vm is not None and name in self.relax_func_names:
            return getattr(self, name)
        return None

    def list_functions(self) -> dict[str, list[str]]:
        """The module's compiled functions by kind (TVM 0.27's keys)."""
        return {"tirx": list(self.tir_func_names), "relax": list(self.relax_func_names),
                "extern": list(self.extern_funcs)}

    def script(self, **kwargs: Any) -> str:
        """The module as TVMScript; each Python function shows as ``name = R.ExternFunc("name")``,
        as TVM prints it."""
        return self.ir_mod.script(**kwargs)

    def show(self, style: str | None = None, black_format: bool | None = None, **kwargs: Any) -> None:
        """Print :meth:`script` (highlighted in Jupyter)."""
        self.ir_mod.show(style=style, black_format=black_format, **kwargs)

    def __getitem__(self, name: str) -> Any:
        return self.ir_mod[name]

    def __getattr__(self, name: str) -> Any:
        # only reached for names the module itself lacks: the IRModule's (functions_items, ...)
        if name.startswith("__") or "ir_mod" not in self.__dict__:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        try:
            return getattr(self.__dict__["ir_mod"], name)
        except AttributeError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None


def _takes_self(func: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] == "self"


def _bind(func: Callable[..., Any], module: BasePyModule) -> Callable[..., Any]:
    """``func`` as the module calls it: with the module first when its first parameter is ``self``."""
    return functools.partial(func, module) if _takes_self(func) else func


def _zeros(shape: list[int], dtype: str) -> Any:
    torch = _torch()
    if torch is None:
        return _nd.array(np.zeros(shape, dtype=dtype))
    torch_dtype = torch.bool if dtype == "bool" else getattr(torch, str(dtype), None)
    if not isinstance(torch_dtype, torch.dtype):
        raise TypeError(f"out_ty: dtype {dtype!r} has no torch equivalent")
    return torch.zeros(shape, dtype=torch_dtype)


class ModuleFactory:
    """What ``@I.ir_module`` gives for a class deriving from BasePyModule: the parsed IRModule
    (its attributes are the factory's), and ``Factory(device=..., target=...)`` makes a
    :class:`BasePyModule` of it, the class's ``@I.pyfunc`` methods as its Python functions."""

    def __init__(self, module: IRModule, pyfunc_methods: dict[str, Callable[..., Any]], original_class: type):
        self.ir_module = module
        self.pyfunc_methods = list(pyfunc_methods)
        self.original_class = original_class
        self.__name__ = original_class.__name__

    def __call__(self, device: Device | None = None, target: Any = None) -> BasePyModule:
        instance_mod = IRModule(self.ir_module.functions, self.ir_module.attrs, self.ir_module.global_infos)
        instance_mod.pyfuncs.update(self.ir_module.pyfuncs)
        return BasePyModule(instance_mod, device if device is not None else cpu(0), target)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "ir_module" not in self.__dict__:
            raise AttributeError(name)
        try:
            return getattr(self.__dict__["ir_module"], name)
        except AttributeError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __repr__(self) -> str:
        return f"<BasePyModule factory {self.__name__}: {', '.join(self.ir_module.keys())}>"


def make_module_factory(mod: IRModule, pyfuncs: dict[str, Callable[..., Any]], cls: type) -> ModuleFactory:
    """The parsed module of ``cls`` with each Python function an ``R.ExternFunc`` of its name (how
    TVM holds them) and in ``mod.pyfuncs``; the factory that makes BasePyModules of it."""
    functions = dict(mod.functions)
    taken = {gv.name_hint: gv for gv in functions}
    for name in pyfuncs:
        functions[taken.get(name, GlobalVar(name))] = ExternFunc(name)
    module = IRModule(functions, mod.attrs, mod.global_infos)
    module.pyfuncs.update(pyfuncs)
    return ModuleFactory(module, pyfuncs, cls)
