"""Fail-open without the daemon: ``hops-slurm failopen``, run every minute by a Slurm-side timer.

Where it sits: beside the engine, never inside it. Every refresh of the engine (daemon or ``plan
--once``) touches ``<state_dir>/heartbeat``. While the daemon runs, every ``#HOPS`` job waits held until
a plan places it; if the daemon is gone, they would wait forever. The administrator chooses in
``hops.toml`` (``[failopen]``):

* ``mode = "hold"`` (default): jobs stay held until the daemon is back; this command does nothing.
* ``mode = "release"``: when the heartbeat is older than ``grace`` seconds and no engine holds the lock
  (the daemon's process is gone; the kernel frees the lock of a dead process), every held ``#HOPS``
  job of the Hops partitions (a job of any other partition, #HOPS or not, is never touched) is handed
  to Slurm's own scheduling: a rigid request of ``gpus`` (the
  smallest or largest count of its ``gpus=`` list) on any nodes, its environment file (``HOPS_GPUS``,
  ``HOPS_LR``) written, a Comment that says so (``scontrol show job``), its admin hold released; the gate
  reservation is removed so Slurm may start it (and the offer reservation over the same nodes too; while
  jobs started on offers still run in it Slurm refuses, and the released jobs go into it instead). Jobs
  set aside (their directives do not read back) stay held. The offer file is closed first (no daemon, no
  offers: the hook holds new jobs again). Without any heartbeat yet, the first run starts the clock.

:func:`release_held` does the same release at once, for ``hops-slurm site leave`` (:mod:`hops_slurm.site.leave`).

It takes the engine's lock while it acts (a daemon starting meanwhile waits for the next try) and
journals each action, so a daemon that comes back reconciles as after any crash: jobs started by Slurm
keep running and are planned from the next round; pending ones are held again and planned; the gate
is created again.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.config import SiteConfig
from hops_slurm.directives import HopsDirectives
from hops_slurm.engine.aside import COMMENT_PREFIX as ASIDE_PREFIX
from hops_slurm.engine.lock import EngineLocked, InstanceLock
from hops_slurm.engine.offer_file import publish as publish_offer
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi, SlurmError
from hops_slurm.slurm.enact import GATE, hops_job_env, write_job_env
from hops_slurm.slurm.snapshot import OFFER, hops_reservations
from hops_slurm.slurm.scope import HopsScope, node_in

log = logging.getLogger(__name__)

HEARTBEAT = "heartbeat"
COMMENT = "hops: released without the Hops daemon"
LEFT_COMMENT = "hops: released as the site left Hops"


def touch_heartbeat(state_dir: Path) -> None:
    """The engine is alive: ``<state_dir>/heartbeat`` gets the current time (its mtime)."""
    path = state_dir / HEARTBEAT
    path.touch(exist_ok=True)
    now = time.time()
    os.utime(path, (now, now))


def heartbeat_age(state_dir: Path, now: float | None = None) -> float | None:
    """Seconds since the engine's last heartbeat; None if it never beat."""
    try:
        beat = (state_dir / HEARTBEAT).stat().st_mtime
    except FileNotFoundError:
        return None
    return max(0.0, (time.time() if now is None else now) - beat)


@dataclass
class FailOpenReport:
    action: str  # "hold" (mode), "alive" (lock held), "waiting" (within grace), "started-clock", "released", "left"
    age: float | None = None
    released: dict[str, int] = field(default_factory=dict)  # job -> GPUs asked for
    skipped: dict[str, str] = field(default_factory=dict)  # job -> why it stays held
    gate_removed: bool = False

    def lines(self) -> list[str]:
        age = "never" if self.age is None else f"{self.age:.0f} s ago"
        head = {"hold": "mode is hold: held jobs wait for the daemon",
                "alive": "an engine holds the lock: nothing to do",
                "waiting": f"the daemon's last heartbeat was {age}: within the grace, nothing to do",
                "started-clock": "no heartbeat yet: the grace starts now",
                "released": f"the daemon's last heartbeat was {age}: jobs handed to Slurm",
                "left": "the site leaves Hops: held jobs handed to Slurm"}[self.action]
        out = [f"failopen: {head}"]
        out += [f"failopen: job {j} released asking for {g} GPUs" for j, g in self.released.items()]
        out += [f"failopen: job {j} stays held: {why}" for j, why in self.skipped.items()]
        if self.gate_removed:
            out.append(f"failopen: reservation {GATE} deleted")
        return out


def fail_open(config: SiteConfig, api: SlurmApi, *, now: float | None = None, dry_run: bool = False) -> FailOpenReport:
    """See the module docstring."""
    fo = config.failopen
    if fo.mode == "hold":
        return FailOpenReport("hold")
    state_dir = config.paths.state_dir
    lock = InstanceLock(state_dir / "engine.lock")
    try:
        lock.acquire()
    except EngineLocked:
        return FailOpenReport("alive")
    try:
        age = heartbeat_age(state_dir, now)
        if age is None:
            if not dry_run:
                touch_heartbeat(state_dir)
            return FailOpenReport("started-clock")
        if age < fo.grace:
            return FailOpenReport("waiting", age)
        report = FailOpenReport("released", age)
        close_offer(config, dry_run)
        journal = Journal(config.paths.resolve(config.paths.journal)) if not dry_run else None
        try:
            _release_all(config, api, journal, report, dry_run)
        finally:
            if journal is not None:
                journal.db.close()
        return report
    finally:
        lock.release()


