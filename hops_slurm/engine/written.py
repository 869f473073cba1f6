"""Which jobs a refresh writes: the engine state's row and the JobRecord of a job only when it changed.

Where it sits: the refresh's ``save`` and ``records`` steps (:mod:`hops_slurm.engine.refresh`) ask
:meth:`Written.due` which of the jobs they would write have changed since the refresh that last wrote
them, and tell :meth:`Written.wrote` once both are written. A job is written when

* anything of its :class:`hops_slurm.engine.state.JobState` changed other than :data:`CLOCK_FIELDS`
  (its state, config, placements, profiling, age, records, declaration, checkpoint marks, ...): every
  other field is compared with a deep copy of its value when the job was last written (equal values);
* it ended (always: its last record and its closed row);
* or its last write is :attr:`Written.every` seconds old (the clock fields brought up to date).

:data:`CLOCK_FIELDS` move with the clock alone while nothing else of the job changes: the accounting of a
job pending or running in the same config (:func:`hops_slurm.core.ledger.account` adds the time since
``last_seen``) and the processed samples of a running job (its run time at its rate). Leaving them
behind on disk for a while loses nothing: a restarted engine accounts from the ``last_seen`` it saved,
so the same seconds are counted, only at the next refresh; processed samples are recomputed from the
runs at every refresh. ``hops-slurm queue`` extrapolates a pending job's wait itself; what it shows of a
running job's processed samples, and ``records.sqlite`` of it, is at most :attr:`Written.every` old
(the engine passes its round length). Before, every refresh wrote every job's row and record.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from hops_slurm.engine.state import JobState

#: fields of a job's state that move with the clock alone (see the module docstring)
CLOCK_FIELDS = frozenset({"last_seen", "wait", "run_time", "gpu_seconds", "processed"})
_OTHERS = attrgetter(*(f.name for f in dataclasses.fields(JobState) if f.name not in CLOCK_FIELDS))


def fingerprint(js: JobState) -> tuple[Any, ...]:
    """Every field of ``js`` but :data:`CLOCK_FIELDS` (their values as they are now: :func:`kept` copies them)."""
    got: tuple[Any, ...] = _OTHERS(js)
    return got


def kept(fp: tuple[Any, ...]) -> tuple[Any, ...]:
    """A deep copy of a :func:`fingerprint` (placements and probes are changed in place afterwards)."""
    copy: tuple[Any, ...] = pickle.loads(pickle.dumps(fp, protocol=5))
    return copy


@dataclass
class Written:
    """What the refresh last wrote of each job in play: job id -> (a copy of its :func:`fingerprint`, when)."""

    every: float  # seconds: a job's clock fields are written at least this often
    rows: dict[str, tuple[tuple[Any, ...], float]] = field(default_factory=dict)

    def due(self, jobs: Iterable[JobState], now: float) -> list[tuple[JobState, tuple[Any, ...]]]:
        """The jobs of ``jobs`` to write at ``now`` (the module docstring), each with its fingerprint."""
        out = []
        for js in jobs:
            fp = fingerprint(js)
            last = self.rows.get(js.job_id)
            if js.ended is not None or last is None or now - last[1] >= self.every or last[0] != fp:
                out.append((js, fp))
        return out

    def wrote(self, jobs: Iterable[tuple[JobState, tuple[Any, ...]]], now: float) -> None:
        """``jobs`` (from :meth:`due`) are written; an ended job is forgotten."""
        for js, fp in jobs:
            if js.ended is not None:
                self.rows.pop(js.job_id, None)
            else:
                self.rows[js.job_id] = (kept(fp), now)

    def forget(self, job_id: str) -> None:
        """Write the job at the next refresh whatever changed (its row was written by someone else)."""
        self.rows.pop(job_id, None)
