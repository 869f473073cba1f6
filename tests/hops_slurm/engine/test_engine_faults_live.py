"""Faults injected into a live minicluster with the engine running (real slurmctld/slurmd).

After each: no job lost (every job listed once, running or pending), no stray hold or reservation (pending
jobs admin-held or released into their own complete reservation; only the gate and those reservations),
no journaled action left open; the daemon recovers by itself or exits with a clear message and recovers
on restart. Faults: the daemon SIGKILLed at every kind of journaled step (after Slurm carried it out, and
before); ``scontrol`` failing every 7th call (a fault injector on PATH); slurmctld gone in the middle of
a round (for ``HOPS_TEST_CTLD_OUTAGE`` s, default 120 on CI-sized timeouts: set it lower locally); slurmd
killed while a planned job runs; the store's disk full (a tmpfs with ``size=``); an administrator
deleting the gate and releasing a held job; and the daemon gone, with fail-open.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster import processes
from hops_slurm.slurm.enact import GATE, read_job_env

pytestmark = pytest.mark.slurm


def check_consistent(eng, jobs: list[str]) -> None:  # noqa: ANN001
    """No job lost, no stray hold or reservation, nothing left open in the journal."""
    listed = [j for j in eng.api.jobs() if j.job_id in jobs]
    assert sorted(j.job_id for j in listed) == sorted(jobs), (jobs, listed)  # each exactly once
    by_id = {j.job_id: j for j in listed}
    for j in listed:
        assert j.state == "RUNNING" or j.pending, j
        if j.pending and j.reservation != f"hops-j{j.job_id}":
            assert j.held and j.reason == "JobHeldAdmin", j  # held by the engine, never left released
    names = {r.name for r in eng.api.reservations()}
    assert GATE in names
    for name in names - {GATE}:
        owner = by_id.get(name.removeprefix("hops-j"))
        assert name.startswith("hops-j") and owner is not None and owner.pending and not owner.held \
            and owner.reservation == name, (name, owner)
    conn = sqlite3.connect(eng.state_dir / "journal.sqlite")
    assert conn.execute("SELECT count(*) FROM actions WHERE status = 'intended'").fetchone()[0] == 0
    conn.close()


def _settled(eng, jobs: list[str]) -> bool:  # noqa: ANN001
    seen = eng.jobs()
    return all(j in seen and (seen[j].state == "RUNNING" or (seen[j].pending and seen[j].reason == "JobHeldAdmin"))
               for j in jobs) and not [r for r in eng.api.reservations() if r.name != GATE]


def _stop(eng, proc) -> None:  # noqa: ANN001
    # a SIGTERM before the daemon installed its handler (while Python imports) would just kill it
    eng.wait(lambda: "engine running" in eng.output(proc) or proc.poll() is not None, timeout=60,
             what="the daemon started")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0, eng.output(proc)[-3000:]


def _converge(eng, jobs: list[str], daemon, timeout: float = 120) -> None:  # noqa: ANN001
    try:
        eng.wait(lambda: _settled(eng, jobs), timeout=timeout, what="every job running or admin-held, no per-job reservation")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{eng.describe()}\n--- daemon ---\n{eng.output(daemon)[-4000:]}") from None


# ----- the daemon SIGKILLed at every journaled step -----------------------------------------------
#: Every kind of action the engine journals in a round or refresh, in the order a placement meets them
#: (hold: new jobs; reserve/place/env/release: placement, the attach being part of place; detach/unreserve: settling after the
#: start), each killed right after Slurm carried it out, plus three killed before (intent journaled only).
CHAIN = [("hold", "after"), ("reserve", "before"), ("reserve", "after"), ("place", "before"), ("place", "after"),
         ("env", "after"), ("release", "before"), ("release", "after"), ("detach", "after"),
         ("unreserve", "after"), ("gate", "after")]


def test_sigkill_at_every_journaled_step_loses_nothing(eng) -> None:  # noqa: ANN001
    jobs = [eng.submit(gpus="1,2")]
    pause = eng.workdir / "crash-point.pid"
    reached = []
    for kind, when in CHAIN:
        jobs.append(eng.submit(gpus="1,2"))  # something new to hold, place and settle at every step
        if kind == "gate":  # an administrator deleted the gate: the next start creates it again
            eng.cluster.run(["scontrol", "delete", f"ReservationName={GATE}"], check=False)
        pause.unlink(missing_ok=True)
        env = {"HOPS_ENGINE_CRASH_AT": f"{kind}:before" if when == "before" else kind,
               "HOPS_ENGINE_CRASH_PAUSE_FILE": str(pause)}
        daemon = eng.daemon(extra_env=env)
        try:
            eng.wait(lambda: pause.exists() and pause.read_text().strip() == str(daemon.pid), timeout=90,
                     what=f"the daemon at {kind} ({when})")
        except AssertionError as exc:
            daemon.kill()
            raise AssertionError(f"{exc}; reached so far: {reached}\n{eng.output(daemon)[-3000:]}") from None
        os.kill(daemon.pid, signal.SIGKILL)
        assert daemon.wait(timeout=30) == -signal.SIGKILL
        reached.append(f"{kind}:{when}")
        listed = [j.job_id for j in eng.api.jobs() if j.job_id in jobs and (j.pending or j.active)]
        assert sorted(listed) == sorted(jobs), f"a job was lost at {kind} ({when}): {eng.describe()}"
    daemon = eng.daemon()  # a clean restart repairs the last crash and plans on
    _converge(eng, jobs, daemon)
    _stop(eng, daemon)
    check_consistent(eng, jobs)
    assert len(reached) == len(CHAIN)


# ----- scontrol failing every Nth call -----------------------------------------------------------
INJECTOR = """#!/bin/sh
# Fault injector (tests only): every $HOPS_FAULT_EVERY-th scontrol call fails as if slurmctld refused it.
n=$(( $(cat "$HOPS_FAULT_COUNT" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$HOPS_FAULT_COUNT"
if [ $(( n % HOPS_FAULT_EVERY )) -eq 0 ]; then
    echo "fault injector: scontrol call $n refused" >&2
    exit 1
fi
exec {real} "$@"
"""


def test_scontrol_failing_every_seventh_call(eng) -> None:  # noqa: ANN001
    bindir = eng.workdir / "faultbin"
    bindir.mkdir()
    # the cluster's own clients (on 24.11/26.05: the wrappers that run them inside the Debian root)
    path = eng.env.get("PATH", os.environ["PATH"])
    (bindir / "scontrol").write_text(INJECTOR.format(real=shutil.which("scontrol", path=path)))
    (bindir / "scontrol").chmod(0o755)
    count = eng.workdir / "scontrol.count"
    jobs = [eng.submit(gpus="1,2") for _ in range(3)]
    daemon = eng.daemon(extra_env={"PATH": f"{bindir}:{path}", "HOPS_FAULT_EVERY": "7",
                                   "HOPS_FAULT_COUNT": str(count)})
    try:
        eng.wait(lambda: all(eng.jobs()[j].state == "RUNNING" for j in jobs), timeout=180,
                 what="every job running under the faulty scontrol")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{eng.describe()}\n{eng.output(daemon)[-4000:]}") from None
    _stop(eng, daemon)
    calls = int(count.read_text())
    assert calls >= 8 and "fault injector: scontrol call" in eng.output(daemon), calls  # faults did happen
    daemon = eng.daemon()  # whatever the last faulty step left half-done is repaired at start
    _converge(eng, jobs, daemon)
    _stop(eng, daemon)
    check_consistent(eng, jobs)


# ----- slurmctld gone in the middle of a round -----------------------------------------------------
def _role_pid(eng, role: str) -> int:  # noqa: ANN001
    return eng.cluster.registry.load()[role].pid


def _restart(eng, role: str) -> None:  # noqa: ANN001
    """Start one stopped daemon of the minicluster again (slurmctld keeps its saved state)."""
    cluster = eng.cluster
    daemons = cluster.registry.load()
    if role in daemons and processes.owns(daemons[role]):
        return
    daemons[role] = cluster._start(role, fresh=False)
    cluster.registry.save(daemons)
    cluster._wait_started(daemons[role])


def test_slurmctld_gone_mid_round_then_back(eng) -> None:  # noqa: ANN001
    outage = float(os.environ.get("HOPS_TEST_CTLD_OUTAGE", "120"))
    jobs = [eng.submit(gpus="1,2") for _ in range(2)]
    pause = eng.workdir / "wait-point.pid"
    daemon = eng.daemon(extra_env={"HOPS_ENGINE_WAIT_AT": "reserve", "HOPS_ENGINE_CRASH_PAUSE_FILE": str(pause)})
    eng.wait(lambda: pause.exists(), timeout=120, what="the daemon in the middle of a placement")
    started = time.time()
    processes.stop_pid(_role_pid(eng, "slurmctld"))  # slurmctld goes away between reserve and attach
    pause.unlink()
    time.sleep(outage)
    assert daemon.poll() is None, "the daemon died while slurmctld was away:\n" + eng.output(daemon)[-3000:]
    _restart(eng, "slurmctld")  # with its saved state
    _converge(eng, jobs, daemon, timeout=180)
    failed = sqlite3.connect(eng.state_dir / "journal.sqlite").execute(
        "SELECT count(*) FROM actions WHERE status = 'failed' AND created > ?", (started,)).fetchone()[0]
    assert failed >= 1, "no Slurm action failed: the outage did not hit the round"
    _stop(eng, daemon)
    check_consistent(eng, jobs)


# ----- slurmd killed while a planned job runs -------------------------------------------------------
def test_slurmd_killed_while_a_planned_job_runs(eng) -> None:  # noqa: ANN001
    job = eng.submit(gpus="1,2")
    daemon = eng.daemon()
    # measured in place on the idle cluster (probed first if busy), so allow what a loaded 2-core machine takes
    eng.wait(lambda: eng.detail(job).state == "RUNNING" and bool(eng.detail(job).gpu_alloc), timeout=300,
             what="the job running")
    node = next(iter(eng.detail(job).gpu_alloc))
    os.kill(_role_pid(eng, f"slurmd:{node}"), signal.SIGKILL)
    try:  # SlurmdTimeout=60: the node goes down, Slurm requeues the job, the engine holds and re-places it
        eng.wait(lambda: eng.detail(job).state == "RUNNING" and node not in eng.detail(job).gpu_alloc, timeout=300,
                 what="the job running again on another node")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{eng.describe()}\n{eng.output(daemon)[-4000:]}") from None
    finally:
        _restart(eng, f"slurmd:{node}")
        eng.cluster.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], check=False)
    _converge(eng, [job], daemon)  # the node's return may make Slurm requeue the job once more: the engine holds it
    _stop(eng, daemon)
    check_consistent(eng, [job])


# ----- the store's disk full ----------------------------------------------------------------------
def test_store_disk_full_then_freed(eng) -> None:  # noqa: ANN001
    mnt = Path(tempfile.mkdtemp(prefix="hops-full-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.fail("cannot mount a tmpfs (the test runs as root, like CI)")
    daemon = None
    try:
        config = mnt / "hops.toml"
        config.write_text(eng.config.read_text().replace(str(eng.state_dir), str(mnt / "state")))
        eng.config, saved = config, eng.config
        first = eng.submit(gpus="1,2")
        daemon = eng.daemon()
        eng.wait(lambda: eng.detail(first).state == "RUNNING", timeout=180, what="the first job running")
        filler = mnt / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)  # until ENOSPC
        second = eng.submit(gpus="1,2")
        eng.wait(lambda: "cannot be written" in eng.output(daemon), timeout=60, what="the daemon noticing")
        time.sleep(5)
        assert daemon.poll() is None and eng.detail(first).state == "RUNNING"
        assert eng.detail(second).pending and eng.detail(second).held  # held, never started outside a plan
        filler.unlink()
        eng.wait(lambda: eng.detail(second).state == "RUNNING", timeout=120, what="the second job running")
        _stop(eng, daemon)
        daemon = None
        check_consistent(eng, [first, second])
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        eng.config = saved if "saved" in locals() else eng.config
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(mnt, ignore_errors=True)


# ----- an administrator deletes the gate and releases a held job -------------------------------------
def test_admin_deletes_the_gate_and_releases_a_held_job(eng) -> None:  # noqa: ANN001
    eng.plan_once()
    job = eng.submit(gpus="32")  # more GPUs than the cluster has: the engine keeps it held
    eng.plan_once()
    eng.wait(lambda: eng.detail(job).reason == "JobHeldAdmin", what="admin hold")
    # Slurm refuses to delete a reservation a job still uses ("Requested reservation is in use"): root's
    # probe jobs go through the gate, so the probes of earlier tests' models must have ended first
    eng.wait(lambda: not any(j.reservation == GATE and (j.pending or j.active) for j in eng.api.jobs()),
             timeout=120, what=f"no job in {GATE}\n{eng.describe()}")
    eng.cluster.run(["scontrol", "delete", f"ReservationName={GATE}"])
    eng.cluster.run(["scontrol", "release", job])
    time.sleep(3)  # bf_interval=1: without the gate it may start outside any plan
    eng.plan_once()
    eng.wait(lambda: eng.detail(job).pending and eng.detail(job).reason == "JobHeldAdmin", timeout=60,
             what="the job put back on hold")
    check_consistent(eng, [job])


# ----- the daemon gone: fail-open --------------------------------------------------------------------
def test_failopen_hands_held_jobs_to_slurm_when_the_daemon_is_gone(eng) -> None:  # noqa: ANN001
    eng.plan_once()  # the engine has run (gate, heartbeat), then it is gone
    job = eng.submit(gpus="2,4")
    base = eng.config.read_text()
    hold, release = eng.workdir / "hold.toml", eng.workdir / "release.toml"
    hold.write_text(base + '\n[failopen]\nmode = "hold"\n')
    release.write_text(base + '\n[failopen]\nmode = "release"\ngrace = 60\ngpus = "min"\n')

    def failopen(cfg: Path) -> str:
        proc = eng.hops("failopen", "--config", str(cfg))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "mode is hold" in failopen(hold)
    assert "within the grace" in failopen(release)  # the heartbeat is fresh
    then = time.time() - 120
    os.utime(eng.state_dir / "heartbeat", (then, then))  # the daemon silent for two minutes
    assert "mode is hold" in failopen(hold) and eng.detail(job).held
    out = failopen(release)
    assert f"job {job} released asking for 2 GPUs" in out and f"reservation {GATE} deleted" in out, out
    eng.wait(lambda: eng.detail(job).state == "RUNNING" and bool(eng.detail(job).gpu_alloc), timeout=30,
             what="the job started by Slurm")
    assert sum(eng.detail(job).gpu_config().values()) == 2
    assert eng.detail(job).comment.startswith("hops: released without the Hops daemon")
    assert read_job_env(eng.state_dir / "jobs", job)["HOPS_GPUS"] == "2"
    eng.plan_once()  # the daemon is back: the gate returns, the job goes on under Hops
    check_consistent(eng, [job])
