"""The profiler flow: a new Hops job -> measured in place, or one probe job per GPU type -> the store.

Where it sits: each refresh the engine calls :meth:`ProfilerFlow.advance` for every Hops job it tracks.
A job whose model (zoo name or entrypoint, batch size, probe size) was already measured for the same
owner on every GPU type of the cluster reuses that signature at once. Otherwise
:func:`hops_slurm.engine.inplace.decide` says whether it is **measured in place** (schedulable now,
planned with the fallback view until its own runtime records, :mod:`hops_slurm.engine.runtime_records`,
give the store data; the model cache learns the types they measured, :meth:`ProfilerFlow.measured`)
or waits for probes; probes on dedicated profiler nodes run beside an in-place job, never waited for.
For a probe the engine (root) submits, per GPU type, an ordinary batch job in the profiler partition
that runs ``python -m profiler.probe`` for the job's model on one GPU of that type and writes a JSON record
(with ``engine.probe_data_parallel``, a zoo model's probe takes that many GPUs of one node and also runs
the model data-parallel on each count listed: their throughputs go into the store with the probe).
A probe that crashed, hit its time limit or left no record is submitted again (``probe_retries``
times); after that, or for a bad entrypoint or out of memory, the type is failed.

Least privilege (docs/security.md):

* **The probe runs as the job's owner**: root submits it with ``sbatch --uid=<owner> --gid=<group>``,
  the script on standard input (root never reads a script from a place a user can write), working
  directory and output in the job's own place ``<probe_dir>/<job_id>/`` (owned by the owner, 0700:
  :mod:`hops_slurm.engine.userfiles`). ``model=pkg.mod:fn`` is imported by that probe, as the owner,
  inside the owner's job: it is the user's own code run with the user's rights, as their training job
  would be. The engine never imports it.
* **Probe reservation.** The gate admits only root, so the probes of a job owned by another user go
  through a reservation of their own, ``hops-p<job_id>`` (the managed nodes, ``Users=<owner>``,
  ``OVERLAP,IGNORE_JOBS``), deleted when the job's probes are over (and any stray one at each refresh).
  A probe for a dedicated profiler node goes without a reservation: Slurm keeps it off the gated nodes.
* **The record is untrusted.** It is read from the owner's place without following links or
  blocking, size-capped, validated (finite, bounded values: :mod:`profiler.records`), and accepted
  only if it is the probe this job asked for: same model, batch size and GPU type, and a signature
  that is the hash of what it reports. The engine files it under the owner's namespace
  (``<owner>/<signature>``; the model's signature when it already has one, :func:`model_signature`
  for a model measured in place) so a record can never write measurements under another user's jobs.

Jobs of a model whose probes are running wait for them (one probe per owner, model and GPU type,
however many jobs share it) unless GPUs are idle (then they go in place). A job that waits is not
planned until every probe of it has finished. A job none of whose probes succeeded is measured in
place (``probe_in_place = false``: marked ``failed``) and scheduled with the fallback estimate of
:mod:`hops_slurm.core.jobview` until it has data (never stranded). Entrypoint probes run in the job's place as the owner:
the entrypoint must be importable from the probe's python for that user (``PYTHONPATH`` in the
submitting environment is passed on; docs/admin-guide.md).
"""

from __future__ import annotations

import hashlib
import logging
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from estimator.store import ThroughputStore
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.inplace import Capacity, decide, idle_enough
from hops_slurm.engine.state import (PROFILE_DONE, PROFILE_FAILED, PROFILE_INPLACE, PROFILE_NEW, PROFILE_PROBING,
                                     EngineState, JobState)
from hops_slurm.engine.userfiles import Owner, UnsafeFile, make_place, owner_of, read_owned
from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import ProbeJob, SlurmApi, SlurmCommandError, SlurmError, SlurmJob
from hops_slurm.slurm.enact import GATE
from hops_slurm.validation import reason as one_line_reason

log = logging.getLogger(__name__)

PROBE_NAME_PREFIX = "hops-probe-"
PROBE_RESERVATION_PREFIX = "hops-p"
MAX_RECORD_BYTES = 1 << 20  # a probe record is a few KB; anything beyond 1 MiB is refused unread
#: Probe failures worth one more try: a crash, the time limit on a busy node, or no record at all (the
#: probe job was killed, its node failed). A bad entrypoint or running out of memory would fail again.
RETRYABLE = frozenset({"error", "time_limit", "missing"})


