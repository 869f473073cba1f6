"""``hops-slurm queue`` for users (issue 35): the daemon's queue summary with squeue's filters and formats;
before the daemon's first run, a bad or huge file, odd names, a filter matching nothing, 10,000 jobs:
one clear line, never a traceback. The administrator's view: tests/hops_slurm/cli/test_cli_queue.py."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.engine.queue_summary import MAX_BYTES, NAME, Summary, SummaryJob, write


def _summary(tmp_path: Path, jobs: list[SummaryJob], as_of: float | None = None) -> Path:
    tmp_path.chmod(0o755)
    return write(tmp_path, Summary(hops_queue_summary=1, as_of=time.time() if as_of is None else as_of, jobs=jobs))


def _pending(job_id: str, user: str, position: int, **kw: object) -> SummaryJob:
    return SummaryJob(job_id=job_id, user=user, account=kw.pop("account", "phys"), partition=kw.pop("partition", "hops"),  # type: ignore[arg-type]
                      name=f"job{job_id}", state="PENDING", reason="HopsQueue", reason_code="HopsQueue",
                      detail=f"{position - 1} job(s) ahead", position=position, **kw)  # type: ignore[arg-type]


@pytest.fixture()
def summary(tmp_path: Path) -> Path:
    return _summary(tmp_path, [
        _pending("11", "alice", 1),
        _pending("12", "bob", 2, account="chem", preemptions=2, preempted="moved-type"),
        SummaryJob(job_id="13", user="alice", partition="other", name="lim", state="PENDING", reason="AssocGrpGRES",
                   reason_code="HopsLimit", detail="AssocGrpGRES: account=phys gres/gpu=8"),
        SummaryJob(job_id="14", user="carol", partition="hops", name="run", state="RUNNING", start=1000.0, nodes="n1"),
    ])


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["queue", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _ids(out: str) -> list[str]:
    return [line.split("|")[0] for line in out.splitlines()]


def test_filters_select_like_squeue(summary: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--summary", str(summary), "--parsable2", "--noheader", "-o", "jobid"]
    assert _ids(_run(capsys, *base)[1]) == ["11", "12", "13", "14"]
    assert _ids(_run(capsys, *base, "-u", "alice")[1]) == ["11", "13"]
    assert _ids(_run(capsys, *base, "-u", "alice,carol")[1]) == ["11", "13", "14"]
    assert _ids(_run(capsys, *base, "-j", "12,14")[1]) == ["12", "14"]
    assert _ids(_run(capsys, *base, "-p", "other")[1]) == ["13"]
    assert _ids(_run(capsys, *base, "-A", "chem")[1]) == ["12"]
    assert _ids(_run(capsys, *base, "-t", "R")[1]) == ["14"]
    assert _ids(_run(capsys, *base, "-t", "pending")[1]) == ["11", "12", "13"]
    assert _ids(_run(capsys, *base, "-t", "all")[1]) == ["11", "12", "13", "14"]
    assert _ids(_run(capsys, *base, "--start")[1]) == ["11", "12", "13"]
    assert _run(capsys, *base, "--me")[1] == ""  # no job of the caller's


def test_me_and_a_numeric_uid_are_the_caller(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    path = _summary(tmp_path, [_pending("11", "alice", 1), _pending("12", me, 2)])
    base = ["--summary", str(path), "--parsable2", "--noheader", "-o", "jobid"]
    assert _ids(_run(capsys, *base, "--me")[1]) == ["12"]
    assert _ids(_run(capsys, *base, "-u", str(os.getuid()))[1]) == ["12"]


def test_the_columns_and_formats(summary: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--summary", str(summary), "-j", "13")
    assert rc == 0 and err == ""
    head, row = out.splitlines()
    assert head.split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "POSITION", "REASON", "DETAIL"]
    assert row.split()[:7] == ["13", "other", "lim", "alice", "PD", "-", "AssocGrpGRES"]
    out = _run(capsys, "--summary", str(summary), "--start", "-u", "alice", "--parsable2")[1]
    assert out.splitlines()[0] == "JOBID|PARTITION|NAME|USER|ST|START_TIME|START_EARLY|START_LATE|END_TIME|POSITION|REASON"
    assert out.splitlines()[1] == "11|hops|job11|alice|PD|N/A|N/A|N/A|N/A|1|HopsQueue"
    data = json.loads(_run(capsys, "--summary", str(summary), "--json", "-o", "jobid,state,reason,detail")[1])
    assert data["jobs"][2] == {"jobid": "13", "state": "PENDING", "reason": "AssocGrpGRES",
                               "detail": "AssocGrpGRES: account=phys gres/gpu=8"}
    # how often and why the scheduler stopped a job's runs (planner.changes), on request
    out = _run(capsys, "--summary", str(summary), "--parsable2", "-o", "jobid,preemptions,preempted", "-j", "11,12")[1]
    assert out.splitlines() == ["JOBID|PREEMPTIONS|LAST_PREEMPTED", "11|0|-", "12|2|moved-type"]
    rc, out, err = _run(capsys, "--summary", str(summary), "-o", "jobid,secret")
    assert rc == 1 and "unknown field(s) secret" in err and len(err.splitlines()) == 1


def test_before_the_daemons_first_run_it_says_so_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--summary", str(tmp_path / NAME), "-u", "alice")
    assert rc == 0 and out == "" and "has not run yet" in err and len(err.splitlines()) == 1
    # the same with only a configuration whose daemon never ran (no engine database, no summary)
    config = tmp_path / "hops.toml"
    config.write_text(f'[paths]\nstate_dir = "{tmp_path / "state"}"\n')
    rc, out, err = _run(capsys, "--config", str(config))
    assert rc == 0 and "has not run yet" in err


@pytest.mark.parametrize("content", [b"", b'{"hops_queue_summary": 1, "as_of": 1, "jobs": [{"job_id": "1"',
                                     b"\x00\xff garbage", b'{"hops_queue_summary": 99}', b"[1, 2]",
                                     b'{"hops_queue_summary": 1, "as_of": 1, "jobs": [{"job_id": "1", "state": "PENDING", "position": -4}]}',
                                     b"[" * 100000])
def test_a_cut_short_or_foreign_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    path = tmp_path / NAME
    path.write_bytes(content)
    rc, out, err = _run(capsys, "--summary", str(path))
    assert rc == 1 and out == "" and len(err.splitlines()) == 1 and "queue summar" in err and "Traceback" not in err


def test_a_huge_file_a_link_a_fifo_and_a_directory_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: no data written
    link = tmp_path / "link.json"
    link.symlink_to(huge)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, words in ((huge, "over the"), (link, "cannot read"), (fifo, "not a regular file"), (tmp_path, "not a regular file")):
        rc, out, err = _run(capsys, "--summary", str(path))
        assert rc == 1 and words in err and len(err.splitlines()) == 1, (path, err)


@pytest.mark.parametrize("args,words", [(["-u", "al\x1bice"], "bad user name"), (["-u", "x" * 300], "bad user name"),
                                        (["-j", "abc"], "bad job id"), (["-j", "1;rm"], "bad job id"),
                                        (["-t", "XX"], "unknown state"), (["-p", ""], "give 1 to")])
def test_odd_filters_are_one_line(summary: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    rc, out, err = _run(capsys, "--summary", str(summary), *args)
    assert rc == 1 and out == "" and words in err and len(err.splitlines()) == 1


def test_a_filter_matching_nothing_prints_the_header_only(summary: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--summary", str(summary), "-u", "nobody_here", "-j", "99999")
    assert rc == 0 and out.split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "POSITION", "REASON", "DETAIL"]
    assert err == ""


def test_a_stale_summary_says_the_engine_may_be_down(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _summary(tmp_path, [_pending("11", "alice", 1)], as_of=time.time() - 3600)
    rc, out, err = _run(capsys, "--summary", str(path), "--parsable2", "--noheader", "-o", "jobid,reason,detail")
    assert rc == 0 and out.strip() == "11|HopsEngineDown|last known: HopsQueue (0 job(s) ahead)"
    assert "may be stopped" in err


def test_ten_thousand_pending_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _summary(tmp_path, [_pending(str(i), f"user{i % 97}", i) for i in range(1, 10_001)])
    rc, out, _ = _run(capsys, "--summary", str(path), "--noheader")
    assert rc == 0 and len(out.splitlines()) == 10_000
    rc, out, _ = _run(capsys, "--summary", str(path), "-u", "user5", "--parsable2", "--noheader", "-o", "jobid,position")
    assert out.splitlines()[0] == "5|5" and len(out.splitlines()) == len(range(5, 10_001, 97))


def test_an_ordinary_user_reads_the_summary_not_the_engines_state() -> None:
    """As ``nobody``: the engine's database is root's (0600), so the users' view from the summary."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # pytest's own tmp_path is root's alone
        _as_nobody(Path(where))


