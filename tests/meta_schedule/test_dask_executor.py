"""Candidates measured on a Dask cluster's workers through its concurrent.futures executor
(the optional extra ``tune-dist``, part of ``dev`` so this runs in CI)."""

import minitvm
from minitvm import meta_schedule as ms

from .workloads import matmul_64, split_j


def test_tune_tir_on_a_local_dask_cluster(tmp_path):
    import distributed  # here, not at the top: both test workers collect this file, one runs it (1.3 s)

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        executor = client.get_executor()
        worker_pids = set(client.run(lambda: __import__("os").getpid()).values())
        db = ms.tune_tir(mod=minitvm.IRModule({"main": matmul_64}), target="llvm --num-cores=1",
                         work_dir=str(tmp_path), max_trials_global=3, num_trials_per_iter=3,
                         space=ms.space_generator.ScheduleFn(split_j), executor=executor, progress=False,
                         runner=ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(1, 1, 0),
                                                      executor=executor),
                         seed=0)
        ran_on = executor.submit(ms._worker.worker_pid).result()
    assert ran_on in worker_pids and ran_on != __import__("os").getpid()
    records = db.get_all_tuning_records()
    assert len(records) == 3 and all(r.is_valid for r in records)
