"""Setting one job aside: a failure tied to one job never stops the round for the others.

Where it sits: the engine (:mod:`hops_slurm.engine.engine`) and the live backend
(:mod:`hops_slurm.engine.live_backend`) run every per-job step (reading the job's stored directives, its
probe, its runtime records, its estimate) inside :func:`per_job`. A failure there marks that job
``aside`` in the engine state (it is neither profiled nor planned; a running one keeps running, a
pending one keeps its admin hold) and writes the reason where the owner sees it: the job's ``Comment``
(``scontrol show job``: ``Comment=hops: set aside: ...``) and ``hops-slurm queue`` (the PLAN column).
Failures that are not about one job (Slurm unreachable, the store's disk full) are re-raised: they
stop the step, and the daemon retries it at its next turn.

A job stays aside until what made it fail changes: when Slurm shows other stored directives (an
administrator corrected them) the engine checks them again and, if they parse, takes the job back.

No progress, no placement (:func:`set_aside_unservable`): a job a round plan finds no configuration
for (every config estimated at throughput 0, or made no progress where it ran: :mod:`estimator.progress`,
:data:`planner.servable.NO_USABLE_CONFIG`) is set aside with that reason, so it is not placed again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.state import JobState, disk_failure
from hops_slurm.slurm.api import SlurmError
from planner.servable import NO_USABLE_CONFIG

log = logging.getLogger(__name__)

T = TypeVar("T")

#: What the engine writes into the Comment of a job it set aside (the owner reads it in scontrol show job).
COMMENT_PREFIX = "hops: set aside: "
MAX_REASON = 240


def per_job_failure(exc: BaseException) -> bool:
    """True for failures that belong to one job; False for those of the whole engine (Slurm, the store's
    database, memory), which must stop the step instead of blaming a job."""
    return isinstance(exc, Exception) and not isinstance(exc, (SlurmError, MemoryError)) and not disk_failure(exc)


def reason_text(what: str, exc: BaseException | str) -> str:
    """A one-line reason of printable ASCII, at most :data:`MAX_REASON` characters (it ends up in a
    Slurm comment and in the admin's terminal; user text inside it is escaped, never raw)."""
    text = f"{what}: {exc}" if str(exc) else what
    out = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                  for c in text.replace("\n", " | "))
    return out if len(out) <= MAX_REASON else out[:MAX_REASON - 3] + "..."


def check_directives(job: JobState) -> HopsDirectives:
    """The job's stored (canonical) directives, parsed; raises ValueError naming the problem."""
    try:
        return HopsDirectives.from_canonical(job.directives)
    except Exception as exc:  # noqa: BLE001 - DirectiveError, pydantic's ValidationError, anything
        raise ValueError(f"its stored directives {job.directives[:120]!r} cannot be read back ({exc})") from None


def per_job(job: JobState, what: str, step: Callable[[], T], set_aside: Callable[[JobState, str], None]) -> T | None:
    """Run ``step`` for ``job``; on a failure of that job, set it aside (``set_aside(job, reason)``) and
    return None. Failures of the whole engine propagate. The reason is logged once: a job that fails again
    the same way (at every refresh, while what made it fail lasts) is not logged again."""
    try:
        return step()
    except Exception as exc:
        if not per_job_failure(exc):
            raise
        reason = reason_text(what, exc)
        if job.aside != reason:
            log.warning("job %s set aside: %s", job.job_id, reason)
        set_aside(job, reason)
        return None


def set_aside_unservable(tracked: Mapping[str, JobState], diagnostics: Mapping[str, object],
                         set_aside: Callable[[JobState, str], None]) -> list[str]:
    """Set aside every tracked job a planning's diagnostics (``unservable``) name as served by no
    configuration; returns their ids. Jobs too large for the cluster's nodes now are not set aside (the
    planner reconsiders them when nodes come back)."""
    unservable = diagnostics.get("unservable")
    out = []
    for job_id, reason in (dict(unservable) if isinstance(unservable, Mapping) else {}).items():
        js = tracked.get(str(job_id))
        if js is not None and not js.aside and str(reason).startswith(NO_USABLE_CONFIG):
            text = reason_text("not scheduled", str(reason))
            log.warning("job %s set aside: %s", js.job_id, text)
            set_aside(js, text)
            out.append(js.job_id)
    return out
