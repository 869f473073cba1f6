"""Each job's restart cost for the live engine: measured per model signature, a site default before.

Where it sits: the engine (:mod:`hops_slurm.engine.engine`) ingests a job's runtime records each refresh;
:func:`hops_slurm.core.processed.note_window` gives the restart cost of each run at its first record
(seconds from Slurm's start of the run to its first progress, plus the notice before the requeue that
ended the run before it). :meth:`RestartCosts.observe` puts it into the throughput store under the job's
signature (the engine is the store's only writer; :mod:`estimator.restart_cost`); :meth:`RestartCosts.of`
is what the engine's job views carry as ``KnownJob.restart_cost`` and what the honesty check assumes of
a run without records yet: the store's summary for the job's signature, else ``[engine]
restart_cost_default``. A signature's summary is read once and kept until the engine records another
observation of it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

log = logging.getLogger(__name__)


class _Job(Protocol):
    job_id: str
    signature: str


class RestartCosts:
    """``store``: the engine's :class:`estimator.store.ThroughputStore` (None: none, the default for every
    job); ``writes``: False for a dry run (observations are not kept)."""

    def __init__(self, store: Any, default: float, *, writes: bool = True) -> None:
        self.store, self.default, self.writes = store, float(default), writes
        self._known: dict[str, float | None] = {}

    def observe(self, job: _Job, seconds: float, now: float) -> bool:
        """Keep one observed restart of ``job`` (True if kept: the job has a signature and the value is one
        a restart can take)."""
        if self.store is None or not self.writes or not job.signature:
            return False
        try:
            self.store.put_restart_cost(job.signature, seconds, measured_at=now)
        except ValueError as exc:  # a clock or record beyond any restart
            log.info("job %s: restart cost not kept (%s)", job.job_id, exc)
            return False
        self._known.pop(job.signature, None)
        log.info("job %s: restart cost %.1f s (start to first progress, notice included)", job.job_id, seconds)
        return True

    def of(self, job: _Job) -> float:
        """Seconds a restart costs ``job``: its signature's measured cost, else the default."""
        sig = job.signature
        if sig and self.store is not None:
            if sig not in self._known:
                self._known[sig] = self.store.restart_cost(sig)
            got = self._known[sig]
            if got is not None:
                return got
        return self.default


__all__ = ["RestartCosts"]
