"""A reservation for the head of the queue inside the window (``head_reservation``, on by default since issue 37).

Where it sits: the ``backfill`` stage of :class:`planner.hops.HopsPolicy`, after the window's candidate
configs and before the weights and the ILP, in round and fragment plans alike (the overriding weight
below: the ``weights`` stage of round plans). :mod:`planner.backfill`
reserves for the window's first job with no candidate at all, and only against jobs *behind* the
window; here the head is the queue's first waiting job, and the jobs held back are the window's own.

Why (docs/results/fragments.md): with weights that protect running jobs (stretch weights, the
preemption premium), a wide rigid job at the head of the queue rarely outweighs the running jobs whose
GPUs it needs, and the GPUs that free up one by one go to the smaller waiting jobs of the window, so
it waits until enough GPUs free up at once by chance: its latency ratio is Max.LR. EASY backfilling
(Lifka 1995) bounds the head's wait instead: it reserves the GPUs the head needs at the earliest time
they free up and lets another job start now only if it does not delay that.

The rule: the head's reservation is read as
:func:`planner.backfill.reservation` reads it (over the GPU types it can run on, the earliest time the
idle GPUs of a type plus those released by the running jobs reach its smallest count; the GPUs of that
type left over then are spare), with every running job keeping its GPUs until its expected end (when
the idle GPUs suffice, the start is now: the others may not take the head's GPUs from it). Every
other job of the planning keeps only its candidate configs that end before the head's start (its
remaining work at that config's rate, plus its restart cost) or take no more of the reserved type's
GPUs than are still spare, beyond those it holds now (a job keeping such a config spends that spare):
a waiting job left with none sits out this planning, a running job keeps its place or shrinks, but
does not grow into the reserved GPUs (on Gavel's workload, where jobs take several GPU counts,
running jobs growing into the GPUs freed one by one starved an 8-GPU job as much as waiting ones).
No reservation when the head's start is unknown (no type frees enough GPUs by the known ends), nor before the head's latency ratio reaches ``reserve_after`` (1.75 by default; at 1 it has waited as
long as it is expected to run, a slowdown of 2 already), so that the reservation, which leaves GPUs
idle, is paid only for jobs the weights have left waiting.

The override below (``head_override``) is off by default since session 28. On clusters that a queue keeps
full it started a starved head by preemption in most round plans (186 of 240 on a 2x16 P100 + 4x4 V100
cluster, 187 of 261 on paper-64 at 10 jobs/h), and avg JCT there was 17 % and 27 % higher than with the
reservation alone. Table 3 and Gavel's workload are identical without it; on Table 4 avg JCT moves by under
1 % and Max.LR rises by 0.05 / 0.02 (docs/results/starvation.md, "The head's override, off by default"). Its
protected weight had also kept two jobs from taking turns on GPUs only one of them fits; without it,
:mod:`planner.take_back` does.

A reservation is no bound when the running jobs are long (on Gavel's workload jobs run for tens of
hours, and an 8-GPU job of half an hour behind them waited 4 h: latency ratio 7). So with
``head_override`` a head whose reservation starts later than its own expected run time from now (waiting
for it would raise its latency ratio by more than 1) also gets a weight that outweighs every other job's candidates
(:func:`overriding_weights`): the round plan places it at once if any placement fits, preempting the
jobs whose loss costs the objective least, and the job started so outweighs every later head while it
runs (else two starved heads take each other's GPUs round after round); fragment plans, which place on
idle GPUs only, keep the reservation. A head that a fragment plan starts on idle GPUs at a time when a round
plan would start it by preemption is protected the same way (``protect_fragment_heads``, on by default):
without it the next round's head, less starved, took its GPUs back. On a small cluster of odd-sized nodes
one job was started by fragment plans and requeued by the next round's head three times, its latency
ratio 41.9 (docs/results/starvation.md, "A head started by a fragment plan").

``reserve_bound`` (0 = off) ties the override to a latency-ratio target instead of the head's run
time: the head starts by preemption as soon as its latency ratio at the reservation's start (wait so
far plus the time to that start, over its expected run time) would pass the bound. With
``reserve_after`` above 1 (the reservation only for heads the weights have left far behind, so that
fewer plans keep GPUs idle), the run-time rule alone would let such a head reach ``reserve_after`` + 1;
the bound keeps it at the target (docs/results/starvation.md). With a bound, a head expected to run
less than ``min_run_time`` gets neither: one round's wait alone takes its ratio past any bound, and
:mod:`planner.moves` likewise preempts no job with less than that left (on Table 3 a job of 85 s, latency
ratio 4.8 after one round, preempted running jobs and cost 1.3 % avg JCT).

``protect_after`` (0 = off, the default) extends the protected weight to every running job whose latency
ratio has reached it and is at least the reserved head's (:func:`late_jobs`): the bound holds at a head's
start, and a job sent back to wait after it gains latency ratio no reservation bounds. Measured and left
off (docs/results/preemptions.md, "A late running job kept placed"). Pure: the clock is ``now``, passed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set

from planner.backfill import Reservation, reservation
from planner.eligible import confine
from planner.moves import rate_on, remaining_seconds
from planner.priorities import latency_ratio
from planner.signatures import Candidate
from planner.views import ClusterView, Config, JobView


def idle_now(cluster: ClusterView, running: Sequence[JobView]) -> ClusterView:
    """``cluster`` with each node's free GPUs less what the ``running`` jobs hold there now."""
    busy: dict[str, int] = {}
    for j in running:
        for n, g in (j.current or {}).items():
            busy[n] = busy.get(n, 0) + g
    return cluster.with_free(lambda n: max(0, n.free_gpus - busy.get(n.name, 0)))


