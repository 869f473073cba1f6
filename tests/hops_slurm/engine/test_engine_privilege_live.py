"""Least privilege and one bad job, on the live minicluster (real slurmctld/slurmd, real probes).

* a probe for a user's job runs as that user (``sbatch --uid``), in a place only that user owns, through
  a probe reservation that is gone once the probes are over;
* a runtime record written into one job's place for another job's signature is refused, while the
  job's own record is ingested;
* a job whose stored directives no longer read back is set aside with a reason its owner sees
  (``scontrol show job``: Comment; ``hops-slurm queue``) while the other job is planned and runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest

from hops_slurm.engine.state import PROFILE_DONE, PROFILE_FAILED, EngineState
from hops_slurm.slurm.enact import read_job_env
from slurm_helpers import job_fields

pytestmark = pytest.mark.slurm


def _state(eng, job_id: str):  # noqa: ANN001, ANN202
    state = EngineState(eng.state_dir / "engine.sqlite")
    try:
        return state.get(job_id)
    finally:
        state.close()


def test_a_probe_for_a_users_job_runs_as_that_user(eng) -> None:  # noqa: ANN001
    import pwd

    eng.probes_first()  # on the idle minicluster the job would be measured in place, without probes
    user = eng.ensure_user()
    pw = pwd.getpwnam(user)
    job = eng.submit(gpus="1,2", user=user)
    out = eng.until_planned([job], timeout=180)
    js = _state(eng, job)
    assert js is not None and js.probes, eng.describe()
    for gpu_type, probe in js.probes.items():
        fields = job_fields(eng.cluster, str(probe["slurm_id"]))  # MinJobAge=300: still listed
        assert fields["UserId"].startswith(f"{user}("), fields["UserId"]
        assert fields.get("Reservation", "(null)") in (f"hops-p{job}", "(null)"), fields  # gone once deleted
        log = eng.state_dir / "probes" / job / f"probe-{gpu_type}.log"
        assert log.stat().st_uid == pw.pw_uid  # slurmstepd wrote it as the user
    journal = sqlite3.connect(eng.state_dir / "journal.sqlite")
    made = journal.execute("SELECT args FROM actions WHERE kind = 'reserve' AND job_id = ? AND status = 'done'",
                           (job,)).fetchall()
    assert any(json.loads(a)["reservation"] == f"hops-p{job}" and json.loads(a)["user"] == user for (a,) in made), made
    place = eng.state_dir / "probes" / job
    assert place.stat().st_uid == pw.pw_uid and place.stat().st_mode & 0o777 == 0o700
    runnable = subprocess.run(["runuser", "-u", user, "--", os.path.realpath(os.sys.executable), "-c", "import torch"],
                              capture_output=True, timeout=120).returncode == 0
    if runnable:  # the probe's python is open to the user: the probe measured, under the user's namespace
        assert js.profile == PROFILE_DONE and js.signature.startswith(f"{user}/"), js
    else:  # e.g. a python under /root: the probe failed as that user would, and the job is still planned
        assert js.profile == PROFILE_FAILED and "Permission denied" in " ".join(
            (eng.state_dir / "probes" / job / f"probe-{t}.log").read_text() for t in js.probes), js
    assert out["assignments"][job] is not None or job in out["assignments"]
    assert f"hops-p{job}" not in {r.name for r in eng.api.reservations()}  # the probe reservation is gone


def _runtime_line(signature: str, node: str, gpu_type: str, gpus: int) -> str:
    from profiler.records import RuntimeRecord

    return RuntimeRecord(signature=signature, gpu_type=gpu_type, node=node, gpus=gpus, nodes=1, batch_size=8,
                         steps=10, window_seconds=2.0, throughput=10 * 8 * gpus / 2.0, data_times=[0.01] * 10,
                         sync_waits=[], step_times=[0.2] * 10).model_dump_json() + "\n"


def test_a_forged_record_for_another_jobs_signature_is_refused(eng) -> None:  # noqa: ANN001
    from estimator.store import ThroughputStore

    victim = eng.submit(gpus="1,2", model="resnet18")
    forger = eng.submit(gpus="1,2", model="mobilenetv2")
    eng.until_planned([victim, forger], placed=True, timeout=180)
    eng.wait(lambda: eng.detail(forger).active and bool(eng.detail(forger).gpu_alloc), what="forger running")
    env_dir = eng.state_dir / "jobs"
    theirs = read_job_env(env_dir, victim)["HOPS_JOB_SIGNATURE"]
    mine = read_job_env(env_dir, forger)
    assert theirs != mine["HOPS_JOB_SIGNATURE"]
    node, gpus = next(iter(eng.detail(forger).gpu_config().items()))
    gpu_type = next(n.gpu_type for n in eng.api.nodes() if n.name == node)
    store = ThroughputStore(eng.state_dir / "store.sqlite", read_only=True)
    before = (store.record_counts(theirs)["samples"], store.record_counts(mine["HOPS_JOB_SIGNATURE"])["samples"])
    store.close()
    with open(mine["HOPS_METRICS_FILE"], "a") as fh:  # the forger's own place, as its recorder would write
        fh.write(_runtime_line(theirs, node, gpu_type, gpus))
        fh.write(_runtime_line(mine["HOPS_JOB_SIGNATURE"], node, gpu_type, gpus))
    proc = eng.hops("plan", "--once", "--json", "--config", str(eng.config))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not this job's" in proc.stderr, proc.stderr[-3000:]
    store = ThroughputStore(eng.state_dir / "store.sqlite", read_only=True)
    after = (store.record_counts(theirs)["samples"], store.record_counts(mine["HOPS_JOB_SIGNATURE"])["samples"])
    store.close()
    assert after[0] == before[0], "the forged record reached the victim's signature"
    assert after[1] > before[1], f"the forger's own record was not ingested (the check would prove nothing): {proc.stderr[-3000:]}"


def test_a_job_whose_directives_break_is_set_aside_and_the_other_runs(eng) -> None:  # noqa: ANN001
    bad = eng.submit(gpus="1,2")
    good = eng.submit(gpus="1,2")
    # the stored canonical form of `lr=0.1e-99@1`: it does not read back
    eng.cluster.run(["scontrol", "update", f"JobId={bad}",
                     "AdminComment=hops:gpus=1 samples=1000000 batch-size=8 model=resnet18 lr=1e-100@1"])
    out = eng.until_planned([good], placed=True, timeout=180)
    assert bad not in out["assignments"]
    shown = eng.cluster.run(["scontrol", "show", "job", bad]).stdout  # what the owner reads
    assert "Comment=hops: set aside: " in shown and "1e-100" in shown, shown
    job = eng.detail(bad)
    assert job.comment.startswith("hops: set aside: ") and job.pending and job.reason == "JobHeldAdmin", job
    queue = eng.hops("queue", "--config", str(eng.config), "--json")
    assert queue.returncode == 0, queue.stderr
    rows = {r["jobid"]: r for r in json.loads(queue.stdout)["jobs"]}
    assert rows[bad]["plan"].startswith("set aside: "), rows
    eng.wait(lambda: eng.detail(good).active, what="the good job running")


def test_a_user_cannot_ask_for_a_hops_reservation(eng) -> None:  # noqa: ANN001
    """Slurm 22.05 reservations name users, not jobs: a user named by a Hops reservation (the owner of
    ``hops-j<id>``) could run any job in it. The submit hook refuses it, at submission and by update."""
    user = eng.ensure_user()
    nodes = [n.name for n in eng.api.nodes()][:1]
    eng.cluster.run(["scontrol", "create", "reservation", "ReservationName=hops-j999999", f"Nodes={nodes[0]}",
                     f"Users={user}", "StartTime=now", "Duration=UNLIMITED", "Flags=OVERLAP,IGNORE_JOBS"])
    try:
        def as_user(*argv: str) -> list[str]:  # runuser on the host, chroot --userspec in a Debian root
            return eng.cluster.user_argv(user, list(argv))

        sub = subprocess.run([*as_user("sbatch", "--parsable", "-o", "/dev/null", "--reservation=hops-j999999",
                              "--wrap", "sleep 60")], env=eng.env, capture_output=True, text=True, timeout=30)
        assert sub.returncode != 0 and "belongs to the Hops engine" in sub.stderr, (sub.stdout, sub.stderr)
        job = subprocess.run(as_user("sbatch", "--parsable", "-o", "/dev/null", "-H", "--wrap", "sleep 60"),
                             env=eng.env, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        eng.submitted.append(job)
        upd = subprocess.run(as_user("scontrol", "update", f"JobId={job}", "Reservation=hops-j999999"),
                             env=eng.env, capture_output=True, text=True, timeout=30)
        assert upd.returncode != 0, (upd.stdout, upd.stderr)
        assert eng.detail(job).reservation == ""
    finally:
        eng.cluster.run(["scontrol", "delete", "ReservationName=hops-j999999"], check=False)
