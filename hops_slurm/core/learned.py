"""What the throughput store learned since the estimates were made, and the one rule that forgets it.

Where it sits: below both backends. The live engine (:mod:`hops_slurm.engine.estimates`) and the
simulator's fast path (:mod:`hops_slurm.sim.knowledge`) keep the job-view pipeline's estimates
(:data:`hops_slurm.core.jobview.Memo`, keyed by ``(what, signature, ...)``) and a cached view of the store
(:class:`estimator.snapshot.CachedSource`) while the store does not change. Each notes here the signature
of every probe result or runtime record it ingests (:meth:`Learned.add`); before the estimates are read
again, :meth:`Learned.forget` drops what those records changed: each such signature's snapshot and
estimates, and every estimate when the entity factors (what Hops learned about each node) moved. However
many records arrived in between, the caches are brought up to date once. Pure: no I/O, no clock.
"""

from __future__ import annotations

from typing import Protocol

from hops_slurm.core.jobview import Memo


class ForgettingSource(Protocol):
    """A cached view of the store (:class:`estimator.snapshot.CachedSource`)."""

    def forget(self, signature: str) -> None: ...

    def entity_factors(self) -> dict[str, float]: ...


class Learned:
    """The signatures learned since the last :meth:`forget`, and the entity factors as of it (None: not
    read yet, so the first :meth:`forget` after learning drops every estimate)."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.factors: dict[str, float] | None = None

    def add(self, signature: str) -> None:
        self.pending.add(signature)

    def forget(self, source: ForgettingSource, memo: Memo) -> None:
        """Drop from ``source`` and ``memo`` what the signatures learned since the last call changed."""
        if not self.pending:
            return
        for signature in self.pending:
            source.forget(signature)
        factors = source.entity_factors()
        if factors != self.factors:  # every job's estimates on those servers change
            memo.clear()
        else:
            for key in [k for k in memo if k[1] in self.pending]:
                del memo[key]
        self.factors = factors
        self.pending.clear()
