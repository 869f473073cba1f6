"""A simulated slurmctld: the :class:`hops_slurm.slurm.api.SlurmApi` of a simulated cluster, on a virtual clock.

Where it sits: the production :class:`hops_slurm.engine.engine.Engine` (refresh, profiling, planning,
enactment, settle, reconcile, records) talks to Slurm only through ``SlurmApi``; this class answers
that interface from the simulator's model of a cluster (:class:`hops_slurm.sim.cluster_spec.ClusterSpec`) and
its ground truth (:class:`hops_slurm.sim.groundtruth.GroundTruth`) instead of from slurmctld. It is a
model, not Slurm, and says so in its name; :mod:`hops_slurm.sim.engine_run` drives the engine against it.

What it models (what the engine relies on, as the live tests verify it of real Slurm):

* **Submission.** Workload jobs arrive at their times as the submit hook leaves them: pending, held by
  the user (priority 0), their ``#HOPS`` directives canonical in ``AdminComment``. A simulator model
  name becomes a directive model name (:func:`directive_model`).
* **Scheduling.** A released job in its own reservation starts at the next read when the GPUs it asks
  for (``TresPerNode`` or a per-job count split greedily in node order, as 22.05 does) are free on its
  required nodes and no notice of its own still runs; it then progresses at the ground-truth throughput
  of that placement (degraded nodes included), after its start cost, and completes when its true
  samples are done.
* **Costs** (:mod:`hops_slurm.sim.costs`, the fast path's model): a start costs the process start (and
  the checkpoint load when resuming). ``signal`` gives a running job the preemption notice: a job that
  checkpoints on notice stops and writes its checkpoint, one that ignores it runs on. ``requeuehold``
  shows the job pending (held) at once, but its GPUs stay allocated on their nodes until the notice
  ends (the write, or the whole grace: the engine's wait before it requeues, at one virtual instant);
  then work it did not checkpoint is lost, and released jobs waiting for those GPUs start. A requeue
  without a signal first gives the notice at the requeue (Slurm sends SIGTERM on requeue and waits
  KillWait; ``notice_on_requeue=False``: killed at once, losing its work since its last checkpoint).
* **Probes.** ``submit_probe`` queues a probe job on the profiler's GPUs of its type (``gpus_per_type``
  slots, first come first served; listed as a node ``profiler-<type>`` of the ``profiler`` partition alone,
  so the engine knows them for dedicated probe nodes); ``probe_seconds`` later it writes the record ``python -m
  profiler.probe`` would write (:func:`hops_slurm.sim.measure.probe_result`, from ground truth) into the
  owner's place, and the engine reads, validates and ingests it as it would a real one.
* **Runtime records.** A running job appends a :class:`profiler.records.RuntimeRecord` line (from ground
  truth, :func:`hops_slurm.sim.measure.runtime_record`) to the file its environment names
  (``HOPS_METRICS_FILE`` in ``<env_dir>/<job>.env``, written by the enactor) ``record_seconds`` after it
  (re)starts, then every ``record_every_seconds``, and a last one since its last record when it ends or
  is requeued (the recorder's close), each with the job's own sample count; the engine ingests them.
* **Notice marks.** A job with a metrics file says it listens for the notice when it (re)starts, as
  :mod:`profiler.preempt` does; a signalled job that checkpoints on notice answers at once with a
  "saved" mark (its write's cost is the drain above), one that ignores it writes nothing and the engine
  waits out its grace. :meth:`sleep` is the enactor's pause while it waits: virtual time.
* **Ended jobs** stay listed ``min_job_age`` seconds (Slurm's MinJobAge), then are forgotten.

Not modelled: Slurm's own scheduler for jobs outside reservations (every simulated job is a Hops job),
requeue's EligibleTime, node failures, users. Owners are names only: :meth:`owner` maps every owner to
the uid and gid of the process, so the engine's files in a job's place are "the owner's".
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.directives import COMMENT_PREFIX, HopsDirectives
from hops_slurm.engine.userfiles import Owner
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.costs import CostModel, JobProgress
from hops_slurm.sim.groundtruth import GroundTruth, batch_size, family
from hops_slurm.sim.measure import params_of, probe_result, runtime_record
from hops_slurm.sim.workload import JobSpec
from hops_slurm.slurm.api import ProbeJob, SlurmCommandError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.enact import greedy_split, read_job_env
from profiler.records import CheckpointMark, ProbeFailure
from profiler.signature import job_signature

EPS = 1e-9
#: the virtual clock's epoch: simulated time 0 is this Unix time (the engine treats 0 as "unset")
EPOCH = 1_700_000_000.0


def directive_model(model: str) -> str:
    """A simulator model name as a ``#HOPS model=`` name: ``LM (batch size 10)`` -> ``lm-batch-size-10``."""
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")


