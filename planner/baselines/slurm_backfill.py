"""The status quo an HPC site runs today: Slurm's age priority with EASY backfill, as a baseline policy.

Data flow: the simulator (or engine) calls :meth:`SlurmBackfillPolicy.plan` every round and whenever
GPUs fall idle (Slurm's scheduler runs on job completion too). What it models:

- **Priority by age** (multifactor priority with only the age factor): pending jobs in submit order.
- **Rigid requests** at the job's *largest* acceptable GPU count (a Slurm user asks for what they
  would like; Slurm cannot shrink a request).
- **No preemption**: a running job keeps its nodes until it ends.
- **Type-blind placement**: nodes in cluster order (Slurm's node order), one GPU type per job (at a
  site each GPU type forms its own partition; the job goes to the first partition where it fits):
  a single node if one can hold the job (the first such node), otherwise the type's nodes in order.
  Throughput never enters the choice, with one exception, what its user would do: a type where the
  job cannot run (its estimate there is 0: it made no progress there, or the model does not fit) is
  skipped, as a user resubmits a job that failed on one partition to the others; a running job that
  makes no progress is requeued, and a job no type can run is named ``unservable``
  (:data:`planner.servable.NO_USABLE_CONFIG`: the backend sets it aside).
- **EASY backfill** (Lifka '95; Slurm's sched/backfill): the first job in the queue that cannot start
  gets a reservation at the earliest time enough GPUs free up (running jobs end at start + time
  limit); a later job may start now only if it fits now and either ends before that time or leaves
  the reserved GPUs free. The time limit is the job's own (``JobView.time_limit``: a replayed export's
  recorded ``Timelimit``) when known, else its expected run time ``age`` (the eq. 9 estimate) times
  ``time_limit_factor`` (users' limits usually overestimate; 1.0 by default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from planner.baselines.common import free_by_node, take
from planner.eligible import confine
from planner.servable import NO_USABLE_CONFIG
from planner.views import ClusterView, Config, JobView, NodeView, Plan, Policy, freeze_config

log = logging.getLogger(__name__)


def place_first_fit(free: Mapping[str, int], cluster: ClusterView, gpus: int,
                    usable: Callable[[Config], bool] | None = None) -> Config | None:
    """Type-blind placement: for each GPU type in cluster order, the first node that can hold the job,
    else that type's nodes in order, each filled with its free GPUs; ``None`` if no type has room.
    ``usable``: configs it answers False for are passed over (where the job cannot run)."""
    for t in cluster.gpu_types:
        nodes = cluster.nodes_of_type(t)
        for n in nodes:
            if free.get(n.name, 0) >= gpus:
                config = freeze_config({n.name: gpus})
                if usable is None or usable(config):
                    return config
    for t in cluster.gpu_types:
        nodes = cluster.nodes_of_type(t)
        if sum(free.get(n.name, 0) for n in nodes) >= gpus:
            config = _fill_in_order(free, nodes, gpus)
            if usable is None or usable(config):
                return config
    return None


def runs_on(job: JobView) -> Callable[[Config], bool]:
    """Whether ``job`` can run on a config: its estimate there is positive (0: no progress, or no fit)."""
    def usable(config: Config) -> bool:
        try:
            rate = float(job.throughput(config))
        except Exception:  # noqa: BLE001 - an estimate that fails says nothing against the config
            return True
        return not rate <= 0.0
    return usable


def _fill_in_order(free: Mapping[str, int], nodes: tuple[NodeView, ...], gpus: int) -> Config:
    config: dict[str, int] = {}
    left = gpus
    for n in nodes:
        got = min(free.get(n.name, 0), left)
        if got > 0:
            config[n.name] = got
            left -= got
        if left == 0:
            break
    return freeze_config(config)


@dataclass
class SlurmBackfillPolicy(Policy):
    """Age priority + EASY backfill, rigid largest request, no preemption, type-blind placement.

    Diagnostics keys: ``queue`` (pending job ids in priority order), ``started`` (jobs started in
    queue order), ``backfilled`` (jobs started ahead of the reserved job), ``reservation``
    (``{"job", "start", "config"}`` or ``None``).
    """

    time_limit_factor: float = 1.0
    name: str = "slurm-backfill"
    supports_fragment_plans: bool = True
    _ends: dict[str, tuple[Config, float]] = field(default_factory=dict, repr=False)  # running: config, end

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        free = free_by_node(cluster)
        assignments: dict[str, Config | None] = {}
        pending: list[JobView] = []
        running_now: dict[str, tuple[Config, float]] = {}
        unservable: dict[str, str] = {}
        for job in jobs:
            if job.current and not fragment and not runs_on(job)(job.current):
                assignments[job.job_id] = None  # no progress where it runs: requeued, placed elsewhere
                pending.append(job)
            elif job.current:
                assignments[job.job_id] = job.current
                if not fragment:
                    take(free, job.current)  # round plans count running jobs' GPUs as free: no preemption
                start = now - job.run_time
                running_now[job.job_id] = (job.current, start + self._limit(job))
            else:
                assignments[job.job_id] = None
                pending.append(job)
        if fragment:
            # running jobs are not in a fragment plan; their expected ends come from earlier calls
            running_now = {**self._ends, **running_now}
        pending = self.order(pending, jobs, now, cluster, fragment)

        whole = {n.name: n.total_gpus for n in cluster.nodes}
        started, backfilled = [], []
        reservation: dict[str, object] | None = None
        shadow_time = 0.0
        shadow_free: dict[str, int] = {}
        for job in pending:
            want = job.requirements[-1]
            usable = runs_on(job)
            view = confine(cluster, job)  # only its allowed nodes (planner.eligible; a partition's)
            config = place_first_fit(free, view, want, usable)
            if config is None and place_first_fit(whole, view, want, usable) is None:
                unservable[job.job_id] = (f"{NO_USABLE_CONFIG}: every placement of {want} GPU(s) Slurm would give "
                                          f"it is estimated at throughput 0 or made no progress (e.g. the model "
                                          f"cannot run on that many GPUs); allow other GPU counts")
                continue
            end = now + self._limit(job)
            if reservation is None:
                if config is not None:
                    take(free, config)
                    assignments[job.job_id] = config
                    running_now[job.job_id] = (config, end)
                    started.append(job.job_id)
                    continue
                found = self._reserve(view, free, running_now, want, now, usable)
                if found is None:
                    log.info("slurm-backfill: %s asks %d GPUs, more than can ever be free; skipped", job.job_id, want)
                    continue
                shadow_time, reserved, shadow_free = found
                reservation = {"job": job.job_id, "start": shadow_time, "config": reserved}
                continue
            if config is None:
                continue
            if end <= shadow_time:
                ok = True
            else:
                ok = all(shadow_free.get(n, 0) >= g for n, g in config.items())
            if ok:
                take(free, config)
                if end > shadow_time:
                    take(shadow_free, config)
                assignments[job.job_id] = config
                running_now[job.job_id] = (config, end)
                backfilled.append(job.job_id)
        self._ends = {jid: v for jid, v in running_now.items() if assignments.get(jid) or jid not in assignments}
        diagnostics: dict[str, object] = {
            "queue": [j.job_id for j in pending],
            "started": started,
            "backfilled": backfilled,
            "reservation": reservation,
            "unservable": unservable,
        }
        return Plan(assignments, diagnostics)

    def order(self, pending: list[JobView], jobs: tuple[JobView, ...], now: float, cluster: ClusterView,
              fragment: bool) -> list[JobView]:
        """The pending jobs in priority order: by age (submission), then id (Slurm's tie-break)."""
        return sorted(pending, key=lambda j: (j.submit_time, j.job_id))

    def _limit(self, job: JobView) -> float:
        if job.time_limit is not None:
            return max(job.time_limit, 0.0)
        return max(job.age, 0.0) * self.time_limit_factor

    @staticmethod
    def _reserve(
        cluster: ClusterView, free: Mapping[str, int], running: Mapping[str, tuple[Config, float]], want: int, now: float,
        usable: Callable[[Config], bool] | None = None,
    ) -> tuple[float, Config, dict[str, int]] | None:
        """Earliest time ``want`` GPUs can be placed as running jobs end: (time, config, GPUs free then
        outside the reservation)."""
        future = dict(free)
        config = place_first_fit(future, cluster, want, usable)
        when = now
        total = {n.name: n.total_gpus for n in cluster.nodes}
        for _jid, (held, end) in sorted(running.items(), key=lambda kv: (kv[1][1], kv[0])):
            if config is not None:
                break
            for n, g in held.items():
                if n in total:  # capped: a remembered job may have ended already (fragment plans); nodes
                    # outside ``cluster`` (a job's allowed ones) stay at their free GPUs now: never reserved
                    future[n] = min(future[n] + g, total[n])
            when = max(end, now)
            config = place_first_fit(future, cluster, want, usable)
        if config is None:
            return None
        rest = dict(future)
        take(rest, config)
        return when, config, rest
