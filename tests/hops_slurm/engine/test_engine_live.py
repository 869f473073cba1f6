"""The engine on the live minicluster (real slurmctld/slurmd, real probes, real CBC solves).

Placement exactness (incl. a two-node config), a probe retried after a transient failure,
``plan --once --dry-run`` changing nothing, the daemon killed (SIGKILL from outside, or its own abrupt
exit) in the middle of enacting a round followed by a restart, SIGTERM, and the single-instance lock.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time

import pytest

from hops_slurm.slurm.enact import GATE, job_reservation

pytestmark = pytest.mark.slurm


def _running_config(eng, job_id: str) -> dict[str, int]:  # noqa: ANN001
    eng.wait(lambda: eng.detail(job_id).active and all(eng.detail(job_id).gpu_alloc.values()) and
             bool(eng.detail(job_id).gpu_alloc), what=f"job {job_id} running with GPUs listed")
    return eng.detail(job_id).gpu_config()


def test_jobs_land_on_exactly_the_planned_nodes_and_gpus_including_two_nodes(eng) -> None:  # noqa: ANN001
    # Both A100 nodes must be free for the wide job: a job of an earlier test still completing there would
    # send the small job onto them first, and the minimum run time then keeps it there.
    eng.until_idle()
    # A model no other test uses: the engine state (and its throughput store) is shared by the session, and
    # what earlier tests recorded for the common model (e.g. the honesty test's inflated record) would
    # otherwise decide whether the small job is worth more on the A100s than the wide one.
    wide = eng.submit(gpus="16", model="resnet50")  # 16 GPUs: more than any node has: the plan spans two nodes
    small = eng.submit(gpus="1,2,4", model="resnet50")
    out = eng.until_planned([wide, small], placed=True)
    plan = out["assignments"]
    assert len(plan[wide]) >= 2 and sum(plan[wide].values()) == 16
    for job in (wide, small):
        assert _running_config(eng, job) == {n: int(k) for n, k in plan[job].items()}
    # started and verified: the per-job reservations are gone, the gate stays
    names = {r.name for r in eng.api.reservations()}
    assert GATE in names and job_reservation(wide) not in names and job_reservation(small) not in names
    # the job's environment file carries the GPU count and the scaled learning rate
    env = (eng.state_dir / "jobs" / f"{wide}.env").read_text()
    assert "HOPS_GPUS=16" in env and "HOPS_LR=" in env


FLAKY_MODEL = """
import os

import torch
from torch import nn


