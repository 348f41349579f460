"""Cost models (TVM's ``ms.cost_model``): predict which candidates are fast before measuring.

* :class:`GBTModel` (``cost_model="xgb"``, the default, as TVM's default) -- gradient-boosted
  regression trees from scikit-learn (``HistGradientBoostingRegressor``) on
  ``feature_extractor`` features, trained on every measured candidate to predict its
  normalized throughput (best time / its time, 1.0 for the best so far).  TVM uses XGBoost for
  the same kind of model; minitvm uses scikit-learn's (see pyproject.toml, extra ``tune``).
* :class:`RandomModel` -- random scores, the baseline a learned model must beat.

:func:`ranking_quality` says how well a model orders held-out candidates (Spearman's rank
correlation and the share of the truly best ``k`` found among the predicted best ``k``).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from .feature_extractor import extract

__all__ = ["CostModel", "RandomModel", "GBTModel", "XGBModel", "ranking_quality", "create"]


class CostModel:
    """``update`` with measured candidates, ``predict`` a score for each candidate (higher = faster)."""

    def update(self, context: Any, candidates: list, results: list) -> None:
        raise NotImplementedError

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        raise NotImplementedError

    def save(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__}.save: minitvm's cost models live in memory only")

    def load(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__}.load: minitvm's cost models live in memory only")


class RandomModel(CostModel):
    """Uniform random scores (seeded)."""

    def __init__(self, *, seed: int | None = None, path: str | None = None, max_range: int | None = 100) -> None:
        if path is not None:
            raise NotImplementedError("RandomModel(path=...): minitvm's random model keeps no state on disk")
        self.rng = random.Random(seed)
        self.max_range = max_range or 100

    def update(self, context: Any, candidates: list, results: list) -> None:
        pass

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        return np.array([self.rng.uniform(0, self.max_range) for _ in candidates])


def _require_sklearn() -> Any:
    try:
        from sklearn.ensemble import HistGradientBoostingRegressor
    except ImportError as err:  # the learned model is an optional extra
        raise ImportError("the learned cost model needs scikit-learn: pip install 'minitvm[tune]' "
                          "(or pass cost_model='random')") from err
    return HistGradientBoostingRegressor


def _one_thread() -> Any:
    """A context in which scikit-learn's OpenMP loops run on one thread.

    The model sees tens to hundreds of rows: a team of OpenMP threads costs more than it saves
    (fit: 0.2 s on one thread, 2-9 s on two cores that other processes also want, as the tuner's
    builders and runners do)."""
    from threadpoolctl import threadpool_limits  # lazy: installed with scikit-learn, an optional extra

    return threadpool_limits(limits=1, user_api="openmp")


def _mean_secs(result: Any) -> float | None:
    secs = getattr(result, "run_secs", result)
    if not secs:
        return None
    return float(np.mean(secs)) if isinstance(secs, (list, tuple)) else float(secs)


class GBTModel(CostModel):
    """Gradient-boosted trees on candidate features, predicting normalized throughput.

    Until ``num_warmup_samples`` candidates are measured it predicts from a simple score (the
    features' arithmetic intensity), so the first rounds are not pure chance either."""

    def __init__(self, *, num_warmup_samples: int = 8, max_iter: int = 100, seed: int | None = 0) -> None:
        self.num_warmup_samples = num_warmup_samples
        self.max_iter, self.seed = max_iter, seed
        self.features: list[np.ndarray] = []
        self.secs: list[float] = []
        self.model: Any = None

    def update(self, context: Any, candidates: list, results: list) -> None:
        feats = extract(candidates)
        for f, res in zip(feats, results):
            secs = _mean_secs(res)
            if secs is not None:  # failed candidates teach nothing about speed
                self.features.append(f)
                self.secs.append(secs)
        if len(self.secs) >= self.num_warmup_samples:
            self.fit(np.array(self.features), np.array(self.secs))

    def fit(self, features: np.ndarray, secs: np.ndarray) -> "GBTModel":
        """Train on ``features`` and measured ``secs`` (throughput normalized to the best)."""
        regressor = _require_sklearn()
        target = secs.min() / secs
        with _one_thread():
            self.model = regressor(max_iter=self.max_iter, learning_rate=0.1, min_samples_leaf=2,
                                   random_state=self.seed).fit(features, target)
        return self

    def predict(self, context: Any, candidates: list) -> np.ndarray:
        feats = extract(candidates)
        if self.model is None:
            return feats[:, -3] if len(feats) else np.zeros(0)  # arithmetic intensity
        with _one_thread():
            return self.model.predict(feats)


#: TVM's name for its learned model; minitvm's is the same kind of model from scikit-learn
XGBModel = GBTModel


def _rank(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    return ranks


def ranking_quality(predicted_scores: Any, measured_secs: Any, k: int = 5) -> dict[str, float]:
    """How well scores (higher = predicted faster) order candidates whose times were measured:
    ``spearman`` (1: same order, 0: unrelated) and ``top_k_recall`` (share of the truly ``k``
    fastest among the ``k`` predicted fastest)."""
    scores, secs = np.asarray(predicted_scores, float), np.asarray(measured_secs, float)
    if len(scores) != len(secs) or len(secs) < 2:
        raise ValueError("ranking_quality needs as many scores as times, at least two")
    a, b = _rank(scores), _rank(-secs)
    spearman = float(np.corrcoef(a, b)[0, 1]) if a.std() and b.std() else 0.0
    k = min(k, len(secs))
    best = set(np.argsort(secs)[:k])
    picked = set(np.argsort(-scores)[:k])
    return {"spearman": spearman, "top_k_recall": len(best & picked) / k}


def create(cost_model: Any = "xgb", **kwargs: Any) -> CostModel:
    if isinstance(cost_model, CostModel):
        return cost_model
    if cost_model in ("xgb", "gbt"):
        return GBTModel(**kwargs)
    if cost_model == "random":
        return RandomModel(**kwargs)
    if cost_model == "mlp":
        raise NotImplementedError("cost_model='mlp': minitvm has the gradient-boosted-tree ('xgb') and "
                                  "'random' models")
    raise ValueError(f"cost_model={cost_model!r}: 'xgb', 'random' or a CostModel")