@dataclass
class SimCtlSettings:
    #: what starts, notices and restarts cost (the fast path's model, hops_slurm.sim.costs)
    costs: CostModel = field(default_factory=CostModel)
    #: a requeue without a signal before it gives the notice then (else it kills at once)
    notice_on_requeue: bool = True
    record_seconds: float = 300.0
    record_every_seconds: float = 3600.0
    min_job_age: float = 300.0


@dataclass
class _Run:
    """A workload job's ground truth beside what Slurm shows of it."""

    spec: JobSpec
    job: SlurmJob
    progress: JobProgress  # its true progress, starts, notices and checkpoints (hops_slurm.sim.costs)
    next_record: float = float("inf")
    metrics_file: str = ""
    signature: str = ""
    ever_ran: bool = False


@dataclass
class _Probe:
    probe: ProbeJob
    job: SlurmJob
    ends: float = float("inf")


@dataclass
class SimSlurmctld:
    """See the module docstring. ``env_dir``: where the engine writes job environment files."""

    cluster: ClusterSpec
    workload: Sequence[JobSpec]
    env_dir: Path
    settings: SimCtlSettings = field(default_factory=SimCtlSettings)
    partition: str = "hops"
    name: str = "simulated"

    def __post_init__(self) -> None:
        self.truth = GroundTruth()
        self.speeds = self.cluster.node_speeds()
        self.order = {name: i for i, (name, _k) in enumerate(self.cluster.nodes())}
        self._nodes = [SlurmNode(name=name, state="idle", gpu_type=kind.gpu_type, gpus_total=kind.gpus,
                                 partitions=(self.partition,), features=tuple(kind.features), cpus=4 * kind.gpus)
                       for name, kind in self.cluster.nodes()]
        self._total = {n.name: n.gpus_total for n in self._nodes}
        self._listed: tuple[tuple[tuple[int, ...], ...], list[SlurmNode]] | None = None  # nodes() as last listed
        self.t = 0.0
        self._arrivals = sorted(self.workload, key=lambda j: (j.arrival, j.job_id))
        self._next_arrival = 0
        self.runs: dict[str, _Run] = {}
        self.probes: dict[str, _Probe] = {}
        self._slots = {t: [0.0] * self.cluster.profiler.gpus_per_type for t in self.cluster.gpu_types}
        self._resv: dict[str, SlurmReservation] = {}
        #: job id -> (when its notice ends, the GPUs it holds until then): requeued, still checkpointing or
        #: running out the grace
        self._drains: dict[str, tuple[float, dict[str, tuple[int, ...]]]] = {}
        self._ended_at: dict[str, float] = {}
        self._next_id = 1
        #: (directive model, batch size) -> the simulator's model (:func:`directives`)
        self.models = {(directive_model(family(j.model)), batch_size(j.model)): j.model for j in self.workload}
        self.calls: dict[str, int] = {}
        self.ended = 0  # workload jobs ended so far
        self.specs: dict[str, JobSpec] = {}  # Slurm job id -> its workload job (kept after Slurm forgets it)
        for spec in self.workload:
            self.truth.check_model(spec.model)
            directives(spec)  # a job the hook would refuse is an error of the workload, named here

    # ----- the clock and the workload ------------------------------------------------------------------
    def now(self) -> float:
        return EPOCH + self.t

    def done(self) -> bool:
        return self._next_arrival >= len(self._arrivals) and all(r.job.state not in ("PENDING", "RUNNING")
                                                                  for r in self.runs.values())

    def next_event(self) -> float | None:
        """The next simulated time something happens by itself (an arrival, a completion, a probe's end)."""
        times = [p.ends for p in self.probes.values() if p.job.state in ("PENDING", "RUNNING")]
        if self._next_arrival < len(self._arrivals):
            times.append(self._arrivals[self._next_arrival].arrival)
        times += [c for c in (self._completion(r) for r in self.runs.values()) if c is not None]
        times += [until for until, _a in self._drains.values()]
        return min(times) if times else None

    def advance(self, until: float) -> None:
        """Move the clock to ``until`` (simulated seconds), event by event."""
        while self.t < until - EPS:
            nxt = min([until, *(e for e in (self.next_event(),) if e is not None and e > self.t + EPS),
                       *(r.progress.resume_at for r in self.runs.values()
                         if r.job.state == "RUNNING" and r.progress.resume_at > self.t + EPS),
                       *(r.next_record for r in self.runs.values() if r.job.state == "RUNNING" and r.next_record > self.t + EPS)])
            self._progress(max(nxt, self.t))
            self._events()
        self._events()

    def _progress(self, until: float) -> None:
        for r in self.runs.values():
            r.progress.advance(until)  # a requeued job that ignored its notice runs until the grace's end
        self.t = until

    def _events(self) -> None:
        while self._next_arrival < len(self._arrivals) and self._arrivals[self._next_arrival].arrival <= self.t + EPS:
            self._arrive(self._arrivals[self._next_arrival])
            self._next_arrival += 1
        for r in self.runs.values():
            while r.job.state == "RUNNING" and r.next_record <= self.t + EPS:
                self._write_record(r, r.next_record)
                r.next_record += self.settings.record_every_seconds
            c = self._completion(r)
            if c is not None and c <= self.t + EPS:
                self._end(r.job.job_id, "COMPLETED")
        self._end_drains()
        for p in self.probes.values():
            if p.job.state in ("PENDING", "RUNNING") and p.ends <= self.t + EPS:
                self._finish_probe(p)
        for job_id, at in list(self._ended_at.items()):
            if self.t - at >= self.settings.min_job_age:
                self.runs.pop(job_id, None)
                self.probes.pop(job_id, None)
                del self._ended_at[job_id]

    def _completion(self, r: _Run) -> float | None:
        at = r.progress.finish_time() if r.job.state == "RUNNING" else None
        return None if at is None else max(self.t, at)

    def _new_id(self) -> str:
        job_id = str(self._next_id)
        self._next_id += 1
        return job_id

    def _arrive(self, spec: JobSpec) -> None:
        job_id = self._new_id()
        job = SlurmJob(job_id=job_id, name=f"{spec.job_id}:{directive_model(spec.model)}"[:128], user=spec.user or "sim",
                       state="PENDING", reason="JobHeldUser", priority=0, partition=self.partition,
                       admin_comment=COMMENT_PREFIX + directives(spec).canonical(), submit_time=self.now())
        self.runs[job_id] = _Run(spec, job, JobProgress.of(spec, self.settings.costs))
        self.specs[job_id] = spec

    def stalled(self) -> bool:
        """Nothing runs, nothing is left to arrive or probe, and workload jobs wait."""
        return (self._next_arrival >= len(self._arrivals)
                and not any(p.job.state in ("PENDING", "RUNNING") for p in self.probes.values())
                and not any(r.job.state == "RUNNING" for r in self.runs.values()) and not self._drains
                and bool(self.waiting()))

    def cancel_waiting(self) -> list[str]:
        """Cancel the pending workload jobs (the stall rule, :class:`hops_slurm.sim.sim_aside.StallRule`); their
        workload ids."""
        ids = self.waiting()
        names = [self.workload_id(j) for j in ids]
        for job_id in ids:
            self.cancel(job_id)
        return names

    def waiting(self) -> list[str]:
        """Workload jobs pending (by Slurm job id)."""
        return [j for j, r in self.runs.items() if r.job.state == "PENDING"]

    def workload_id(self, job_id: str) -> str:
        """The workload's id of a Slurm job id (the name carries it)."""
        r = self.runs.get(job_id)
        return r.spec.job_id if r is not None else ""

    # ----- scheduling and progress -------------------------------------------------------------------
    def _used(self) -> dict[str, set[int]]:
        used: dict[str, set[int]] = {n: set() for n in self._total}
        for r in self.runs.values():
            if r.job.state == "RUNNING":
                for n, idx in r.job.gpu_alloc.items():
                    used[n].update(idx)
        for _until, alloc in self._drains.values():
            for n, idx in alloc.items():
                used[n].update(idx)
        return used

    def _schedule(self) -> None:
        """Start released jobs whose GPUs are free, by job id. A job placed where a notice still runs waits
        until every notice on its nodes has ended (the engine places jobs after the notices: the split
        Slurm makes of a per-job count is then the one planned; the fast path's rule too)."""
        used: dict[str, set[int]] | None = None
        noticed = {n for _until, alloc in self._drains.values() for n in alloc}
        for r in sorted((r for r in self.runs.values() if r.job.pending and r.job.reservation), key=lambda r: int(r.job.job_id)):
            if r.job.job_id in self._drains or noticed & set(r.job.required_nodes):
                continue  # a notice (its own, or on its nodes) is still running: it starts when they end
            used = self._used() if used is None else used
            want = startable(r.job, self._resv, {n: self._total[n] - len(used[n]) for n in self._total})
            if want is None:
                continue  # not released into its reservation, or waits for its GPUs
            self._start(r, want, used)
            for n, idx in r.job.gpu_alloc.items():
                used[n].update(idx)

    def _start(self, r: _Run, want: dict[str, int], used: dict[str, set[int]]) -> None:
        alloc = {n: tuple(sorted(set(range(self._total[n])) - used[n]))[:k] for n, k in want.items()}
        env = self._job_env(r.job.job_id)
        r.metrics_file, r.signature = env.get("HOPS_METRICS_FILE", ""), env.get("HOPS_JOB_SIGNATURE", "")
        costs = self.settings.costs
        r.progress.start(self.t, self.truth.throughput(r.spec.model, want, self.speeds),
                         costs.start_cost(r.spec.model, from_checkpoint=r.progress.saved > 0,
                                         first=r.progress.starts == 0))
        r.next_record = r.progress.resume_at + self.settings.record_seconds
        r.ever_ran = True
        r.job = r.job.model_copy(update={"state": "RUNNING", "reason": "None", "nodes": tuple(want),
                                         "gpu_alloc": alloc, "start_time": self.now()})
        if env.get("HOPS_PREEMPT_SIGNAL"):
            self._mark(r, CheckpointMark(event="listening", signal=env["HOPS_PREEMPT_SIGNAL"], run=r.job.restart_count,
                                         measured_at=datetime.fromtimestamp(self.now(), timezone.utc)))

    def _job_env(self, job_id: str) -> dict[str, str]:
        try:
            return read_job_env(self.env_dir, job_id)
        except OSError:
            return {}

    def _write_record(self, r: _Run, at: float, window: float | None = None) -> None:
        """What the job's recorder appends to its metrics file (nothing without one or a signature): a
        window of ``record_seconds`` ending at ``at``, or ``window`` seconds (the last one, cut short)."""
        window = self.settings.record_seconds if window is None else window
        if not r.metrics_file or not r.signature or window <= 0:
            return
        nodes = sorted(r.job.gpu_config(), key=self.order.__getitem__)
        types = {self.speeds[n].gpu_type for n in nodes}
        rec = runtime_record(r.signature, r.spec.model, types.pop() if len(types) == 1 else "mixed", nodes[0],
                             gpus=sum(r.job.gpu_config().values()), nodes=len(nodes), throughput=r.progress.rate,
                             window=window, at=EPOCH + at, done=r.progress.done)
        with open(r.metrics_file, "a", encoding="utf-8") as f:
            f.write(rec.model_dump_json() + "\n")

    def _last_window(self, r: _Run) -> None:
        """The recorder's last window when the job stops (it ends, or Slurm requeues it): since its last record."""
        resume = r.progress.resume_at
        last = r.next_record - (self.settings.record_every_seconds if r.next_record > resume + self.settings.record_seconds
                                else self.settings.record_seconds)
        self._write_record(r, self.t, self.t - max(last, resume))

    def _mark(self, r: _Run, mark: CheckpointMark) -> None:
        """A checkpoint mark of the job's preemption protocol, into its metrics file (if it has one)."""
        if r.metrics_file:
            with open(r.metrics_file, "a", encoding="utf-8") as f:
                f.write(mark.model_dump_json() + "\n")

    def _end(self, job_id: str, state: str) -> None:
        r = self.runs[job_id]
        if r.job.state == "RUNNING" and state == "COMPLETED":
            self._last_window(r)
        if state == "COMPLETED":
            r.progress.finish(self.t)
        elif r.progress.running and r.job.job_id not in self._drains:
            r.progress.stop(self.t)
        r.job = r.job.model_copy(update={"state": state, "end_time": self.now(), "reason": "None"})
        self._ended_at[job_id] = self.t
        self.ended += 1

    # ----- probes --------------------------------------------------------------------------------------
    def submit_probe(self, probe: ProbeJob) -> str:
        self._count("submit_probe")
        if probe.gpu_type not in self._slots:
            raise SlurmCommandError(probe.sbatch_argv(), 1, f"Invalid generic resource (gres) specification gpu:{probe.gpu_type}")
        job_id = self._new_id()
        slots = self._slots[probe.gpu_type]
        i = min(range(len(slots)), key=lambda k: slots[k])
        start = max(self.t, slots[i])
        slots[i] = start + self.cluster.profiler.probe_seconds
        job = SlurmJob(job_id=job_id, name=probe.name, user=str(probe.uid), state="PENDING", reason="Resources",
                       partition=probe.partition, reservation=probe.reservation, submit_time=self.now())
        self.probes[job_id] = _Probe(probe, job, ends=slots[i])
        return job_id

    def _finish_probe(self, p: _Probe) -> None:
        """The probe's record, as ``python -m profiler.probe`` writes it (its model and batch size as asked)."""
        pr = p.probe
        model = self.models.get((pr.model, pr.batch_size))
        result = probe_result(self.truth, model, pr.gpu_type, "", at=EPOCH + self.t,
                              probe_seconds=self.cluster.profiler.probe_seconds,
                              data_parallel=pr.data_parallel) if model else None
        if result is not None:
            params = params_of(model or "")
            result = result.model_copy(update={"model": pr.model, "batch_size": pr.batch_size, "params": params,
                                               "signature": job_signature(pr.model, params, pr.batch_size, ())})
            text = result.model_dump_json()
        else:
            text = ProbeFailure(model=pr.model, gpu_type=pr.gpu_type, node=f"profiler-{pr.gpu_type}",
                                error="out_of_memory", reason=f"{pr.model} does not run on one {pr.gpu_type}").model_dump_json()
        pr.out.write_text(text, encoding="utf-8")
        p.job = p.job.model_copy(update={"state": "COMPLETED", "end_time": self.now()})
        self._ended_at[p.job.job_id] = self.t

    # ----- SlurmApi: reads ------------------------------------------------------------------------------
    def _count(self, what: str) -> None:
        self.calls[what] = self.calls.get(what, 0) + 1

    def _all_jobs(self) -> list[SlurmJob]:
        probes = []
        for p in self.probes.values():
            if p.job.state == "PENDING" and p.ends - self.cluster.profiler.probe_seconds <= self.t + EPS:
                p.job = p.job.model_copy(update={"state": "RUNNING", "start_time": self.now()})
            probes.append(p.job)
        return [r.job for r in self.runs.values()] + probes

    def jobs(self) -> list[SlurmJob]:
        self._count("jobs")
        self._schedule()
        return self._all_jobs()

    def job(self, job_id: str) -> SlurmJob | None:
        self._count("job")
        self._schedule()
        return next((j for j in self._all_jobs() if j.job_id == job_id), None)

    def nodes(self) -> list[SlurmNode]:
        self._count("nodes")
        self._schedule()
        used = self._used()
        key = tuple(tuple(sorted(used[n.name])) for n in self._nodes)
        if self._listed is None or self._listed[0] != key:  # the GPUs in use changed: the nodes are listed anew
            self._listed = (key, [n.model_copy(update={"gpus_used": k, "state": "mixed" if k else "idle"})
                                  for n, k in zip(self._nodes, key)])
        return list(self._listed[1]) + self._profiler_nodes()  # frozen models: the same ones while nothing changed

    def _profiler_nodes(self) -> list[SlurmNode]:
        """The probes' dedicated GPUs as Slurm lists them: one node per GPU type in the ``profiler``
        partition only (the engine probes there beside a job measured in place: hops_slurm.engine.inplace)."""
        total = self.cluster.profiler.gpus_per_type
        out = []
        for gpu_type in self.cluster.gpu_types:
            busy = min(total, sum(p.probe.gpu_type == gpu_type and p.job.state == "RUNNING" for p in self.probes.values()))
            out.append(SlurmNode(name=f"profiler-{gpu_type}", state="mixed" if busy else "idle", gpu_type=gpu_type,
                                 gpus_total=total, gpus_used=tuple(range(busy)), partitions=("profiler",), cpus=4 * total))
        return out

    def reservations(self) -> list[SlurmReservation]:
        self._count("reservations")
        return list(self._resv.values())

    # ----- SlurmApi: changes ----------------------------------------------------------------------------
    def _run(self, job_id: str) -> _Run:
        r = self.runs.get(job_id)
        if r is None:
            raise SlurmCommandError(["scontrol", job_id], 1, f"Invalid job id specified ({job_id})")
        return r

    def _change(self, job_id: str, **update: object) -> None:
        r = self._run(job_id)
        r.job = r.job.model_copy(update=update)

    def hold(self, job_id: str) -> None:
        self._count("hold")
        self._change(job_id, reason="JobHeldAdmin", priority=0)

    def release(self, job_id: str) -> None:
        self._count("release")
        self._change(job_id, reason="Resources", priority=1000)

    def requeue_hold(self, job_id: str) -> None:
        self._count("requeuehold")
        r = self._run(job_id)
        if r.job.state != "RUNNING":
            raise SlurmCommandError(["scontrol", "requeuehold", job_id], 1, "Job is not running")
        self._last_window(r)  # the recorder's close (a job that ignores its notice trains on unrecorded)
        if r.progress.notice is None and self.settings.notice_on_requeue:
            r.progress.give_notice(self.t, r.spec, self.settings.costs)
        until = r.progress.requeue(self.t)
        self._drains[job_id] = (until, dict(r.job.gpu_alloc))
        r.next_record = float("inf")
        self._change(job_id, state="PENDING", reason="JobHeldUser", priority=0, gpu_alloc={}, nodes=(),
                     restart_count=r.job.restart_count + 1)
        if until <= self.t + EPS:
            self._end_drains()

    def signal(self, job_id: str, signal: str = "USR1") -> None:
        """``scancel --signal``: a running workload job gets the preemption notice (:mod:`hops_slurm.sim.costs`:
        it checkpoints at once, or ignores it and runs on); its requeue then waits for the notice's end. A job
        that checkpoints on notice answers it with a "saved" mark (``notice=True``, its count) in its metrics
        file, as :mod:`profiler.preempt` does (the engine's Notifier reads it and requeues at once). Any other
        job, or a second signal, changes nothing."""
        self._count("signal")
        r = self._run(job_id)
        if r.job.state == "RUNNING" and r.progress.notice is None:
            notice = r.progress.give_notice(self.t, r.spec, self.settings.costs)
            if notice.checkpoints:
                self._mark(r, CheckpointMark(event="saved", notice=True, samples=min(int(r.progress.done), 10**15),
                                             run=r.job.restart_count,
                                             measured_at=datetime.fromtimestamp(self.now(), timezone.utc)))

    def _end_drains(self) -> None:
        """Notices that ended: the requeued job's process is gone and its GPUs free (the work it did not
        checkpoint is lost; one that ignored the notice and ran out of samples first completes); released
        jobs waiting for those GPUs start, as slurmctld schedules when resources free."""
        ended = sorted((j for j, (until, _a) in self._drains.items() if until <= self.t + EPS), key=int)
        for job_id in ended:
            del self._drains[job_id]
            r = self.runs.get(job_id)
            if r is None or not r.progress.running:
                continue
            notice = r.progress.notice
            if notice is not None and notice.completes and r.job.state in ("PENDING", "RUNNING"):
                self._end(job_id, "COMPLETED")
            else:
                r.progress.stop(self.t)
        if ended:
            self._schedule()

    def signal_job(self, job_id: str, signal: str) -> None:
        """:meth:`SlurmApi.signal_job` (``scancel --batch --signal``): :meth:`signal`, refused for a job not running."""
        r = self._run(job_id)
        if r.job.state != "RUNNING":
            self._count("signal")
            raise SlurmCommandError(["scancel", "--batch", f"--signal={signal}", job_id], 1, "Job is not running")
        self.signal(job_id, signal)

    def sleep(self, seconds: float) -> None:
        """The engine waits (a notice's grace): virtual time passes."""
        self.advance(self.t + max(0.0, seconds))

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._count("update")
        update: dict[str, object] = {}
        names = {"Comment": "comment", "AdminComment": "admin_comment", "Reservation": "reservation",
                 "TresPerNode": "tres_per_node", "TresPerJob": "tres_per_job"}
        for k, v in fields.items():
            if k in names:
                update[names[k]] = v
            elif k == "NodeList":
                update["required_nodes"] = tuple(x for x in v.split(",") if x)
            elif k == "NumNodes":
                update["node_count"] = int(v)
        self._change(job_id, **update)

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self._count("create_reservation")
        if name in self._resv:
            raise SlurmCommandError(["scontrol", "create", "reservation", name], 1, "Reservation request overlaps")
        self._resv[name] = SlurmReservation(name=name, nodes=tuple(nodes), users=tuple(users), flags=tuple(flags))

    def delete_reservation(self, name: str) -> None:
        self._count("delete_reservation")
        if self._resv.pop(name, None) is None:
            raise SlurmCommandError(["scontrol", "delete", name], 1, "Invalid reservation name")

    def cancel(self, job_id: str) -> None:
        self._count("cancel")
        if job_id in self.probes:
            p = self.probes[job_id]
            p.job = p.job.model_copy(update={"state": "CANCELLED", "end_time": self.now()})
            self._ended_at[job_id] = self.t
            return
        r = self._run(job_id)
        if r.job.state in ("PENDING", "RUNNING"):
            self._end(job_id, "CANCELLED")

    # ----- owners ---------------------------------------------------------------------------------------
    @staticmethod
    def owner(user: str) -> Owner:
        """Every simulated owner is this process's uid and gid (the engine's ``owners``)."""
        return Owner(user, os.getuid(), os.getgid())