class FailsOnce(nn.Module):
    \"\"\"The first forward pass of all probe processes raises (one marker file, created exclusively).\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 2)

    def forward(self, x):
        try:
            os.close(os.open(os.environ["HOPS_TEST_FLAKY_MARK"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return self.lin(x)
        raise RuntimeError("transient failure of the first probe (test)")


def build():
    model = FailsOnce()
    batches = [(torch.randn(8, 8), torch.randint(0, 2, (8,))) for _ in range(4)]
    return model, batches, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()
"""


def test_a_probe_that_fails_once_is_retried_and_the_job_planned(eng) -> None:  # noqa: ANN001
    from hops_slurm.engine.state import PROFILE_DONE, EngineState

    eng.probes_first()
    (eng.workdir / "hopsflaky.py").write_text(FLAKY_MODEL)
    mark = eng.workdir / "flaky.mark"
    path = os.pathsep.join(p for p in (str(eng.workdir), os.environ.get("PYTHONPATH", "")) if p)  # this checkout's hops_slurm too
    env = {"PYTHONPATH": path, "HOPS_TEST_FLAKY_MARK": str(mark)}
    job = eng.submit(gpus="1,2", model="hopsflaky:build")
    out = eng.until_planned([job], extra_env=env)
    assert mark.exists()  # the failure happened
    state = EngineState(eng.state_dir / "engine.sqlite")
    js = state.get(job)
    state.close()
    assert js is not None and js.profile == PROFILE_DONE, eng.describe()
    assert all(p["status"] == "done" for p in js.probes.values()), js.probes
    retried = [p for p in js.probes.values() if p.get("attempts") == 2]
    assert len(retried) == 1, js.probes  # exactly one probe failed, and its second attempt succeeded
    assert "transient failure of the first probe" in retried[0]["previous_errors"][0]
    assert out["assignments"][job], out


def test_plan_once_dry_run_changes_nothing(eng) -> None:  # noqa: ANN001
    first = eng.submit(gpus="1,2")
    eng.until_planned([first])  # placed
    second = eng.submit(gpus="2,4")
    # let the engine see it once (admin hold; measured in place), without a round after it
    eng.wait(lambda: eng.jobs()[second].reason in ("JobHeldUser", "JobHeldAdmin"), what="hook hold")
    before_jobs = {j: (s.state, s.reason, s.priority, s.required_nodes, s.reservation) for j, s in eng.jobs().items()}
    before_resv = sorted((r.name, r.nodes) for r in eng.api.reservations())
    journal = eng.state_dir / "journal.sqlite"
    before_actions = sqlite3.connect(journal).execute("SELECT count(*) FROM actions").fetchone()[0]
    out = eng.plan_once("--dry-run")
    assert out["dry_run"] is True
    time.sleep(2.0)  # bf_interval=1: anything released would have started by now
    after_jobs = {j: (s.state, s.reason, s.priority, s.required_nodes, s.reservation) for j, s in eng.jobs().items()}
    assert after_jobs == before_jobs
    assert sorted((r.name, r.nodes) for r in eng.api.reservations()) == before_resv
    assert sqlite3.connect(journal).execute("SELECT count(*) FROM actions").fetchone()[0] == before_actions


def test_owner_release_does_not_start_a_job_outside_the_plan(eng) -> None:  # noqa: ANN001
    eng.plan_once()  # the engine has run: the gate reservation is in place
    user = eng.ensure_user()
    job = eng.submit(gpus="1,2", user=user)
    release = eng.cluster.user_argv(user, ["scontrol", "release", job])
    assert subprocess.run(release, env=eng.env, capture_output=True, text=True, timeout=30).returncode == 0
    deadline = time.monotonic() + 3.0  # bf_interval=1: a startable job starts within ~1 s
    while time.monotonic() < deadline:
        assert eng.jobs()[job].pending, eng.jobs()[job]
        time.sleep(0.3)
    out = eng.until_planned([job])
    assert _running_config(eng, job) == {n: int(k) for n, k in out["assignments"][job].items()}


# SIGKILL at every kind of journaled step: test_engine_faults_live.py; here the engine's own abrupt exit
@pytest.mark.parametrize(("crash_after", "how"), [(3, "exit")])
def test_daemon_killed_while_enacting_then_restarted_leaves_every_job_once(eng, crash_after: int, how: str) -> None:  # noqa: ANN001
    jobs = [eng.submit(gpus="1,2,4") for _ in range(3)] + [eng.submit(gpus="8")]
    # the daemon profiles them and starts a round; right after the `crash_after`-th Slurm action of the
    # round was carried out, before the journal marked it done, the daemon stops: "exit" ends the process
    # itself (os._exit), "sigkill" waits there and this test kills it with SIGKILL from outside
    env = {"HOPS_ENGINE_CRASH_AFTER": str(crash_after)}
    pause = eng.workdir / "crash-point.pid"
    if how == "sigkill":
        env["HOPS_ENGINE_CRASH_PAUSE_FILE"] = str(pause)
    crashing = eng.daemon(extra_env=env)
    if how == "sigkill":
        eng.wait(lambda: pause.exists() and pause.read_text().strip() == str(crashing.pid), timeout=120,
                 what="the daemon at its crash point")
        os.kill(crashing.pid, signal.SIGKILL)
        assert crashing.wait(timeout=30) == -signal.SIGKILL
    else:
        assert crashing.wait(timeout=120) == 99, eng.output(crashing)[-3000:]
    conn = sqlite3.connect(eng.state_dir / "journal.sqlite")
    assert conn.execute("SELECT count(*) FROM actions WHERE status = 'intended'").fetchone()[0] >= 1
    daemon = eng.daemon()
    try:
        eng.wait(lambda: all(s.state == "RUNNING" or (s.pending and s.reason == "JobHeldAdmin") for s in eng.jobs().values())
                 and not [r for r in eng.api.reservations() if r.name != GATE], timeout=60,
                 what="every job running or admin-held with no per-job reservation")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {eng.jobs()}\n{eng.output(daemon)[-5000:]}") from None
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    try:
        _check_every_job_once(eng, jobs, conn)
    except AssertionError as exc:  # say what the daemons did
        raise AssertionError(f"{exc}\n--- crashed daemon ---\n{eng.output(crashing)[-3000:]}\n--- restarted daemon ---\n"
                             f"{eng.output(daemon)[-5000:]}") from None


def _check_every_job_once(eng, jobs: list[str], conn: sqlite3.Connection) -> None:  # noqa: ANN001
    listed = [j for j in eng.api.jobs() if j.job_id in jobs]
    assert sorted(j.job_id for j in listed) == sorted(jobs)  # each exactly once
    assert all(j.state in ("RUNNING", "PENDING") for j in listed)
    # no stray reservation: besides the gate, only the own reservation of a job released into it and still
    # waiting to start (a round in progress at SIGTERM may finish a placement; it starts on those nodes)
    by_id = {j.job_id: j for j in listed}
    for r in eng.api.reservations():
        if r.name == GATE:
            continue
        owner = by_id.get(r.name.removeprefix("hops-j"))
        assert owner is not None and owner.pending and not owner.held and owner.reservation == r.name, (r, owner)
        assert set(owner.required_nodes) == set(r.nodes), (r, owner)
    assert conn.execute("SELECT count(*) FROM actions WHERE status = 'intended'").fetchone()[0] == 0


def test_sigterm_stops_cleanly_and_a_second_daemon_is_refused(eng) -> None:  # noqa: ANN001
    job = eng.submit(gpus="1,2")
    first = eng.daemon()
    eng.wait(lambda: eng.jobs()[job].state == "RUNNING", timeout=60, what="job started by the daemon")
    second = eng.daemon()
    assert second.wait(timeout=60) == 1
    message = eng.output(second)
    assert "another hops-slurm engine" in message and str(first.pid) in message
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=60) == 0
    log = eng.output(first)
    assert "engine stopped" in log
    conn = sqlite3.connect(eng.state_dir / "journal.sqlite")
    assert conn.execute("SELECT count(*) FROM actions WHERE status = 'intended'").fetchone()[0] == 0
    # the lock is free again: plan --once may run
    assert eng.hops("plan", "--once", "--config", str(eng.config)).returncode == 0
    assert eng.jobs()[job].state == "RUNNING"  # an unchanged config keeps running