def head_reservation(queue: Sequence[JobView], idle: ClusterView, running: Sequence[JobView],
                     now: float, after: float = 0.0, shortest: float = 0.0) -> Reservation | None:
    """The queue head's reservation (module docstring), or None when its start is unknown or there is
    no waiting job. ``idle``: each node's GPUs no job holds now (:func:`idle_now`); ``running``: every
    job holding GPUs now. A reservation that starts now holds the head's GPUs against the others too.
    ``after``: none until the head's latency ratio (wait / expected run time) reaches it; ``shortest``:
    none for a head expected to run less than that (seconds)."""
    if not queue:
        return None
    head = queue[0]
    if latency_ratio(head) < after or head.age < shortest:
        return None
    res = reservation(head, confine(idle, head), running, now)
    if res is None or math.isinf(res.start):
        return None
    return res


def hold_for_head(res: Reservation, cands: Sequence[Candidate], jobs: Sequence[JobView], cluster: ClusterView,
                  now: float) -> list[Candidate]:
    """``cands`` less the waiting jobs' configs that would delay ``res`` (module docstring); ``jobs``:
    the planning's jobs, highest priority first."""
    type_of = {n.name: n.gpu_type for n in cluster.nodes}
    by_job: dict[str, list[Candidate]] = {}
    for c in cands:
        by_job.setdefault(c.job_id, []).append(c)
    spare = res.spare
    dropped: set[int] = set()
    for job in jobs:
        if job.job_id == res.job_id or job.job_id not in by_job:
            continue
        # a running job may keep what it holds of the reserved type; only GPUs beyond that count
        holds = sum(g for n, g in (job.current or {}).items() if type_of.get(n) == res.gpu_type)
        takes = 0
        for c in by_job[job.job_id]:
            on_reserved = sum(g for n, g in c.config.items() if type_of.get(n) == res.gpu_type) - holds
            if on_reserved <= 0:
                continue
            left = remaining_seconds(job, rate_on(job, c.config))
            ends = now + (left if left is not None else math.inf) + job.restart_cost
            if ends <= res.start:
                continue
            if on_reserved <= spare:
                takes = max(takes, on_reserved)
                continue
            dropped.add(id(c))
        spare -= takes
    return [c for c in cands if id(c) not in dropped]


def overrides(res: Reservation, head: JobView, now: float, bound: float = 0.0) -> bool:
    """Whether ``head`` should start now by preemption rather than wait for ``res``: when waiting for it
    would cost the head more than its own expected run time (its latency ratio would rise by over 1), or,
    with a ``bound`` (``reserve_bound`` > 0), when its latency ratio at the reservation's start would pass
    that bound (the target a site holds Max.LR to)."""
    wait = res.start - now
    if bound > 0.0 and head.age > 0.0:
        return (head.wait + wait) / head.age > bound
    return wait > head.age


def late_jobs(running: Sequence[JobView], after: float, head: JobView | None = None) -> set[str]:
    """The running jobs a round plan may move but not leave waiting (``protect_after`` > 0; none at 0): those
    whose latency ratio has reached ``after`` and is at least that of ``head``, the queue head this plan
    starts by preemption (None: no such head). A job past the reservation's threshold that goes back to
    waiting gains latency ratio the reservation bounded at its start (its next start waits for a round
    plan or a reservation of its own), so it keeps the weight of :func:`overriding_weights`' protected
    jobs; a head more starved than it may still take its GPUs, so that the protection does not shift the
    maximum latency ratio to the head."""
    if after <= 0.0:
        return set()
    floor = max(after, latency_ratio(head) if head is not None else 0.0)
    return {j.job_id for j in running if latency_ratio(j) >= floor}


def overriding_weights(head_id: str, protected: Set[str], cands: Sequence[Candidate],
                       w: Mapping[str, float]) -> dict[str, float]:
    """Weights for ``head_id`` and the ``protected`` jobs (heads started this way before, still running):
    the head's above what every other unprotected job's candidates can add to eq. 11 together (each
    job's weight times its largest gain, the running premium included), so that the solve places the
    head whenever some placement fits, preempting the jobs that cost the objective least; a protected
    job's twice that, so that no later head takes its GPUs back (heads would take turns otherwise)."""
    best: dict[str, float] = {}
    for c in cands:
        if c.job_id != head_id and c.job_id not in protected:
            best[c.job_id] = max(best.get(c.job_id, 0.0), c.gain)
    base = 1.0 + sum(w.get(j, 0.0) * g for j, g in best.items())
    out = {j: 2.0 * base for j in protected if j in w}
    if head_id in w:
        out[head_id] = base
    return out


__all__ = ["head_reservation", "hold_for_head", "idle_now", "late_jobs", "overrides", "overriding_weights"]
