"""Tuning databases: the best schedules found, kept as replayable traces (TVM's ``ms.database``).

A :class:`Workload` is a TIR module being tuned, found again by structural equality (its
``shash`` is the structural hash).  A :class:`TuningRecord` is one measured candidate: the
trace that schedules the workload (with every sampled decision), the measured seconds (None
or empty for a failed candidate), the target.  ``query_schedule`` replays the best trace onto
the workload and returns the ``tir.Schedule``.  The same trace committed again (the tuner
re-times its best candidates) is the same schedule measured again: its times join the one
record (minitvm's; TVM keeps a second record).

:class:`JSONDatabase` keeps two JSON-lines files in ``work_dir``, as TVM's does:

* ``database_workload.json``: one workload a line, ``[hash, module]`` -- ``hash`` a SHA-256 of
  the module's TVMScript (stable across processes; Python's own hash is not), ``module`` the
  TVMScript text, parsed back when the file is loaded;
* ``database_tuning_record.json``: one record a line, ``[workload index, [trace, run_secs,
  target, args_info]]`` -- ``trace`` in ``Trace.as_json`` form, ``run_secs`` a list of floats
  (a schedule measured again gets another line; loading joins them as committing does).

Both are plain text a learner can read, and a fresh process reloads them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import warnings
from typing import Any, Iterator

from ..ir.module import IRModule
from ..ir.structural import structural_equal, structural_hash
from ..script import TVMScriptError, from_source
from ..target import Target
from ..tir import PrimFunc
from ..tir.lambda_text import LambdaTextError
from ..tir.schedule import Schedule, Trace
from ..transform import tuning_database as _scope

__all__ = ["Workload", "TuningRecord", "Database", "JSONDatabase", "MemoryDatabase", "normalize_mod"]


def normalize_mod(mod: IRModule | PrimFunc) -> IRModule:
    """The module form a workload takes: a PrimFunc becomes ``IRModule({"main": func})``."""
    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod.with_attr("global_symbol", "main")})
    if not isinstance(mod, IRModule):
        raise TypeError(f"expected an IRModule or a PrimFunc, got {type(mod).__name__}")
    return mod


def _script_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Workload:
    """A module being tuned; equal workloads are structurally equal modules."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = normalize_mod(mod)
        self.shash = structural_hash(self.mod)  # the structural hash (the lookup key; the same in every process)
        # the name of the task that tuned it (for plots; not saved: a reloaded database has none)
        self.task_name: str | None = None

    def as_json(self) -> list:
        text = self.mod.script()
        return [_script_hash(text), text]

    @staticmethod
    def from_json(json_obj: list) -> "Workload":
        """The workload of a ``[hash, TVMScript]`` line, parsed as data: the text is a file's,
        so only TVMScript is built and any other Python in it is refused, never run."""
        if not (isinstance(json_obj, list) and len(json_obj) == 2 and isinstance(json_obj[1], str)):
            raise ValueError("a workload line is [hash, TVMScript text]")
        return Workload(from_source(json_obj[1], data_only=True))

    def __repr__(self) -> str:
        names = ", ".join(gv.name_hint for gv in self.mod.get_global_vars())
        return f"Workload({names}, shash={self.shash:#x})"


def _target_str(target: Any) -> str | None:
    if target is None:
        return None
    return str(target if isinstance(target, Target) else Target(target))


class TuningRecord:
    """One measured candidate: ``trace`` on ``workload``, ``run_secs`` (None: it failed)."""

    def __init__(self, trace: Trace, workload: Workload, run_secs: list[float] | None = None,
                 target: Target | str | None = None, args_info: list | None = None) -> None:
        self.trace = trace
        self.workload = workload
        self.run_secs = None if run_secs is None else [float(s) for s in run_secs]
        self.target = None if target is None else (target if isinstance(target, Target) else Target(target))
        self.args_info = args_info

    @property
    def is_valid(self) -> bool:
        """Measured and correct (a failed build/run/check has no run_secs)."""
        return bool(self.run_secs) and all(math.isfinite(s) for s in self.run_secs)

    @property
    def mean_secs(self) -> float:
        return sum(self.run_secs) / len(self.run_secs) if self.is_valid else math.inf

    @property
    def median_secs(self) -> float:
        """What the database ranks by: the median of the timings (inf when failed).  TVM ranks by
        their mean; on a shared machine one timing can be a fifth off, and the median of the
        tuner's many timings of a finalist does not follow that one."""
        return statistics.median(self.run_secs) if self.is_valid else math.inf

    def as_json(self) -> list:
        return [self.trace.as_json(), self.run_secs, _target_str(self.target), self.args_info]

    @staticmethod
    def from_json(json_obj: list, workload: Workload) -> "TuningRecord":
        trace_json, run_secs, target, args_info = json_obj
        sch = Schedule(workload.mod)
        Trace.apply_json_to_schedule(trace_json, sch)
        return TuningRecord(sch.trace, workload, run_secs, target, args_info)

    def __repr__(self) -> str:
        secs = f"{self.median_secs * 1e3:.4f} ms" if self.is_valid else "failed"
        return f"TuningRecord({secs}, {len(self.trace)} instructions, target={_target_str(self.target)!r})"


