"""FuseOps: group the bindings of each dataflow block into fused ``Primitive`` functions.

After ``LegalizeOps`` and ``AnnotateTIROpPattern`` every kernel call is
``R.call_tir(cls.f, args, out_sinfo)`` and ``f`` carries an ``op_pattern``.  FuseOps decides
groups as TVM's FuseOps does, on a dataflow graph of the whole module:

* **The graph.**  One node per function parameter, binding variable and constant (in
  definition order).  A ``call_tir`` / ``call_tir_inplace`` node has its PrimFunc's pattern;
  a ``TupleGetItem`` is injective; any other binding (an operator call, a tuple, a call of a
  Relax function) is opaque.  Edges run from each argument to its user, carrying the user's
  pattern.  Parameters, and variables that leave their dataflow block (non-dataflow
  variables), are *external*: nothing may fuse through them.
* **Post-dominators.**  Each node's immediate post-dominator is the closest node every path
  from it reaches (the least common ancestor of its users'); the pattern on the way is the
  largest met.
* **Fusion**, three sweeps over the nodes in order, each node trying to join the group of its
  post-dominator when every node on every path in between allows it:

  ======================  ==========  ===================================================
  node                    sweep       paths and post-dominator
  ======================  ==========  ===================================================
  out_ewise_fusable       first       an elementwise relation; broadcast on the way
  (``matmul``, ``conv``)
  elementwise, broadcast  first, 2nd  injective on the way; the post-dominator (reached
                                      through injective or reduce) elementwise, broadcast,
                                      injective, reduce or out_ewise_fusable
  injective               second      injective all the way
  injective or less       third       into a group rooted at injective through a tuple
  comm_reduce, opaque     never       (a reduction can only be the end of a group)
  ======================  ==========  ===================================================

  A group holds at most 256 nodes (``PassContext(config={"relax.FuseOps.max_depth": n})``),
  and ``FuseOps(fuse_opt_level=0)`` (or a ``PassContext`` at opt_level 0 with the default
  ``-1``) fuses nothing.

Every group of two or more bindings becomes a private function with
``attrs {"Primitive": True}``, named ``fused_`` + the called PrimFuncs' names
(``fused_matmul_add_relu``).  Its parameters are what the group reads from outside, in order
of first use, named after the variables (a constant argument becomes ``param_0`` ...; a tuple
of which the group only takes some fields becomes one parameter per field, ``lv_0``,
``lv_2``), plus ``tir_vars`` (an ``R.shape``) when a symbolic variable is not known from the
parameters' shapes; a variable the caller bound to a static shape or value is read as that
value instead.  It returns the group's values used outside it: one value, or a tuple (then
read back with ``TupleGetItem``, one field per output, in binding order).  The call takes the
place of the group's last binding: ``lv = cls.fused_matmul_add_relu(x, w, b)`` -- bound as its
one output was (``gv`` when that leaves the block); a group whose value nothing uses is
dropped.  Identical fused functions are added once.  The same machinery
(:func:`make_grouped_functions`) makes ``FuseOpsByPattern``'s and
``MergeCompositeFunctions``' functions from their own groups.
``FuseTIR`` then merges each fused function's PrimFuncs into one.

    mod = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(mod))
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit as tir_post_order_visit
from ...transform import PassContext, module_pass, register_pass_config
from ..analysis.struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info
from ..analysis.var2val import get_var2val
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Function,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    _set_struct_info,
)
from ..expr_functor import ExprMutator
from ..op.registry import OpPattern
from ..struct_info import ShapeStructInfo, TupleStructInfo

__all__ = ["FuseOps"]

MAX_FUSED_OPS = 256
register_pass_config("relax.FuseOps.max_depth", int)

_LEAVES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm)
ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.TUPLE,
                                         OpPattern.OPAQUE)


def _is_call_tir(call: Any) -> bool:
    return isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in ("relax.call_tir",
                                                                                   "relax.call_tir_inplace")


def _combine(a: OpPattern, b: OpPattern) -> OpPattern:
    if a > BROADCAST and b > BROADCAST:
        raise ValueError("FuseOps: cannot merge two complex groups together")
    return max(a, b)


# -- the dataflow graph ------------------------------------------------------------------------

class _Node:
    __slots__ = ("ref", "index", "pattern", "extern_ref", "outputs")

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.index = -1
        self.pattern = OPAQUE
        self.extern_ref = False
        self.outputs: list[tuple[_Node, OpPattern]] = []


class _Graph:
    """TVM's IndexedForwardGraph of the module's (non-Primitive) Relax functions."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.node_of: dict[int, _Node] = {}  # id(var / constant) -> node
        self.order: list[_Node] = []  # post-DFS order: a node after every node it reads
        self.num_input_params: set[int] = set()

    def _new(self, ref: Any, pattern: OpPattern, extern: bool = False) -> _Node:
        node = _Node(ref)
        node.pattern, node.extern_ref = pattern, extern
        self.node_of[id(ref)] = node
        return node

    def _add(self, node: _Node) -> None:
        node.index = len(self.order)
        self.order.append(node)

    def add_function(self, func: Function) -> None:
        for p in func.params:
            self._add(self._new(p, OPAQUE, extern=True))
        num_input = func.attrs.get("num_input") if func.attrs else None
        if num_input is not None:
            self.num_input_params = {id(p) for p in func.params[int(num_input):]}
        self._visit(func.body)

    def _visit(self, expr: Any) -> None:
        """Bindings anywhere below ``expr`` (nested sequences, branches, closures)."""
        if isinstance(expr, SeqExpr):
            for block in expr.blocks:
                for b in block.bindings:
                    self._visit(b.value)
                    self._binding(b)
            self._visit(expr.body)
        elif isinstance(expr, Function):
            self.add_function(expr)
        elif hasattr(expr, "true_branch"):
            self._visit(expr.true_branch)
            self._visit(expr.false_branch)

    def _binding(self, b: Any) -> None:
        if isinstance(b, MatchCast):
            self._add(self._new(b.var, OPAQUE))
            return
        node = self._new(b.var, OPAQUE, extern=not isinstance(b.var, DataflowVar))
        value = b.value
        if isinstance(value, Call):
            pattern, args = OPAQUE, list(value.args)
            if _is_call_tir(value):
                func = self.mod[value.args[0]] if value.args[0] in self.mod else None
                args = list(value.args[1].fields) if isinstance(value.args[1], Tuple) else [value.args[1]]
                if isinstance(func, PrimFunc) and "op_pattern" in func.attrs:
                    pattern = OpPattern(int(func.attrs["op_pattern"]))
            node.pattern = pattern
            for a in args:
                self._leaf(a, node, pattern)
        elif isinstance(value, TupleGetItem):
            pattern = OPAQUE if id(value.tuple_value) in self.num_input_params else INJECTIVE
            node.pattern = pattern
            self._leaf(value.tuple_value, node, pattern)
        else:
            node.pattern = OPAQUE
            for leaf in _leaves_below(value):
                self._leaf(leaf, node, OPAQUE)
        self._add(node)

    def _leaf(self, expr: Any, user: _Node, pattern: OpPattern) -> None:
        if isinstance(expr, Tuple):
            for f in expr.fields:
                self._leaf(f, user, pattern)
            return
        if not isinstance(expr, _LEAVES):
            return  # a GlobalVar, an ExternFunc, an Op
        node = self.node_of.get(id(expr))
        if node is None:
            node = self._new(expr, OPAQUE)
            self._add(node)
        node.outputs.append((user, pattern))


