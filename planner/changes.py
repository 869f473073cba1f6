"""Why a round plan preempts a running job: one vocabulary for the round records, the metrics and the reports.

Where it sits: after a round plan, beside :mod:`planner.reasons` (why a waiting job waits).
:func:`plan_changes` reads a plan (its assignments and what :class:`planner.hops.HopsPolicy` put in its
diagnostics: ``in_place``, ``explored``, ``swapped``, ``grown``) and names, for every running job whose config
the plan changes, why. The round loop keeps the count per cause of the preemptions it enacted
(:func:`hops_slurm.core.interface.plan_once`, ``RoundRecord.preempted_by``); the simulator's tables and the
engine's metric ``hops_preemption_causes`` read them (docs/results/table4-targets.md, "Where the
preemptions come from"). Every change is a preemption: the job is requeued and, unless it waits, restarted
in its new config.

A baseline's plan carries none of Hops' diagnostics: its changes are named by what they do (``requeued``,
``moved-type``, ``moved-count``, ``moved-nodes``). Pure: no clock, no Slurm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from planner.views import ClusterView, Config, JobView


class Change(str, Enum):
    """Why a running job's config changes (lower case: a label of the metric and a key of the records)."""

    #: the plan leaves it without GPUs: waiting jobs of more weight (eq. 11) take them
    REQUEUED = "requeued"
    #: left without GPUs for a waiting job that also puts idle GPUs to work (planner.fragfill)
    SWAPPED = "swapped"
    #: moved to a config no record has measured, to measure it (planner.explore)
    EXPLORE = "explore"
    #: moved to a larger GPU count into idle GPUs no waiting job can use (planner.fraggrow)
    GROWN = "grown"
    #: moved to another GPU type (the solve: a config estimated to pay the move)
    MOVED_TYPE = "moved-type"
    #: moved to another GPU count on its type
    MOVED_COUNT = "moved-count"
    #: the same type and count on other servers
    MOVED_NODES = "moved-nodes"


#: one line per cause, for the documents and the metric's help
DESCRIPTIONS: Mapping[Change, str] = {
    Change.REQUEUED: "requeued: waiting jobs of more weight took its GPUs",
    Change.SWAPPED: "requeued for a waiting job that also fills idle GPUs (fragment swap)",
    Change.EXPLORE: "moved to measure a config no record has measured",
    Change.GROWN: "moved to more GPUs, into idle ones no waiting job can use",
    Change.MOVED_TYPE: "moved to another GPU type",
    Change.MOVED_COUNT: "moved to another GPU count",
    Change.MOVED_NODES: "moved to other servers, same type and count",
}


def _keys(value: object) -> set[str]:
    if isinstance(value, Mapping):
        return {str(k) for k in value}
    return {str(v) for v in value} if isinstance(value, (list, tuple, set, frozenset)) else set()


def _values(value: object) -> set[str]:
    return {str(v) for v in value.values()} if isinstance(value, Mapping) else set()


def plan_changes(assignments: Mapping[str, Config | None], diagnostics: Mapping[str, object],
                 jobs: Sequence[JobView], cluster: ClusterView) -> dict[str, Change]:
    """Running job id -> why the plan changes its config, for every running job of ``jobs`` whose
    assignment differs from where it runs (a job the plan does not name keeps its config)."""
    held = _keys(diagnostics.get("in_place"))
    explored, grown = _keys(diagnostics.get("explored")), _keys(diagnostics.get("grown"))
    swapped = _values(diagnostics.get("swapped"))
    type_of = {n.name: n.gpu_type for n in cluster.nodes}
    out: dict[str, Change] = {}
    for job in jobs:
        jid, current = job.job_id, job.current
        if not current or jid in held or jid not in assignments:
            continue
        new = assignments[jid]
        if new is not None and dict(new) == dict(current):
            continue
        if new is None:
            out[jid] = Change.SWAPPED if jid in swapped else Change.REQUEUED
        elif jid in explored:
            out[jid] = Change.EXPLORE
        elif jid in grown:
            out[jid] = Change.GROWN
        elif {type_of.get(n) for n in new} != {type_of.get(n) for n in current}:
            out[jid] = Change.MOVED_TYPE
        elif sum(new.values()) != sum(current.values()):
            out[jid] = Change.MOVED_COUNT
        else:
            out[jid] = Change.MOVED_NODES
    return out


__all__ = ["Change", "DESCRIPTIONS", "plan_changes"]