@dataclass(frozen=True)
class ProbeSettings:
    probe_dir: Path
    partition: str = "profiler"
    python: str = ""
    size: str = "default"
    iterations: int = 15
    time_limit: float = 300.0
    device: str = "auto"
    retries: int = 1  # resubmissions of a probe that failed for a reason that may not recur
    in_place: bool = True  # probe in place (hops_slurm.engine.inplace); False: every new model probed first
    #: GPU counts a zoo model's probe also runs data-parallel on one node (``engine.probe_data_parallel``)
    data_parallel: tuple[int, ...] = ()

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable


def model_key(d: HopsDirectives, size: str, owner: str = "") -> str:
    """The model cache's key: per owner (measurements by one user's probes serve only that user's jobs)."""
    return (f"{owner}/" if owner else "") + f"{d.model}|b{d.batch_size}|{size}"


def owned_signature(owner: str, signature: str) -> str:
    """The store key of a measurement made by ``owner``'s processes."""
    return f"{owner}/{signature}"


def model_signature(key: str, owner: str) -> str:
    """The store key the engine gives a model before any probe has measured it (a job measured in place):
    the owner's namespace and a hash of the model key, the same for every job of the model."""
    return owned_signature(owner, "k" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:15])


def probe_reservation(job_id: str) -> str:
    return f"{PROBE_RESERVATION_PREFIX}{job_id}"


def check_probe(result: object, d: HopsDirectives, gpu_type: str) -> None:
    """Accept a probe record only as the probe this job asked for (raises ValueError naming why not)."""
    from profiler.records import ProbeResult
    from profiler.signature import job_signature

    assert isinstance(result, ProbeResult)
    if result.model != d.model:
        raise ValueError(f"the record is for model {result.model[:60]!r}, the job's is {d.model!r}")
    if result.source != ("entrypoint" if ":" in d.model else "zoo"):
        raise ValueError(f"the record's source {result.source!r} does not fit model {d.model!r}")
    if result.batch_size != d.batch_size:
        raise ValueError(f"the record's batch size {result.batch_size} is not the job's {d.batch_size}")
    if result.gpu_type != gpu_type:
        raise ValueError(f"the record is for GPU type {result.gpu_type[:30]!r}, the probe ran on {gpu_type!r}")
    expected = job_signature(result.model, result.params, result.batch_size, result.input_shape)
    if result.signature != expected:
        raise ValueError(f"the record's signature {result.signature[:40]!r} is not the hash of what it reports")


