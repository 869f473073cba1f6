"""The refresh's named steps: plain functions of (:class:`~hops_slurm.engine.cycle.RefreshSession`,
:class:`~hops_slurm.engine.bookkeeping.Resources`), listed in :data:`STEPS` in the order they run.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.refresh` opens a session and runs :data:`CYCLE`'s
steps through :func:`hops_slurm.engine.cycle.run_steps` (the cycle module's docstring says what each
step does and which steps need which). A step that works on jobs hands each job to its per-job function
(:data:`PER_JOB`) through :meth:`hops_slurm.engine.cycle.Session.each`: one bad job never stops the
refresh. A job's walk from its arrival: ``read`` lists it, ``hold`` admin-holds it, ``track`` makes its
state (:func:`hops_slurm.engine.bookkeeping.new_state`), ``profile`` probes its model, and once
schedulable the round's ``views`` and ``plannings`` start it (:mod:`hops_slurm.engine.round`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from hops_slurm.core.ledger import slurm_time
from hops_slurm.engine import bookkeeping as bk
from hops_slurm.engine import offer, offer_grant
from hops_slurm.engine.aside import per_job, per_job_failure
from hops_slurm.engine.cycle import Cycle, RefreshSession
from hops_slurm.engine.failopen import touch_heartbeat
from hops_slurm.engine.inplace import probe_capacity
from hops_slurm.engine.profiling import ProfilerFlow, cancel_probes
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.bookkeeping import Resources
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_INPLACE, JobState, account, job_row
from hops_slurm.engine.userfiles import drop_place
from hops_slurm.slurm.api import SlurmError, SlurmJob
from hops_slurm.slurm.placement import drop_job_env
from hops_slurm.slurm.scope import node_in
from hops_slurm.slurm.snapshot import Snapshot

log = logging.getLogger(__name__)

#: the end state of a job its owner moved out of the Hops partitions (the engine no longer tracks it)
LEFT_HOPS = "LEFT_HOPS"
R = RefreshSession


def settled_jobs(snap: Snapshot) -> list[SlurmJob]:
    """Every job of ``snap`` but those about to start on an offer (left alone)."""
    return [j for j in snap.jobs if not offer.starting(j, snap.taken)]


def gpu_types(r: Resources, snap: Snapshot) -> list[str]:
    """The GPU types of the Hops partitions' GPU nodes in ``snap``."""
    parts = r.config.slurm.hops_partitions
    return sorted({n.gpu_type for n in snap.nodes if n.gpus_total and node_in(n, parts)})


# ----- each step, in the order of STEPS (a per-job step's work on one job: <step>_one) -------------------
def read(s: R, r: Resources) -> None:
    r.counters.refreshes, r.counters.record_budget = r.counters.refreshes + 1, RefreshBudget()  # one budget per refresh
    s.snapshot = r.backend.read(s.given, s.listed_at)
    r.enactor.round_id = "refresh"


def gate(s: R, r: Resources) -> None:
    s.gated = r.enactor.ensure_gate(s.snapshot.reservations)
    if r.config.engine.offer_file is not None:
        s.gated = offer.ensure_reservation(r.enactor, s.snapshot.reservations) or s.gated


def evict(s: R, r: Resources) -> None:
    probes = {str(p["slurm_id"]) for js in r.tracked.values() for p in js.probes.values() if "slurm_id" in p}
    s.out["evicted"] = r.enactor.evict_foreign(settled_jobs(s.snapshot), probes)


def hold(s: R, r: Resources) -> None:
    s.out["admin_held"] = r.enactor.hold_new(settled_jobs(s.snapshot))


def settle(s: R, r: Resources) -> None:
    settled = r.enactor.settle(snapshot=s.snapshot)
    s.out["mismatched"] = dict(settled.mismatched)
    s.verified = list(settled.verified)


def resync(s: R, r: Resources) -> None:
    b, out = r.backend, s.out
    if out.get("mismatched") or s.failed:
        s.snapshot = b.read()  # requeue-held again, or a step before failed half-way: read it all back
    elif out["admin_held"] or out.get("evicted") or s.verified or s.gated:
        # the engine's own commands, which succeeded: the snapshot is brought up to date without
        # another job listing (the reservations, created or deleted, are read again)
        snap = s.snapshot.held(out["admin_held"]).detached([*out.get("evicted", []), *s.verified])
        b.use_snapshot(snap.with_reservations(r.api.reservations()) if s.gated or s.verified else snap)
        s.snapshot = b.snapshot


def calibrate(s: R, r: Resources) -> None:
    r.reader.ensure_calibrations(set(gpu_types(r, s.snapshot)))


def track(s: R, r: Resources) -> None:
    s.now = r.now()
    new = [job for job in settled_jobs(s.snapshot) if job.is_hops and r.scope.inside(job)
           and job.job_id not in r.tracked and (job.pending or job.active)]
    for job in new:  # tracked at once: a job whose check fails is tracked set aside
        r.tracked[job.job_id] = bk.new_state(job, s.now)
    s.each("track", [r.tracked[job.job_id] for job in new], lambda js: track_one(s, r, js))


