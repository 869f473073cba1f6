"""``hops-slurm report`` closer to sacct (issue 35): -a, -X, -p; NodeList, ExitCode, Timelimit, Reason;
``-j abc`` an error on a live cluster's records; the estimated run time is EstRun, not sprio's Age."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report.table import hostlist

T0 = 1_795_000_000.0  # an epoch clock: the records of a live cluster


def _records(tmp_path: Path) -> Path:
    jobs = [
        JobRecord(job_id="101", name="a", user="root", partition="hops", submit=T0, start=T0 + 60, end=T0 + 660,
                  state="COMPLETED", age_estimate=600.0, time_limit=3600.0,
                  placements=[PlacementRecord(start=T0 + 60, end=T0 + 660, config={"g1": 4, "g2": 4, "g3": 4})]),
        JobRecord(job_id="102", name="b", user="alice", partition="hops", submit=T0 + 10, state="PENDING",
                  reason="AssocGrpGRES"),
        JobRecord(job_id="103", name="c", user="alice", partition="hops", submit=T0 + 20, start=T0 + 30, end=T0 + 40,
                  state="FAILED", exit_code="1:0",
                  placements=[PlacementRecord(start=T0 + 30, end=T0 + 35, config={"x": 1}, preempted=True),
                              PlacementRecord(start=T0 + 36, end=T0 + 40, config={"n01": 1})]),
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"kind": "job", **j.model_dump(mode="json")}) + "\n" for j in jobs))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["report", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_sacct_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--records", str(_records(tmp_path)), "-P", "-a", "--now", f"@{T0 + 1000:.0f}",
                        "-o", "JobID,State,NodeList,ExitCode,Timelimit,Reason,EstRun")
    assert rc == 0, err
    assert out.splitlines()[0] == "JobID|State|NodeList|ExitCode|Timelimit|Reason|EstRun"
    rows = [line.split("|") for line in out.splitlines()[1:]]
    assert rows[0] == ["101", "COMPLETED", "g[1-3]", "0:0", "01:00:00", "None", "00:10:00"]
    assert rows[1][:6] == ["102", "PENDING", "None assigned", "", "", "AssocGrpGRES"]
    assert rows[2][:6] == ["103", "FAILED", "n01", "1:0", "", "None"]  # NodeList: the latest run, as sacct
    data = json.loads(_run(capsys, "--records", str(_records(tmp_path)), "--json", "-j", "101")[1])
    job = data["jobs"][0]
    assert job["nodes"] == ["g1", "g2", "g3"] and job["time_limit"] == 3600.0 and job["exit_code"] == "0:0"


def test_parsable_has_a_trailing_bar_and_x_has_no_placement_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_records(tmp_path))
    out = _run(capsys, "--records", path, "-p", "-o", "JobID,State")[1]
    assert out.splitlines()[:2] == ["JobID|State|", "101|COMPLETED|"]
    assert _run(capsys, "--records", path, "-P", "-n", "-X", "-o", "JobID")[1].split() == ["101", "102", "103"]
    with_history = _run(capsys, "--records", path, "-P", "-n", "--history", "-o", "JobID")[1].split()
    assert "103.1" in with_history
    rc, _, err = _run(capsys, "--records", path, "-X", "--history")
    assert rc == 1 and "contradict" in err


@pytest.mark.parametrize("bad", ["abc", "12;3", "1 2", "-5"])
def test_a_job_id_that_is_none_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    rc, out, err = _run(capsys, "--records", str(_records(tmp_path)), f"--jobs={bad}")
    assert rc == 1 and out == "" and "invalid job id" in err and len(err.splitlines()) == 1


def test_slurm_job_id_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_records(tmp_path))
    for ids in ("101", "101.batch", "101,999", "7_3"):
        rc, out, err = _run(capsys, "--records", path, "-P", "-n", "-o", "JobID", "-j", ids)
        assert rc == 0, err
        assert out.split() == (["101"] if "101" in ids else [])


def test_age_was_renamed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "--records", str(_records(tmp_path)), "-o", "JobID,Age")
    assert rc == 1 and "EstRun" in err and "sprio" in err
    out = _run(capsys, "--records", str(_records(tmp_path)))[1]
    assert "EstRun" in out.splitlines()[0] and " Age" not in out.splitlines()[0]


def test_an_ordinary_user_sees_their_own_jobs_unless_a(tmp_path: Path) -> None:
    """As ``nobody`` (sacct's rule: an ordinary user's own jobs, every user's with -a, or -u's)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    # setpriv keeps root's capabilities (the venv's Python lives under /root, which only they can reach);
    # what the command decides by (access(2), sacct's own-jobs rule) goes by the real uid, nobody's
    nobody = pwd.getpwnam("nobody")
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # pytest's tmp_path is root's alone
        base = Path(where)
        base.chmod(0o755)
        path = _records(base)
        path.chmod(0o644)

        def ids(*args: str) -> list[str]:
            done = subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                                   str(Path(sys.executable).parent / "hops-slurm"), "report", "--records", str(path),
                                   "-P", "-n", "-o", "JobID", *args], capture_output=True, text=True, timeout=120,
                                  cwd="/", env={"PATH": os.environ.get("PATH", ""), "HOME": "/",
                                                "MPLCONFIGDIR": str(base / "mpl")})
            assert done.returncode == 0, done.stderr
            return done.stdout.split()

        assert ids() == []  # nobody has no job here
        assert ids("-a") == ["101", "102", "103"]
        assert ids("-u", "alice") == ["102", "103"]


def test_hostlist_is_slurms_compact_form() -> None:
    assert hostlist(["g2", "g1", "g3", "g5", "x", "n01", "n02"]) == "x,g[1-3,5],n[01-02]"
    assert hostlist(["g1"]) == "g1" and hostlist([]) == ""
