"""Reads and idempotent changes of Slurm retried once: a transient failure of ``squeue``/``sinfo``/
``scontrol show`` or of an ``scontrol hold|release|update`` costs a retry, not a whole step.

Where it sits: the engine wraps its :class:`hops_slurm.slurm.api.SlurmApi` in :class:`RetryingReads`.
Reads are idempotent, and so are hold, release and setting job fields (doing them twice leaves the same
state), so one more try after ``pause`` seconds is safe; a second failure raises as before (the step
stops and the daemon repairs from the journal before the next one). Without the retry, a failure that
recurs every N calls livelocks a placement whose steps take exactly N calls: every attempt fails at
the same step (seen with the every-7th-call fault injector). Operations that are not idempotent
(requeuehold, a notice's signal, creating or deleting a reservation, cancel) are never retried here: each is journaled,
and a failed one is repaired from the journal, not repeated blindly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from hops_slurm.slurm.api import ProbeJob, SlurmApi, SlurmError, SlurmJob, SlurmNode, SlurmReservation

log = logging.getLogger(__name__)
T = TypeVar("T")


class RetryingReads:
    """A :class:`SlurmApi` that retries each read once after ``pause`` seconds."""

    def __init__(self, api: SlurmApi, pause: float = 1.0) -> None:
        self.inner = api
        self.pause = pause
        self.name = getattr(api, "name", "slurm")

    def _read(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except SlurmError as exc:
            log.warning("%s failed (%s); one more try", what, exc)
            time.sleep(self.pause)
            return fn()

    def __getattr__(self, name: str) -> Any:
        """The wrapped backend's list and script forms (``hold_all``, ``update_job_each``, ...:
        :mod:`hops_slurm.slurm.batch`), not retried: a refused list is tried again job by job there."""
        if name.endswith(("_all", "_each")) and not name.startswith("_"):
            return getattr(self.inner, name)
        raise AttributeError(name)

    # ----- reads, retried once --------------------------------------------------------------------
    def jobs(self) -> list[SlurmJob]:
        return self._read("reading jobs", self.inner.jobs)

    def job(self, job_id: str) -> SlurmJob | None:
        return self._read(f"reading job {job_id}", lambda: self.inner.job(job_id))

    def jobs_of(self, job_ids: Collection[str]) -> list[SlurmJob] | None:
        """The wrapped backend's read of some jobs, retried once; None where it has none (the listing then)."""
        some = getattr(self.inner, "jobs_of", None)
        if some is None:
            return None
        return self._read("reading jobs", lambda: some(job_ids))

    def nodes(self) -> list[SlurmNode]:
        return self._read("reading nodes", self.inner.nodes)

    def reservations(self) -> list[SlurmReservation]:
        return self._read("reading reservations", self.inner.reservations)

    # ----- idempotent changes, retried once ------------------------------------------------------------
    def hold(self, job_id: str) -> None:
        self._read(f"holding job {job_id}", lambda: self.inner.hold(job_id))

    def release(self, job_id: str) -> None:
        self._read(f"releasing job {job_id}", lambda: self.inner.release(job_id))

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._read(f"updating job {job_id}", lambda: self.inner.update_job(job_id, fields))

    # ----- changes that are not idempotent, never retried here ------------------------------------------

    def requeue_hold(self, job_id: str) -> None:
        self.inner.requeue_hold(job_id)

    def signal_job(self, job_id: str, signal: str) -> None:  # a second try would be a second notice
        self.inner.signal_job(job_id, signal)

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self.inner.create_reservation(name, nodes, users, flags)

    def delete_reservation(self, name: str) -> None:
        self.inner.delete_reservation(name)

    def cancel(self, job_id: str) -> None:
        self.inner.cancel(job_id)

    def submit_probe(self, probe: ProbeJob) -> str:  # a second try would submit a second probe
        return self.inner.submit_probe(probe)

    def now(self) -> float:
        return self.inner.now()