def release_held(config: SiteConfig, api: SlurmApi, *, aside: bool = False, dry_run: bool = False) -> FailOpenReport:
    """Hand every held ``#HOPS`` job of the Hops partitions to Slurm now, as a release by the timer does, without
    looking at the heartbeat or the lock (the caller holds the lock: ``hops-slurm site leave``). ``aside``: jobs
    the engine set aside go too when their directives read back (no engine will take them back)."""
    report = FailOpenReport("left")
    journal = Journal(config.paths.resolve(config.paths.journal)) if not dry_run else None
    try:
        _release_all(config, api, journal, report, dry_run, aside=aside)
    finally:
        if journal is not None:
            journal.db.close()
    return report


def close_offer(config: SiteConfig, dry_run: bool) -> None:
    """No daemon, no offers: the offer file is closed (the header alone) before the offer reservation is
    deleted, so the hook sends no new job into a reservation that is gone (it holds them as usual)."""
    path = config.engine.offer_file
    if path is None or dry_run:
        return
    try:
        publish_offer(path, None)
    except OSError as exc:
        log.warning("failopen: cannot close the offer file %s: %s", path, exc)


def _release_all(config: SiteConfig, api: SlurmApi, journal: Journal | None, report: FailOpenReport,
                 dry_run: bool, *, aside: bool = False) -> None:
    fo = config.failopen
    scope = HopsScope(config.slurm.hops_partitions)  # jobs of other partitions are not Hops's: never touched
    nodes = [n for n in api.nodes() if node_in(n, scope.partitions) and n.gpus_total]
    env_dir = config.paths.resolve(config.engine.env_dir)

    def act(kind: str, job_id: str, args: dict[str, object], fn: object) -> None:
        if dry_run:
            return
        assert journal is not None
        with journal.action(kind, job_id, args, "failopen"):
            fn()  # type: ignore[operator]

    offer_resv: list[str] = []  # [OFFER] once jobs go through the offer reservation (it could not be deleted)
    offer_checked = False

    def clear_offer() -> None:
        """The offer reservation lies over the gate's nodes and would keep released jobs off them: delete
        it; while jobs that started on offers still run in it Slurm refuses ("in use"), and the released
        jobs are put in it instead (it admits every user but one)."""
        nonlocal offer_checked
        if offer_checked:
            return
        offer_checked = True
        if not any(r.name == OFFER for r in api.reservations()):
            return
        try:
            act("failopen-ungate", "", {"reservation": OFFER}, lambda: api.delete_reservation(OFFER))
        except SlurmError as exc:
            log.info("failopen: %s not deleted (%s): released jobs run in it", OFFER, exc)
            offer_resv.append(OFFER)

    for job in api.jobs():
        job = scope.mark(job)
        if not (job.is_hops and job.pending and job.held):
            continue
        if job.comment.startswith(ASIDE_PREFIX) and not aside:
            report.skipped[job.job_id] = "set aside by the engine (" + job.comment[len(ASIDE_PREFIX):][:100] + ")"
            continue
        try:
            d = HopsDirectives.from_canonical(job.directives or "")
        except Exception as exc:  # noqa: BLE001 - its stored directives do not read back: it stays held
            report.skipped[job.job_id] = f"its directives cannot be read back ({str(exc)[:100]})"
            continue
        gpus = d.gpus[0] if fo.gpus == "min" else d.gpus[-1]
        own = scope.nodes_of(job, nodes)  # the largest node of its own Hops partitions
        per_node = max((n.gpus_total for n in nodes if n.name in own), default=1)
        fields = {"TresPerJob": "", "TresPerNode": "", "NodeList": "",
                  "NumNodes": str(max(1, math.ceil(gpus / per_node)))}
        comment = (f"{LEFT_COMMENT}: {gpus} GPUs from Slurm's own scheduling" if report.action == "left" else
                   f"{COMMENT} (silent {report.age or 0:.0f} s): {gpus} GPUs from Slurm's own scheduling")
        try:
            clear_offer()
            if offer_resv:
                fields["Reservation"] = OFFER
            elif hops_reservations(job.reservation):
                act("failopen-detach", job.job_id, {"reservation": job.reservation},
                    lambda j=job.job_id: api.update_job(j, {"Reservation": ""}))
            act("failopen-request", job.job_id, {"fields": fields},
                lambda j=job.job_id, f=fields: api.update_job(j, f))
            act("failopen-request", job.job_id, {"fields": {"TresPerJob": f"gres:gpu:{gpus}"}},
                lambda j=job.job_id, g=gpus, c=comment: api.update_job(j, {"TresPerJob": f"gres:gpu:{g}", "Comment": c}))
            values = hops_job_env(job.directives, {"any": gpus}, placed=False)  # Slurm picks the nodes
            act("env", job.job_id, {"values": values}, lambda j=job.job_id, v=values: write_job_env(env_dir, j, v))
            act("failopen-release", job.job_id, {"gpus": gpus}, lambda j=job.job_id: api.release(j))
        except (SlurmError, OSError) as exc:
            report.skipped[job.job_id] = f"not released: {exc}"
            continue
        report.released[job.job_id] = gpus
    if report.released and any(r.name == GATE for r in api.reservations()):
        try:
            act("failopen-ungate", "", {}, lambda: api.delete_reservation(GATE))
            report.gate_removed = True
        except SlurmError as exc:
            report.skipped["gate"] = f"{GATE} not deleted: {exc}"
