"""A job's rate carried to a GPU count it has not run, with the scaling its family measured there.

Where it sits: :func:`estimator.estimate.per_gpu_estimate` asks :func:`family_per_gpu` for a config no
record of the job measured, before :mod:`estimator.refine` alone and the formula. The job must have run on
the same GPU type in the same scope (one server, or across servers) at another multi-GPU count N0, and
some other signature of its family (:mod:`estimator.family`: the same network at another per-GPU batch
size, as the jobs' ``#HOPS model=`` and the probe name it) must have run there at both N0 and the asked
count N.

The rule (layer ``family``): each such sibling s says how the network's per-GPU rate moves from N0 to N,
r_s = rate_s(N) / rate_s(N0), so the job's rate at N would be rate(N0) · r_s; the job's own carry
(:func:`estimator.refine.carried_per_gpu`: its communication time at N0 carried with the ring share) is
one more such answer. The estimate is the weighted geometric mean of these answers, a sibling weighted by
how close its batch size b_s is to the job's b, w_s = (min(b, b_s) / max(b, b_s))^2 (the same gradients
to exchange per step over computation that grows with the batch: the nearer the batch, the nearer the
share communication takes), the job's own carry weighted as a sibling at its very batch size (1). So a
far sibling moves the estimate little, several near ones move it most of the way: where eq. (1)-(2)
cannot follow the network (per-GPU rates that rise with N, dips, super-linear points;
docs/results/estimator-learning.md) its variants share that shape. N0 is the job's own count nearest N
(ratio distance, ties the larger) among those some sibling also ran at N. None where no sibling carries
(:mod:`estimator.refine` answers). No constant is fitted. Pure: plain values in and out.
"""

from __future__ import annotations

import math

from estimator.extrapolate import measured_points
from estimator.refine import carried_per_gpu
from estimator.snapshot import JobSnapshot, TypeTheory

#: the layer of an estimate carried with the family's scaling
FAMILY = "family"
#: the weight of the job's own carry among its siblings' answers (that of a sibling at its batch size)
OWN_WEIGHT = 1.0


def batch_weight(batch: int, other: int) -> float:
    """How much a sibling at batch size ``other`` speaks for a job at ``batch``: (min / max)^2."""
    if batch < 1 or other < 1:
        raise ValueError(f"batch_weight: need positive batch sizes, got {batch}, {other}")
    return (min(batch, other) / max(batch, other)) ** 2


#: per snapshot, kept on it (a snapshot is immutable): its siblings' rates by (type, one server?) and the answers
_MEMO = "_family_memo"
_Rates = list[tuple[float, dict[int, float]]]


def _rates(snap: JobSnapshot, batch: int, gpu_type: str, aggregated: bool) -> _Rates:
    """(weight, count -> per-GPU rate) of each sibling with at least two counts on the type and scope, read
    once per snapshot: the planner asks many configs of one job between two of its records."""
    memo: dict = snap.__dict__[_MEMO] if _MEMO in snap.__dict__ else _new_memo(snap)
    key = ("rates", batch, gpu_type, aggregated)
    got = memo.get(key)
    if got is None:
        got = []
        for sib in snap.siblings:
            table = sib.type_aggregated if aggregated else sib.type_distributed
            rates = {c: v for (t, c), v in table.items() if t == gpu_type and c >= 1 and math.isfinite(v) and v > 0}
            if len(rates) >= 2:
                got.append((batch_weight(batch, sib.batch_size), rates))
        memo[key] = got
    return got


def _new_memo(snap: JobSnapshot) -> dict:
    memo: dict = {}
    object.__setattr__(snap, _MEMO, memo)  # a cache beside the frozen fields, never compared or shown
    return memo


def sibling_ratios(snap: JobSnapshot, batch: int, gpu_type: str, aggregated: bool, count0: int,
                   count: int) -> list[tuple[float, float]]:
    """(weight, rate(count) / rate(count0)) of every sibling that ran at both counts (same type and scope)."""
    return [(w, rates[count] / rates[count0]) for w, rates in _rates(snap, batch, gpu_type, aggregated)
            if count0 in rates and count in rates]


def family_per_gpu(snap: JobSnapshot, gpu_type: str, *, gpus: int, nodes: int) -> float | None:
    """Per-GPU samples/s of the job on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs: its own rate at
    another count carried with its family's scaling (module docstring); None where no sibling carries."""
    theory = snap.theory.get(gpu_type)
    if theory is None or not snap.siblings or gpus < 2 or not 1 <= nodes <= gpus:
        return None
    memo: dict = snap.__dict__[_MEMO] if _MEMO in snap.__dict__ else _new_memo(snap)
    key = ("answer", gpu_type, gpus, nodes)
    if key not in memo:
        memo[key] = _family_per_gpu(snap, theory, gpu_type, gpus, nodes)
    return memo[key]


def _family_per_gpu(snap: JobSnapshot, theory: TypeTheory, gpu_type: str, gpus: int, nodes: int) -> float | None:
    aggregated = nodes == 1
    count = gpus if aggregated else nodes
    batch = theory.components.batch_size
    if not any(count in rates for _, rates in _rates(snap, batch, gpu_type, aggregated)):
        return None
    own = sorted((p for p in measured_points(snap, gpu_type) if p[0] == aggregated and p[1] >= 2 and p[1] != count),
                 key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    for _, count0, per_gpu0 in own:
        ratios = sibling_ratios(snap, batch, gpu_type, aggregated, count0, count)
        if not ratios:
            continue
        answers = [(w, per_gpu0 * r) for w, r in ratios]
        carried = carried_per_gpu(theory.components, theory.data, per_gpu0, count0, gpus=gpus, nodes=nodes)
        if carried is not None and math.isfinite(carried) and carried > 0:
            answers.append((OWN_WEIGHT, carried))
        total = sum(w for w, _ in answers)
        return math.exp(sum(w * math.log(v) for w, v in answers) / total)
    return None


__all__ = ["FAMILY", "OWN_WEIGHT", "batch_weight", "family_per_gpu", "sibling_ratios"]