class ProfilerFlow:
    """Submits probes and ingests their results (see the module docstring)."""

    def __init__(self, settings: ProbeSettings, state: EngineState, store: ThroughputStore,
                 *, api: SlurmApi | None = None,
                 journal: Journal | None = None, nodes: Callable[[], list[str]] | None = None,
                 owners: Callable[[str], Owner] = owner_of, ingested: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.ingested = ingested or (lambda signature: None)  # told of each probe result stored
        self.owners = owners  # user name -> uid and gid (the host's users; the simulator maps its own)
        self.state = state
        self.store = store
        self.api = api  # for the probe reservations of jobs not owned by root
        self.journal = journal
        self.nodes = nodes or (lambda: [])
        self.probing: dict[str, str] = {}  # model key -> the job whose probes run for it
        self.failed_models: dict[str, str] = {}  # model key -> why its probes failed (this run of the engine)
        self.failed_types: dict[str, set[str]] = {}  # model key -> GPU types its probes failed on (this run)

    def adopt(self, jobs: Iterable[JobState]) -> None:
        """Rebuild which job probes for which model from the saved job states (a restarted daemon, or each
        ``plan --once`` process): without it, a second job of a model being probed would probe again."""
        for job in jobs:
            if job.profile in (PROFILE_PROBING, PROFILE_INPLACE) and job.directives and not job.aside \
                    and any(p.get("status") == "running" for p in job.probes.values()):
                try:
                    key = model_key(HopsDirectives.from_canonical(job.directives), self.settings.size, job.user)
                except Exception:  # noqa: BLE001 - the job is set aside at the next refresh
                    continue
                self.probing.setdefault(key, job.job_id)

    @staticmethod
    def settled(job: JobState) -> bool:
        """Nothing for :meth:`advance` to do: the job is profiled or failed, or measured in place with no
        probe running (no probe to collect; it never waits again)."""
        return job.profile in (PROFILE_DONE, PROFILE_FAILED) or (
            job.profile == PROFILE_INPLACE and all(p.get("status") != "running" for p in job.probes.values()))

    def advance(self, job: JobState, gpu_types: list[str], listing: Mapping[str, SlurmJob],
                capacity: Capacity | None = None) -> bool:
        """Move ``job``'s profiling one step; True if its profile state changed (the caller saves it).
        ``capacity``: what this refresh saw of the cluster (:mod:`hops_slurm.engine.inplace`; None: no
        GPU idle, no dedicated profiler node)."""
        if job.profile in (PROFILE_DONE, PROFILE_FAILED) or not gpu_types:
            return False
        capacity = capacity or Capacity()
        d = HopsDirectives.from_canonical(job.directives)
        key = model_key(d, self.settings.size, job.user)
        if job.profile == PROFILE_NEW:
            return self._first(job, d, key, gpu_types, capacity)
        changed = False
        running = any(p.get("status") == "running" for p in job.probes.values())
        if job.profile == PROFILE_PROBING and self.settings.in_place and idle_enough(capacity, min(d.gpus)):
            self._go_in_place(job, listing)
            changed = True
        changed |= self._collect_ended(job, d, listing)
        over = all(p.get("status") != "running" for p in job.probes.values())
        if over and (job.profile == PROFILE_PROBING or running):
            self._probes_over(job, key)
            changed = True
        return changed

    def _first(self, job: JobState, d: HopsDirectives, key: str, gpu_types: list[str], capacity: Capacity) -> bool:
        """A job not yet schedulable: known model, in place, or probed (:mod:`hops_slurm.engine.inplace`)."""
        known = self.state.known_model(key)
        if known and set(gpu_types) <= set(known[1]):
            job.signature, job.profile = known[0], PROFILE_DONE
            log.info("job %s: model %s already profiled (%s)", job.job_id, d.model, known[0])
            return True
        if not self.settings.in_place:  # the paper's order: every new model is probed before it is planned
            if key in self.failed_models:
                job.profile, job.profile_error = PROFILE_FAILED, self.failed_models[key]
                return True
            return self._probe(job, d, key, known[0] if known else "", tuple(gpu_types), set())
        decision = decide(gpu_types=gpu_types, known_types=known[1] if known else (),
                          failed_types=self.failed_types.get(key, ()), smallest=min(d.gpus), capacity=capacity)
        signature = known[0] if known else model_signature(key, job.user)
        if not decision.in_place:
            return self._probe(job, d, key, signature, decision.probe, decision.dedicated(capacity))
        job.signature, job.profile = signature, PROFILE_INPLACE
        if decision.probe and self.probing.get(key, job.job_id) == job.job_id:
            self.probing[key] = job.job_id
            for gpu_type in decision.probe:  # dedicated profiler nodes only: never waited for
                job.probes[gpu_type] = self._submit(job, d, gpu_type, dedicated=True)
        log.info("job %s: model %s measured in place (signature %s%s)", job.job_id, d.model, signature,
                 f"; probes on dedicated nodes: {', '.join(decision.probe)}" if job.probes else "")
        return True

    def _probe(self, job: JobState, d: HopsDirectives, key: str, signature: str, types: tuple[str, ...],
               dedicated: set[str]) -> bool:
        """Probe ``types`` for the job, which waits for them (unless another job of its model probes already:
        it waits for that one's results)."""
        if self.probing.get(key, job.job_id) != job.job_id:
            return False  # the same model is being probed for another job: wait for its result
        self.probing[key] = job.job_id
        job.signature = signature  # "" (probes off, new model): the probe's own hash, as the paper's profiler
        for gpu_type in types:
            job.probes[gpu_type] = self._submit(job, d, gpu_type, dedicated=gpu_type in dedicated)
        job.profile = PROFILE_PROBING
        return True

    def _go_in_place(self, job: JobState, listing: Mapping[str, SlurmJob]) -> None:
        """GPUs are idle now: the job stops waiting for its probes. Those still pending on shared nodes are
        cancelled (they would take GPUs the plans need); running or dedicated ones finish and are ingested."""
        job.profile = PROFILE_INPLACE
        if not job.signature:
            job.signature = model_signature(model_key(HopsDirectives.from_canonical(job.directives),
                                                      self.settings.size, job.user), job.user)
        for gpu_type, probe in job.probes.items():
            seen = listing.get(str(probe.get("slurm_id", "")))
            if probe.get("status") != "running" or probe.get("dedicated") or seen is None or not seen.pending:
                continue
            if self.api is not None:
                try:
                    self.api.cancel(str(probe["slurm_id"]))
                except SlurmError as exc:  # it started meanwhile, or Slurm away: collected when it ends
                    log.info("job %s: probe %s not cancelled: %s", job.job_id, probe["slurm_id"], exc)
                    continue
            probe.update(status="cancelled", error="GPUs idle: the job runs in place")
        log.info("job %s: GPUs are idle; it stops waiting for its probes and is measured in place", job.job_id)

    def _collect_ended(self, job: JobState, d: HopsDirectives, listing: Mapping[str, SlurmJob]) -> bool:
        """Collect the job's probes that ended (a retryable failure is submitted again); True if any did."""
        changed = False
        for gpu_type, probe in list(job.probes.items()):
            if probe.get("status") != "running":
                continue
            seen = listing.get(str(probe.get("slurm_id", "")))
            if seen is not None and (seen.pending or seen.active):
                continue
            self._collect(job, d, gpu_type, probe)
            changed = True
            attempts = int(str(probe.get("attempts", 1)))
            if probe.get("status") == "failed" and probe.get("kind") in RETRYABLE \
                    and attempts <= self.settings.retries:
                log.warning("job %s: probe on %s failed (%s); retrying (attempt %d of %d)", job.job_id, gpu_type,
                            probe.get("error"), attempts + 1, self.settings.retries + 1)
                retry = self._submit(job, d, gpu_type, dedicated=bool(probe.get("dedicated")))
                retry["attempts"] = attempts + 1
                before = probe.get("previous_errors", [])
                retry["previous_errors"] = [*(before if isinstance(before, list) else []), str(probe.get("error", ""))]
                job.probes[gpu_type] = retry
        return changed

    def _probes_over(self, job: JobState, key: str) -> None:
        """Every probe of the job has ended: remember what they measured; a job that waited for them is
        planned now (with their data, or in place / with the fallback when every one failed)."""
        ok = [t for t, p in job.probes.items() if p.get("status") == "done"]
        self.failed_types.setdefault(key, set()).update(t for t, p in job.probes.items() if p.get("status") == "failed")
        self.forget(job.job_id)
        self.drop_reservation(job.job_id)
        if ok:
            known = self.state.known_model(key)
            before = set(known[1]) if known and known[0] == job.signature else set()
            self.state.remember_model(key, job.signature, sorted(before | set(ok)))
        if job.profile != PROFILE_PROBING:
            return
        if ok:
            job.profile = PROFILE_DONE
            return
        job.profile_error = "; ".join(f"{t}: {p.get('error', '?')}" for t, p in job.probes.items())
        if self.settings.in_place:
            job.profile = PROFILE_INPLACE
            job.signature = job.signature or model_signature(key, job.user)
            log.warning("job %s: every probe failed (%s); measured in place", job.job_id, job.profile_error)
            return
        job.profile = PROFILE_FAILED
        self.failed_models[key] = job.profile_error
        log.warning("job %s: every probe failed (%s); scheduling it with the fallback estimate",
                    job.job_id, job.profile_error)

    def measured(self, job: JobState, gpu_types: Iterable[str]) -> None:
        """The job's runtime records measured its model on ``gpu_types``: later jobs of the model have data
        there (the model cache), as after a probe."""
        if not job.signature or job.profile not in (PROFILE_INPLACE, PROFILE_DONE):
            return
        key = model_key(HopsDirectives.from_canonical(job.directives), self.settings.size, job.user)
        known = self.state.known_model(key)
        types = set(known[1]) if known and known[0] == job.signature else set()
        new = {t for t in gpu_types if t and t != "mixed"} - types
        if new:
            self.state.remember_model(key, job.signature, sorted(types | new))

    def forget(self, job_id: str) -> None:
        """``job_id`` no longer probes for its model (done, failed, or the job ended): the next job of the
        model may use the result or probe itself."""
        for key in [k for k, j in self.probing.items() if j == job_id]:
            del self.probing[key]

    # ----- probe jobs -------------------------------------------------------------------------------
    def _reservation_for(self, job: JobState) -> str:
        """The reservation the job's probes go through: the gate for root's jobs, else ``hops-p<id>``
        for the owner (created once)."""
        if job.user == "root" or self.api is None:
            return GATE
        name = probe_reservation(job.job_id)
        if not any(r.name == name for r in self.api.reservations()):
            nodes = self.nodes() or [n.name for n in self.api.nodes()]
            if self.journal is not None:
                with self.journal.action("reserve", job.job_id, {"reservation": name, "nodes": nodes, "user": job.user},
                                         "profiling"):
                    self.api.create_reservation(name, nodes, [job.user], ["OVERLAP", "IGNORE_JOBS"])
            else:
                self.api.create_reservation(name, nodes, [job.user], ["OVERLAP", "IGNORE_JOBS"])
        return name

    def drop_reservation(self, job_id: str) -> None:
        """Delete the job's probe reservation, if there is one (its probes are over)."""
        if self.api is None:
            return
        name = probe_reservation(job_id)
        try:
            if any(r.name == name for r in self.api.reservations()):
                if self.journal is not None:
                    with self.journal.action("unreserve", job_id, {"reservation": name}, "profiling"):
                        self.api.delete_reservation(name)
                else:
                    self.api.delete_reservation(name)
        except SlurmError as exc:  # a probe still attached, or Slurm away: tidy() retries
            log.warning("job %s: probe reservation %s not deleted yet: %s", job_id, name, exc)

    def tidy(self, jobs: Mapping[str, JobState]) -> list[str]:
        """Delete probe reservations of jobs that are no longer probing (after a crash or a cancel)."""
        if self.api is None:
            return []
        gone = []
        for r in self.api.reservations():
            rest = r.name[len(PROBE_RESERVATION_PREFIX):] if r.name.startswith(PROBE_RESERVATION_PREFIX) else ""
            if rest.isdigit() and (rest not in jobs or jobs[rest].profile != PROFILE_PROBING):
                self.drop_reservation(rest)
                gone.append(r.name)
        return gone

    def _fitting(self, counts: tuple[int, ...], gpu_type: str) -> tuple[int, ...]:
        """The data-parallel ``counts`` that one node of ``gpu_type`` holds (a probe is one node: a count above
        the type's largest node would leave it pending for ever)."""
        if not counts or self.api is None:
            return counts
        largest = max((n.gpus_total for n in self.api.nodes() if n.gpu_type == gpu_type), default=0)
        return tuple(k for k in counts if k <= largest)

    def _submit(self, job: JobState, d: HopsDirectives, gpu_type: str, *, dedicated: bool = False) -> dict[str, object]:
        """Submit one probe; ``dedicated``: to the profiler partition's own nodes, outside every Hops
        reservation (no reservation: Slurm keeps it off the gated Hops nodes)."""
        s = self.settings
        owner = self.owners(job.user)  # HopsError: the job is set aside (its probe cannot run as its owner)
        place = make_place(s.probe_dir, job.job_id, owner)
        stem = place / f"probe-{gpu_type}"
        out = stem.with_suffix(".json")
        what = ["--entrypoint", d.model] if ":" in d.model else ["--model", d.model, "--size", s.size]
        parallel = self._fitting(s.data_parallel, gpu_type) if ":" not in d.model else ()  # an entrypoint's: one GPU
        argv = [s.interpreter, "-m", "profiler.probe", *what, "--batch-size", str(d.batch_size),
                "--iterations", str(s.iterations), "--warmup", "2", "--device", s.device, "--gpu-type", gpu_type,
                "--time-limit", f"{s.time_limit:g}", "--threads", "1", "--out", str(out),
                *(["--data-parallel", *(str(k) for k in parallel)] if parallel else [])]
        script = ("#!/bin/sh\n# Hops profiling probe (written by the engine; runs as the job's owner)\n"
                  "rm -f " + shlex.quote(str(out)) + "\nexec " + shlex.join(argv) + "\n")
        try:
            reservation = "" if dedicated else self._reservation_for(job)
        except SlurmError as exc:
            return {"status": "failed", "error": f"probe reservation not created: {exc}", "kind": "missing"}
        probe = ProbeJob(name=f"{PROBE_NAME_PREFIX}{job.job_id}-{gpu_type}", uid=owner.uid, gid=owner.gid,
                         partition=s.partition, reservation=reservation, gpu_type=gpu_type,
                         time_limit_min=max(1, int(s.time_limit // 60) + 2), workdir=place,
                         log=stem.with_suffix(".log"), out=out, script=script, model=d.model, batch_size=d.batch_size,
                         gpus=max(parallel, default=1), data_parallel=parallel)
        if self.api is None:
            return {"status": "failed", "error": "no Slurm to submit the probe to", "kind": "missing"}
        try:
            slurm_id = self.api.submit_probe(probe)
        except SlurmCommandError as exc:
            log.error("job %s: probe on %s not submitted: %s", job.job_id, gpu_type, exc)
            # sbatch missing or Slurm not answering may not recur; a refusal would
            return {"status": "failed", "error": str(exc), **({"kind": "missing"} if exc.returncode in (124, 127) else {})}
        except SlurmError as exc:
            return {"status": "failed", "error": f"probe not submitted: {exc}", "kind": "missing"}
        log.info("job %s: probe job %s on %s submitted as %s", job.job_id, slurm_id, gpu_type, owner.user)
        return {"status": "running", "slurm_id": slurm_id, "out": str(out), "uid": owner.uid,
                **({"dedicated": True} if dedicated else {})}

    def _collect(self, job: JobState, d: HopsDirectives, gpu_type: str, probe: dict[str, object]) -> None:
        from profiler.ingest import ingest_probe
        from profiler.records import ProbeFailure, ProbeResult, parse_record

        out = Path(str(probe.get("out", "")))
        uid = int(str(probe["uid"])) if "uid" in probe else self.owners(job.user).uid
        record: object = None
        try:
            data = read_owned(out.parent, out.name, uid, cap=MAX_RECORD_BYTES + 1)
            if data is not None and len(data) > MAX_RECORD_BYTES:
                raise UnsafeFile(f"{out} is larger than {MAX_RECORD_BYTES} bytes")
            if data is not None and data.strip():
                record = parse_record(data.decode("utf-8"))
                if isinstance(record, ProbeResult):
                    check_probe(record, d, gpu_type)
                    asked = self.settings.data_parallel if ":" not in d.model else ()
                    if any(p.gpus not in asked for p in record.data_parallel):
                        raise ValueError(f"data-parallel runs on {[p.gpus for p in record.data_parallel]} GPUs; "
                                         f"asked for {list(asked)}")
        except (HopsError, ValueError) as exc:  # UnsafeFile, UnicodeDecodeError, pydantic's ValidationError
            reason = f"probe record refused: {one_line_reason(exc)}"
            probe.update(status="failed", error=reason, kind="error")
            log.warning("job %s: probe on %s: %s", job.job_id, gpu_type, reason)
            return
        if not isinstance(record, ProbeResult):
            failure = record if isinstance(record, ProbeFailure) else None
            reason = (failure.reason if failure else "") or str(probe.get("error") or "") or \
                f"probe job {probe.get('slurm_id')} ended without a result (see {out.with_suffix('.log')})"
            kind = str(failure.error) if failure is not None else "missing"
            probe.update(status="failed", error=str(reason)[:1000], kind=kind)
            log.warning("job %s: probe on %s failed: %s", job.job_id, gpu_type, str(reason)[:300])
            return
        signature = job.signature or owned_signature(job.user, record.signature)  # one signature per model
        ingest_probe(self.store, record.model_copy(update={"signature": signature}))
        self.ingested(signature)
        job.signature = signature
        probe.update(status="done", signature=signature)
        log.info("job %s: probe on %s ingested (signature %s)", job.job_id, gpu_type, signature)


def cancel_probes(job: JobState, api: SlurmApi) -> None:
    """Cancel a job's probes still queued (the job itself ended)."""
    for p in job.probes.values():
        if p.get("status") != "running":
            continue
        if p.get("slurm_id"):
            try:
                api.cancel(str(p["slurm_id"]))
            except SlurmError as exc:  # already ended, or Slurm away: the probe ends by its time limit
                log.info("job %s: probe %s not cancelled: %s", job.job_id, p["slurm_id"], exc)
        p.update(status="failed", error="job ended before its probe")
