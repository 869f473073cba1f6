"""Which jobs no configuration on the cluster serves, and why (one line, for the job's owner).

Where it sits: the ``unservable`` stage of :class:`planner.hops.HopsPolicy`, first in every planning;
the backends set such jobs aside with the reason (:mod:`hops_slurm.sim.sim_aside`,
:mod:`hops_slurm.engine.aside`, which match it by :data:`NO_USABLE_CONFIG`). A job is unservable when
it asks for more GPUs than the cluster (or the nodes it may use) has, or when every candidate config on
the whole cluster as if idle is estimated at throughput 0 (a config where the job's records show no
progress is estimated at 0: :mod:`estimator.progress`). :class:`Servability` remembers each verdict per
job and cluster shape so that a planning does not look at every config of every job again. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.configs import is_high_sensitivity, iter_configs
from planner.eligible import confine
from planner.moves import current_rate
from planner.views import ClusterView, Config, JobView

#: how the reason of a job no configuration serves starts (backends set such jobs aside: docs/design.md)
NO_USABLE_CONFIG = "no configuration serves it"

Shape = tuple[tuple[str, str, str, int], ...]


def why_unservable(job: JobView, whole: ClusterView, sigma: float) -> str:
    """"" when some config of ``job`` on the idle ``whole`` cluster has a positive throughput
    estimate, else the reason (one line, for the job's owner). A config where the job's records show
    no progress is estimated at 0 (:mod:`estimator.progress`), so a job that stalled everywhere it
    could run ends here."""
    return _verdict(job, whole, sigma)[0]


def _verdict(job: JobView, whole: ClusterView, sigma: float) -> tuple[str, Config | None]:
    """:func:`why_unservable`'s reason and, when servable, the config that showed it (the witness)."""
    whole = confine(whole, job)  # the nodes it may use only
    if job.requirements[0] > whole.total_gpus:
        return (f"needs at least {job.requirements[0]} GPUs; the cluster has {whole.total_gpus}"), None
    for cfg in iter_configs(job, whole, sigma):  # cheapest first: stops at the first positive estimate
        if float(job.throughput(cfg)) > 0.0:
            return "", cfg
    counts = ",".join(str(r) for r in job.requirements)
    types = ",".join(whole.gpu_types)
    return (f"{NO_USABLE_CONFIG}: every placement of {counts} GPU(s) on {types} is estimated at "
            f"throughput 0 or made no progress (e.g. the model cannot run on that many GPUs); allow other "
            f"GPU counts"), None


class Servability:
    """The verdicts of :func:`why_unservable`, kept between plannings (one per policy object)."""

    def __init__(self) -> None:
        #: job id -> (cluster shape, reason or "" when servable, the config that showed it servable, the
        #: throughput function judged)
        self._servable: dict[str, tuple[Shape, str, Config | None, object]] = {}
        #: the same verdict per (throughput function, requirements, high sensitivity) on one cluster shape:
        #: jobs of one model signature with one requirement set share their estimates (the engine's and the
        #: simulator's job views carry one throughput function per signature), so each is judged once
        self._verdicts: dict[tuple[int, tuple[int, ...], bool, frozenset[str] | None], tuple[object, str, Config | None]] = {}
        self._verdict_shape: Shape = ()

    def judge(self, cluster: ClusterView, jobs: Sequence[JobView], sigma: float) -> dict[str, str]:
        """Job id -> why no configuration on this cluster serves it, for every such job. Judged on the
        whole cluster as if idle (not on this planning's free GPUs), once per job and cluster shape:
        a job is unservable when it asks for more GPUs than the cluster has, or every candidate config
        is estimated at throughput 0. A running job is servable while its current config has a positive
        estimate; one whose records there show no progress is judged like a waiting job (and, unservable,
        leaves the plan: preempted)."""
        shape = tuple((n.name, n.gpu_type, n.server_class, n.total_gpus) for n in cluster.nodes)
        whole = cluster.idle()
        out: dict[str, str] = {}
        seen: dict[str, tuple[tuple[tuple[str, str, str, int], ...], str, Config | None, object]] = {}
        shared = self._verdicts if self._verdict_shape == shape else {}
        kept: dict[tuple[int, tuple[int, ...], bool, frozenset[str] | None], tuple[object, str, Config | None]] = {}
        for job in jobs:
            known = self._servable.get(job.job_id)
            witness: Config | None = None
            if job.current and current_rate(job) > 0.0:
                reason = ""
            elif known is not None and known[0] == shape and (
                    (not known[1] and known[2] is not None and float(job.throughput(known[2])) > 0.0)
                    or (known[1] and known[3] is job.throughput)):
                # the same cluster, and its witness config still serves it (or, unservable, the same
                # estimates): no need to look at every config again
                reason, witness = known[1], known[2]
            else:
                key = (id(job.throughput), job.requirements, is_high_sensitivity(job, sigma), job.nodes)
                hit = shared.get(key)
                if hit is None or hit[0] is not job.throughput:  # the same function object: the same answers
                    hit = shared[key] = (job.throughput, *_verdict(job, whole, sigma))
                kept[key] = hit
                reason, witness = hit[1], hit[2]
            seen[job.job_id] = (shape, reason, witness, job.throughput)
            if reason:
                out[job.job_id] = reason
        self._servable = seen  # finished jobs drop out
        self._verdicts, self._verdict_shape = kept, shape  # so do functions no job carries any more
        return out


__all__ = ["NO_USABLE_CONFIG", "Servability", "why_unservable"]
