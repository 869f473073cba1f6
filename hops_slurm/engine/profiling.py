"""The profiler flow: a new Hops job -> one probe job per GPU type -> results ingested into the store.

Where it sits: each refresh the engine calls :meth:`ProfilerFlow.advance` for every Hops job it tracks.
A job whose model (zoo name or entrypoint, batch size, probe size) was already profiled on every GPU
type of the cluster reuses that signature at once. Otherwise the engine (root) submits, per GPU type,
an ordinary batch job in the profiler partition that runs ``python -m profiler.probe`` for the job's
model on one GPU of that type and writes a JSON record. Probe jobs are submitted into the gate
reservation (``--reservation=hops-gate``, which admits root), because the gate keeps every job without
a reservation off the managed nodes. When a probe job has left the queue its record is read:
a :class:`profiler.records.ProbeResult` is ingested (:func:`profiler.ingest.ingest_probe`; the engine is
the store's only writer). A probe that crashed, hit its time limit or left no record is submitted
again (``probe_retries`` times); after that, or for a bad entrypoint or out of memory, the type is failed.

Jobs of a model whose probes are running wait for them (one probe per model and GPU type, however many
jobs share it). Until every probe of a job has finished, the job is not planned. A job none of whose probes succeeded
is marked ``failed`` and still scheduled with the fallback estimate of :mod:`hops_slurm.engine.jobs`
(never stranded). Entrypoint probes run with the job's working directory unknown to the engine: they
must be importable from the probe's python (documented in docs/admin-guide.md).
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from estimator.store import ThroughputStore
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.state import (PROFILE_DONE, PROFILE_FAILED, PROFILE_NEW, PROFILE_PROBING, EngineState,
                                     JobState)
from hops_slurm.slurm.api import SlurmCommandError, SlurmJob
from hops_slurm.slurm.enact import GATE

log = logging.getLogger(__name__)

PROBE_NAME_PREFIX = "hops-probe-"
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


def model_key(d: HopsDirectives, size: str) -> str:
    return f"{d.model}|b{d.batch_size}|{size}"


class ProfilerFlow:
    """Submits probes and ingests their results (see the module docstring)."""

    def __init__(self, settings: ProbeSettings, state: EngineState, store: ThroughputStore,
                 env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.state = state
        self.store = store
        self.env = dict(env) if env is not None else None
        self.probing: dict[str, str] = {}  # model key -> the job whose probes run for it
        self.failed_models: dict[str, str] = {}  # model key -> why its probes failed (this run of the engine)

    def adopt(self, jobs: Iterable[JobState]) -> None:
        """Rebuild which job probes for which model from the saved job states (a restarted daemon, or each
        ``plan --once`` process): without it, a second job of a model being probed would probe again."""
        for job in jobs:
            if job.profile == PROFILE_PROBING and job.directives and not job.aside:
                try:
                    key = model_key(HopsDirectives.from_canonical(job.directives), self.settings.size)
                except Exception:  # noqa: BLE001 - the job is set aside at the next refresh
                    continue
                self.probing.setdefault(key, job.job_id)

    def advance(self, job: JobState, gpu_types: list[str], listing: Mapping[str, SlurmJob]) -> bool:
        """Move ``job``'s profiling one step; True if its profile state changed (the caller saves it)."""
        if job.profile in (PROFILE_DONE, PROFILE_FAILED) or not gpu_types:
            return False
        d = HopsDirectives.from_canonical(job.directives)
        key = model_key(d, self.settings.size)
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
                job.probes[gpu_type] = self._submit(job.job_id, d, gpu_type)
            job.profile = PROFILE_PROBING
            return True
        changed = False
        for gpu_type, probe in list(job.probes.items()):
            if probe.get("status") != "running":
                continue
            seen = listing.get(str(probe.get("slurm_id", "")))
            if seen is not None and (seen.pending or seen.active):
                continue
            self._collect(job, gpu_type, probe)
            changed = True
            attempts = int(probe.get("attempts", 1))  # type: ignore[call-overload]
            if probe.get("status") == "failed" and probe.get("kind") in RETRYABLE \
                    and attempts <= self.settings.retries:
                log.warning("job %s: probe on %s failed (%s); retrying (attempt %d of %d)", job.job_id, gpu_type,
                            probe.get("error"), attempts + 1, self.settings.retries + 1)
                retry = self._submit(job.job_id, d, gpu_type)
                retry["attempts"] = attempts + 1
                retry["previous_errors"] = [*probe.get("previous_errors", []), str(probe.get("error", ""))]  # type: ignore[misc]
                job.probes[gpu_type] = retry
        if all(p.get("status") != "running" for p in job.probes.values()):
            ok = [t for t, p in job.probes.items() if p.get("status") == "done"]
            self.forget(job.job_id)
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
    def _submit(self, job_id: str, d: HopsDirectives, gpu_type: str) -> dict[str, object]:
        s = self.settings
        s.probe_dir.mkdir(parents=True, exist_ok=True)
        stem = s.probe_dir / f"{job_id}-{gpu_type}"
        out, script = stem.with_suffix(".json"), stem.with_suffix(".sh")
        what = ["--entrypoint", d.model] if ":" in d.model else ["--model", d.model, "--size", s.size]
        argv = [s.interpreter, "-m", "profiler.probe", *what, "--batch-size", str(d.batch_size),
                "--iterations", str(s.iterations), "--warmup", "2", "--device", s.device, "--gpu-type", gpu_type,
                "--time-limit", f"{s.time_limit:g}", "--threads", "1", "--out", str(out)]
        script.write_text("#!/bin/sh\n# Hops profiling probe (written by the engine)\nexec " + shlex.join(argv) + "\n")
        script.chmod(0o755)
        out.unlink(missing_ok=True)
        limit_min = max(1, int(s.time_limit // 60) + 2)
        cmd = ["sbatch", "--parsable", "-p", s.partition, f"--reservation={GATE}", "-N", "1",
               f"--gres=gpu:{gpu_type}:1", "-J", f"{PROBE_NAME_PREFIX}{job_id}-{gpu_type}", "-t", str(limit_min),
               "-D", str(s.probe_dir), "-o", str(stem.with_suffix(".log")), str(script)]
        try:
            proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"status": "failed", "error": f"sbatch of the probe failed: {exc}"}
        if proc.returncode != 0:
            err = SlurmCommandError(cmd, proc.returncode, proc.stderr or proc.stdout)
            log.error("job %s: probe on %s not submitted: %s", job_id, gpu_type, err)
            return {"status": "failed", "error": str(err)}
        slurm_id = proc.stdout.strip().split(";")[0]
        log.info("job %s: probe job %s on %s submitted", job_id, slurm_id, gpu_type)
        return {"status": "running", "slurm_id": slurm_id, "out": str(out)}

    def _collect(self, job: JobState, gpu_type: str, probe: dict[str, object]) -> None:
        from profiler.ingest import ingest_probe
        from profiler.records import ProbeResult, read_records

        out = Path(str(probe.get("out", "")))
        try:
            records = read_records(out) if out.is_file() else []
        except (OSError, ValueError) as exc:
            records = []
            probe["error"] = f"unreadable probe record {out}: {exc}"
        result = next((r for r in records if isinstance(r, ProbeResult)), None)
        if result is None:
            failure = next((r for r in records if getattr(r, "error", None)), None)
            reason = getattr(failure, "reason", "") or probe.get("error") or \
                f"probe job {probe.get('slurm_id')} ended without a result (see {out.with_suffix('.log')})"
            kind = str(failure.error) if failure is not None else "missing"  # type: ignore[attr-defined]
            probe.update(status="failed", error=str(reason), kind=kind)
            log.warning("job %s: probe on %s failed: %s", job.job_id, gpu_type, reason)
            return
        ingest_probe(self.store, result)
        job.signature = result.signature
        probe.update(status="done", signature=result.signature)
        log.info("job %s: probe on %s ingested (signature %s)", job.job_id, gpu_type, result.signature)


def cancel_probes(job: JobState, env: Mapping[str, str] | None) -> None:
    """Cancel a job's probes still queued (the job itself ended)."""
    ids = [str(p["slurm_id"]) for p in job.probes.values() if p.get("status") == "running" and p.get("slurm_id")]
    if ids:
        subprocess.run(["scancel", *ids], env=dict(env) if env is not None else None, capture_output=True,
                       timeout=30, check=False)
        for p in job.probes.values():
            if p.get("status") == "running":
                p.update(status="failed", error="job ended before its probe")

