"""Why a job waits: one vocabulary for ``queue``, the records, the metrics and the logs.

Where it sits: after a planning. :func:`plan_reasons` reads a plan (its assignments and the diagnostics
that :class:`planner.hops.HopsPolicy` and :func:`planner.governance.governed_plan` put in it: ``queue``,
``window``, ``backfilled``, ``fillers``, ``held``, ``unservable``, ``limited``) and names, for every
waiting job the planning saw, why it is not running yet. The round loop stores it in the plan's
diagnostics under ``reasons`` (:func:`hops_slurm.core.interface.plan_once`). The engine adds the reasons
no planning can see (a job set aside, being profiled, held by its owner, not yet planned, the engine
not planning): :mod:`hops_slurm.engine.reasons`. Every reason is a :class:`Code` (a short name, fixed,
what the metric ``hops_pending_jobs{reason}`` and the records carry) and a detail for people (how many
jobs are ahead, which Slurm limit, why it was set aside).

Pure: no clock, no Slurm; what a job "is" comes only from the plan and its views. A waiting job that a
planning saw always gets a reason (:data:`Code.NOT_PLANNED` when the policy says nothing about it).
The meaning of each code for users is in docs/user-guide.md ("Why is my job pending").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from planner.moves import HELD_MIN_RUN_TIME
from planner.views import Config, JobView

#: the longest detail kept (a reason is one line in ``queue``; the rest is cut)
DETAIL_MAX = 200


class Code(str, Enum):
    """The reasons a Hops job waits (squeue-style names; the REASON column shows them)."""

    #: placed by the last planning: Slurm starts it within moments
    STARTING = "HopsStarting"
    #: behind the service window of the latency-ratio queue (detail: how many jobs are ahead)
    OUTSIDE_WINDOW = "HopsQueue"
    #: in the window, but no placement of its GPU counts fits the GPUs free now
    NO_FIT = "HopsResources"
    #: in the window; the GPUs it needs are held by running jobs inside their minimum run time
    MIN_RUN_TIME = "HopsMinRunTime"
    #: a limit of the site's (account, QOS, partition): detail is Slurm's reason name and scope
    LIMIT = "HopsLimit"
    #: no configuration on this cluster serves it (set aside once the engine sees it)
    UNSERVABLE = "HopsUnservable"
    #: set aside for a problem of its own (detail: why); not scheduled until that is fixed
    SET_ASIDE = "HopsSetAside"
    #: its speed is being measured (probe jobs) before it can be planned
    PROFILING = "HopsProfiling"
    #: held by its owner (``scontrol hold``); ``scontrol release`` lets it be planned
    HELD_USER = "JobHeldUser"
    #: a dependency not yet met, or a ``--begin`` time ahead: Slurm's own conditions
    DEPENDENCY = "Dependency"
    BEGIN_TIME = "BeginTime"
    #: tracked but not yet seen by a planning (the next round or refresh plans it)
    NEW = "HopsNew"
    #: the engine is not planning (the daemon is stopped or the queue summary is stale)
    ENGINE_DOWN = "HopsEngineDown"
    #: the planning saw it and placed it nowhere without saying why (a baseline policy)
    NOT_PLANNED = "HopsNotPlanned"


#: one line per code, for ``queue --help``, the user guide and log lines
DESCRIPTIONS: Mapping[Code, str] = {
    Code.STARTING: "placed by the last planning; Slurm starts it within moments",
    Code.OUTSIDE_WINDOW: "waiting its turn in the latency-ratio queue (outside the service window)",
    Code.NO_FIT: "in the service window, but no placement fits the GPUs free now",
    Code.MIN_RUN_TIME: "waiting for running jobs to reach their minimum run time",
    Code.LIMIT: "held back by a limit of the site's (account, QOS or partition)",
    Code.UNSERVABLE: "no configuration on this cluster can serve it",
    Code.SET_ASIDE: "set aside for a problem of its own; not scheduled until it is fixed",
    Code.PROFILING: "its speed is being measured before it is planned",
    Code.HELD_USER: "held by its owner",
    Code.DEPENDENCY: "a dependency not yet met",
    Code.BEGIN_TIME: "its --begin time is still ahead",
    Code.NEW: "submitted; the next planning will place or rank it",
    Code.ENGINE_DOWN: "the Hops engine is not planning now",
    Code.NOT_PLANNED: "the scheduler placed it nowhere this planning",
}


@dataclass(frozen=True)
class Why:
    """A reason: its code and, for people, a detail (one line, at most :data:`DETAIL_MAX` characters)."""

    code: Code
    detail: str = ""

    def __post_init__(self) -> None:
        clean = "".join(c for c in " ".join(str(self.detail).split()) if c.isprintable())
        object.__setattr__(self, "detail", clean[:DETAIL_MAX])

    @property
    def name(self) -> str:
        """What the REASON column shows: Slurm's own name for a limit (``AssocGrpGRES``), else the code."""
        if self.code is Code.LIMIT and self.detail:
            first = self.detail.split(":", 1)[0].strip()
            if first.isidentifier():
                return first
        return self.code.value

    def text(self) -> str:
        """One line: the description and the detail."""
        return f"{DESCRIPTIONS[self.code]}: {self.detail}" if self.detail else DESCRIPTIONS[self.code]

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "name": self.name, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: object) -> Why | None:
        """The reason :meth:`as_dict` wrote; None for anything else (a stored summary of another version)."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(Code(str(data.get("code"))), str(data.get("detail") or ""))
        except ValueError:
            return None


def _ids(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def plan_reasons(assignments: Mapping[str, Config | None], diagnostics: Mapping[str, object],
                 jobs: Sequence[JobView]) -> dict[str, Why]:
    """Job id -> why, for every waiting job (``current`` None) of ``jobs`` (see the module docstring).

    Order of the tests: placed, then a site limit, then unservable, then in the window (or admitted
    behind it: a filler or backfilled) but not placed (the GPUs are held by running jobs inside their
    minimum run time when that hold is what keeps the job out, else nothing fits), then behind the window
    with the number of waiting jobs ahead of it in the queue, then not planned."""
    limited, unservable = _map(diagnostics.get("limited")), _map(diagnostics.get("unservable"))
    queue = _ids(diagnostics.get("queue"))
    position = {j: k for k, j in enumerate(queue)}
    admitted = set(_ids(diagnostics.get("window"))) | set(_ids(diagnostics.get("fillers"))) \
        | set(_ids(diagnostics.get("backfilled")))
    held = _map(diagnostics.get("in_place"))
    by_id = {j.job_id: j for j in jobs}
    held_gpus = sum(sum((by_id[j].current or {}).values()) for j, why in held.items()
                    if why == HELD_MIN_RUN_TIME and j in by_id)
    out: dict[str, Why] = {}
    for job in jobs:
        if job.current:
            continue
        jid = job.job_id
        if assignments.get(jid):
            out[jid] = Why(Code.STARTING)
        elif jid in limited:
            out[jid] = Why(Code.LIMIT, limited[jid])
        elif jid in unservable:
            out[jid] = Why(Code.UNSERVABLE, unservable[jid])
        elif jid in admitted:
            if held_gpus >= job.requirements[0]:
                out[jid] = Why(Code.MIN_RUN_TIME, f"{held_gpus} GPU(s) held by jobs inside their minimum run time")
            else:
                out[jid] = Why(Code.NO_FIT, f"needs {_counts(job)} GPU(s)")
        elif jid in position:
            ahead = position[jid]
            out[jid] = Why(Code.OUTSIDE_WINDOW, f"{ahead} job(s) ahead")
        else:
            out[jid] = Why(Code.NOT_PLANNED)
    return out


def _counts(job: JobView) -> str:
    return "/".join(str(r) for r in job.requirements)


__all__ = ["Code", "DESCRIPTIONS", "DETAIL_MAX", "Why", "plan_reasons"]
