"""The simulated cluster: a discrete-event :class:`hops_slurm.core.interface.Backend` on a virtual clock.

Data flow: job specs (hops_slurm.sim.workload) arrive at their times -> the profiler queue (probe runs of
``probe_seconds`` on ``gpus_per_type`` dedicated GPUs of every type, in parallel across types, FIFO per type) -> ready
jobs are offered to the policy by the round loop -> :meth:`SimBackend.apply` starts, keeps or preempts them -> each
running job progresses at the ground-truth throughput of its actual placement (hops_slurm.sim.groundtruth), after a
restart cost when it (re)starts from a checkpoint -> completion releases its GPUs at once and closes its JobRecord.

What policies know comes from the production estimator (:mod:`hops_slurm.sim.knowledge`): a new model's probe
results go into a temporary throughput store when its probes end (a job whose owner already ran that model skips
probing, as on the live engine), and every running job reports a runtime record ``record_seconds`` after it
(re)starts, then every ``record_every_seconds``, and a last one since its last record when it stops (the recorder's
close), each with its own sample count; the store's type and entity layers learn from them.

Probe in place (the live engine's rule, :mod:`hops_slurm.engine.inplace`; ``SimSettings.probe_in_place``): the
simulated profiler's GPUs are dedicated (``[profiler] gpus_per_type`` per type, outside the cluster), so a new model
is always probed there, in parallel; its job is ready at once when the cluster has its smallest GPU count idle at its
arrival or its model's probes are over (planned with the fallback view until they are, and measured by its runtime
records), else when its probes end or, earlier, at the first planning that finds that many GPUs idle. With
``probe_in_place=False`` every job waits for its model's probes, the paper's order. Accounting (wait, run time,
GPU-seconds, placements) is :func:`hops_slurm.core.ledger.account`, the live engine's function. The views policies
plan with are made as the live engine makes them: each ready job is described as a
:class:`hops_slurm.core.jobview.KnownJob` (its ledger, declaration, config, processed samples and honesty factor) and
:func:`hops_slurm.core.jobview.job_views` makes its estimate (throughput, eq. 9 age, eq. 10 sensitivity, asked of the
estimator at every planning) and view. This module keeps only what a simulated cluster is: time, ground-truth
progress, probes and runtime records written into the store, arrivals and completions.

Costs (:mod:`hops_slurm.sim.costs`, the same model as the engine path's simulated slurmctld): a job
that starts holds its GPUs for the process start (plus its checkpoint load when it resumes) before it
progresses, a first start included; a preempted job gets a notice: it checkpoints and is requeued after
its checkpoint write, or ignores it, runs out the grace and loses its work since its last periodic
checkpoint (the run it ends keeps the plan's cause). The GPUs stay busy until the notice ends: a job placed on
them (or the moved job itself) waits for them, pending, as on Slurm. Policies never see ground truth: not the node
speeds, not the server kinds (only what the cluster file says Slurm shows, :meth:`ClusterSpec.view`).

Declarations (issue 16): a job's eq. 9 age is made from the samples its owner declares, corrected each
planning by its honesty factor as on the live engine (:mod:`hops_slurm.sim.declared`, the mixin
:class:`~hops_slurm.sim.declared.Declarations`). Each job's ``KnownJob.restart_cost`` is what the cost model
charges a move (its notice, then a start from its checkpoint) and ``unsaved`` the work a requeue now would lose.
"""

from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass, field

from estimator.honesty import HonestyParams
from hops_slurm.core.ledger import JobLedger, account
from hops_slurm.core.interface import Enactment, cause_of, seen_by_fragment_plan
from hops_slurm.core import processed
from hops_slurm.core.jobview import Estimate, KnownJob, estimate, fallback_age_of, job_views
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.sim.sim_aside import named_unservable, no_usable_config, placed_where_it_cannot_run, StallRule
from hops_slurm.sim.classes import confine, outside
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.costs import CostModel, JobProgress
from hops_slurm.sim.declared import Declarations
from hops_slurm.sim.fairshare import sim_standing
from hops_slurm.sim.groundtruth import GroundTruth, ideal_time
from hops_slurm.sim.knowledge import Knowledge
from hops_slurm.sim.split import splittable
from hops_slurm.sim.measure import runtime_record, signature_of
from hops_slurm.sim.workload import JobSpec
from planner.views import ClusterView, Config, JobView, Plan, freeze_config

