"""The count law of a GPU type's communication, learned from its jobs, and a job's one run carried with it.

Where it sits: a view of :class:`estimator.peers.PeerTable` (the type layer of every signature across GPU
counts, read once per round) turned into one exponent per (GPU type, scope) (:func:`exponents`), asked by
:func:`estimator.estimate.per_gpu_estimate` for a config no record of the job measured, after
:mod:`estimator.family_refine` and :mod:`estimator.peers` and before :mod:`estimator.refine` alone.

Why: :mod:`estimator.refine` fits the job's own communication time to its one run at N0 and carries it
with the ring share s(N) = (N-1)/N (eq. 2 in one server, Hops §3.5). How a type's communication grows
with the count is a property of its servers and network (a shared PCIe root, an NVLink mesh, a ring
over switches), which the paper measures once per type as B_link, B_net; the ring share is the law of an
ideal ring. Every job that ran on the type at two multi-GPU counts says what the law is there: with r1
its 1-GPU per-GPU rate and r(N) its per-GPU rate at N, its communication per sample is
D(N) = 1/r(N) - 1/r1, and between two counts a < b it grows as (s(b)/s(a))^alpha with
alpha = ln(D(b)/D(a)) / ln(s(b)/s(a)). The type's exponent is the median of those (one per job and pair of
counts, jobs of the same network counted like any other), learned as the records arrive, as the
calibration's bandwidths are (:func:`estimator.calibration.refit`); alpha = 1 is the ring share.

The rule (layer ``count law``): the job's per-GPU rate r0 at its nearest multi-GPU count N0 on the type in
the same scope (as :mod:`estimator.refine` picks it), its 1-GPU rate r1 (its probe, as
:func:`estimator.peers.one_gpu_rate` reads it); D0 = max(1/r0 - 1/r1, 0); the estimate at N is
1 / (1/r1 + D0 (s(N)/s(N0))^alpha). Counts are GPUs in one server and nodes across servers (the unit the
store keys those records by). None where the type has fewer than :data:`MIN_JOBS` jobs measured at two
counts in that scope (then :mod:`estimator.refine` answers with the ring share).

Bounded, not fitted: alpha stays within [0, :data:`ALPHA_MAX`]: from communication that does not grow
with the count (eq. 2 across servers) to communication that grows with N-1 (every member sending the
whole gradients once per peer; between 2 and 8 members that is (8-1)/(2-1) = 7 times, the ring share's
1.75 to the power ln 7 / ln 1.75), so no set of records, however wild, gives a law outside the two
the paper's formula and a naive all-to-all would. No constant is fitted to a benchmark. Pure: plain
values in and out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from estimator.extrapolate import measured_points
from estimator.peers import PeerTable, one_gpu_rate
from estimator.refine import ring_share
from estimator.snapshot import JobSnapshot

#: the layer of an estimate carried with the type's learned count law
COUNT_LAW = "count law"
#: the steepest law: communication growing with N-1 (module docstring), as an exponent of the ring share
ALPHA_MAX = math.log(7.0) / math.log(1.75)
#: jobs measured at two multi-GPU counts a type needs before its law replaces the ring share
MIN_JOBS = 3


def pair_exponent(one_gpu: float, count_a: int, rate_a: float, count_b: int, rate_b: float) -> float | None:
    """alpha of one job between counts ``count_a`` != ``count_b`` (per-GPU rates ``rate_a``, ``rate_b``; 1-GPU
    rate ``one_gpu``): None where either point shows no communication cost or a count is below 2."""
    if count_a == count_b or min(count_a, count_b) < 2:
        return None
    if not all(math.isfinite(v) and v > 0 for v in (one_gpu, rate_a, rate_b)):
        return None
    d_a, d_b = 1.0 / rate_a - 1.0 / one_gpu, 1.0 / rate_b - 1.0 / one_gpu
    if d_a <= 0 or d_b <= 0:
        return None
    return math.log(d_b / d_a) / math.log(ring_share(count_b) / ring_share(count_a))


def exponents(table: PeerTable) -> dict[tuple[str, bool], float]:
    """Per (GPU type, one server?), the median exponent of its jobs' pairs of counts, within [0,
    :data:`ALPHA_MAX`]; only where at least :data:`MIN_JOBS` jobs gave one."""
    out: dict[tuple[str, bool], float] = {}
    for key, peers in table.peers.items():
        values: list[float] = []
        jobs = 0
        for peer in peers:
            counts = sorted(peer.rates)
            mine = [a for i, ca in enumerate(counts) for cb in counts[i + 1:]
                    if (a := pair_exponent(peer.one_gpu, ca, peer.rates[ca], cb, peer.rates[cb])) is not None]
            if mine:
                jobs += 1
                values.extend(mine)
        if jobs >= MIN_JOBS:
            out[key] = min(max(statistics.median(values), 0.0), ALPHA_MAX)
    return out


def law_per_gpu(snap: JobSnapshot, laws: Mapping[tuple[str, bool], float], gpu_type: str, *, gpus: int,
                nodes: int) -> float | None:
    """Per-GPU samples/s of the job on ``nodes`` node(s) of ``gpu_type`` with ``gpus`` GPUs: its own rate at
    its nearest other count carried with the type's learned law (module docstring); None where none carries."""
    if gpus < 2 or not 1 <= nodes <= gpus:
        return None
    aggregated = nodes == 1
    alpha = laws.get((gpu_type, aggregated))
    one = one_gpu_rate(snap, gpu_type) if alpha is not None else None
    if alpha is None or one is None:
        return None
    count = gpus if aggregated else nodes
    points = [p for p in measured_points(snap, gpu_type) if p[0] == aggregated and p[1] >= 2 and p[1] != count]
    if not points:
        return None
    _, count0, per_gpu0 = min(points, key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    if not (math.isfinite(per_gpu0) and per_gpu0 > 0):
        return None
    comm0 = max(1.0 / per_gpu0 - 1.0 / one, 0.0)
    return 1.0 / (1.0 / one + comm0 * (ring_share(count) / ring_share(count0)) ** alpha)


__all__ = ["ALPHA_MAX", "COUNT_LAW", "MIN_JOBS", "exponents", "law_per_gpu", "pair_exponent"]