def track_one(s: R, r: Resources, js: JobState) -> None:
    bk.check_new(r, js)


def close(s: R, r: Resources) -> None:
    listing = s.snapshot.listing
    # ended, or moved by its owner to a partition that is not Hops's (it leaves Hops)
    ended = [js for js in r.tracked.values() if not ((seen := listing.get(js.job_id)) is not None
                                                     and (seen.pending or seen.active) and not seen.outside)]
    s.each("close", ended, lambda js: close_one(s, r, js))
    for js in ended:  # closed even when its last bookkeeping failed: it ended
        if js.ended is None:
            js.ended, js.end_state = s.now, js.end_state or "COMPLETED"
        if r.profiler is not None:
            r.profiler.forget(js.job_id)
        r.seen_files.forget(js.job_id)
        del r.tracked[js.job_id]
        s.out["ended"].append(js.job_id)
        s.changed.append(js)


def close_one(s: R, r: Resources, js: JobState) -> None:
    seen = s.snapshot.listing.get(js.job_id)
    left = seen is not None and seen.outside  # moved to a partition that is not Hops's (by its owner)
    if seen is not None and left:
        hand_back(r, seen)
    before = js.last_seen
    account(js, s.now, "ENDED", {}, started=seen.start_time if seen else None,
            ended=seen.end_time if seen else None, ran=r.enactor.planned_config(js.job_id))
    # ended when Slurm says (into the interval since the last refresh, as the accounting dates it),
    # not when the engine noticed: a busy engine must not lengthen its jobs' JCT
    end_time = seen.end_time if seen is not None else None
    js.ended = slurm_time(end_time, before, s.now)
    js.end_state = LEFT_HOPS if left else seen.state if seen is not None else "COMPLETED"
    if not r.dry_run:
        bk.ingest_metrics(r, js)  # its last records count too
        bk.record_declaration(r, js)
        cancel_probes(js, r.api)
        drop_job_env(r.enactor.env_dir, js.job_id)
        for root in (r.places.metrics_dir, r.places.probe_dir):  # its places: their last records were read above
            drop_place(root, js.job_id)


def hand_back(r: Resources, job: SlurmJob) -> None:
    """A tracked job now in a partition that is not Hops's leaves Hops: the engine's admin hold on it is
    released (journaled) so Slurm schedules it there; nothing else of it is touched again (the evict
    step already took it out of any Hops reservation)."""
    log.info("job %s moved to partition %s, not a Hops partition: it leaves Hops", job.job_id, job.partition[:100])
    if r.dry_run or not (job.pending and job.reason == "JobHeldAdmin"):
        return
    try:
        with r.journal.action("leave", job.job_id, {"partition": job.partition[:100]}, "refresh"):
            r.api.release(job.job_id)
    except SlurmError as exc:  # it stays held; the owner sees the hold, the log says why
        log.warning("job %s: cannot release the engine's hold after it left Hops: %s", job.job_id, exc)


def account_step(s: R, r: Resources) -> None:
    jobs = [js for js in r.tracked.values() if js.job_id in s.snapshot.listing]
    s.each("account", jobs, lambda js: account_one(s, r, js))
    s.changed.extend(jobs)


def account_one(s: R, r: Resources, js: JobState) -> None:
    seen = s.snapshot.listing[js.job_id]
    per_job(js, "reading its state from Slurm", lambda: bk.account_job(r, js, seen, s.now), r.set_aside)
    bk.review_aside(r, js, seen)


def profile(s: R, r: Resources) -> None:
    # a job whose profiling is settled has nothing to advance: the capacity is read only for the others
    todo = [js for js in r.tracked.values() if not js.aside and not ProfilerFlow.settled(js)]
    if r.profiler is not None and todo:
        part, s.gpu_types = r.config.slurm, gpu_types(r, s.snapshot)
        s.capacity = probe_capacity(s.snapshot, part.hops_partitions, part.profiler_partition, r.backend.placed)
        s.each("profile", todo, lambda js: profile_one(s, r, js))
    s.out["aside"] = {js.job_id: js.aside for js in r.tracked.values() if js.aside}


def profile_one(s: R, r: Resources, js: JobState) -> None:
    profiler = r.profiler
    assert profiler is not None  # the profile step runs this only with a profiler
    moved = per_job(js, "profiling", lambda: profiler.advance(js, s.gpu_types, s.snapshot.listing, s.capacity),
                    r.set_aside)
    if moved and js.profile in (PROFILE_DONE, PROFILE_INPLACE):
        s.out["in_place" if js.profile == PROFILE_INPLACE else "profiled"].append(js.job_id)


