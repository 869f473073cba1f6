"""The profiler flow: a new Hops job -> one probe job per GPU type -> results ingested into the store.

Where it sits: each refresh the engine calls :meth:`ProfilerFlow.advance` for every Hops job it tracks.
A job whose model (zoo name or entrypoint, batch size, probe size) was already profiled for the same
owner on every GPU type of the cluster reuses that signature at once. Otherwise the engine (root)
submits, per GPU type, an ordinary batch job in the profiler partition that runs
``python -m profiler.probe`` for the job's model on one GPU of that type and writes a JSON record.
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
* **The record is untrusted.** It is read from the owner's place without following links or
  blocking, size-capped, validated (finite, bounded values: :mod:`profiler.records`), and accepted
  only if it is the probe this job asked for: same model, batch size and GPU type, and a signature
  that is the hash of what it reports. The engine files it under the owner's namespace
  (``<owner>/<signature>``) so a record can never write measurements under another user's jobs.

Jobs of a model whose probes are running wait for them (one probe per owner, model and GPU type,
however many jobs share it). Until every probe of a job has finished, the job is not planned. A job
none of whose probes succeeded is marked ``failed`` and still scheduled with the fallback estimate of
:mod:`hops_slurm.engine.jobs` (never stranded). Entrypoint probes run in the job's place as the owner:
the entrypoint must be importable from the probe's python for that user (``PYTHONPATH`` in the
submitting environment is passed on; docs/admin-guide.md).
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from estimator.store import ThroughputStore
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.state import (PROFILE_DONE, PROFILE_FAILED, PROFILE_NEW, PROFILE_PROBING, EngineState,
                                     JobState)
from hops_slurm.engine.userfiles import Owner, UnsafeFile, make_place, owner_of, read_owned
from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import ProbeJob, SlurmApi, SlurmCommandError, SlurmError, SlurmJob
from hops_slurm.slurm.enact import GATE

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

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable


def model_key(d: HopsDirectives, size: str, owner: str = "") -> str:
    """The model cache's key: per owner (measurements by one user's probes serve only that user's jobs)."""
    return (f"{owner}/" if owner else "") + f"{d.model}|b{d.batch_size}|{size}"


