"""Which jobs and nodes are Hops's: the Hops partitions of ``[slurm] partitions``, and nothing else.

Where it sits: between a Slurm backend (:class:`hops_slurm.slurm.api.SlurmApi`) and everything the engine
derives from its listings. :class:`ScopedSlurm` wraps the backend the engine reads (and ``hops-slurm
failopen`` its own) and marks every job whose partitions are none of the Hops partitions as *outside*
(:attr:`hops_slurm.slurm.api.SlurmJob.outside`): such a job is never a Hops job
(:attr:`~hops_slurm.slurm.api.SlurmJob.is_hops` is False), whatever its AdminComment says, so the
engine, failopen, offers, reservations and crash recovery never hold, release, place, requeue, reserve
or count it. It still holds GPUs like any other job: the listing keeps it, and free GPUs, the site's
limits and fair share count it. A pending job may list several partitions (``-p a,b``); it is a Hops
job when any of them is a Hops partition, and it may be placed on the nodes of those only
(:meth:`HopsScope.nodes_of`). The managed nodes are the union of the Hops partitions' nodes
(:meth:`HopsScope.managed`). Nothing here decides a plan or runs a command.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hops_slurm.slurm.api import SlurmApi, SlurmJob, SlurmNode

#: what a partition argument may be where nodes are filtered: one name, several, or None (every node)
PartitionSet = str | Collection[str] | None


def as_set(partition: PartitionSet) -> frozenset[str] | None:
    """``partition`` as a set of names (None: every partition)."""
    if partition is None:
        return None
    return frozenset((partition,)) if isinstance(partition, str) else frozenset(partition)


def node_in(node: SlurmNode, partition: PartitionSet) -> bool:
    """Whether ``node`` is in one of ``partition`` (None: always)."""
    names = as_set(partition)
    return names is None or not names.isdisjoint(node.partitions)


def listed_partitions(job: SlurmJob) -> tuple[str, ...]:
    """The partitions a job lists (a pending job may list several, comma-separated)."""
    return tuple(p for p in (s.strip() for s in job.partition.split(",")) if p)


@dataclass(frozen=True)
class HopsScope:
    """The Hops partitions, the default one first."""

    partitions: tuple[str, ...]

    def job_partitions(self, job: SlurmJob) -> tuple[str, ...]:
        """The Hops partitions among those ``job`` lists, in the job's order."""
        return tuple(p for p in listed_partitions(job) if p in self.partitions)

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(self.partitions)

    def inside(self, job: SlurmJob) -> bool:
        """Whether ``job`` is in a Hops partition (a job listing no partition at all is taken as in the
        default one, as Slurm places it; Slurm always names one)."""
        if job.partition in self.names:  # the common case, without splitting a list
            return True
        return not listed_partitions(job) or bool(self.job_partitions(job))

    def mark(self, job: SlurmJob) -> SlurmJob:
        """``job`` as the engine sees it: marked outside when none of its partitions is a Hops partition."""
        out = not self.inside(job)
        return job if job.outside == out else job.model_copy(update={"outside": out})

    def mark_all(self, jobs: Iterable[SlurmJob]) -> list[SlurmJob]:
        return [self.mark(j) for j in jobs]

    def managed(self, nodes: Iterable[SlurmNode]) -> list[str]:
        """The names of the nodes of the Hops partitions (their union), in Slurm's order."""
        return [n.name for n in nodes if node_in(n, self.partitions)]

    def nodes_of_partition(self, partition: str, nodes: Iterable[SlurmNode]) -> frozenset[str]:
        return frozenset(n.name for n in nodes if partition in n.partitions)

    def nodes_of(self, job: SlurmJob, nodes: Iterable[SlurmNode]) -> frozenset[str]:
        """The nodes ``job`` may be placed on: those of its Hops partitions (the default one's when it
        lists none)."""
        parts = self.job_partitions(job) or self.partitions[:1]
        return frozenset(n.name for n in nodes if node_in(n, parts))


class ScopedSlurm:
    """A :class:`SlurmApi` whose job reads mark the jobs outside the Hops partitions (:meth:`HopsScope.mark`);
    every other call goes to the wrapped backend unchanged."""

    def __init__(self, api: SlurmApi, scope: HopsScope) -> None:
        self.inner = api
        self.scope = scope
        self.name = getattr(api, "name", "slurm")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def jobs(self) -> list[SlurmJob]:
        return self.scope.mark_all(self.inner.jobs())

    def job(self, job_id: str) -> SlurmJob | None:
        got = self.inner.job(job_id)
        return None if got is None else self.scope.mark(got)

    def jobs_of(self, job_ids: Collection[str]) -> list[SlurmJob] | None:
        some = getattr(self.inner, "jobs_of", None)
        got = some(job_ids) if some is not None else None
        return None if got is None else self.scope.mark_all(got)

    def now(self) -> float:
        return self.inner.now()


__all__ = ["HopsScope", "PartitionSet", "ScopedSlurm", "as_set", "listed_partitions", "node_in"]