def adopt(s: R, r: Resources) -> None:  # jobs Slurm started on an offer, before the engine saw them: their env files
    listing = s.snapshot.listing
    todo = [js for j, js in r.tracked.items() if j in listing and offer.adoptable(listing[j])]
    if not todo:
        return
    # one that holds anything but what it was granted is put right, never adopted as it is
    wrong = offer_grant.misfits([listing[js.job_id] for js in todo], r.config.slurm.hops_partitions,
                                r.offers.history if r.offers else ())
    s.out["put_right"] = offer_grant.put_right(r.enactor, wrong) if wrong else []
    todo = [js for js in todo if js.job_id not in wrong]
    adopted = [j for j, done in s.each("adopt", todo, lambda js: adopt_one(s, r, js)).items() if done]
    if adopted:
        s.out["adopted"] = adopted
        log.info("started on an offer: %s", ", ".join(adopted))


def adopt_one(s: R, r: Resources, js: JobState) -> bool:
    return bool(offer.adopt([s.snapshot.listing[js.job_id]], s.snapshot, r.enactor.env_dir,
                            bk.recorder_envs(r, [js.job_id])))


def ingest(s: R, r: Resources) -> None:
    s.each("ingest", r.tracked.values(), lambda js: ingest_one(s, r, js))


def ingest_one(s: R, r: Resources, js: JobState) -> None:
    bk.ingest_metrics(r, js)


def tidy(s: R, r: Resources) -> None:
    if r.profiler is not None:
        r.profiler.tidy(r.tracked)


def ages(s: R, r: Resources) -> None:
    bk.refresh_job_ages(r, s.changed)  # the ended jobs too: their records carry the age


def declarations(s: R, r: Resources) -> None:
    s.verdicts = bk.declaration_verdicts(r)
    s.each("declarations", [r.tracked[j] for j in s.verdicts if j in r.tracked],
           lambda js: declarations_one(s, r, js))


def declarations_one(s: R, r: Resources, js: JobState) -> None:
    bk.act_on_declaration(r, js, s.verdicts[js.job_id], s.snapshot.listing.get(js.job_id))


def save(s: R, r: Resources) -> None:
    # only the jobs that changed beyond the clock (hops_slurm.engine.written), in one transaction
    due = r.written.due(s.changed, s.now)
    rows = s.each("save", [js for js, _ in due], lambda js: save_one(s, r, js))
    try:
        r.state.save_rows(list(rows.values()))
        saved: Mapping[str, object] = rows
    except Exception as exc:
        if not per_job_failure(exc):
            raise
        # a row the database would not take (all rolled back): each on its own, so one keeps no other out
        saved = s.each("save", [js for js, _ in due if js.job_id in rows],
                       lambda js: r.state.save_rows([rows[js.job_id]]))
    s.due = [(js, key) for js, key in due if js.job_id in saved]


def save_one(s: R, r: Resources, js: JobState) -> dict[str, object]:
    return job_row(js)


def records(s: R, r: Resources) -> None:
    made = s.each("records", [js for js, _ in s.due], lambda js: records_one(s, r, js))
    s.records = list(made.values())
    r.records_file.write(s.records)  # one transaction on the file the engine keeps open
    r.written.wrote([(js, key) for js, key in s.due if js.job_id in made], s.now)


def records_one(s: R, r: Resources, js: JobState) -> Any:
    return bk.job_record(r, js)


def summary(s: R, r: Resources) -> None:  # each pending job's reason: log, metric, the summary users read
    bk.publish_reasons(r, s.snapshot.listing, s.now)


def metrics(s: R, r: Resources) -> None:
    r.metrics.refresh(r.tracked.values(), [rec for rec in s.records if rec.end is not None], s.now,
                      r.config.paths.resolve(r.config.paths.store), r.store)
    r.metrics.journal(r.journal)


def heartbeat(s: R, r: Resources) -> None:
    touch_heartbeat(r.places.state_dir)  # hops-slurm failopen: the engine is alive


#: the refresh's steps, in the order they run
STEPS: tuple[tuple[str, Callable[[R, Resources], None]], ...] = (
    ("read", read), ("gate", gate), ("evict", evict), ("hold", hold), ("settle", settle), ("resync", resync),
    ("calibrate", calibrate), ("track", track), ("close", close), ("account", account_step), ("profile", profile),
    ("adopt", adopt), ("ingest", ingest), ("tidy", tidy), ("ages", ages), ("declarations", declarations),
    ("save", save), ("records", records), ("summary", summary), ("metrics", metrics), ("heartbeat", heartbeat))
#: the steps that change things (skipped in a dry run)
CHANGES = frozenset({"gate", "evict", "hold", "settle", "resync", "adopt", "ingest", "tidy", "ages",
                     "declarations", "save", "records", "summary", "metrics", "heartbeat"})
#: step -> the earlier steps it needs besides ``read``, which every step needs
NEEDS = {"account": ("close",), "profile": ("close",), "records": ("save",)}
#: each per-job step's work on one job (its step hands it each job through Session.each)
PER_JOB: dict[str, Callable[[R, Resources, JobState], object]] = {
    "track": track_one, "close": close_one, "account": account_one, "profile": profile_one, "adopt": adopt_one,
    "ingest": ingest_one, "declarations": declarations_one, "save": save_one, "records": records_one}
CYCLE: Cycle[R, Resources] = Cycle("refresh", STEPS, NEEDS, first="read", changes=CHANGES)