log = logging.getLogger(__name__)
EPS = 1e-9
#: reference for "normalised cluster throughput": 1 GPU of this type on one server
REFERENCE_TYPE = "p100"


class PolicyPlanError(HopsError):
    """A policy returned a plan the cluster cannot enact (names the job and the reason)."""


@dataclass
class _Job:
    spec: JobSpec
    ready_at: float
    record: JobRecord
    ledger: JobLedger
    signature: str
    progress: JobProgress  # ground-truth progress, starts, notices and checkpoints (hops_slurm.sim.costs)
    config: Config | None = None  # placed: running, or waiting for its GPUs (a notice still holds them)
    running: bool = False  # started on its GPUs
    next_record: float = math.inf  # when its recorder writes the next runtime record
    last_record: float = 0.0  # when its recorder's last window of this run ended (its start before one)
    active_integral_at_submit: float = 0.0
    finished: bool = False
    ever_ran: bool = False

    @property
    def done(self) -> float:
        return self.progress.done

    @property
    def rate(self) -> float:
        return self.progress.rate


@dataclass
class SimSettings:
    #: what starts, notices and restarts cost (both simulated paths share it)
    costs: CostModel = field(default_factory=CostModel)
    max_seconds: float = 90 * 86400.0  # safety stop: a simulation running past this is a bug
    #: the whole cluster idle this long with ready jobs, no arrivals or probes left: the policy cannot
    #: place them (e.g. a rigid request outside its config space); they are CANCELLED and reported
    stall_seconds: float = 24 * 3600.0
    #: a running job's first runtime record comes this long after it (re)starts, then one every ...
    record_seconds: float = 300.0
    record_every_seconds: float = 3600.0
    #: the defences against understated samples (estimator.honesty); enabled=False: declared ages as is
    honesty: HonestyParams = field(default_factory=HonestyParams)
    #: a job of a model without data starts at once on idle GPUs (the live engine's [engine] probe_in_place)
    probe_in_place: bool = True


