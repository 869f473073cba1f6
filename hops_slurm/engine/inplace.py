"""Probe in place: which new jobs start at once, measured by their own runtime records, and which wait for
probe jobs (docs/design.md, "Probe in place: beyond the paper").

Where it sits: :class:`hops_slurm.engine.profiling.ProfilerFlow` asks :func:`decide` about each job of
a model with no data on some GPU type of the Hops partition, at every refresh until the job is
schedulable; the engine (:mod:`hops_slurm.engine.engine`) describes the refresh's cluster as a
:class:`Capacity`. The simulator's fast path (:mod:`hops_slurm.sim.sim_backend`) applies the same rule.

The rule, for a job whose model (owner, model, batch size) has no throughput data on some GPU type:

1. **In place** (schedulable now, planned with the fallback view until data arrives, its runtime
   records measure it where it runs) when the Hops partition has at least the job's smallest GPU count
   idle at this refresh, or its model already has data on some type (it is planned with that, carried
   to the other types by :mod:`estimator.extrapolate`), or nothing is left to probe (every probe of the
   model failed). No probe job goes to a node the Hops partition uses: it would take a GPU a planned
   job needs (a probe is an ordinary Slurm job; on an idle cluster Slurm starts it at once, before the
   plan's jobs are released). Probes still run, in parallel and never waited for, on **dedicated
   profiler nodes** (nodes of the profiler partition outside the Hops partition) of the types missing.
2. **Probed first** otherwise: no data and no idle GPU, so the job would wait anyway; its probes (one
   per missing type, as the paper's profiler) give it data before it is planned. At every later
   refresh the rule is asked again: once enough GPUs are idle the job goes in place, and its probes
   still pending on shared nodes are cancelled (those already running, or on dedicated nodes, finish
   and are ingested).

With ``[engine] probe_in_place = false`` every new model is probed first, as in the paper (§3.1). Pure
(:func:`probe_capacity` reads a snapshot already taken).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hops_slurm.slurm.scope import PartitionSet, node_in

if TYPE_CHECKING:
    from hops_slurm.slurm.snapshot import Snapshot


@dataclass(frozen=True)
class Capacity:
    """What one refresh saw: GPUs idle in the Hops partition (the fragment view: GPUs promised to placed
    jobs not yet started count as taken) and the GPU types of usable dedicated profiler nodes."""

    idle_gpus: int = 0
    dedicated: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProbeDecision:
    in_place: bool  # schedulable now (True) or waits for the probes below (False)
    probe: tuple[str, ...]  # GPU types to submit a probe job for

    def dedicated(self, capacity: Capacity) -> set[str]:
        """The probed types that go to dedicated profiler nodes (no reservation: see the module docstring)."""
        return {t for t in self.probe if t in capacity.dedicated}


def probe_capacity(snap: Snapshot, partition: PartitionSet, profiler_partition: str,
                   promised: Mapping[str, Mapping[str, int]] | None = None) -> Capacity:
    """The :class:`Capacity` of one refresh's snapshot: idle GPUs of ``partition`` (less those ``promised``
    to placed jobs not yet started) and the GPU types of usable nodes of ``profiler_partition`` that are
    not in ``partition`` (one Hops partition or several)."""
    free = snap.free_gpus(promised=promised)  # the fragment plan's view of the same snapshot
    idle = sum(free[n.name] for n in snap.nodes if n.usable and n.gpus_total and node_in(n, partition))
    dedicated = frozenset(n.gpu_type for n in snap.nodes if n.usable and n.gpus_total and n.gpu_type
                          and profiler_partition in n.partitions and not node_in(n, partition))
    return Capacity(idle, dedicated)


def idle_enough(capacity: Capacity, smallest: int) -> bool:
    """Whether the Hops partition has the job's smallest GPU count idle (anywhere: a job without data is
    planned with sensitivity 1.0, so a config over several nodes serves it)."""
    return capacity.idle_gpus >= max(1, smallest)


def decide(*, gpu_types: Sequence[str], known_types: Collection[str], failed_types: Collection[str],
           smallest: int, capacity: Capacity) -> ProbeDecision:
    """The rule of the module docstring for one job. ``known_types``: GPU types its model has data on (the
    engine's model cache); ``failed_types``: types the model's probes failed on (not probed again);
    ``smallest``: the job's smallest GPU count."""
    missing = tuple(t for t in gpu_types if t not in known_types and t not in failed_types)
    if known_types or not missing or idle_enough(capacity, smallest):
        return ProbeDecision(True, tuple(t for t in missing if t in capacity.dedicated))
    return ProbeDecision(False, missing)


__all__ = ["Capacity", "ProbeDecision", "decide", "idle_enough", "probe_capacity"]