def owned_signature(owner: str, signature: str) -> str:
    """The store key of a measurement made by ``owner``'s processes."""
    return f"{owner}/{signature}"


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

    def adopt(self, jobs: Iterable[JobState]) -> None:
        """Rebuild which job probes for which model from the saved job states (a restarted daemon, or each
        ``plan --once`` process): without it, a second job of a model being probed would probe again."""
        for job in jobs:
            if job.profile == PROFILE_PROBING and job.directives and not job.aside:
                try:
                    key = model_key(HopsDirectives.from_canonical(job.directives), self.settings.size, job.user)
                except Exception:  # noqa: BLE001 - the job is set aside at the next refresh
                    continue
                self.probing.setdefault(key, job.job_id)

    def advance(self, job: JobState, gpu_types: list[str], listing: Mapping[str, SlurmJob]) -> bool:
        """Move ``job``'s profiling one step; True if its profile state changed (the caller saves it)."""
        if job.profile in (PROFILE_DONE, PROFILE_FAILED) or not gpu_types:
            return False
        d = HopsDirectives.from_canonical(job.directives)
        key = model_key(d, self.settings.size, job.user)
        if job.profile == PROFILE_NEW:
            known = self.state.known_model(key)
            if known and set(gpu_types) <= set(known[1]):
                job.signature, job.profile = known[0], PROFILE_DONE
                log.info("job %s: model %s already profiled (%s)", job.job_id, d.model, known[0])
                return True
            if key in self.failed_models:
                job.profile, job.profile_error = PROFILE_FAILED, self.failed_models[key]
                return True
            if self.probing.get(key, job.job_id) != job.job_id:
                return False  # the same model is being probed for another job: wait for its result
            self.probing[key] = job.job_id
            for gpu_type in gpu_types:
                job.probes[gpu_type] = self._submit(job, d, gpu_type)
            job.profile = PROFILE_PROBING
            return True
        changed = False
        for gpu_type, probe in list(job.probes.items()):
            if probe.get("status") != "running":
                continue
            seen = listing.get(str(probe.get("slurm_id", "")))
            if seen is not None and (seen.pending or seen.active):
                continue
            self._collect(job, d, gpu_type, probe)
            changed = True
            attempts = int(probe.get("attempts", 1))  # type: ignore[call-overload]
            if probe.get("status") == "failed" and probe.get("kind") in RETRYABLE \
                    and attempts <= self.settings.retries:
                log.warning("job %s: probe on %s failed (%s); retrying (attempt %d of %d)", job.job_id, gpu_type,
                            probe.get("error"), attempts + 1, self.settings.retries + 1)
                retry = self._submit(job, d, gpu_type)
                retry["attempts"] = attempts + 1
                retry["previous_errors"] = [*probe.get("previous_errors", []), str(probe.get("error", ""))]  # type: ignore[misc]
                job.probes[gpu_type] = retry
        if all(p.get("status") != "running" for p in job.probes.values()):
            ok = [t for t, p in job.probes.items() if p.get("status") == "done"]
            self.forget(job.job_id)
            self.drop_reservation(job.job_id)
            if ok:
                job.profile = PROFILE_DONE
                self.state.remember_model(key, job.signature, ok)
            else:
                job.profile = PROFILE_FAILED
                job.profile_error = "; ".join(f"{t}: {p.get('error', '?')}" for t, p in job.probes.items())
                self.failed_models[key] = job.profile_error
                log.warning("job %s: every probe failed (%s); scheduling it with the fallback estimate",
                            job.job_id, job.profile_error)
            changed = True
        return changed

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

    def _submit(self, job: JobState, d: HopsDirectives, gpu_type: str) -> dict[str, object]:
        s = self.settings
        owner = self.owners(job.user)  # HopsError: the job is set aside (its probe cannot run as its owner)
        place = make_place(s.probe_dir, job.job_id, owner)
        stem = place / f"probe-{gpu_type}"
        out = stem.with_suffix(".json")
        what = ["--entrypoint", d.model] if ":" in d.model else ["--model", d.model, "--size", s.size]
        argv = [s.interpreter, "-m", "profiler.probe", *what, "--batch-size", str(d.batch_size),
                "--iterations", str(s.iterations), "--warmup", "2", "--device", s.device, "--gpu-type", gpu_type,
                "--time-limit", f"{s.time_limit:g}", "--threads", "1", "--out", str(out)]
        script = ("#!/bin/sh\n# Hops profiling probe (written by the engine; runs as the job's owner)\n"
                  "rm -f " + shlex.quote(str(out)) + "\nexec " + shlex.join(argv) + "\n")
        try:
            reservation = self._reservation_for(job)
        except SlurmError as exc:
            return {"status": "failed", "error": f"probe reservation not created: {exc}", "kind": "missing"}
        probe = ProbeJob(name=f"{PROBE_NAME_PREFIX}{job.job_id}-{gpu_type}", uid=owner.uid, gid=owner.gid,
                         partition=s.partition, reservation=reservation, gpu_type=gpu_type,
                         time_limit_min=max(1, int(s.time_limit // 60) + 2), workdir=place,
                         log=stem.with_suffix(".log"), out=out, script=script, model=d.model, batch_size=d.batch_size)
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
        return {"status": "running", "slurm_id": slurm_id, "out": str(out), "uid": owner.uid}

    def _collect(self, job: JobState, d: HopsDirectives, gpu_type: str, probe: dict[str, object]) -> None:
        from profiler.ingest import ingest_probe
        from profiler.records import ProbeFailure, ProbeResult, parse_record

        out = Path(str(probe.get("out", "")))
        uid = int(probe["uid"]) if "uid" in probe else self.owners(job.user).uid  # type: ignore[call-overload]
        record: object = None
        try:
            data = read_owned(out.parent, out.name, uid, cap=MAX_RECORD_BYTES + 1)
            if data is not None and len(data) > MAX_RECORD_BYTES:
                raise UnsafeFile(f"{out} is larger than {MAX_RECORD_BYTES} bytes")
            if data is not None and data.strip():
                record = parse_record(data.decode("utf-8"))
                if isinstance(record, ProbeResult):
                    check_probe(record, d, gpu_type)
        except (HopsError, ValueError) as exc:  # UnsafeFile, UnicodeDecodeError, pydantic's ValidationError
            reason = f"probe record refused: {str(exc).splitlines()[0][:300]}"
            probe.update(status="failed", error=reason, kind="error")
            log.warning("job %s: probe on %s: %s", job.job_id, gpu_type, reason)
            return
        if not isinstance(record, ProbeResult):
            failure = record if isinstance(record, ProbeFailure) else None
            reason = (failure.reason if failure else "") or probe.get("error") or \
                f"probe job {probe.get('slurm_id')} ended without a result (see {out.with_suffix('.log')})"
            kind = str(failure.error) if failure is not None else "missing"
            probe.update(status="failed", error=str(reason)[:1000], kind=kind)
            log.warning("job %s: probe on %s failed: %s", job.job_id, gpu_type, str(reason)[:300])
            return
        signature = owned_signature(job.user, record.signature)
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