def _leaves_below(expr: Any) -> list[Any]:
    """The variables and constants an expression reads (post order, as TVM visits them)."""
    found: list[Any] = []

    def visit(e: Any) -> None:
        if isinstance(e, (Var, Constant)):
            found.append(e)
        elif isinstance(e, Tuple):
            for f in e.fields:
                visit(f)
        elif isinstance(e, TupleGetItem):
            visit(e.tuple_value)
        elif isinstance(e, Call):
            visit(e.op)
            for a in e.args:
                visit(a)

    visit(expr)
    return found


# -- post-dominator tree --------------------------------------------------------------------

class _DomNode:
    __slots__ = ("gnode", "parent", "depth", "pattern")

    def __init__(self, gnode: _Node) -> None:
        self.gnode = gnode
        self.parent: _DomNode | None = None
        self.depth = 1
        self.pattern = OPAQUE


def _post_dominators(graph: _Graph) -> list[_DomNode]:
    nodes: list[_DomNode | None] = [None] * len(graph.order)
    for index in range(len(graph.order) - 1, -1, -1):
        gnode = graph.order[index]
        t = _DomNode(gnode)
        if not gnode.extern_ref:
            pattern = ELEMWISE
            parent = None
            for k, (user, edge_pattern) in enumerate(gnode.outputs):
                other = nodes[user.index]
                if k == 0:
                    parent = other
                else:
                    parent, pattern = _lca(parent, other, pattern)
                pattern = max(pattern, edge_pattern)
            t.parent = parent
            t.depth = parent.depth + 1 if parent else 1
            t.pattern = pattern
        nodes[index] = t
    return nodes  # type: ignore[return-value]