def startable(job: SlurmJob, reservations: Mapping[str, SlurmReservation], free: Mapping[str, int]) -> dict[str, int] | None:
    """The GPUs per node slurmctld would start ``job`` on now: a released pending job in its own reservation
    (``hops-j<id>``) over its required nodes, asking ``TresPerNode`` on each or a per-job count split
    greedily in node order (as 22.05 does), with that many GPUs free; else None."""
    own = reservations.get(f"hops-j{job.job_id}")
    if not (job.pending and not job.held and own is not None and job.reservation == own.name and job.required_nodes) \
            or not set(job.required_nodes) <= set(own.nodes):
        return None
    per_node = job.tres_per_node.rsplit(":", 1)[-1] if job.tres_per_node else ""
    per_job = job.tres_per_job.rsplit(":", 1)[-1] if job.tres_per_job else ""
    if per_node.isdigit():
        want: dict[str, int] | None = {n: int(per_node) for n in job.required_nodes}
    elif per_job.isdigit():
        want = greedy_split(int(per_job), list(job.required_nodes), free)
    else:
        return None
    if want is None or any(k > free.get(n, 0) for n, k in want.items()):
        return None
    return want


def directives(spec: JobSpec) -> HopsDirectives:
    """The ``#HOPS`` line of a workload job as the hook stores it: its counts, declared samples, model and
    the model's batch size; HopsError naming the job if the hook would refuse it."""
    try:
        return HopsDirectives(gpus=tuple(spec.requirements), samples=int(spec.declared),
                              batch_size=batch_size(spec.model), model=directive_model(family(spec.model)))
    except ValueError as exc:
        raise HopsError(f"workload job {spec.job_id}: its #HOPS line would be refused: {str(exc).splitlines()[0]}") from None


__all__ = ["SimSlurmctld", "SimCtlSettings", "directive_model", "directives", "startable", "EPOCH"]
