"""VM code generation: lowered Relax functions -> bytecode (:class:`VMFunction`).

Input: a module after the VM lowering passes (``ToNonDataflow``, ``CallTIRRewrite``,
``StaticPlanBlockMemory``, ``VMBuiltinLower``, ``VMShapeLower``), where every call is of
a name (``R.ExternFunc``: VM builtins, registered functions), of a PrimFunc (a kernel of
the library) or of another Relax function.  Each binding becomes at most one instruction:

=============================  ==========================================================
``v = f(a, b)``                ``call f in: a, b dst: %v`` (no destination if ``v`` is unused)
``v = w``                      nothing: ``v`` names the register (or constant) of ``w``
``v = (a, b)``                 ``call vm.builtin.make_tuple``
``v = t[i]``                   ``call vm.builtin.tuple_getitem`` (nothing if ``t`` is a known tuple)
``v = if c: A else: B``        ``if %c`` / the branches / ``goto`` past the false branch;
                               both branches leave their result in one register
``f(@kernel)``                 ``@kernel`` as a value: a ``FuncRef`` constant, the function itself
                               at run time
``return v``                   ``ret %v``
=============================  ==========================================================

Arguments that are constants go into the constant pool (``c[i]``: tensors, shapes,
dtypes, strings) or into the instruction (``i<k>``: integers).  Each parameter's struct
info becomes a :class:`ParamInfo` (shape with symbolic names), which the VM checks when
Python calls the function.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...runtime.vm import ExecBuilder, Executable, Imm, ParamInfo, Reg
from ...runtime.vm.builtins import ShapeTuple
from ...runtime.vm.bytecode import FuncRef
from ...tir.expr import FloatImm, IntImm
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ..expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprVisitor
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from .ops import starts_with_shape_heap

__all__ = ["codegen", "param_info"]


class VMCodegenError(ValueError):
    """The module is not in the form the VM code generator accepts (names what and where)."""


def param_info(sinfo: StructInfo, names: dict | None = None) -> ParamInfo:
    """What the VM checks for a parameter of struct info ``sinfo`` (symbolic dims by name)."""
    names = {} if names is None else names

    def dims(values: tuple) -> tuple:
        out = []
        for d in values:
            if isinstance(d, IntImm):
                out.append(d.value)
            elif isinstance(d, TirVar):
                if d not in names:  # two different variables both called n get n and n_1
                    taken = set(names.values())
                    name, k = d.name, 0
                    while name in taken:
                        k += 1
                        name = f"{d.name}_{k}"
                    names[d] = name
                out.append(names[d])
            else:
                out.append(None)  # an expression: not checked at entry
        return tuple(out)

    if isinstance(sinfo, TensorStructInfo):
        values = sinfo.shape_values
        dtype = "" if sinfo.is_unknown_dtype else sinfo.dtype
        if values is not None:
            return ParamInfo.tensor(dims(values), dtype)
        return ParamInfo.tensor(None, dtype, sinfo.ndim)
    if isinstance(sinfo, ShapeStructInfo):
        return ParamInfo.shape_of(dims(sinfo.values) if sinfo.values is not None else None, sinfo.ndim)
    if isinstance(sinfo, TupleStructInfo):
        return ParamInfo.tuple_of(*(param_info(f, names) for f in sinfo.fields))
    return ParamInfo()  # R.Object, R.Prim, functions: any value


class _UsedVars(ExprVisitor):
    """Every variable read somewhere in a function (a binding whose variable is never read gets no register)."""

    def __init__(self) -> None:
        self.used: set[Var] = set()

    def visit_var_(self, op: Var) -> None:
        self.used.add(op)

    visit_dataflow_var_ = visit_var_


def _used_vars(func: Function) -> set[Var]:
    v = _UsedVars()
    v.visit_expr(func)
    return v.used


def _killed_vars(func: Function) -> set[Var]:
    """The variables ``R.vm.kill_object`` releases somewhere in ``func``."""
    found: set[Var] = set()

    def visit(e: Any) -> None:
        if isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    visit(b.value)
            visit(e.body)
        elif isinstance(e, If):
            visit(e.true_branch)
            visit(e.false_branch)
        elif isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "relax.vm.kill_object" \
                and isinstance(e.args[0], Var):
            found.add(e.args[0])

    visit(func.body)
    return found


# R.vm's allocations as the VM builtins' arguments: a storage's size is in bytes whatever its
# dtype says (a hint, as in TVM); a tensor is (storage, offset, shape, dtype)
_VM_ALLOCS = {
    "relax.vm.alloc_storage": lambda args: ("vm.builtin.alloc_storage", [args[0], DataTypeImm("uint8")]),
    "relax.vm.alloc_tensor": lambda args: ("vm.builtin.alloc_tensor", list(args[:4])),
}


class _FunctionCodegen:
    def __init__(self, eb: ExecBuilder, mod: IRModule, name: str, func: Function):
        self.eb = eb
        self.mod = mod
        self.name = name
        self.func = func
        self.values: dict[Var, Any] = {}   # var -> Reg / Const / Imm holding its value
        self.tuples: dict[Var, list] = {}  # var bound to a tuple built here -> its fields' operands
        self.used = _used_vars(func)
        self.const_values: dict[int, Any] = {}
        self.killed: set[Var] = set()  # variables R.vm.kill_object has released
        self.kill_targets = _killed_vars(func)  # ... and those it will release
        self.shape_lowered = starts_with_shape_heap(func)

    def where(self, what: str) -> str:
        return f"VM codegen of {self.name!r}: {what}"

    def const(self, value: Any) -> Any:
        """``value`` in the constant pool (remembered, to load it into a register later)."""
        c = self.eb.c(value)
        self.const_values[c.index] = value
        return c

    # -- operands ----------------------------------------------------------------------------------
    def operand(self, e: Any) -> Any:
        """A Reg, Const or Imm for a leaf expression."""
        if isinstance(e, Var):
            if e not in self.values:
                raise VMCodegenError(self.where(f"variable {e.name} is used before it is defined"))
            return self.values[e]
        if isinstance(e, Constant):
            return self.const(e.data.numpy())
        if isinstance(e, PrimValue):
            v = e.value
            if isinstance(v, IntImm):
                return Imm(v.value) if v.dtype != "bool" else self.const(bool(v.value))
            if isinstance(v, FloatImm):
                return self.const(float(v.value))
            raise VMCodegenError(self.where(f"the symbolic value R.prim_value({v!r}) is not lowered; "
                                            "run VMShapeLower first"))
        if isinstance(e, ShapeExpr):
            if not all(isinstance(v, IntImm) for v in e.values):
                raise VMCodegenError(self.where("a symbolic shape is not lowered; run VMShapeLower first"))
            return self.const(ShapeTuple(v.value for v in e.values))
        if isinstance(e, (StringImm, DataTypeImm)):
            return self.const(e.value)
        if isinstance(e, Tuple):
            return self.emit_tuple(e, True)
        if isinstance(e, GlobalVar):
            if e.name_hint not in self.mod:
                raise VMCodegenError(self.where(f"@{e.name_hint} is used as a value but is not in the module"))
            # a function of the module as a value (kernels handed to a builtin, as TVM's
            # paged KV cache gets its attention kernels): a FuncRef constant the VM resolves
            name = self.symbol_of(e)
            c = self.eb.func_ref(name)
            self.const_values[c.index] = FuncRef(name)
            return c
        if isinstance(e, ExternFunc):  # a registered function as a value (a callback)
            c = self.eb.func_ref(e.global_symbol)
            self.const_values[c.index] = FuncRef(e.global_symbol)
            return c
        raise VMCodegenError(self.where(f"cannot use {type(e).__name__} {e!r} as an argument"))

    def assign(self, operand: Any, dst: Reg) -> None:
        """``%dst = operand``: the bytecode has no move, so a register goes through a one-field
        tuple and a constant is item 0 of a one-field constant tuple."""
        if isinstance(operand, Reg):
            operand = self.eb.emit_call("vm.builtin.make_tuple", [operand])
        else:
            operand = self.const((self.const_values[operand.index] if not isinstance(operand, Imm) else operand.value,))
        self.eb.emit_call("vm.builtin.tuple_getitem", [operand, Imm(0)], dst=dst)

    def emit_tuple(self, e: Tuple, dst: Any) -> Any:
        return self.eb.emit_call("vm.builtin.make_tuple", [self.operand(f) for f in e.fields], dst=dst)

    # -- bindings ----------------------------------------------------------------------------------
    def callee_name(self, call: Call) -> str:
        op = call.op
        if isinstance(op, ExternFunc):
            return op.global_symbol
        if isinstance(op, GlobalVar):
            if op not in self.mod.functions and op.name_hint not in self.mod:
                raise VMCodegenError(self.where(f"calls @{op.name_hint}, which is not in the module"))
            return self.symbol_of(op)
        if isinstance(op, Op):
            packed = op.get_attr("FCallPacked")
            if packed:  # an op computed whole by a packed function (relax.unique: relax.run.unique)
                return str(packed)
            raise VMCodegenError(self.where(f"operator {op.name} is not lowered; relax.build runs the VM "
                                            "lowering passes (high-level ops also need LegalizeOps)"))
        raise VMCodegenError(self.where(f"calling {op!r} (a closure) is not supported"))

    def symbol_of(self, gv: GlobalVar) -> str:
        """The name a function of the module is reached by: a PrimFunc's ``global_symbol`` when it
        has one (the kernel library exports it so: ``tir_build.export_name``), else its name."""
        func = self.mod[gv.name_hint]
        symbol = func.attrs.get("global_symbol") if isinstance(func, PrimFunc) and func.attrs else None
        return str(symbol) if symbol else gv.name_hint

    def emit_value(self, var: Var | None, value: Any) -> Any:
        """Code for ``var = value``; returns the operand holding the value."""
        dst: Any = True if var is None or var in self.used else None
        if isinstance(value, Call):
            if isinstance(value.op, Op) and value.op.name == "relax.vm.kill_object":
                return self.emit_kill(value)
            if isinstance(value.op, Op) and value.op.name in _VM_ALLOCS:  # R.vm.alloc_storage/_tensor
                name, args = _VM_ALLOCS[value.op.name](value.args)
                return self.eb.emit_call(name, [self.operand(a) for a in args], dst=dst)
            if isinstance(value.op, Op) and value.op.name == "relax.call_builtin_with_ctx":
                # TVM's VM passes itself first; minitvm's builtins take no such context
                return self.eb.emit_call(value.args[0].global_symbol,
                                         [self.operand(a) for a in value.args[1].fields], dst=dst)
            if isinstance(value.op, Op) and value.op.name == "relax.null_value":
                return self.eb.emit_call("vm.builtin.null_value", [], dst=dst)
            if isinstance(value.op, Var):  # a function value (closure, callback): invoked by the VM
                return self.eb.emit_call("vm.builtin.invoke_closure",
                                         [self.operand(value.op), *(self.operand(a) for a in value.args)], dst=dst)
            name = self.callee_name(value)
            return self.eb.emit_call(name, [self.operand(a) for a in value.args], dst=dst)
        if isinstance(value, Tuple):
            fields = [self.operand(f) for f in value.fields]
            if var is not None:
                self.tuples[var] = fields
            return self.eb.emit_call("vm.builtin.make_tuple", fields, dst=dst)
        if isinstance(value, TupleGetItem):
            known = self.tuples.get(value.tuple_value) if isinstance(value.tuple_value, Var) else None
            if known is not None:
                return known[value.index]
            return self.eb.emit_call("vm.builtin.tuple_getitem", [self.operand(value.tuple_value),
                                                                  Imm(value.index)], dst=dst)
        if isinstance(value, If):
            return self.emit_if(value)
        if isinstance(value, SeqExpr):
            return self.emit_seq(value)
        if isinstance(value, Function):
            raise VMCodegenError(self.where("local functions (closures) are not supported"))
        operand = self.operand(value)  # an alias or a constant: no instruction
        if isinstance(value, Var) and value in self.kill_targets and isinstance(operand, Reg) and dst:
            # an alias of a variable that is killed later keeps the value (TVM's copy of a
            # trivial binding): a register of its own
            copy = self.eb.new_register()
            self.assign(operand, copy)
            return copy
        if isinstance(value, Var) and value in self.tuples and var is not None:
            self.tuples[var] = self.tuples[value]
        return operand

    def emit_kill(self, call: Call) -> Any:
        """``R.vm.kill_object(x)``: x's register is emptied (``vm.builtin.null_value``), as TVM's
        code generator does, so what it held can be freed.  This code generator gives an alias
        ``y = x`` and ``t[i]`` of a known tuple ``t`` the register of x (TVM's copies), so the
        register is emptied only once every variable and live tuple holding it is killed too;
        a constant has no register to empty."""
        target = call.args[0]
        reg = self.values.get(target) if isinstance(target, Var) else None
        if not isinstance(reg, Reg):
            return Imm(0)
        self.killed.add(target)
        shared = any(r == reg for v, r in self.values.items() if v not in self.killed) or \
            any(f == reg for t, fields in self.tuples.items() if t not in self.killed for f in fields)
        if not shared:
            self.eb.emit_call("vm.builtin.null_value", [], dst=reg)
        return Imm(0)  # the kill's own result (an empty tuple) is never read

    def emit_seq(self, seq: SeqExpr) -> Any:
        for block in seq.blocks:
            for b in block.bindings:
                # VMShapeLower keeps a match_cast as TVM does (it names the symbolic variables
                # its checks matched) after emitting the checks, which start with the shape heap
                if isinstance(b, MatchCast) and not self.shape_lowered:
                    raise VMCodegenError(self.where(f"R.match_cast of {b.var.name} is not lowered; "
                                                    "run VMShapeLower first"))
                self.values[b.var] = self.emit_value(b.var, b.value)
        return self.emit_value(None, seq.body) if not isinstance(seq.body, Var) else self.operand(seq.body)

    def emit_if(self, node: If) -> Reg:
        cond = self.register_of(self.operand(node.cond))
        result = self.eb.new_register()
        else_label, end_label = self.eb.label("else"), self.eb.label("end")
        self.eb.emit_if(cond, else_label)
        self.assign(self.emit_seq(node.true_branch), result)
        self.eb.emit_goto(end_label)
        self.eb.place(else_label)
        self.assign(self.emit_seq(node.false_branch), result)
        self.eb.place(end_label)
        return result

    def register_of(self, operand: Any) -> Reg:
        """``operand`` in a register: a constant is loaded as item 0 of a one-field constant tuple."""
        if isinstance(operand, Reg):
            return operand
        if isinstance(operand, Imm):
            operand = self.const(operand.value)
        holder = self.const((self.const_values[operand.index],))
        return self.eb.emit_call("vm.builtin.tuple_getitem", [holder, Imm(0)])

    # -- the function ------------------------------------------------------------------------------
    def run(self) -> None:
        params = list(self.func.params)
        names: dict = {}
        infos = [param_info(p.struct_info, names) for p in params]
        with self.eb.function(self.name, [p.name for p in params], infos):
            for i, p in enumerate(params):
                self.values[p] = self.eb.r(i)
            body = self.func.body
            result = self.emit_seq(body) if isinstance(body, SeqExpr) else self.emit_value(None, body)
            self.eb.emit_ret(self.register_of(result))


def codegen(mod: IRModule, lib: Any = None) -> Executable:
    """Every Relax function of ``mod`` (already lowered) as bytecode, with kernel library ``lib``."""
    eb = ExecBuilder(lib=lib)
    codegen_into(eb, mod)
    return eb.get()


def codegen_into(eb: ExecBuilder, mod: IRModule) -> None:
    """The bytecode of every Relax function of ``mod`` (already lowered), added to ``eb``."""
    for gv, func in mod.items():
        if isinstance(func, Function):
            _FunctionCodegen(eb, mod, gv.name_hint, func).run()
        elif not isinstance(func, PrimFunc):
            raise VMCodegenError(f"VM codegen: @{gv.name_hint} is a {type(func).__name__}, "
                                 "neither a Relax function nor a PrimFunc")