def _lca(lhs: _DomNode | None, rhs: _DomNode | None, pattern: OpPattern) -> tuple[_DomNode | None, OpPattern]:
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern = max(pattern, rhs.pattern)
            rhs = rhs.parent
        elif rhs.depth < lhs.depth:
            pattern = max(pattern, lhs.pattern)
            lhs = lhs.parent
        else:
            pattern = max(max(pattern, lhs.pattern), rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


# -- partitioning ------------------------------------------------------------------------------

class _Group:
    __slots__ = ("parent", "pattern", "anchor", "num_nodes")

    def __init__(self, node: _Node) -> None:
        self.parent: _Group | None = None
        self.pattern = node.pattern
        self.anchor = node.ref if node.pattern == OUT_EWISE else None
        self.num_nodes = 1

    def root(self) -> "_Group":
        g = self
        while g.parent is not None:
            g = g.parent
        p = self
        while p is not g:  # path compression
            p.parent, p = g, p.parent
        return g


class _Partitioner:
    def __init__(self, graph: _Graph, max_depth: int) -> None:
        self.graph = graph
        self.max_depth = max_depth
        self.groups = [_Group(n) for n in graph.order]
        self.visited: set[int] = set()

    def partition(self, opt_level: int) -> list[_Group]:
        if opt_level == 0:
            return self.groups
        dom = _post_dominators(self.graph)
        for phase in range(3):
            self._run(dom, phase)
        return self.groups

    def _check_path(self, src: _Node, sink: _Node, cond: Any) -> bool:
        self.visited = set()
        return all(self._check(user, sink, cond) for user, _ in src.outputs)

    def _check(self, src: _Node, sink: _Node, cond: Any) -> bool:
        if src.index in self.visited:
            return True
        self.visited.add(src.index)
        if not cond(self.groups[src.index].root().pattern, src is sink):
            return False
        if src is sink:
            return True
        return all(self._check(user, sink, cond) for user, _ in src.outputs)

    def _merge(self, child: _Group, parent: _Group) -> None:
        child, parent = child.root(), parent.root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor is not None:
            parent.anchor = child.anchor
            parent.pattern = _combine(child.pattern, parent.pattern)

    def _commit(self, src: _Node, sink: _Node) -> None:
        target = self.groups[sink.index]
        self.visited = set()
        self._commit_from(src, sink, target)

    def _commit_from(self, src: _Node, sink: _Node, target: _Group) -> None:
        if src is sink or src.index in self.visited:
            return
        self.visited.add(src.index)
        self._merge(self.groups[src.index], target)
        for user, _ in src.outputs:
            self._commit_from(user, sink, target)

    def _count_upto(self, src: _Node, sink: _Node) -> int:
        if src is sink or src.index in self.visited:
            return 0
        self.visited.add(src.index)
        return self.groups[src.index].num_nodes + sum(self._count_upto(u, sink) for u, _ in src.outputs)

    def _run(self, dom: list[_DomNode], phase: int) -> None:
        for nid, gnode in enumerate(self.graph.order):
            dnode, group = dom[nid], self.groups[nid]
            if group.pattern == OPAQUE or dnode.parent is None:
                continue
            sink = dnode.parent.gnode
            self.visited = set()
            if self.groups[sink.index].root().num_nodes + self._count_upto(gnode, sink) > self.max_depth:
                continue
            sink_group = self.groups[sink.index]
            if phase == 2:
                if group.pattern > INJECTIVE:
                    continue
                root = sink_group.root()
                if root.pattern == TUPLE:
                    continue
                if sink_group.pattern == TUPLE and root.pattern <= INJECTIVE:
                    if self._check_path(gnode, sink, lambda k, is_sink: k <= INJECTIVE):
                        self._commit(gnode, sink)
                continue
            if group.root() is sink_group.root():
                continue
            if sink_group.pattern == TUPLE:
                continue
            if group.pattern == OUT_EWISE:
                if phase != 0:
                    continue
                if dnode.pattern == ELEMWISE and self._check_path(gnode, sink, lambda k, is_sink: k <= BROADCAST):
                    self._commit(gnode, sink)
            elif group.pattern <= BROADCAST:
                if dnode.pattern <= INJECTIVE or dnode.pattern == COMM_REDUCE:
                    def cond(k: OpPattern, is_sink: bool) -> bool:
                        if not is_sink:
                            return k <= INJECTIVE
                        return k <= BROADCAST or k in (COMM_REDUCE, INJECTIVE, OUT_EWISE)
                    if self._check_path(gnode, sink, cond):
                        self._commit(gnode, sink)
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase != 1:
                    continue
                if self._check_path(gnode, sink, lambda k, is_sink: k <= INJECTIVE):
                    self._commit(gnode, sink)


# -- building the fused functions -------------------------------------------------------------

def _inlinable(expr: Any) -> bool:
    """A PrimValue / ShapeExpr (or tuple of them) with no symbolic variable: kept in the body."""
    if isinstance(expr, Tuple):
        return all(_inlinable(f) for f in expr.fields)
    if isinstance(expr, PrimValue):
        return not _tir_vars_in(expr.value)
    if isinstance(expr, ShapeExpr):
        return not any(_tir_vars_in(v) for v in expr.values)
    return False


def _tir_vars_in(expr: Any) -> list:
    found: list = []
    tir_post_order_visit(expr, lambda n: found.append(n) if isinstance(n, TirVar) else None)
    return found


class _FunctionCreator:
    """Collects one group's bindings, parameters and outputs (TVM's FunctionCreator)."""

    def __init__(self, lift_constants: bool = True, outer_bindings: dict | None = None) -> None:
        self.lift_constants = lift_constants  # False: bound constants stay in the body
        self.outer_bindings = outer_bindings or {}  # the caller's variable -> value
        self.inlined: dict[Var, Any] = {}  # a caller's variable bound to a static shape / value
        self.bindings: list[Any] = []
        self.params: list[Var] = []
        self.arguments: list[Any] = []
        self.name = "fused"
        self.defined: set[int] = set()
        self.outputs: list[Var] = []
        self.n_const_params = 0
        self.tuple_param_index: dict[int, int] = {}
        self.partial_tuples: dict[int, list[int]] = {}  # id(tuple arg) -> the fields the group takes
        self.function: Function | None = None

    def append_binding(self, b: Any) -> None:
        if isinstance(b, VarBinding):
            value = b.value
            if isinstance(value, Call) and _is_call_tir(value):
                self.name += "_" + value.args[0].name_hint
                for a in value.args[1].fields:
                    self._param(a)
            elif isinstance(value, Call):
                if isinstance(value.op, Op):
                    self.name += "_" + value.op.name.replace(".", "_")
                elif isinstance(value.op, GlobalVar):
                    self.name += "_" + value.op.name_hint.removeprefix("fused_")
                for a in value.args:
                    for f in (a.fields if isinstance(a, Tuple) else [a]):
                        self._param(f)
                    if isinstance(a.struct_info, TupleStructInfo):
                        self.partial_tuples.pop(id(a), None)  # used whole
            elif isinstance(value, TupleGetItem):
                self._param(value.tuple_value)
                if id(value.tuple_value) in self.partial_tuples:
                    self.partial_tuples[id(value.tuple_value)].append(value.index)
            self.defined.add(id(b.var))
            if not isinstance(b.var, DataflowVar):
                self.append_output(b.var)
        self.bindings.append(b)

    def append_output(self, var: Var) -> int:
        for k, v in enumerate(self.outputs):
            if v is var:
                return k
        self.outputs.append(var)
        return len(self.outputs) - 1

    def _param(self, expr: Any) -> None:
        if any(expr is a for a in self.arguments):
            return
        if isinstance(expr, Var) and id(expr) in self.defined:
            return
        if isinstance(expr, Constant) and not self.lift_constants:
            return
        if isinstance(expr, Var) and self._inline_static(expr):
            return
        if isinstance(expr, Var):
            name = expr.name_hint
        else:
            name = f"param_{self.n_const_params}"
            self.n_const_params += 1
        if not _inlinable(expr):
            self.arguments.append(expr)
            self.params.append(Var(name, expr.struct_info))
        if isinstance(expr.struct_info, TupleStructInfo):
            self.partial_tuples[id(expr)] = []
            self.tuple_param_index[id(expr)] = len(self.arguments) - 1

    def _inline_static(self, var: Var) -> bool:
        """A variable the caller bound to a static shape or value (through aliases) is read as
        that value in the body: a parameter would hide what the backend must know."""
        value, seen = var, set()
        while isinstance(value, Var) and value in self.outer_bindings and id(value) not in seen:
            seen.add(id(value))
            value = self.outer_bindings[value]
        if value is var or not _inlinable(value):
            return False
        self.inlined[var] = value
        return True

    def create(self, mod: IRModule, group_attrs: dict | None = None) -> None:
        # a tuple parameter of which only some fields are read: one parameter per field read
        item_remap: dict[int, dict[int, Var]] = {}
        for tuple_id, indices in self.partial_tuples.items():
            k = self.tuple_param_index[tuple_id]
            tuple_arg, param = self.arguments[k], self.params[k]
            fields = param.struct_info.fields
            new_args = [TupleGetItem(tuple_arg, i) for i in indices]
            new_params = [Var(f"{param.name_hint}_{i}", fields[i]) for i in indices]
            item_remap[tuple_id] = dict(zip(indices, new_params))
            self.arguments[k:k + 1] = new_args
            self.params[k:k + 1] = new_params
        if not self.outputs:
            self.function = None  # nothing outside reads the group: dead code
            return
        mutator = _ParamSubstituter(mod, self.arguments, self.params, self.inlined)
        bb = mutator.builder_
        bb.begin_dataflow_block()
        outputs: list[Any] = [None] * len(self.outputs)
        for b in self.bindings:
            value = b.value
            if isinstance(b, VarBinding) and isinstance(value, TupleGetItem) and id(value.tuple_value) in item_remap:
                replacement = item_remap[id(value.tuple_value)][value.index]
                mutator.set_var_remap(b.var, replacement)
                k = self._output_index(b.var)
                if k is not None:
                    outputs[k] = replacement
                continue
            k = self._output_index(b.var)
            if k is not None:
                out = bb.emit_output(mutator.visit_expr(value))
                mutator.set_var_remap(b.var, out)
                outputs[k] = out
            else:
                mutator.visit_binding(b)
        block = bb.end_block()
        body = outputs[0] if len(outputs) == 1 else bb.normalize(Tuple(outputs))
        attrs = {**(group_attrs or {}), "Primitive": True}
        func = bb.normalize(Function(self.params, SeqExpr((block,), body), None, True, attrs))
        free = _free_symbolic_vars(func)
        if free:
            self.params.append(Var("tir_vars", ShapeStructInfo(free)))
            self.arguments.append(ShapeExpr(free))
            func = bb.normalize(Function(self.params, SeqExpr((block,), body), None, True, attrs))
        self.function = func

    def _output_index(self, var: Var) -> int | None:
        for k, v in enumerate(self.outputs):
            if v is var:
                return k
        return None


def _free_symbolic_vars(func: Function) -> list:
    """Symbolic variables the function uses that its parameters' shapes do not define."""
    definable: set[int] = set()
    for p in func.params:
        definable |= {id(v) for v in definable_tir_vars_in_struct_info(p.struct_info)}
    used: dict[int, Any] = {}

    def visit(expr: Any) -> None:
        sinfo = getattr(expr, "struct_info", None)
        if sinfo is not None:
            for v in tir_vars_in_struct_info(sinfo):
                used.setdefault(id(v), v)

    _visit_exprs(func.body, visit)
    return [v for k, v in used.items() if k not in definable]


def _visit_exprs(expr: Any, fn: Any) -> None:
    if isinstance(expr, SeqExpr):
        for block in expr.blocks:
            for b in block.bindings:
                fn(b.var)
                _visit_exprs(b.value, fn)
        _visit_exprs(expr.body, fn)
        return
    fn(expr)
    if isinstance(expr, Call):
        for a in expr.args:
            _visit_exprs(a, fn)
    elif isinstance(expr, Tuple):
        for f in expr.fields:
            _visit_exprs(f, fn)
    elif isinstance(expr, ShapeExpr):
        for v in expr.values:
            for tv in _tir_vars_in(v):
                fn(_ShapeVarHolder(tv))


class _ShapeVarHolder:
    """Lets a symbolic variable met inside an ``R.shape`` count as used."""

    def __init__(self, var: Any) -> None:
        self.struct_info = ShapeStructInfo([var])


class _ParamSubstituter(ExprMutator):
    """Reads of the group's arguments become reads of its parameters."""

    def __init__(self, mod: IRModule, arguments: list, params: list, inlined: dict | None = None) -> None:
        super().__init__(mod)
        self.arguments = arguments
        self.params = params
        self.inlined = inlined or {}

    def visit_expr(self, expr: Any) -> Any:
        for a, p in zip(self.arguments, self.params):
            if a is expr:
                return p
        if isinstance(expr, Var) and expr in self.inlined:
            return self.inlined[expr]
        return super().visit_expr(expr)


class _Fusor(ExprMutator):
    """Replaces each group of a dataflow block by a call of its fused function."""

    def __init__(self, mod: IRModule, group_of: dict[int, Any], lift_constants: bool = True,
                 pass_name: str = "FuseOps") -> None:
        super().__init__(mod)
        self.group_of = group_of  # id(variable) -> its group (a root); a group may carry ``attrs``
        self.lift_constants = lift_constants
        self.pass_name = pass_name
        self.outer_bindings: dict = {}  # the bindings of the function being rewritten
        self.group_deps: dict[int, list[_Group]] = {}

    def _group(self, var: Any) -> _Group | None:
        return self.group_of.get(id(var))

    def _fused(self, g: Any) -> bool:
        """A group becomes a function when it holds two bindings or more, or carries attributes
        (a pattern's ``Composite`` name: one matched binding is a function too)."""
        return g is not None and (g.num_nodes > 1 or bool(getattr(g, "attrs", None)))

    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        creators: dict[int, _FunctionCreator] = {}
        order: list[_Group] = []
        for b in block.bindings:  # the bindings of each group
            g = self._group(b.var)
            if not self._fused(g):
                continue
            if id(g) not in creators:
                creators[id(g)] = _FunctionCreator(self.lift_constants, self.outer_bindings)
                order.append(g)
            creators[id(g)].append_binding(b)
        for b in block.bindings:  # what each group must return
            cur = self._group(b.var)
            for used in _vars_read(b.value):
                producer = self._group(used)
                if producer is None or producer is cur:
                    continue
                for dep in self.group_deps.get(id(producer), []):
                    if dep is cur:
                        raise RuntimeError(f"{self.pass_name}: A cyclic dependency detected between the groups "
                                           f"of {b.var.name_hint} and {used.name_hint}")
                self.group_deps.setdefault(id(cur), []).append(producer)
                if id(producer) in creators:
                    creators[id(producer)].append_output(used)
        for g in order:
            creators[id(g)].create(self.builder_.get(), getattr(g, "attrs", None))

        self.builder_.begin_dataflow_block()
        pending: dict[int, list[Var]] = {}
        try:
            for b in self._topo_sort(block.bindings):
                g = self._group(b.var)
                if not self._fused(g):
                    self.visit_binding(b)
                    continue
                creator = creators[id(g)]
                func = creator.function
                if func is None:
                    continue
                outputs = creator.outputs
                if len(outputs) > 1 and creator._output_index(b.var) is not None:
                    pending.setdefault(id(g), []).append(b.var)  # its field is read back in binding order
                if creator.bindings[-1] is b:
                    self._emit_call(creator, func, pending.get(id(g), []))
        finally:
            new = self.builder_.end_block()
        return new

    def _emit_call(self, creator: _FunctionCreator, func: Function, pending: list[Var]) -> None:
        """The call of a group's function, in place of its last binding, and its outputs read back.

        One output: the call is bound as that output was (a dataflow variable or not) -- the last
        binding is only where the call goes and may be one nothing reads.  Several: the call is a
        dataflow variable and each output its field, in binding order."""
        gv = self.builder_.add_func(func, creator.name)
        args = [self.visit_expr(a) for a in creator.arguments]
        # a field of a tuple is bound first (call arguments are leaves), as normalizing would
        args = [self.builder_.emit(a) if isinstance(a, TupleGetItem) else a for a in args]
        call = Call(gv, args)
        # the fused function's parameters carry the caller's symbolic variables, so its
        # result's struct info is the call's as it stands
        _set_struct_info(call, func.ret_struct_info)
        outputs = creator.outputs
        if len(outputs) == 1:
            emit = self.builder_.emit if isinstance(outputs[0], DataflowVar) else self.builder_.emit_output
            self.set_var_remap(outputs[0], emit(call))
            return
        new_var = self.builder_.emit(call)
        for var in [*pending, *(v for v in outputs if not any(v is p for p in pending))]:
            item = TupleGetItem(new_var, creator._output_index(var))
            emit = self.builder_.emit if isinstance(var, DataflowVar) else self.builder_.emit_output
            self.set_var_remap(var, emit(item))

    def _topo_sort(self, bindings: Any) -> list:
        per_group: dict[int, list] = {}
        order: list[Any] = []
        for b in bindings:
            g = self._group(b.var)
            key = id(g) if g is not None else id(b)
            order.append((key, g))
            per_group.setdefault(key, []).append(b)
        visited: set[int] = set()
        out: list = []

        def visit(key: int, g: _Group | None) -> None:
            if key in visited:
                return
            visited.add(key)
            for dep in (self.group_deps.get(key, []) if g is not None else []):
                visit(id(dep), dep)
            out.extend(per_group.get(key, []))

        for key, g in order:
            visit(key, g)
        return out


def _vars_read(expr: Any) -> list[Var]:
    return [v for v in _leaves_below(expr) if isinstance(v, Var)]


@module_pass(opt_level=0, name="FuseOps")
class FuseOps:
    """Group bindings into ``Primitive`` functions: ``FuseOps()(mod)`` (see the module docstring).

    ``fuse_opt_level`` -1 takes the PassContext's opt_level; 0 fuses nothing.  Needs
    ``op_pattern`` on the PrimFuncs (run ``AnnotateTIROpPattern`` first); a call of a PrimFunc
    without one is opaque.
    """

    def __init__(self, fuse_opt_level: int = -1) -> None:
        self.fuse_opt_level = fuse_opt_level

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        opt_level = ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level
        max_depth = int(ctx.config.get("relax.FuseOps.max_depth", MAX_FUSED_OPS))
        targets, graph = fusion_graph(mod)
        groups = _Partitioner(graph, max_depth).partition(opt_level)
        return fuse_groups(mod, graph, groups, targets)


def fusion_graph(mod: IRModule) -> tuple[list, _Graph]:
    """The Relax functions fusion works on (not already fused, not offloaded) and their dataflow graph."""
    targets = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, Function)
               and not (f.attrs and (f.attrs.get("Primitive") or f.attrs.get("Codegen")))]
    graph = _Graph(mod)
    for _, f in targets:
        graph.add_function(f)
    return targets, graph


