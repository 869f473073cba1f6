"""``hops-slurm site leave``: the one way a site leaves Hops, leaving its own hook to accept and run jobs alone.

Where it sits: run by the administrator after the daemon is stopped (it takes the engine's lock, so it
refuses while an engine runs, and no engine starts while it acts). In this order, each Slurm action
journaled as the engine's own (a daemon started again later reconciles as after any stop):

1. the hook stops acting: the offer file is closed (``hops-offer 1`` alone: no new job is put in the
   offer reservation) and the partition file ``hops-partitions`` removed (the Hops module then leaves
   every job alone but a ``#HOPS`` job that names no partition, which it refuses with one line until the
   site takes the module's lines out of its ``job_submit.lua``);
2. every job attached to one of the engine's reservations is detached (running jobs keep running);
3. every held ``#HOPS`` job of the Hops partitions is handed to Slurm as fail-open does
   (:func:`hops_slurm.engine.failopen.release_held`: a rigid request of its smallest or largest GPU count,
   its environment file, a Comment saying so, released), jobs the engine set aside too when their
   directives read back;
4. the engine's probe jobs (``hops-probe-*``) still pending or running are cancelled (nothing reads their
   results after leaving);
5. the engine's reservations (``hops-gate``, ``hops-offer``, ``hops-j<id>``, ``hops-p<id>``) are deleted; a
   site's own reservation is never touched, even one named ``hops-*``.

Then it names the lines of the site's ``job_submit.lua`` that load or call the Hops module (or, where the
hook is the one Hops shipped, says to take ``JobSubmitPlugins=lua`` out or put the site's own hook there).
The throughput store and records under ``state_dir`` stay (a later return reuses them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.bundled import bundled
from hops_slurm.config import SiteConfig
from hops_slurm.engine.failopen import release_held
from hops_slurm.engine.lock import EngineLocked, InstanceLock
from hops_slurm.engine.offer import publish
from hops_slurm.engine.profiling import PROBE_NAME_PREFIX
from hops_slurm.errors import HopsError
from hops_slurm.journal import Journal
from hops_slurm.site.check import ENGINE_RESERVATION
from hops_slurm.site.facts import MODULE_FILE, PARTITION_FILE, HookFacts, hops_lines
from hops_slurm.slurm.api import SlurmApi, SlurmError

ROUND_ID = "leave"


@dataclass
class LeaveReport:
    offer_closed: Path | None = None
    partition_file_removed: Path | None = None
    detached: list[str] = field(default_factory=list)  # jobs taken out of an engine reservation
    released: dict[str, int] = field(default_factory=dict)  # job -> GPUs it now asks Slurm for
    stay_held: dict[str, str] = field(default_factory=dict)  # job -> why it is still held
    cancelled: list[str] = field(default_factory=list)  # probe jobs
    deleted: list[str] = field(default_factory=list)  # reservations
    failed: dict[str, str] = field(default_factory=dict)  # what could not be done -> why
    kept: list[str] = field(default_factory=list)  # hops-* reservations that are the site's own
    hook: HookFacts | None = None

    def lines(self) -> list[str]:
        out = []
        if self.offer_closed:
            out.append(f"leave: offer file {self.offer_closed} closed")
        if self.partition_file_removed:
            out.append(f"leave: {self.partition_file_removed} removed")
        out += [f"leave: job {j} detached from its Hops reservation" for j in self.detached]
        out += [f"leave: job {j} released asking Slurm for {g} GPUs" for j, g in self.released.items()]
        out += [f"leave: job {j} stays held: {why}" for j, why in self.stay_held.items()]
        out += [f"leave: probe job {j} cancelled" for j in self.cancelled]
        out += [f"leave: reservation {r} deleted" for r in self.deleted]
        out += [f"leave: reservation {r} kept (not the engine's)" for r in self.kept]
        out += [f"leave: not done: {what}: {why}" for what, why in self.failed.items()]
        out += self.hook_advice()
        return out

    def hook_advice(self) -> list[str]:
        """What the administrator takes out of their own hook: the one step leaving leaves to them."""
        hook = self.hook
        if hook is None or hook.conf_dir is None:
            return [f"leave: take the lines that load and call {MODULE_FILE} out of the job_submit.lua beside "
                    "slurm.conf, then `scontrol reconfigure`"]
        path = hook.conf_dir / "job_submit.lua"
        if hook.hook_text is None:
            return [f"leave: {path}: no hook to edit"]
        if is_shipped_hook(hook.hook_text):
            return [f"leave: {path} is not the site's own: take JobSubmitPlugins=lua out of slurm.conf and restart "
                    "slurmctld, or put the site's own hook there"]
        lines = hops_lines(hook.hook_text)
        if not lines:
            return [f"leave: {path} does not call the Hops module: nothing to take out"]
        out = [f"leave: take these lines out of {path}, then `scontrol reconfigure`:"]
        out += [f"leave:   line {n}: {text}" for n, text in lines[:16]]
        return out


def is_shipped_hook(text: str) -> bool:
    """True when ``text`` is the complete job_submit.lua Hops ships for sites without a hook of their own."""
    try:
        return bundled("hooks", "job_submit.lua").read_text(encoding="utf-8", errors="replace") == text
    except (HopsError, OSError):
        return False


def _hook_dir(config: SiteConfig, hook: HookFacts | None) -> Path | None:
    if config.engine.hook_dir is not None:
        return config.engine.hook_dir
    if config.engine.offer_file is not None:
        return config.engine.offer_file.parent
    return hook.module_dir if hook is not None else None


def leave(config: SiteConfig, api: SlurmApi, hook: HookFacts | None = None, *, dry_run: bool = False) -> LeaveReport:
    """See the module docstring. Raises :class:`HopsError` (one line) while an engine runs."""
    lock = InstanceLock(config.paths.state_dir / "engine.lock")
    try:
        lock.acquire()
    except EngineLocked as exc:
        raise HopsError(f"{exc}: the daemon must be stopped before the site leaves Hops "
                        "(systemctl disable --now hops-slurm; and the failopen timer)") from None
    try:
        return _leave(config, api, hook, dry_run)
    finally:
        lock.release()


def _leave(config: SiteConfig, api: SlurmApi, hook: HookFacts | None, dry_run: bool) -> LeaveReport:
    report = LeaveReport(hook=hook)
    offer = config.engine.offer_file
    if offer is not None and offer.exists():
        if not dry_run:
            publish(offer, None)
        report.offer_closed = offer
    hook_dir = _hook_dir(config, hook)
    if hook_dir is not None and (hook_dir / PARTITION_FILE).exists():
        if not dry_run:
            (hook_dir / PARTITION_FILE).unlink()
        report.partition_file_removed = hook_dir / PARTITION_FILE
    before = [r.name for r in api.reservations() if ENGINE_RESERVATION.fullmatch(r.name)]
    journal = Journal(config.paths.resolve(config.paths.journal)) if not dry_run else None
    try:
        _detach_and_cancel(api, journal, report)
    finally:
        if journal is not None:
            journal.db.close()
    released = release_held(config, api, aside=True, dry_run=dry_run)
    report.released = dict(released.released)
    report.stay_held = dict(released.skipped)
    journal = Journal(config.paths.resolve(config.paths.journal)) if not dry_run else None
    try:
        _delete_reservations(api, journal, report)
    finally:
        if journal is not None:
            journal.db.close()
    if dry_run:
        report.deleted = before
    else:  # fail-open's release deletes the gate and the offer itself
        left = {r.name for r in api.reservations()}
        report.deleted = [name for name in before if name not in left]
    return report


def _act(journal: Journal | None, kind: str, job_id: str, args: dict[str, object], fn: object) -> None:
    if journal is None:  # dry run
        return
    with journal.action(kind, job_id, args, ROUND_ID):
        fn()  # type: ignore[operator]


def _detach_and_cancel(api: SlurmApi, journal: Journal | None, report: LeaveReport) -> None:
    for job in api.jobs():
        if not (job.pending or job.active):
            continue
        if job.name.startswith(PROBE_NAME_PREFIX):
            try:
                _act(journal, "leave-cancel", job.job_id, {"name": job.name}, lambda j=job.job_id: api.cancel(j))
                report.cancelled.append(job.job_id)
            except SlurmError as exc:
                report.failed[f"cancel probe {job.job_id}"] = str(exc)[:300]
            continue
        if ENGINE_RESERVATION.fullmatch(job.reservation):
            try:
                _act(journal, "leave-detach", job.job_id, {"reservation": job.reservation},
                     lambda j=job.job_id: api.update_job(j, {"Reservation": ""}))
                report.detached.append(job.job_id)
            except SlurmError as exc:
                report.failed[f"detach job {job.job_id}"] = str(exc)[:300]


def _delete_reservations(api: SlurmApi, journal: Journal | None, report: LeaveReport) -> None:
    for resv in api.reservations():
        if not resv.name.startswith("hops-"):
            continue
        if not ENGINE_RESERVATION.fullmatch(resv.name):
            report.kept.append(resv.name)
            continue
        try:
            _act(journal, "leave-ungate", "", {"reservation": resv.name}, lambda n=resv.name: api.delete_reservation(n))
        except SlurmError as exc:
            report.failed[f"delete reservation {resv.name}"] = str(exc)[:300]