class Database:
    """What every database answers (TVM's ``ms.database.Database``); ``with database:`` makes it
    the one the zero pipeline applies (``relax.transform.MetaScheduleApplyDatabase``)."""

    def __init__(self) -> None:
        self._workloads: list[Workload] = []
        self._records: list[TuningRecord] = []
        self._record_index: dict[tuple[int, str], int] = {}  # (workload, trace as JSON) -> its record

    # -- workloads ------------------------------------------------------------------------
    def _find(self, mod: IRModule) -> Workload | None:
        mod = normalize_mod(mod)
        h = structural_hash(mod)
        same = next((w for w in self._workloads if w.shash == h and structural_equal(w.mod, mod)), None)
        if same is not None:
            return same
        # equal modules can hash apart (an attribute dict read back in another order): compare all
        return next((w for w in self._workloads if structural_equal(w.mod, mod)), None)

    def has_workload(self, mod: IRModule) -> bool:
        return self._find(mod) is not None

    def commit_workload(self, mod: IRModule) -> Workload:
        """The workload for ``mod``, added when new."""
        found = self._find(mod)
        if found is not None:
            return found
        workload = Workload(mod)
        self._workloads.append(workload)
        self._write_workload(workload)
        return workload

    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Store ``record``.  A trace already recorded for the same workload is the same schedule
        measured again: its times join that record's ``run_secs`` (a failure fails the record)."""
        if record.workload not in self._workloads:
            record.workload = self.commit_workload(record.workload.mod)
        self._add_record(record)
        self._write_record(record)

    def _add_record(self, record: TuningRecord) -> None:
        key = (id(record.workload), json.dumps(record.trace.as_json()))
        index = self._record_index.get(key)
        if index is None:
            self._record_index[key] = len(self._records)
            self._records.append(record)
            return
        old = self._records[index]
        secs = old.run_secs + record.run_secs if old.is_valid and record.is_valid else None
        self._records[index] = TuningRecord(old.trace, old.workload, secs, old.target, old.args_info)

    def _write_workload(self, workload: Workload) -> None:  # JSONDatabase writes to its files
        pass

    def _write_record(self, record: TuningRecord) -> None:
        pass

    # -- queries ----------------------------------------------------------------------------
    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        """The ``top_k`` fastest valid records of ``workload`` (by ``median_secs``), fastest first."""
        if top_k < 0:
            raise ValueError(f"get_top_k: top_k must be >= 0, got {top_k}")
        mine = [r for r in self._records if r.workload is workload and r.is_valid]
        return sorted(mine, key=lambda r: r.median_secs)[:top_k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def query_tuning_record(self, mod: IRModule, target: Target | str, workload_name: str = "main"
                            ) -> TuningRecord | None:
        """The best record of ``mod`` (None when it was never tuned or every candidate failed).
        As TVM's ``DatabaseNode::QueryTuningRecord``, records are not filtered by ``target``
        (a workload's records all come from the tuning run's one target); it must still be a
        target (a ``Target`` or its string), so a mistyped one is an error, not ignored."""
        if not isinstance(target, Target):
            Target(target)  # raises TypeError / ValueError naming what is wrong
        workload = self._find(mod)
        if workload is None:
            return None
        top = self.get_top_k(workload, 1)
        return top[0] if top else None

    def query_schedule(self, mod: IRModule, target: Target | str, workload_name: str = "main") -> Schedule | None:
        """The best record's trace replayed on ``mod``: a ``tir.Schedule`` (``.trace``, ``.mod``)."""
        record = self.query_tuning_record(mod, target, workload_name)
        if record is None:
            return None
        sch = Schedule(normalize_mod(mod))
        sch.work_on(workload_name)
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        return sch

    def query_ir_module(self, mod: IRModule, target: Target | str, workload_name: str = "main") -> IRModule | None:
        sch = self.query_schedule(mod, target, workload_name)
        return None if sch is None else sch.mod

    def query(self, mod: IRModule, target: Target | str, *, workload_name: str = "main",
              kind: str = "schedule") -> Any:
        if kind == "schedule":
            return self.query_schedule(mod, target, workload_name)
        if kind == "record":
            return self.query_tuning_record(mod, target, workload_name)
        if kind == "ir_module":
            return self.query_ir_module(mod, target, workload_name)
        raise ValueError(f'Unknown kind: {kind}. Candidates are: "schedule", "record", "ir_module"')

    def dump_pruned(self, destination: "Database") -> None:
        """Copy the best record of every workload into ``destination``."""
        for workload in self._workloads:
            for record in self.get_top_k(workload, 1):
                destination.commit_tuning_record(
                    TuningRecord(record.trace, destination.commit_workload(workload.mod), record.run_secs,
                                 record.target, record.args_info))

    # -- scope -----------------------------------------------------------------------------
    def __enter__(self) -> "Database":
        _scope.enter(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _scope.exit(self)

    @staticmethod
    def current() -> "Database | None":
        return _scope.current()

    @staticmethod
    def create(kind: str = "json", *args: Any, **kwargs: Any) -> "Database":
        if kind == "json":
            return JSONDatabase(*args, **kwargs)
        if kind == "memory":
            return MemoryDatabase(*args, **kwargs)
        raise NotImplementedError(f"Database.create({kind!r}): minitvm has the 'json' and 'memory' databases")


def _check_module_equality(module_equality: str) -> None:
    if module_equality != "structural":
        raise NotImplementedError(f"module_equality={module_equality!r}: minitvm finds workloads by structural "
                                  "equality only ('structural')")


class MemoryDatabase(Database):
    """A database in memory only."""

    def __init__(self, module_equality: str = "structural") -> None:
        _check_module_equality(module_equality)
        super().__init__()


class JSONDatabase(Database):
    """A database in two JSON-lines files (``work_dir/database_workload.json`` and
    ``work_dir/database_tuning_record.json``), appended as records come, read back on open."""

    def __init__(self, path_workload: str | None = None, path_tuning_record: str | None = None, *,
                 work_dir: str | None = None, allow_missing: bool = True, module_equality: str = "structural"
                 ) -> None:
        _check_module_equality(module_equality)
        super().__init__()
        if work_dir is not None:
            path_workload = path_workload or os.path.join(work_dir, "database_workload.json")
            path_tuning_record = path_tuning_record or os.path.join(work_dir, "database_tuning_record.json")
        if path_workload is None or path_tuning_record is None:
            raise ValueError("JSONDatabase needs work_dir= or both path_workload and path_tuning_record")
        self.path_workload, self.path_tuning_record = path_workload, path_tuning_record
        for path in (path_workload, path_tuning_record):
            if not os.path.exists(path):
                if not allow_missing:
                    raise FileNotFoundError(f"JSONDatabase: {path} does not exist (allow_missing=False)")
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                open(path, "a").close()
        self._load()

    def _load(self) -> None:
        for n, obj in _json_lines(self.path_workload):
            try:
                self._workloads.append(Workload.from_json(obj))
            except (TVMScriptError, ValueError) as err:
                raise ValueError(f"{self.path_workload}:{n}: cannot read this workload: {err}") from None
        for n, obj in _json_lines(self.path_tuning_record):
            if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[1], list) and len(obj[1]) == 4):
                raise ValueError(f"{self.path_tuning_record}:{n}: a record line is "
                                 "[workload index, [trace, run_secs, target, args_info]]")
            index, rec = obj
            if type(index) is not int or not 0 <= index < len(self._workloads):
                raise ValueError(f"{self.path_tuning_record}:{n}: workload index {index!r} is not in "
                                 f"{self.path_workload} ({len(self._workloads)} workloads)")
            try:
                self._add_record(TuningRecord.from_json(rec, self._workloads[index]))
            except Exception as err:  # noqa: BLE001 - one unreadable record must not lose the rest
                if isinstance(err, LambdaTextError):  # text posing as an index map: always worth a word
                    warnings.warn(f"{self.path_tuning_record}:{n}: skipped a record whose trace is not data "
                                  f"({err})", stacklevel=2)
                elif rec[1]:  # a measured record that no longer replays is worth a word
                    warnings.warn(f"{self.path_tuning_record}:{n}: skipped a record whose trace does not "
                                  f"replay on its workload ({type(err).__name__}: {err})", stacklevel=2)

    def _write_workload(self, workload: Workload) -> None:
        with open(self.path_workload, "a") as f:
            f.write(json.dumps(workload.as_json()) + "\n")

    def _write_record(self, record: TuningRecord) -> None:
        index = self._workloads.index(record.workload)
        with open(self.path_tuning_record, "a") as f:
            f.write(json.dumps([index, record.as_json()]) + "\n")

    def __repr__(self) -> str:
        return f"JSONDatabase({os.path.dirname(self.path_workload)!r}, {len(self)} records)"


def _json_lines(path: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-empty line of a JSON-lines file."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except ValueError as err:
                    raise ValueError(f"{path}:{n}: not a line of JSON ({err})") from None


_scope.register_work_dir_opener(lambda work_dir: JSONDatabase(work_dir=work_dir))
