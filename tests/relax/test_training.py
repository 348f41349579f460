"""relax.training: the losses, the optimizers' update steps and a whole SetupTrainer + Trainer
run, each against numpy on seeded random data; AppendLoss's refusals; the gradients at the
ties (relu at 0, maximum of equal operands) that TVM's rules decide."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.error import TVMError
from minitvm.relax.training import AppendLoss, SetupTrainer, Trainer
from minitvm.relax.training.loss import CategoricalCrossEntropyLoss, CrossEntropyLoss, L1Loss, MSELoss
from minitvm.relax.training.optimizer import SGD, Adam, MomentumSGD
from minitvm.script import ir as I
from minitvm.script import relax as R


def _vm(mod):
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())


def _nd(*arrays):
    return [minitvm.nd.array(a) for a in arrays]


def test_losses_compute_what_numpy_computes():
    rng = np.random.default_rng(0)
    pred, tgt = rng.standard_normal((4, 5)).astype("float32"), rng.standard_normal((4, 5)).astype("float32")
    labels = rng.integers(0, 5, 4).astype("int64")
    onehot = np.eye(5, dtype="int64")[labels]
    weights = rng.uniform(0.5, 2, 5).astype("float32")
    p_si, l_si = relax.TensorStructInfo((4, 5), "float32"), relax.TensorStructInfo((4,), "int64")
    mod = minitvm.IRModule()
    mod["l1"] = L1Loss("sum")(p_si, p_si)
    mod["mse"] = MSELoss()(p_si, p_si)
    mod["ce"] = CrossEntropyLoss(reduction="sum")(p_si, l_si, relax.TensorStructInfo((5,), "float32"))
    mod["cce"] = CategoricalCrossEntropyLoss()(p_si, relax.TensorStructInfo((4, 5), "int64"))
    vm = _vm(mod)
    logp = pred - np.log(np.exp(pred).sum(1, keepdims=True))
    np.testing.assert_allclose(vm["l1"](*_nd(pred, tgt)).numpy(), np.abs(pred - tgt).sum(), rtol=1e-5)
    np.testing.assert_allclose(vm["mse"](*_nd(pred, tgt)).numpy(), ((pred - tgt) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(vm["ce"](*_nd(pred, labels, weights)).numpy(),
                               -(weights[labels] * logp[np.arange(4), labels]).sum(), rtol=1e-5)
    np.testing.assert_allclose(vm["cce"](*_nd(pred, onehot)).numpy(), (-logp * onehot).mean(), rtol=1e-5)


def test_optimizer_steps_match_their_formulas():
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((3, 4)).astype("float64"), rng.standard_normal((3, 4)).astype("float64")
    xv = relax.Var("x", relax.TensorStructInfo((3, 4), "float64"))
    mod = minitvm.IRModule()
    opts = {"sgd": SGD(0.1, weight_decay=0.01), "msgd": MomentumSGD(0.1, 0.9, dampening=0.1, nesterov=True),
            "adam": Adam(0.01, weight_decay=0.02)}
    for name, opt in opts.items():
        mod[name] = opt.init(xv).get_function().with_attr("global_symbol", name)
    vm = _vm(relax.transform.LegalizeOps()(mod))
    for name, opt in opts.items():  # two steps, so the states carry over
        state, p = list(opt.state), x
        for _ in range(2):
            (p_new,), state = vm[name]((minitvm.nd.array(p),), (minitvm.nd.array(g),), tuple(state))
            p = p_new.numpy()
        opt_state = [s.numpy() for s in state]
        assert int(opt_state[0]) == 2
        want = x
        if name == "sgd":
            for _ in range(2):
                want = want - 0.1 * (g + 0.01 * want)
        elif name == "msgd":
            v = np.zeros_like(x)
            for _ in range(2):
                v = 0.9 * v + 0.9 * g
                want = want - 0.1 * (g + 0.9 * v)
        else:
            m, s = np.zeros_like(x), np.zeros_like(x)
            for t in (1, 2):
                gg = g + 0.02 * want
                m, s = 0.9 * m + 0.1 * gg, 0.999 * s + 0.001 * gg * gg
                want = want - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(s / (1 - 0.999 ** t)) + 1e-8)
        np.testing.assert_allclose(p, want, rtol=1e-10, err_msg=name)


def test_optimizer_refuses_mixed_dtypes_and_integer_parameters():
    a = relax.Var("a", relax.TensorStructInfo((2,), "float32"))
    with pytest.raises(ValueError, match="same dtype"):
        SGD(0.1).init([a, relax.Var("b", relax.TensorStructInfo((2,), "float64"))])
    with pytest.raises(ValueError, match="floating point"):
        SGD(0.1).init(relax.Var("c", relax.TensorStructInfo((2,), "int32")))
    with pytest.raises(RuntimeError, match="call init"):
        SGD(0.1).get_function()


def _backbone():
    @I.ir_module
    class Linear:
        I.module_attrs({"param_num": 2, "state_num": 0})

        @R.function
        def backbone(x: R.Tensor((8, 3), "float32"), w: R.Tensor((3, 2), "float32"),
                     b: R.Tensor((2,), "float32")):
            with R.dataflow():
                out = R.nn.relu(R.add(R.matmul(x, w), b))
                R.output(out)
            return out

    return Linear


def test_trainer_follows_numpy_gradient_descent():
    """Zero-initialized ReLU layer: the gradient passes at 0 (TVM's rule), so it learns."""
    rng = np.random.default_rng(2)
    xs, ys = rng.uniform(0, 1, (8, 3)).astype("float32"), rng.uniform(0, 1, (8, 2)).astype("float32")
    si = relax.TensorStructInfo((8, 2), "float32")
    train_mod = SetupTrainer(MSELoss(reduction="sum"), SGD(0.01), [si, si])(_backbone())
    assert {"backbone", "backbone_loss", "backbone_loss_adjoint", "optimizer"} <= set(train_mod.keys())
    trainer = Trainer(train_mod, _vm(train_mod), minitvm.cpu())
    w, b = np.zeros((3, 2), "float32"), np.zeros(2, "float32")
    for _ in range(3):
        loss = trainer.update(xs, ys).numpy()
        z = xs @ w + b
        out = np.maximum(z, 0)
        np.testing.assert_allclose(loss, ((out - ys) ** 2).sum(), rtol=1e-5)
        dz = 2 * (out - ys) * (z >= 0)
        w, b = w - 0.01 * xs.T @ dz, b - 0.01 * dz.sum(0)
    np.testing.assert_allclose(trainer.export_params()["w"].numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trainer.predict(xs).numpy(), np.maximum(xs @ w + b, 0), rtol=1e-5, atol=1e-6)
    fresh = Trainer(train_mod, trainer.vm, minitvm.cpu(), zero_init_param_state=False)
    with pytest.raises(TVMError, match="not initialized"):
        fresh.predict(xs)


def test_append_loss_refuses_mismatched_outputs():
    mod = _backbone()
    wrong = MSELoss()(relax.TensorStructInfo((8, 3), "float32"), relax.TensorStructInfo((8, 3), "float32"))
    with pytest.raises(TVMError, match="0-th return value"):
        AppendLoss("backbone", wrong)(mod)
    si = relax.TensorStructInfo((8, 2), "float32")
    with pytest.raises(TVMError, match="fewer than num_backbone_outputs"):
        AppendLoss("backbone", MSELoss()(si, si), 2)(mod)


def test_gradient_ties_go_as_tvm_sends_them():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
            with R.dataflow():
                s = R.sum(R.add(R.maximum(x, y), R.nn.relu(x)))
                R.output(s)
            return s

    mod = relax.transform.LegalizeOps()(relax.transform.Gradient("main")(Mod))
    x = np.array([0.0, 1.0, -2.0, 3.0], "float32")
    y = np.array([0.0, 2.0, -2.0, 1.0], "float32")
    _, (gx, gy) = _vm(mod)["main_adjoint"](*_nd(x, y))
    # maximum: a tie's gradient goes to x; relu: the gradient passes at 0
    np.testing.assert_array_equal(gx.numpy(), [2, 1, 1, 2])
    np.testing.assert_array_equal(gy.numpy(), [0, 1, 0, 0])


def test_an_annotation_on_a_nested_call_is_dropped_as_tvm_drops_it():
    @R.function
    def f(a: R.Tensor((3, 5), "float32")):
        with R.dataflow():
            # TVM rebuilds the call once its operands are bound; the annotation goes unchecked
            lv: R.Tensor((), "float32") = -a * a.astype("float32")
            R.output(lv)
        return lv

    assert [int(d) for d in f.body.blocks[0].bindings[-1].var.struct_info.shape] == [3, 5]


def test_decompose_ops_for_training_uses_the_batch_statistics():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 3, 2), "float32"), g: R.Tensor((3,), "float32"), b: R.Tensor((3,), "float32"),
                 m: R.Tensor((3,), "float32"), v: R.Tensor((3,), "float32"), lg: R.Tensor((2,), "float32")):
            with R.dataflow():
                bn = R.nn.batch_norm(x, g, b, m, v, axis=1, epsilon=1e-5, momentum=0.2)
                ln = R.nn.layer_norm(bn[0], lg, lg, axes=[-1], epsilon=1e-5)
                out = (ln, bn[1], bn[2])
                R.output(out)
            return out

    mod = relax.transform.DecomposeOpsForTraining()(Mod)
    names = {b.value.op.name for b in mod["main"].body.blocks[0].bindings if hasattr(b.value, "op")
             and hasattr(b.value.op, "name")}
    assert not names & {"relax.nn.batch_norm", "relax.nn.layer_norm"}
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 2)).astype("float32")
    g, b, m, lg = (rng.uniform(0.5, 1.5, n).astype("float32") for n in (3, 3, 3, 2))
    v = rng.uniform(0.5, 1.5, 3).astype("float32")
    ln, new_m, new_v = _vm(mod)["main"](*_nd(x, g, b, m, v, lg))
    mu, var = x.mean((0, 2)), x.var((0, 2))
    y = (x - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * g[:, None] + b[:, None]
    want_ln = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5) * lg + lg
    np.testing.assert_allclose(ln.numpy(), want_ln, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(new_m.numpy(), 0.8 * m + 0.2 * mu, rtol=1e-5)
    np.testing.assert_allclose(new_v.numpy(), 0.8 * v + 0.2 * var, rtol=1e-5)
