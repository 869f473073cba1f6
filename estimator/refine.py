"""A job's own communication time, carried from a GPU count it ran on to one it has not (same scope).

Where it sits: :func:`estimator.estimate.per_gpu_estimate` asks :func:`refined_per_gpu` for a config no
record of the job measured, before it falls back to eq. (1)-(5) with the type's calibrated bandwidths
(layer ``theory``). Without this, one run of a job on 2 GPUs leaves its estimate on 4 GPUs of the same
type where the formula put it: the calibration is refitted from every job's records (a median,
:mod:`estimator.calibration`), so one job's run barely moves it, and the job's own deviation from the
type (bucketing, sparse gradients, a data loader that competes with the all-reduce) is never learned.

The rule (layer ``refined``): take the job's measured per-GPU throughput on the same GPU type in the
same scope (one server, or across servers) at the nearest multi-GPU count
(:func:`estimator.extrapolate.nearest`); find the communication time T_c0 under which eq. (1) of the
job's own profile gives exactly that throughput (:func:`estimator.calibration.implied_bandwidth`); carry
it to the asked count with the ring all-reduce's share, T_c = T_c0 · s(N) / s(N0), s(N) = (N-1)/N, N the
GPUs in one server and the nodes across servers (the same unit the store keys those records by). In one
server that is eq. (2) with the job's own B_link; across servers eq. (2) has no share (T_c = params /
B_net whatever the node count), but a ring over N nodes sends 2(N-1)/N of the gradients over the slowest
link (docs/results/estimator-learning.md measures both). A measurement at least as fast as free
communication carries T_c = 0; no progress, one GPU or the other scope carry nothing (None: the formula
answers). No constant is fitted. Pure: plain values in and out.
"""

from __future__ import annotations

import math
from functools import lru_cache

from estimator.calibration import implied_bandwidth
from estimator.extrapolate import measured_points
from estimator.mixture import Mixture
from estimator.model import TimeComponents, expected_iter_time, throughput
from estimator.snapshot import JobSnapshot

#: the layer of an estimate refined by the job's own runs on another count
REFINED = "refined"


def ring_share(count: int) -> float:
    """The share of the gradients a ring all-reduce over ``count`` members sends per member ((N-1)/N)."""
    if count < 1:
        raise ValueError(f"ring_share: need a positive count, got {count}")
    return (count - 1) / count


def own_comm_time(snap: JobSnapshot, gpu_type: str, *, gpus: int, nodes: int) -> float | None:
    """The job's communication time (s) on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs, carried
    from its own nearest measurement in the same scope (module docstring); None where none carries."""
    theory = snap.theory.get(gpu_type)
    if theory is None or gpus < 2 or not 1 <= nodes <= gpus:
        return None
    aggregated = nodes == 1
    count = gpus if aggregated else nodes
    points = [p for p in measured_points(snap, gpu_type) if p[0] == aggregated and p[1] >= 2 and p[1] != count]
    if not points:
        return None
    _, count0, per_gpu0 = min(points, key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    return carried_comm_time(theory.components, theory.data, per_gpu0, count0, count, aggregated)


def carried_comm_time(tc: TimeComponents, data: Mixture, per_gpu0: float, count0: int, count: int,
                      aggregated: bool) -> float | None:
    """The communication time (s) at ``count`` of a profile ``tc`` that measured ``per_gpu0`` at ``count0``
    (GPUs in one server if ``aggregated``, else nodes), carried with the ring share; None where none carries."""
    t_c0 = _measured_comm_time(tc, data, per_gpu0, count0, aggregated)
    return None if t_c0 is None else t_c0 * ring_share(count) / ring_share(count0)


def carried_per_gpu(tc: TimeComponents, data: Mixture, per_gpu0: float, count0: int, *, gpus: int,
                    nodes: int) -> float | None:
    """Per-GPU samples/s at ``gpus`` GPUs on ``nodes`` node(s) of a profile ``tc`` that measured ``per_gpu0`` at
    ``count0`` in the same scope, with :func:`carried_comm_time` in eq. (1)-(5); None where none carries."""
    aggregated = nodes == 1
    t_c = carried_comm_time(tc, data, per_gpu0, count0, gpus if aggregated else nodes, aggregated)
    return None if t_c is None else throughput(tc.batch_size, expected_iter_time(tc, data, t_c, gpus=gpus))


@lru_cache(maxsize=65536)
def _measured_comm_time(tc: TimeComponents, data: Mixture, per_gpu: float, count: int, aggregated: bool) -> float | None:
    """T_c under which eq. (1) of ``tc`` gives ``per_gpu`` at ``count`` GPUs in one server (``aggregated``) or
    ``count`` nodes; 0.0 for a measurement as fast as free communication. Kept per measurement: the planner
    asks many counts of one job between two of its records, and each answer starts from the same T_c0."""
    gpus = count if aggregated else max(count, 2)  # across servers only "more than one" matters to eq. (1)
    bandwidth = implied_bandwidth(tc, per_gpu, gpus=gpus, nodes=1 if aggregated else count, data=data)
    if bandwidth is None:
        return None
    if bandwidth == math.inf:
        return 0.0
    return tc.params * (ring_share(count) if aggregated else 1.0) / bandwidth


def refined_per_gpu(snap: JobSnapshot, gpu_type: str, *, gpus: int, nodes: int) -> float | None:
    """Per-GPU samples/s of the job with :func:`own_comm_time` in eq. (1)-(5); None where none carries."""
    t_c = own_comm_time(snap, gpu_type, gpus=gpus, nodes=nodes)
    if t_c is None:
        return None
    theory = snap.theory[gpu_type]
    return throughput(theory.components.batch_size, expected_iter_time(theory.components, theory.data, t_c, gpus=gpus))


__all__ = ["REFINED", "carried_comm_time", "carried_per_gpu", "own_comm_time", "refined_per_gpu", "ring_share"]
