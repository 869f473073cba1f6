"""How sure an estimate is, and how good a config no record has measured could be (exploration).

Where it sits: :class:`estimator.estimate.Estimator` hands out, beside each job's throughput function,
an *optimistic* one (:meth:`~estimator.estimate.Estimator.optimistic_fn`), which the job-view pipeline
puts into :attr:`planner.views.JobView.explore`; the planner (:mod:`planner.explore`) moves a job to a
config no record has measured when GPUs for it sit idle and that config's optimistic estimate beats
what the job measured where it runs, priced like any other move. Once the job ran there, its records
make the config measured, so each config of a model is explored at most once: a wrong pessimistic
estimate is corrected in a bounded number of rounds, and a wrong optimistic one costs one move.

Uncertainty of one key (:func:`confidence`): ``model`` (no record: eq. 1-5 from the probe, or values
carried from elsewhere), ``one`` (one runtime record) or ``many``.

The optimistic per-GPU value of a key no record measured (:func:`optimistic_per_gpu`) is the job's
single-GPU per-GPU rate on that GPU type: measured on one GPU of the type when it was, else its probe's
eq. 1-5 at one GPU (no communication): data parallelism does not make one GPU faster than it is alone,
so that is an upper bound of the model-only estimate's error (eq. 2's bandwidths may be calibrated far
too low, never too high by this bound). Pure: plain values in and out.
"""

from __future__ import annotations

from collections.abc import Mapping

from estimator.model import per_gpu_theory_throughput
from estimator.progress import no_progress
from estimator.snapshot import Calibration, JobSnapshot

MODEL_ONLY = "model"
ONE_RECORD = "one"
MANY_RECORDS = "many"


def confidence(snap: JobSnapshot, gpu_type: str, *, gpus: int, nodes: int, server: str | None = None) -> str:
    """How many records back the job's estimate on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs."""
    aggregated = nodes == 1
    key = (gpu_type, gpus if aggregated else nodes)
    table = snap.type_aggregated if aggregated else snap.type_distributed
    entity = snap.entity_aggregated if aggregated else snap.entity_distributed
    if key not in table and not (server and (server, key[1]) in entity):
        return MODEL_ONLY
    counts = snap.type_aggregated_n if aggregated else snap.type_distributed_n
    return MANY_RECORDS if counts.get(key, 1) > 1 else ONE_RECORD


def single_gpu_rate(snap: JobSnapshot, gpu_type: str) -> float | None:
    """The job's per-GPU samples/s on one GPU of ``gpu_type``: measured, else its probe's eq. 1-5."""
    measured = snap.type_aggregated.get((gpu_type, 1))
    if measured is not None and not no_progress(measured, snap):
        return measured
    theory = snap.theory.get(gpu_type)
    if theory is None:
        return None
    return per_gpu_theory_throughput(theory.components, theory.data, gpus=1, nodes=1, b_link=1.0, b_net=1.0)


def optimistic_per_gpu(snap: JobSnapshot, calibrations: Mapping[str, Calibration], *, gpu_type: str, gpus: int,
                       nodes: int, server: str | None = None, factor: float = 1.0) -> float | None:
    """An upper bound of the job's per-GPU samples/s on a key no record measured (module docstring),
    times the server's entity ``factor``; None when the key is measured (nothing to explore) or nothing
    bounds it."""
    del calibrations  # the bound needs no bandwidth: that is the point
    if confidence(snap, gpu_type, gpus=gpus, nodes=nodes, server=server) != MODEL_ONLY:
        return None
    one = single_gpu_rate(snap, gpu_type)
    return None if one is None or one <= 0 else one * factor


__all__ = ["MANY_RECORDS", "MODEL_ONLY", "ONE_RECORD", "confidence", "optimistic_per_gpu", "single_gpu_rate"]
