"""MetaSchedule: search for fast schedules by measuring them (``from minitvm import meta_schedule as ms``).

A small, readable version of TVM's ``tvm.meta_schedule`` with its names and call shapes:

* search spaces (``space_generator``): a stochastic schedule function (``ScheduleFn``) or the
  built-in rules (``schedule_rule``: multi-level tiling, auto-inline, random compute location,
  parallel-vectorize-unroll, finished by ``postproc``);
* search (``search_strategy``): trace replay with fresh decisions, or evolution that mutates
  decisions (``mutator``) guided by a learned cost model (``cost_model``, on
  ``feature_extractor`` features);
* measurement (``builder``, ``runner``): in worker processes from any
  ``concurrent.futures.Executor``, checked against the unscheduled function, with timeouts;
* results (``database``): JSON lines in ``work_dir``, replayed by ``tir_integration.compile_tir``
  and by the zero pipeline (``with database:``; ``relax_integration.tune_relax`` tunes a model).
"""

import importlib

from . import (
    _worker,
    builder,
    cost_model,
    database,
    feature_extractor,
    mutator,
    postproc,
    runner,
    schedule_rule,
    search_strategy,
    space_generator,
    tir_integration,
    viz,
)
from .builder import LocalBuilder
from .cost_model import RandomModel
from .database import Database, JSONDatabase, MemoryDatabase, TuningRecord, Workload
from .runner import EvaluatorConfig, LocalRunner
from .search_strategy import MeasureCandidate
from .tir_integration import compile_tir, tune_tir
from .tune import TuneContext, tune_tasks

__all__ = ["builder", "cost_model", "database", "feature_extractor", "mutator", "postproc", "runner",
           "schedule_rule", "search_strategy", "space_generator", "tir_integration", "relax_integration", "viz",
           "tune_tir", "compile_tir", "tune_tasks", "TuneContext", "Database", "JSONDatabase", "MemoryDatabase",
           "TuningRecord", "Workload", "LocalBuilder", "LocalRunner", "EvaluatorConfig", "RandomModel",
           "MeasureCandidate"]


def __getattr__(name: str):
    if name == "relax_integration":
        # lazy: relax_integration imports Relax, which tuning a TIR function does not need
        return importlib.import_module(".relax_integration", __name__)
    raise AttributeError(f"module 'minitvm.meta_schedule' has no attribute {name!r}")
