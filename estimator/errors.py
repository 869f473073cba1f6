"""Errors raised by the estimator: the store (locked, corrupt, wrong schema) and estimates that
cannot be made (no profile, no calibration).

Every message says what is wrong and what to do about it; callers never get a silent default.
"""

from __future__ import annotations

from planner.errors import HopsError


class StoreError(HopsError):
    """The throughput store could not be opened, read or written."""


class StoreLockedError(StoreError):
    """Another writer holds the store, or SQLite stayed busy beyond the timeout."""


class StoreCorruptError(StoreError):
    """The store file is not a readable SQLite database of the expected shape."""


class SchemaVersionError(StoreError):
    """The store was written by a newer hops-slurm (schema version unknown here)."""


class EstimateUnavailable(HopsError):
    """No layer of the store can answer for this job/GPU type (not profiled, not calibrated)."""


class CalibrationMissing(EstimateUnavailable):
    """A GPU type has no B_link/B_net calibration, so multi-GPU theory estimates are impossible."""


def fresh_copy(exc: EstimateUnavailable) -> EstimateUnavailable:
    """A fresh copy of a remembered failure, to raise in its place. Raising one stored exception object
    again and again grows its traceback by every frame it passes through, and keeps those frames (and
    what they hold) alive: with 10,000 jobs of one unprofiled model asked at every refresh, the daemon
    grew by about 75 MB per refresh (docs/results/load.md)."""
    return type(exc)(*exc.args)
