"""An ordinary user asks why their jobs wait, on the live minicluster (issue 35): after the engine's refresh
and round, ``hops-slurm queue -u <user> --start`` run as that user (not root: the engine's database is
out of reach, so the users' view from the queue summary) shows each of their jobs, each pending one with
a reason of the one vocabulary, and nothing of other users' jobs beyond what squeue shows everyone.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from hops_slurm.engine.queue_summary import NAME
from planner.reasons import Code

pytestmark = pytest.mark.slurm


def _as_user(eng, user: str, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    """``hops-slurm`` run with ``user``'s real uid and gid (setpriv keeps root's capabilities, so the venv's
    Python under /root runs; what ``queue`` decides by, access(2) on the engine's database, goes by the
    real uid)."""
    pw = pwd.getpwnam(user)
    argv = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
            str(Path(sys.executable).parent / "hops-slurm"), *args]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/", "MPLCONFIGDIR": str(eng.workdir / "mpl")}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False, cwd="/")


def test_an_ordinary_user_sees_their_jobs_reasons_and_nothing_private(eng) -> None:  # noqa: ANN001
    user = eng.ensure_user()
    eng.until_idle()
    # 24 GPUs (2 x 8 a100, 2 x 4 v100), six rigid 8-GPU jobs: the user's four alone ask 32, so at least one of
    # theirs waits whatever order the plan takes (a new model's jobs go in place with the fallback estimate,
    # and may well start before the others)
    others = [eng.submit(gpus="8") for _ in range(2)]
    theirs = [eng.submit(gpus="8", user=user) for _ in range(4)]
    eng.until_planned(theirs + others, timeout=180)
    summary = eng.state_dir / NAME
    assert summary.is_file() and oct(summary.stat().st_mode & 0o777) == "0o644"
    denied = _as_user(eng, user, "queue", "--config", str(eng.config), "--json")  # no filter: still the users' view
    assert denied.returncode == 0, denied.stderr
    assert {"jobid", "reason"} <= set(json.loads(denied.stdout)["jobs"][0])
    rows: list[dict[str, object]] = []
    pending: list[str] = []

    def settled() -> bool:
        """The summary (written by the last round) and Slurm agree on which of the user's jobs wait: a job the
        round released may start after the summary was written, so one more round is run until they do."""
        nonlocal rows, pending
        done = _as_user(eng, user, "queue", "--config", str(eng.config), "-u", user, "--start", "--json",
                        "-o", "jobid,user,state,reason,detail,position,start")
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)["jobs"]
        pending = [j for j in theirs + others if eng.detail(j).pending]
        if {r["jobid"] for r in rows} == {j for j in theirs if j in pending}:
            return True
        eng.plan_once()
        return False

    eng.wait(settled, timeout=90, what="the user's view to agree with Slurm's pending jobs")
    assert {j for j in theirs if j in pending} != set(), eng.describe()  # 32 GPUs of theirs on 24: one waits
    codes = {c.value for c in Code}
    for row in rows:
        assert row["user"] == user and row["state"] == "PENDING"
        assert row["reason"] and row["reason"] != "None", row
    table = _as_user(eng, user, "queue", "--config", str(eng.config), "--parsable2", "-o", "jobid,reason")
    assert table.returncode == 0, table.stderr
    shown = dict(line.split("|") for line in table.stdout.splitlines()[1:])
    for job in pending:  # every pending job of the queue has a reason, whoever owns it
        assert shown.get(job), (job, table.stdout, eng.describe())
        assert shown[job] in codes or shown[job][0].isupper(), shown[job]
    # nothing of the engine's bookkeeping: directives, models, comments stay in the root-only state
    text = summary.read_text()
    for private in ("resnet18", "samples", "hops:", "admin_comment", "directives"):
        assert private not in text, private


def test_with_forecasts_on_an_ordinary_user_sees_a_forecast_start_for_each_waiting_job(eng) -> None:  # noqa: ANN001
    """The daemon with ``[engine] forecast = true``: after a round its worker runs the round loop forward in
    the simulator and the next summary carries each waiting job's forecast start and band, which
    ``queue -u <user> --start`` shows that user (no other user's job)."""
    eng.config.write_text(eng.config.read_text().replace("[engine]\n", "[engine]\nforecast = true\n", 1))
    user = eng.ensure_user()
    eng.until_idle()
    others = [eng.submit(gpus="8") for _ in range(2)]
    theirs = [eng.submit(gpus="8", user=user) for _ in range(4)]  # 32 GPUs on 24: at least one of theirs waits
    daemon = eng.daemon()
    rows: list[dict[str, object]] = []

    def forecast_shown() -> bool:
        nonlocal rows
        done = _as_user(eng, user, "queue", "--config", str(eng.config), "-u", user, "--start", "--json",
                        "-o", "jobid,user,state,reason,start")
        if done.returncode != 0:
            return False
        rows = json.loads(done.stdout)["jobs"]
        waiting = [r for r in rows if r["state"] == "PENDING"]
        return bool(waiting) and all(r["start"] is not None for r in waiting)

    eng.wait(forecast_shown, timeout=150, what=f"a forecast start for the waiting jobs of {user}\n{eng.describe()}")
    assert daemon.poll() is None, eng.output(daemon)[-3000:]
    assert {r["jobid"] for r in rows} <= set(theirs) and all(r["user"] == user for r in rows), rows
    assert not {r["jobid"] for r in rows} & set(others)
