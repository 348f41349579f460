"""Optimizers as Relax functions (TVM's ``relax.training.optimizer``): ``SGD``, ``MomentumSGD``,
``Adam``.

``opt = SGD(0.1).init(params)`` fixes the parameters (floating-point tensor Vars of one dtype)
and makes the initial state ``opt.state`` (a tuple of runtime tensors: the step count, then
per-optimizer buffers); ``opt.get_function()`` is a Relax function
``(params, gradients, optim_states) -> (new_params, new_optim_states)`` over tuples.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np

from ...runtime.ndarray import array as _tensor
from ..block_builder import BlockBuilder
from ..expr import Function, TupleGetItem, Var, const
from ..expr import Tuple as RxTuple
from ..op import add, divide, multiply, sqrt, subtract
from ..struct_info import TensorStructInfo, TupleStructInfo

__all__ = ["Optimizer", "SGD", "MomentumSGD", "Adam"]


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _one_minus(x: float) -> float:
    # decimal arithmetic: 1 - 0.9 is 0.1, not 0.09999999999999998, as TVM computes it
    return float(Decimal("1") - Decimal(str(x)))


def _zeros_like(p: Var) -> Any:
    return _tensor(np.zeros([int(d) for d in p.struct_info.shape], p.struct_info.dtype))


class Optimizer:
    """Base of the optimizers: ``name`` (the function's name), and after ``init()`` the
    parameters (``param_list``), their ``dtype`` and the initial ``state``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.param_list: list[Var] | None = None
        self.state: Any = None
        self.dtype: str | None = None

    def init(self, params: Var | list[Var]) -> "Optimizer":
        self._set_params_and_dtype(params if isinstance(params, list) else [params])
        self.state = None
        return self

    def _set_params_and_dtype(self, params: list[Var]) -> None:
        seen: set = set()
        dtype = None
        for x in params:
            if not isinstance(x, Var):
                raise ValueError(f"Optimizer: parameter {x} is not a Var")
            sinfo = x.struct_info
            if not isinstance(sinfo, TensorStructInfo):
                raise ValueError(f"Optimizers only support Tensor parameters, but parameter {x.name_hint} "
                                 f"has struct info {sinfo}")
            if not _is_float(sinfo.dtype):
                raise ValueError(f"Optimizers only support Tensor parameters of floating point dtype, but "
                                 f"the dtype of {x.name_hint} is {sinfo.dtype}")
            if dtype is not None and dtype != sinfo.dtype:
                raise ValueError(f"All parameters should have the same dtype, but parameter {x.name_hint} has "
                                 f"dtype {sinfo.dtype}, which differs from the previous dtype {dtype}")
            dtype = sinfo.dtype
            if x in seen:
                raise ValueError(f"Parameter {x.name_hint} appears more than once")
            seen.add(x)
        self.param_list = params
        self.dtype = dtype

    def _check_init(self) -> None:
        if self.param_list is None or self.state is None or self.dtype is None:
            raise RuntimeError("Please call init() for the optimizer before calling get_function()")

    def get_function(self) -> Function:
        self._check_init()
        raise NotImplementedError(f"{type(self).__name__}.get_function")

    def _function(self, extra_states: list, step: Any, prologue: Any = None) -> Function:
        """``(params, gradients, optim_states)`` -> ``(params_new, optim_states_new)``: the
        states are the int64 step count then ``extra_states``; ``prologue(bb, states,
        new_states)`` runs once first, then ``step(bb, i, p, g, states, new_states)`` emits
        parameter ``i``'s update and returns the new parameter."""
        plist = self.param_list
        sinfos = [p.struct_info for p in plist]
        param_var = Var("params", TupleStructInfo(sinfos))
        grad_var = Var("gradients", TupleStructInfo(sinfos))
        state_var = Var("optim_states", TupleStructInfo([TensorStructInfo((), "int64"), *extra_states]))
        bb = BlockBuilder()
        with bb.function(self.name, [param_var, grad_var, state_var]):
            with bb.dataflow():
                num_steps = bb.emit(TupleGetItem(state_var, 0), "num_steps")
                new_states: list = [bb.emit(add(num_steps, const(1, "int64")), "num_steps_new")]
                if prologue is not None:
                    prologue(bb, state_var, new_states)
                new_params = []
                for i, p in enumerate(plist):
                    name = p.name_hint
                    pv = bb.emit(TupleGetItem(param_var, i), name)
                    gv = bb.emit(TupleGetItem(grad_var, i), name + "_grad")
                    new_params.append(step(bb, i, pv, gv, state_var, new_states))
                params_new = bb.emit_output(RxTuple(new_params), "params_new")
                states_new = bb.emit_output(RxTuple(new_states), "optim_states_new")
            bb.emit_func_output(RxTuple([params_new, states_new]))
        return bb.get()[self.name]

    def _decayed(self, bb: BlockBuilder, name: str, p: Var, g: Var) -> Var:
        """The gradient with weight decay (L2) added, when there is any."""
        if not self.weight_decay:
            return g
        return bb.emit(add(multiply(const(self.weight_decay, self.dtype), p), g), name + "_grad_new")


class SGD(Optimizer):
    """``p - lr * (g + weight_decay * p)``; state ``(num_steps,)``."""

    def __init__(self, lr: float, weight_decay: float = 0) -> None:
        super().__init__("SGD")
        self.lr = float(lr)
        self.weight_decay = float(weight_decay)

    def init(self, params: Var | list[Var]) -> "SGD":
        self._set_params_and_dtype(params if isinstance(params, list) else [params])
        self.state = (_tensor(np.zeros((), "int64")),)
        return self

    def get_function(self) -> Function:
        self._check_init()
        lr = const(self.lr, self.dtype)

        def step(bb: BlockBuilder, i: int, p: Var, g: Var, states: Var, new_states: list) -> Var:
            g = self._decayed(bb, p.name_hint, p, g)
            return bb.emit(subtract(p, multiply(lr, g)), p.name_hint + "_new")

        return self._function([], step)


class MomentumSGD(Optimizer):
    """SGD with momentum (optionally dampened, optionally Nesterov); state
    ``(num_steps, velocity of each parameter ...)``."""

    def __init__(self, lr: float, momentum: float, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False) -> None:
        super().__init__("MomentumSGD")
        self.lr = float(lr)
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.dampening = float(dampening)
        self.nesterov = nesterov

    def init(self, params: Var | list[Var]) -> "MomentumSGD":
        self._set_params_and_dtype(params if isinstance(params, list) else [params])
        self.state = (_tensor(np.zeros((), "int64")), *(_zeros_like(p) for p in self.param_list))
        return self

    def get_function(self) -> Function:
        self._check_init()
        lr, momentum = const(self.lr, self.dtype), const(self.momentum, self.dtype)
        damp = const(_one_minus(self.dampening), self.dtype)

        def step(bb: BlockBuilder, i: int, p: Var, g: Var, states: Var, new_states: list) -> Var:
            name = p.name_hint
            v = bb.emit(TupleGetItem(states, i + 1), name + "_v")
            g = self._decayed(bb, name, p, g)
            v_new = bb.emit(add(multiply(momentum, v), multiply(damp, g) if self.dampening else g), name + "_v_new")
            g_new = bb.emit(add(g, multiply(momentum, v_new)), name + "_g_nest") if self.nesterov else v_new
            new_states.append(v_new)
            return bb.emit(subtract(p, multiply(lr, g_new)), name + "_new")

        return self._function([p.struct_info for p in self.param_list], step)


class Adam(Optimizer):
    """Adam; state ``(num_steps, beta1 ** steps, beta2 ** steps, first moments ...,
    second moments ...)``."""

    def __init__(self, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-08,
                 weight_decay: float = 0) -> None:
        super().__init__("Adam")
        self.lr = float(lr)
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)

    def init(self, params: Var | list[Var]) -> "Adam":
        self._set_params_and_dtype(params if isinstance(params, list) else [params])
        self.state = (_tensor(np.zeros((), "int64")), _tensor(np.ones((), self.dtype)),
                      _tensor(np.ones((), self.dtype)), *(_zeros_like(p) for p in self.param_list),
                      *(_zeros_like(p) for p in self.param_list))
        return self

    def get_function(self) -> Function:
        self._check_init()
        dt, n = self.dtype, len(self.param_list)
        lr, eps, one = const(self.lr, dt), const(self.eps, dt), const(1, dt)
        beta1, beta2 = const(self.beta1, dt), const(self.beta2, dt)
        beta1_inv, beta2_inv = const(_one_minus(self.beta1), dt), const(_one_minus(self.beta2), dt)
        moments: list = [None] * (2 * n)

        def step(bb: BlockBuilder, i: int, p: Var, g: Var, states: Var, new_states: list) -> Var:
            name = p.name_hint
            m = bb.emit(TupleGetItem(states, i + 3), name + "_m")
            v = bb.emit(TupleGetItem(states, i + 3 + n), name + "_v")
            g = self._decayed(bb, name, p, g)
            m_new = bb.emit(add(multiply(beta1, m), multiply(beta1_inv, g)), name + "_m_new")
            v_new = bb.emit(add(multiply(beta2, v), multiply(beta2_inv, multiply(g, g))), name + "_v_new")
            m_hat = bb.emit(divide(m_new, subtract(one, new_states[1])), name + "_m_hat")
            v_hat = bb.emit(divide(v_new, subtract(one, new_states[2])), name + "_v_hat")
            moments[i], moments[i + n] = m_new, v_new
            if i == n - 1:
                new_states.extend(moments)
            return bb.emit(subtract(p, multiply(lr, divide(m_hat, add(sqrt(v_hat), eps)))), name + "_new")

        def prologue(bb: BlockBuilder, states: Var, new_states: list) -> None:
            # the running powers beta ** steps, right after the step count
            new_states.append(bb.emit(multiply(TupleGetItem(states, 1), beta1), "beta1_prod"))
            new_states.append(bb.emit(multiply(TupleGetItem(states, 2), beta2), "beta2_prod"))

        sinfos = [p.struct_info for p in self.param_list]
        return self._function([TensorStructInfo((), dt), TensorStructInfo((), dt), *sinfos, *sinfos], step,
                              prologue)