def fuse_groups(mod: IRModule, graph: _Graph, groups: list, targets: list) -> IRModule:
    """``mod`` with each group of more than one node made a primitive function (unchanged when none is)."""
    if all(g.root().num_nodes == 1 for g in groups):
        return mod
    return make_grouped_functions(mod, {id(n.ref): groups[i].root() for i, n in enumerate(graph.order)}, targets)


def make_grouped_functions(mod: IRModule, group_of: dict[int, Any], targets: list, lift_constants: bool = True,
                           pass_name: str = "FuseOps") -> IRModule:
    """TVM's MakeGroupedFunctions: in each ``(gv, function)`` of ``targets``, every group of
    ``group_of`` (id of a variable -> its root group; ``num_nodes``, optional ``attrs``) of two
    bindings or more, or with attributes, becomes a ``Primitive`` function carrying them, and
    its bindings one call of it.  ``lift_constants``: constants the group reads become
    parameters (False: they stay in the body)."""
    fusor = _Fusor(mod, group_of, lift_constants, pass_name)
    changed = False
    for gv, f in targets:
        fusor.outer_bindings = get_var2val(f)
        new = fusor.visit_expr(f)
        if new is not f:
            fusor.builder_.update_func(gv, new)
            changed = True
    return fusor.builder_.get() if changed else mod