def _as_nobody(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "engine.sqlite").write_bytes(b"")
    (state / "engine.sqlite").chmod(0o600)
    _summary(state, [_pending("11", "alice", 1)])
    tmp_path.chmod(0o755)
    config = tmp_path / "hops.toml"
    config.write_text(f'[paths]\nstate_dir = "{state}"\n')
    config.chmod(0o644)
    # setpriv keeps root's capabilities (the venv's Python lives under /root, which only they can reach);
    # what the command decides by (access(2), sacct's own-jobs rule) goes by the real uid, nobody's
    nobody = pwd.getpwnam("nobody")
    done = subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                           str(Path(sys.executable).parent / "hops-slurm"), "queue", "--config", str(config),
                           "--parsable2", "-o", "jobid,user,reason"], capture_output=True, text=True, timeout=120,
                          cwd="/", env={"PATH": os.environ.get("PATH", ""), "HOME": "/",
                                        "MPLCONFIGDIR": str(tmp_path / "mpl")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["JOBID|USER|REASON", "11|alice|HopsQueue"]


def test_ten_thousand_pending_jobs_with_forecasts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--start`` over 10,000 forecast jobs (the daemon's forecast worker wrote a start and band for each)."""
    now = time.time()
    path = _summary(tmp_path, [_pending(str(i), f"user{i % 97}", i, start=now + 60.0 * i, end=now + 60.0 * i + 3600.0,
                                        start_early=now + 30.0 * i, start_late=now + 120.0 * i)
                               for i in range(1, 10_001)])
    rc, out, _ = _run(capsys, "--summary", str(path), "--start", "--parsable2", "--noheader")
    assert rc == 0 and len(out.splitlines()) == 10_000
    assert "N/A" not in out