@dataclass
class SimBackend(Declarations):
    """The simulated cluster behind :class:`hops_slurm.core.interface.Backend` (see the module docstring).

    After a run: :meth:`job_records` (one JobRecord per job), ``series`` (time, GPUs in use,
    normalised throughput) and ``knowledge`` (the store and estimator: what the scheduler learned;
    :meth:`close` removes its temporary store).
    """

    cluster: ClusterSpec
    jobs: tuple[JobSpec, ...]
    settings: SimSettings = field(default_factory=SimSettings)

    def __post_init__(self) -> None:
        self.truth = GroundTruth()
        for spec in self.jobs:
            self.truth.check_model(spec.model)
        self.speeds = self.cluster.node_speeds()
        self.capacity = {name: kind.gpus for name, kind in self.cluster.nodes()}
        self.order = {name: i for i, (name, _k) in enumerate(self.cluster.nodes())}
        self.knowledge = Knowledge(self.cluster.view(), self.truth)
        self._profiled_at: dict[str, float] = {}  # signature -> when its probes finished
        self._probes_due: list[tuple[float, str, str, float]] = []  # (end, signature, model, start): not yet ingested
        self.gpus_per_type: dict[str, int] = {}
        for kind in self.cluster.server_kind:
            self.gpus_per_type[kind.gpu_type] = self.gpus_per_type.get(kind.gpu_type, 0) + kind.gpus * kind.count
        self.t = 0.0
        self._pending_arrivals = sorted(self.jobs, key=lambda j: (j.arrival, j.job_id))
        self._next_arrival = 0
        self._profiler_free = {t: [0.0] * self.cluster.profiler.gpus_per_type for t in self.cluster.gpu_types}
        self.active: dict[str, _Job] = {}
        self.finished: dict[str, _Job] = {}
        self._active_integral = 0.0
        self._stall = StallRule(self.settings.stall_seconds)
        self.cancelled: dict[str, _Job] = {}
        self.aside: dict[str, str] = {}  # job id -> why it was set aside (hops_slurm.sim.sim_aside), cancelled too
        self._refused: dict[str, set[tuple[tuple[str, int], ...]]] = {}  # job id -> configs where it cannot run
        self._views: dict[str, JobView] = {}  # the last planning's job views
        #: job id -> (when its notice ends, the GPUs it holds until then): preempted, still checkpointing
        #: or running out the grace
        self._drains: dict[str, tuple[float, Config]] = {}
        #: (time, GPUs in use, normalised throughput) after every change
        self.series: list[tuple[float, int, float]] = []
        ids = [spec.job_id for spec in self.jobs]
        if len(set(ids)) != len(ids):
            raise HopsError("workload has duplicate job ids; every job needs its own id")
        for spec in self.jobs:
            if spec.requirements[0] > sum(self.capacity.values()):
                raise HopsError(f"job {spec.job_id} needs at least {spec.requirements[0]} GPUs; the cluster has {sum(self.capacity.values())}")

    # --- Backend -----------------------------------------------------------------------------------
    def now(self) -> float:
        return self.t

    def done(self) -> bool:
        return not self.active and self._next_arrival >= len(self._pending_arrivals)

    def next_activity(self) -> float | None:
        times = [j.ready_at for j in self.active.values() if j.ready_at > self.t]
        if self._next_arrival < len(self._pending_arrivals):
            times.append(self._pending_arrivals[self._next_arrival].arrival)
        times += self._completion_times()
        times += [until for until, _c in self._drains.values()]
        return min(times) if times else None

    def _draining(self) -> dict[str, int]:
        """GPUs per node that preempted jobs hold until their notice ends."""
        used = dict.fromkeys(self.capacity, 0)
        for _until, config in self._drains.values():
            for node, g in config.items():
                used[node] += g
        return used

    def _held(self) -> dict[str, int]:
        """GPUs per node in use now: running jobs' and draining jobs'."""
        used = self._draining()
        for job in self.active.values():
            if job.running and job.config is not None:
                for node, g in job.config.items():
                    used[node] += g
        return used

    def _used(self) -> dict[str, int]:
        """GPUs per node a fragment plan may not use: placed jobs' (running or waiting) and draining ones'
        (at most the node's GPUs: a waiting job waits for draining GPUs), as the engine reads Slurm."""
        used = self._draining()
        for job in self.active.values():
            for node, g in (job.config or {}).items():
                used[node] += g
        return {n: min(g, self.capacity[n]) for n, g in used.items()}

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        used = self._used() if fragment else self._draining()  # a round plan re-plans the placed jobs' GPUs
        return self.cluster.view({n: max(0, self.capacity[n] - used[n]) for n in self.capacity})

    def _offered(self, fragment: bool) -> list[_Job]:
        """Jobs a planning offers to the policy: profiled, and (fragment plans) not running."""
        return [job for job in sorted(self.active.values(), key=lambda j: (j.spec.arrival, j.spec.job_id))
                if job.ready_at <= self.t + EPS and not (fragment and job.config is not None)]

    def _viewed(self, fragment: bool) -> list[_Job]:
        """Jobs a planning sees: those it may place, and (fragment plans) the running ones as context."""
        if not fragment:
            return self._offered(False)
        return [job for job in self._offered(False)
                if seen_by_fragment_plan(running=job.running, started=job.running,
                                         promised=job.config is not None and not job.running)]

    fair_share = sim_standing  # job id -> its owner's fair-share factor (hops_slurm.sim.fairshare)

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        """The views of :func:`hops_slurm.core.jobview.job_views` (the live engine's pipeline). A job still
        waiting for its probes stops waiting when its smallest GPU count is idle now (probe in place)."""
        if self.settings.probe_in_place:
            idle = self._idle_gpus()
            for job in self.active.values():
                if job.ready_at > self.t + EPS and idle >= min(job.spec.requirements):
                    job.ready_at = self.t
        done: dict[str, float] = {}  # each job's processed samples, once per planning
        histories = self.user_histories(done)
        costs = self.settings.costs
        known = [KnownJob(job_id=job.spec.job_id, user=job.spec.user, signature=job.signature,
                          requirements=job.spec.requirements, declared_samples=job.spec.declared,
                          submit_time=job.spec.arrival, ledger=job.ledger, current=job.config if job.running else None,
                          processed_samples=self.processed_samples(job, done),
                          age_factor=self.age_factor(job, histories, done), restart_cost=costs.move_cost(job.spec),
                          unsaved=0.0 if not job.running or costs.checkpoints_on_notice(job.spec)
                          else job.progress.unsaved_seconds(self.t), time_limit=job.spec.time_limit)
                 for job in self._viewed(fragment)]
        views = confine(job_views(known, self.knowledge.estimator, self.t, memo=self.knowledge.memo),
                        {j.spec.job_id: j.spec.classes for j in self.active.values()}, self.cluster)
        self._views = {v.job_id: v for v in views}
        return views

    def _check(self, plan: Plan, fragment: bool) -> dict[str, Config]:
        offered = {j.spec.job_id for j in self._offered(fragment)}
        placed: dict[str, Config] = {}
        for job_id, config in plan.placed().items():
            if job_id not in offered:
                raise PolicyPlanError(f"plan places job {job_id!r}, which was not offered to this planning")
            config = freeze_config(config)
            for node in config:
                if node not in self.capacity:
                    raise PolicyPlanError(f"plan puts job {job_id} on unknown node {node!r}")
            n = sum(config.values())
            if n not in self.active[job_id].spec.requirements:
                raise PolicyPlanError(
                    f"plan gives job {job_id} {n} GPUs; its requirement set is {self.active[job_id].spec.requirements}"
                )
            placed[job_id] = config
        if (broken := outside(placed, self._views)) is not None:
            raise PolicyPlanError(broken)
        # a fragment plan fills idle GPUs; a round plan's jobs wait for GPUs a notice still holds (as on Slurm)
        used = self._used() if fragment else dict.fromkeys(self.capacity, 0)
        touched = set()
        for config in placed.values():
            for node, g in config.items():
                used[node] += g
                touched.add(node)
        for node in sorted(touched, key=self.order.__getitem__):
            if used[node] > self.capacity[node]:
                raise PolicyPlanError(f"plan uses {used[node]} GPUs on {node}, which has {self.capacity[node]}")
        return placed

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        placed = self._check(plan, fragment)
        # no progress, no placement, whatever the policy (hops_slurm.sim.sim_aside): a job placed where its
        # estimate is 0 is not placed there (a running one is preempted), and set aside when the policy
        # places it there again
        for job_id, reason in placed_where_it_cannot_run(self._views, placed).items():
            refused = self._refused.setdefault(job_id, set())
            key = tuple(sorted(placed.pop(job_id).items()))
            if key in refused and job_id not in self._drains:
                self._set_aside(job_id, reason)
            refused.add(key)
        for job_id, reason in ({} if fragment else named_unservable(plan.diagnostics, placed)).items():
            if job_id in self.active and job_id not in self._drains:  # the policy's own verdict, at a round
                self._set_aside(job_id, reason)
        current = {j.spec.job_id: (j.config, j.running) for j in self.active.values() if j.config is not None}
        placed = splittable(placed, current, self._draining(), self.capacity, self.order, fragment=fragment)  # as Slurm splits
        result = Enactment()
        if not fragment:
            for job in list(self.active.values()):
                if job.config is None:
                    continue
                new = placed.get(job.spec.job_id)
                if new is not None and dict(new) == dict(job.config):
                    result.kept.append(job.spec.job_id)
                elif job.running:
                    self._preempt(job, cause_of(plan, job.spec.job_id))
                    result.preempted.append(job.spec.job_id)
                else:
                    job.config = None  # placed and still waiting for its GPUs: withdrawn, nothing to stop
            # a job no config serves is set aside (hops_slurm.sim.sim_aside), whatever the policy
            views = [v for v in self._views.values() if v.job_id in self.active and v.job_id not in self._drains]
            for job_id, reason in no_usable_config(views, self.cluster.view(), placed).items():
                self._set_aside(job_id, reason)
        for job_id, config in placed.items():
            job = self.active[job_id]
            if job.config is not None:
                continue  # kept
            job.config = config
            result.started.append(job_id)
        self._start_waiting()
        self._sample()
        return result

    def _set_aside(self, job_id: str, reason: str) -> None:
        """The job leaves the run, cancelled with ``reason`` (a running one stops at once: its GPUs free)."""
        job = self.active.pop(job_id)
        if job.running:
            self._last_window(job)
            account(job.ledger, self.t, "ENDED", {})
            job.progress.stop(self.t)
        job.config, job.running, job.next_record = None, False, math.inf
        job.record.state, job.record.end, job.record.aside = "CANCELLED", self.t, reason
        self.aside[job_id] = reason
        self.cancelled[job_id] = job

    def wait_until(self, t: float) -> None:
        if t > self.settings.max_seconds:
            stuck = ", ".join(
                f"{j.spec.job_id} (requirements {list(j.spec.requirements)}, {j.spec.model})"
                for j in list(self.active.values())[:5]
            )
            raise HopsError(
                f"simulation passed {self.settings.max_seconds / 86400:g} days of virtual time with "
                f"{len(self.active)} job(s) still active, e.g. {stuck}: the policy leaves them unplaced"
            )
        while self.t < t - EPS:
            nxt = t
            if self._next_arrival < len(self._pending_arrivals):
                nxt = min(nxt, self._pending_arrivals[self._next_arrival].arrival)
            for c in self._completion_times():
                nxt = min(nxt, c)
            for job in self.active.values():
                if job.running and job.progress.resume_at > self.t:
                    nxt = min(nxt, job.progress.resume_at)
            for until, _c in self._drains.values():
                nxt = min(nxt, until)
            self._progress(max(nxt, self.t))
            self._events()
        self._progress(max(self.t, t))
        self._events()
        self._stall.check(self, self.t)

    def _events(self) -> None:
        self._arrive()
        self._complete()
        self._end_drains()

    def stalled(self) -> bool:  # the stall rule's view (hops_slurm.sim.sim_aside.StallRule)
        return bool(self.active) and self._next_arrival >= len(self._pending_arrivals) and not self._probes_due \
            and not self._drains and all(j.config is None and j.ready_at <= self.t for j in self.active.values())

    def cancel_waiting(self) -> list[str]:
        for job_id in (ids := sorted(self.active)):
            job = self.cancelled[job_id] = self.active.pop(job_id)
            job.record.state = "CANCELLED"
        return ids

    # --- internals -------------------------------------------------------------------------------------
    def _completion_times(self) -> list[float]:
        out = []
        for job in self.active.values():
            at = job.progress.finish_time() if job.running else None
            if at is not None:
                out.append(max(self.t, at))
        return out

    def _progress(self, until: float) -> None:
        dt = until - self.t
        if dt <= 0:
            return
        self._active_integral += len(self.active) * dt
        for job in self.active.values():
            job.progress.advance(until)  # a draining job too: one that ignored its notice still runs
            if job.running and job.config is not None:
                account(job.ledger, until, "RUNNING", dict(job.config))
            else:
                account(job.ledger, until, "PENDING", {})
        self.t = until
        for job in self.active.values():
            while job.running and job.next_record <= self.t + EPS:
                self._record(job, job.next_record)
                job.next_record += self.settings.record_every_seconds
        while self._probes_due and self._probes_due[0][0] <= self.t + EPS:
            self._probed(*heapq.heappop(self._probes_due))

    def _idle_gpus(self) -> int:
        return sum(self.capacity.values()) - sum(self._used().values())

    def _probed(self, end: float, signature: str, model: str, start: float) -> None:
        """A model's probes ended: their results go into the store; its jobs without an eq. 9 age get one."""
        self.knowledge.probe(signature, model, at=start, probe_seconds=self.cluster.profiler.probe_seconds)
        for job in self.active.values():
            if job.signature == signature and job.record.age_estimate is None:
                job.record.age_estimate = estimate(signature, job.spec.declared, job.spec.requirements,
                                                   self.knowledge.estimator, self.knowledge.memo, job_id=job.spec.job_id).age

    def _record(self, job: _Job, at: float, window: float | None = None) -> None:
        """The job's recorder writes a window ending at ``at`` (``record_seconds`` long unless ``window``
        says); the engine ingests it (what a metrics file gives live) and adds it to the job's run."""
        assert job.config is not None
        nodes = sorted(job.config, key=self.order.__getitem__)
        types = {self.speeds[n].gpu_type for n in nodes}
        p = job.progress  # advanced to now: its count at ``at`` is less the progress since
        done = max(0.0, p.done - p.rate * max(0.0, min(self.t, p.halt_at) - max(at, p.resume_at)))
        rec = runtime_record(job.signature, job.spec.model, types.pop() if len(types) == 1 else "mixed", nodes[0],
                             gpus=sum(job.config.values()), nodes=len(nodes), throughput=job.rate,
                             window=self.settings.record_seconds if window is None else window, at=at, done=done)
        self.knowledge.ingest(rec)
        processed.note_window(job.ledger, processed.Window.of(rec), self.t)
        job.last_record = at

    def _arrive(self) -> None:
        while self._next_arrival < len(self._pending_arrivals) and self._pending_arrivals[self._next_arrival].arrival <= self.t + EPS:
            spec = self._pending_arrivals[self._next_arrival]
            self._next_arrival += 1
            signature = signature_of(spec.model, spec.user)
            in_place = self.settings.probe_in_place and self._idle_gpus() >= min(spec.requirements)
            if signature in self._profiled_at:  # its owner ran this model before: no probe (the engine's model cache)
                ready = max(spec.arrival, self._profiled_at[signature])
            else:
                ready = spec.arrival
                for slots in self._profiler_free.values():
                    i = min(range(len(slots)), key=lambda k: slots[k])
                    start = max(spec.arrival, slots[i])
                    slots[i] = start + self.cluster.profiler.probe_seconds
                    ready = max(ready, slots[i])
                if self.settings.probe_in_place:  # in the store when they end (a job may run before)
                    heapq.heappush(self._probes_due, (ready, signature, spec.model, spec.arrival))
                else:  # the paper's order: nobody plans with them before they end
                    self.knowledge.probe(signature, spec.model, at=spec.arrival,
                                         probe_seconds=self.cluster.profiler.probe_seconds)
                self._profiled_at[signature] = ready
            if in_place:
                ready = spec.arrival
            record = JobRecord(
                job_id=spec.job_id, name=spec.model, user=spec.user, submit=spec.arrival,
                requirements=list(spec.requirements), total_samples=spec.declared, time_limit=spec.time_limit,
            )
            job = _Job(spec, ready, record, JobLedger(last_seen=spec.arrival), signature,
                       JobProgress.of(spec, self.settings.costs), active_integral_at_submit=self._active_integral)
            record.age_estimate = estimate(signature, spec.declared, spec.requirements, self.knowledge.estimator,
                                           self.knowledge.memo, job_id=spec.job_id).age  # eq. 9 at arrival
            self.active[spec.job_id] = job

    def _complete(self) -> None:
        for job in list(self.active.values()):
            p = job.progress
            remaining = p.total - p.done
            if job.running and p.rate > 0 and self.t >= p.resume_at - EPS and remaining <= max(1e-9 * p.total, p.rate * 1e-6):
                self._finish(job)

    def _finish(self, job: _Job) -> None:
        """The job processed its last sample (running, or running out a notice it ignored): it ends."""
        self._last_window(job)
        account(job.ledger, self.t, "ENDED", {})
        job.progress.finish(self.t)
        job.config, job.running, job.next_record = None, False, math.inf
        job.finished = True
        job.record.end = self.t
        job.record.processed_samples = self.processed_samples(job)
        job.record.state = "COMPLETED"
        job.record.ideal_time = self._ideal_time(job)
        if job.record.age_estimate is None:  # ended before its model's probes (the engine's rule too)
            job.record.age_estimate = fallback_age_of(Estimate(age=j.record.age_estimate)
                                                      for j in (*self.finished.values(), *self.active.values()))
        self.finished[job.spec.job_id] = self.active.pop(job.spec.job_id)
        self._sample()

    def _start_waiting(self) -> None:
        """Start the placed jobs whose GPUs are free, in submission order, as Slurm starts released jobs
        (:meth:`hops_slurm.sim.slurmctld.SimSlurmctld._schedule`, the same rule): once no notice runs on
        their nodes (their own included; the engine places after the notices, so a job starts on the GPUs
        its plan counted free and Slurm's split is the planned one) and their GPUs fit."""
        held = self._held()
        noticed = {n for _until, config in self._drains.values() for n in config}
        for job in sorted(self.active.values(), key=lambda j: (j.spec.arrival, j.spec.job_id)):
            if job.config is None or job.running or job.spec.job_id in self._drains or noticed & set(job.config):
                continue
            if all(held[n] + g <= self.capacity[n] for n, g in job.config.items()):
                self._run(job, job.config)
                for n, g in job.config.items():
                    held[n] += g

    def _run(self, job: _Job, config: Config) -> None:
        """The job starts on its GPUs: its start cost (hops_slurm.sim.costs), then progress."""
        costs = self.settings.costs
        rate = self.truth.throughput(job.spec.model, config, self.speeds)
        cost = costs.start_cost(job.spec.model, from_checkpoint=job.progress.saved > 0, first=job.progress.starts == 0)
        job.progress.start(self.t, rate, cost)
        job.running = True
        job.next_record = job.progress.resume_at + self.settings.record_seconds
        job.last_record = job.progress.resume_at
        if not job.ever_ran:
            job.record.state = "RUNNING"
        job.ever_ran = True
        account(job.ledger, self.t, "RUNNING", dict(config))

    def _last_window(self, job: _Job) -> None:
        """The recorder's last window when the job stops (it ends, or is preempted): since its last record."""
        since = max(job.last_record, job.progress.resume_at)
        if job.running and job.config is not None and self.t - since > EPS:
            self._record(job, self.t, self.t - since)

    def _preempt(self, job: _Job, cause: str) -> None:
        """A preemption for ``cause``: the notice (hops_slurm.sim.costs); pending at once, GPUs busy until it ends."""
        assert job.config is not None
        self._last_window(job)
        job.progress.give_notice(self.t, job.spec, self.settings.costs)
        until = job.progress.requeue(self.t)
        account(job.ledger, self.t, "PENDING", {})
        job.ledger.placements[-1]["cause"] = cause  # the run it ends (a running job has one)
        self._drains[job.spec.job_id] = (until, job.config)
        job.config, job.running, job.next_record = None, False, math.inf
        if until <= self.t + EPS:
            self._end_drain(job.spec.job_id)

    def _end_drains(self) -> None:
        ended = [j for j, (until, _c) in self._drains.items() if until <= self.t + EPS]
        for job_id in sorted(ended):
            self._end_drain(job_id)
        if ended:
            self._start_waiting()
            self._sample()

    def _end_drain(self, job_id: str) -> None:
        """A notice ends: the job's process is gone and its GPUs free; what it did not checkpoint is lost
        (or, having ignored the notice, it processed its last sample first: it completes)."""
        self._drains.pop(job_id)
        job = self.active[job_id]
        notice = job.progress.notice
        if notice is not None and notice.completes:
            self._finish(job)
        else:
            job.progress.stop(self.t)

    def _ideal_time(self, job: _Job) -> float:
        """Themis T_id (:func:`hops_slurm.sim.groundtruth.ideal_time`), N = time-averaged active jobs over its life."""
        life = self.t - job.spec.arrival
        n_avg = max((self._active_integral - job.active_integral_at_submit) / life, 1.0) if life > 0 else 1.0
        return ideal_time(self.truth, self.gpus_per_type, job.spec.model, job.spec.requirements, job.spec.total_samples, n_avg)

    def _sample(self) -> None:
        used = sum(self._draining().values())
        norm = 0.0
        for job in self.active.values():
            if not job.running or job.config is None:
                continue
            used += sum(job.config.values())
            ref = self.truth.samples_per_second(job.spec.model, REFERENCE_TYPE, 1, False)
            if ref > 0:
                norm += job.rate / ref
        if self.series and abs(self.series[-1][0] - self.t) < EPS:
            self.series[-1] = (self.t, used, norm)
        else:
            self.series.append((self.t, used, norm))

    def _placement(self, p: dict) -> PlacementRecord:
        types = {self.speeds[n].gpu_type for n in p["config"]}
        return PlacementRecord(start=p["start"], end=p.get("end"), config=dict(p["config"]),
                               gpu_type=types.pop() if len(types) == 1 else "mixed",
                               preempted=bool(p.get("preempted")), cause=str(p.get("cause") or "") if p.get("preempted") else "")

    def job_records(self) -> list[JobRecord]:
        out = []
        for j in (*self.finished.values(), *self.cancelled.values(), *self.active.values()):
            j.record.start = j.ledger.first_start
            j.record.placements = [self._placement(p) for p in j.ledger.placements]
            out.append(j.record)
        return sorted(out, key=lambda r: (r.submit, r.job_id))

    def close(self) -> None:
        """Remove the temporary throughput store (the records stay readable)."""
        self.knowledge.close()


__all__ = ["SimBackend", "SimSettings", "PolicyPlanError"]
