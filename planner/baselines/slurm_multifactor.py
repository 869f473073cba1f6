"""The baseline a site runs: Slurm's multifactor priority with EASY backfill (``slurm-multifactor``).

Data flow: as :class:`planner.baselines.slurm_backfill.SlurmBackfillPolicy` (rigid largest request, no
preemption, type-blind first-fit placement, EASY backfill), with the queue ordered by Slurm's
priority/multifactor plugin instead of by age alone. Slurm's documentation
(https://slurm.schedmd.com/priority_multifactor.html, "Multifactor Job Priority Plugin") gives the job
priority as a weighted sum of factors, each in [0, 1]::

    priority = PriorityWeightAge       * age_factor
             + PriorityWeightFairshare * fair_share_factor
             + PriorityWeightJobSize   * job_size_factor
             + PriorityWeightPartition * partition_factor
             + PriorityWeightQOS       * qos_factor

read here as:

- **age**: time pending since submission / ``PriorityMaxAge``, capped at 1;
- **fair share**: the classic factor 2^(-U/S) (:func:`planner.fairshare.factors`): U the owner's GPU
  usage decayed with ``PriorityDecayHalfLife`` over everyone's, S their share (equal shares). Like
  slurmctld, the policy integrates usage itself every time it plans a round (slurmctld does so every
  ``PriorityCalcPeriod``; a round here is 6 minutes, its default is 5): the GPUs each running job
  holds times the time since the last round, decayed;
- **job size**: the job's GPUs over the cluster's (larger first, Slurm's default), or with
  ``favor_small`` (``PriorityFavorSmall=YES``) one minus that;
- **partition** and **QOS**: one partition and one QOS in simulation, so constant factors
  (``partition_factor``, ``qos_factor``) that shift every job alike.

Ties go to the earlier submission, then the lower id (the order Slurm evaluates jobs of equal priority).
Default weights are a common site setting (fair share dominant, age and size next: e.g. the CSCS and
UB-CCR configurations Slurm sites publish); ``PriorityMaxAge`` and ``PriorityDecayHalfLife`` are Slurm's
defaults (7 days each). Keyword options of :func:`planner.policies.make_policy` override them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from planner.baselines.slurm_backfill import SlurmBackfillPolicy
from planner.fairshare import factors
from planner.views import ClusterView, JobView, Plan

DAY = 86400.0


@dataclass
class SlurmMultifactorPolicy(SlurmBackfillPolicy):
    """Multifactor priority + EASY backfill (see the module docstring). Diagnostics as
    :class:`SlurmBackfillPolicy`'s, plus ``priorities`` (job id -> its multifactor priority)."""

    weight_age: float = 1000.0
    weight_fairshare: float = 10000.0
    weight_job_size: float = 1000.0
    weight_partition: float = 1000.0
    weight_qos: float = 0.0
    max_age: float = 7 * DAY
    decay_half_life: float = 7 * DAY
    favor_small: bool = False
    partition_factor: float = 1.0
    qos_factor: float = 0.0
    name: str = "slurm-multifactor"
    _usage: dict[str, float] = field(default_factory=dict, repr=False)  # user -> decayed GPU-seconds
    _last: float | None = field(default=None, repr=False)
    _priorities: dict[str, float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for key in ("weight_age", "weight_fairshare", "weight_job_size", "weight_partition", "weight_qos"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 4294967295):
                raise ValueError(f"{key} must be a number in [0, 4294967295] (a PriorityWeight*), got {value!r}")
        for key in ("max_age", "decay_half_life"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= 3650 * DAY):
                raise ValueError(f"{key} must be seconds in (0, 3650 days], got {value!r}")

    def _account(self, jobs: tuple[JobView, ...], now: float) -> None:
        """Decay every user's usage to ``now`` and add what the running jobs held since the last round."""
        if self._last is not None and now > self._last:
            dt = now - self._last
            decay = 2.0 ** (-dt / self.decay_half_life)
            self._usage = {u: v * decay for u, v in self._usage.items()}
            for job in jobs:
                if job.current:
                    # the held GPUs over the interval, each second decayed to now (the exact integral)
                    gpus = float(sum(job.current.values()))
                    k = math.log(2.0) / self.decay_half_life
                    self._usage[job.user] = self._usage.get(job.user, 0.0) + gpus * (1.0 - math.exp(-k * dt)) / k
        if self._last is None or now > self._last:
            self._last = now

    def priority(self, job: JobView, now: float, total_gpus: int, fair: dict[str, float]) -> float:
        age = min(max(now - job.submit_time, 0.0) / self.max_age, 1.0)
        size = min(job.requirements[-1] / max(total_gpus, 1), 1.0)
        if self.favor_small:
            size = 1.0 - size
        return (self.weight_age * age + self.weight_fairshare * fair.get(job.user, 1.0)
                + self.weight_job_size * size + self.weight_partition * self.partition_factor
                + self.weight_qos * self.qos_factor)

    def order(self, pending: list[JobView], jobs: tuple[JobView, ...], now: float, cluster: ClusterView,
              fragment: bool) -> list[JobView]:
        if not fragment:  # round plans see every running job: usage is counted there
            self._account(jobs, now)
        fair = factors(self._usage, users=[j.user for j in jobs])
        total = cluster.total_gpus
        prio = {j.job_id: self.priority(j, now, total, fair) for j in pending}
        self._priorities = prio
        return sorted(pending, key=lambda j: (-prio[j.job_id], j.submit_time, j.job_id))

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        out = super().plan(cluster, jobs, now, fragment=fragment)
        out.diagnostics["priorities"] = dict(self._priorities)
        return out
