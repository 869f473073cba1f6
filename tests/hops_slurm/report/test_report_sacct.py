"""Cross-check against Slurm accounting, on sacct output recorded in Slurm 22.05's formats."""

from __future__ import annotations

import os
import stat
from datetime import UTC
from pathlib import Path

import pytest

from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report.accounting import build_rows
from hops_slurm.report.sacct import (
    Disagreement,
    SacctError,
    apply_sacct,
    cross_check,
    expand_hostlist,
    is_stand_in,
    parse_sacct_json,
    parse_sacct_parsable2,
    run_sacct,
    sacct_command,
)
from hops_slurm.report.source import RecordSet

B = 1795326600.0  # 2026-11-22T05:50:00Z, the base time of data/live_records.jsonl


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("gpu[01-03,7]", ("gpu01", "gpu02", "gpu03", "gpu7")),
        ("a1,b[2-3]", ("a1", "b2", "b3")),
        ("r[1-2]-n[1-2]", ("r1-n1", "r1-n2", "r2-n1", "r2-n2")),
        ("None assigned", ()),
        ("", ()),
    ],
)
def test_expand_hostlist(text: str, nodes: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == nodes


def test_parse_json(data_dir: Path) -> None:
    jobs = {j.job_id: j for j in parse_sacct_json((data_dir / "sacct_2205.json").read_text())}
    assert set(jobs) == {"101", "102", "103"}
    j = jobs["101"]
    assert (j.state, j.submit, j.start, j.end) == ("COMPLETED", B, B + 60, B + 3660)
    assert j.nodes == ("gpu01", "gpu02")
    assert j.gpus == 8  # gres/gpu only, not again for gres/gpu:v100
    assert jobs["102"].end == B + 2010


def test_parse_parsable2_skips_steps_and_reads_unknown_times(data_dir: Path) -> None:
    jobs = {j.job_id: j for j in parse_sacct_parsable2((data_dir / "sacct_2205.txt").read_text(), tz=UTC)}
    assert set(jobs) == {"101", "102", "103", "106"}
    assert (jobs["101"].start, jobs["101"].end, jobs["101"].gpus) == (B + 60, B + 3660, 8)
    assert jobs["101"].nodes == ("gpu01", "gpu02")
    assert jobs["106"].state == "CANCELLED"
    assert jobs["106"].start is None and jobs["106"].nodes == ()


def test_both_formats_agree(data_dir: Path) -> None:
    from_json = {j.job_id: j for j in parse_sacct_json((data_dir / "sacct_2205.json").read_text())}
    from_text = {j.job_id: j for j in parse_sacct_parsable2((data_dir / "sacct_2205.txt").read_text(), tz=UTC)}
    for job_id, j in from_json.items():
        t = from_text[job_id]
        assert (j.start, j.end, j.nodes, j.state, j.gpus) == (t.start, t.end, t.nodes, t.state, t.gpus)


@pytest.mark.parametrize(("text", "message"), [("{", "not JSON"), ('{"meta": {}}', "no 'jobs' list"), ('{"jobs": [{"name": "x"}]}', "unexpected job entry")])
def test_bad_json(text: str, message: str) -> None:
    with pytest.raises(SacctError, match=message):
        parse_sacct_json(text)


def test_bad_parsable2() -> None:
    with pytest.raises(SacctError, match="lacks fields"):
        parse_sacct_parsable2("JobID|State\n1|COMPLETED\n")
    with pytest.raises(SacctError, match="line 2 has 2 fields"):
        parse_sacct_parsable2("JobID|State|Start|End|NodeList\n1|COMPLETED\n")
    with pytest.raises(SacctError, match="SLURM_TIME_FORMAT=standard"):
        parse_sacct_parsable2("JobID|State|Start|End|NodeList\n1|COMPLETED|Nov 22 05:50|Unknown|n1\n")


def test_cross_check_flags_each_disagreement(live: RecordSet, data_dir: Path) -> None:
    accounting = parse_sacct_json((data_dir / "sacct_2205.json").read_text())
    found = cross_check(live.jobs, accounting)
    assert found == [
        Disagreement("102", "end", f"{B + 1980:.0f}", f"{B + 2010:.0f}"),
        Disagreement("103", "nodes", "gpu03", "gpu04"),  # start 1 s apart is within tolerance
        Disagreement("104", "missing", f"started {B + 500:.0f}", ""),
    ]  # 101 agrees; 105 never started so accounting need not know it
    assert "job 102: end differs" in found[0].message()
    assert cross_check(live.jobs, accounting, tolerance=0.5)[1] == Disagreement("103", "start", f"{B + 300:.0f}", f"{B + 301:.0f}")


def test_apply_sacct_takes_start_and_end_from_accounting(live: RecordSet, data_dir: Path) -> None:
    accounting = parse_sacct_json((data_dir / "sacct_2205.json").read_text())
    rows = {r.job_id: r for r in apply_sacct(build_rows(live.jobs, now=B + 4000, history=True), accounting)}
    assert rows["102"].end == B + 2010
    assert rows["103"].start == B + 301
    assert rows["104"].end == B + 700  # not in accounting: the engine's value stays
    assert rows["102.0"].end == B + 1980  # placement rows are the engine's own


def test_sacct_command_is_an_argument_list() -> None:
    assert sacct_command(["1", "2"], starttime="2026-11-22") == [
        "sacct", "--allusers", "--allocations", "--parsable2",
        "--format=JobID,JobName,User,Partition,State,Submit,Start,End,NodeList,AllocNodes,AllocTRES",
        "--jobs=1,2", "--starttime=2026-11-22",
    ]
    assert "--json" in sacct_command(json_output=True)


def test_run_sacct_reports_missing_binary(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SacctError, match="sacct not found on PATH"):
        run_sacct(["1"])


def test_run_sacct_reports_failure_of_the_real_sacct(monkeypatch, tmp_path: Path) -> None:
    """The real sacct against a cluster without slurmdbd accounting: it fails, and the error says why."""
    import shutil

    assert shutil.which("sacct") is not None, (
        "sacct not found: `make test` installs Debian's slurm-client (`hops-slurm minicluster install`); "
        "install it with `apt-get install slurm-client`"
    )
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=none\nSlurmctldHost=localhost\nAccountingStorageType=accounting_storage/none\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    with pytest.raises(SacctError, match="sacct failed: Slurm accounting storage is disabled"):
        run_sacct(["1"], timeout=30)


def test_run_sacct_parses_what_sacct_prints(monkeypatch, tmp_path: Path, data_dir: Path) -> None:
    """A FAKE ``sacct`` on PATH (a shell script standing in for slurmdbd-backed sacct) prints the recorded 22.05 output and logs its arguments."""
    log = tmp_path / "args"
    exe = tmp_path / "sacct"
    exe.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$SLURM_TIME_FORMAT" "$@" > {log}\n'
        f"cat {data_dir / 'sacct_2205.json'}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    jobs = run_sacct(["101", "102"], json_output=True)
    assert [j.job_id for j in jobs] == ["101", "102", "103"]
    assert log.read_text().split() == ["standard", "--allusers", "--allocations", "--json", "--jobs=101,102"]


def _fake_sacct(tmp_path: Path, output: Path) -> None:
    exe = tmp_path / "bin" / "sacct"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\ncat {output}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_cli_sacct_json_cross_check(monkeypatch, capsys, tmp_path: Path, data_dir: Path) -> None:
    """``report --sacct json``: Start/End from accounting, disagreements warned and in the JSON."""
    import json

    from hops_slurm.cli import main

    _fake_sacct(tmp_path, data_dir / "sacct_2205.json")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    rc = main(["report", "--records", str(data_dir / "live_records.jsonl"), "--sacct", "json", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "warning: job 102: end differs" in err
    assert "warning: job 104: not in Slurm accounting" in err
    doc = json.loads(out)
    assert [(d["job_id"], d["field"]) for d in doc["sacct_disagreements"]] == [
        ("102", "end"), ("103", "nodes"), ("104", "missing"),
    ]
    jobs = {j["job_id"]: j for j in doc["jobs"]}
    assert jobs["102"]["end"] == B + 2010
    assert jobs["103"]["start"] == B + 301


# --- slurmdbd's provisional stand-in rows --------------------------------------------------------
# Shapes seen on the accounting minicluster (Slurm 22.05.8) for `sbatch -N2 --wrap 'sleep 1'` when the
# job's start reached slurmdbd after its batch step and its completion: the row names only the batch
# node, has no partition and allocation_nodes 0, while its TRES (set by the completion) says node=2.

S = 1795337395


def _json_job(name: str, partition: str, nodes: str, alloc: int, state: str, end: int, tres: list[dict]) -> dict:
    return {
        "job_id": 2, "name": name, "partition": partition, "nodes": nodes, "allocation_nodes": alloc, "user": "root",
        "state": {"current": state, "reason": "None"}, "steps": [],
        "time": {"submission": S, "start": S, "end": end, "elapsed": 3},
        "tres": {"allocated": tres, "requested": []},
    }


TRES_N2 = [
    {"type": "cpu", "name": None, "id": 1, "count": 2},
    {"type": "node", "name": None, "id": 4, "count": 2},
    {"type": "gres", "name": "gpu", "id": 1001, "count": 2},
]
STAND_IN_DONE = _json_job("allocation", "", "g1", 0, "COMPLETED", S + 3, TRES_N2)
STAND_IN_PENDING = _json_job("allocation", "", "g1", 0, "PENDING", 0, [])
FINAL = _json_job("wrap", "all", "g[1-2]", 2, "COMPLETED", S + 3, TRES_N2)
NEVER_RAN = _json_job("wrap", "all", "None assigned", 0, "CANCELLED", S + 3, [])


def _json(*jobs: dict) -> str:
    import json

    return json.dumps({"meta": {}, "errors": [], "jobs": list(jobs)})


@pytest.mark.parametrize(
    ("raw", "provisional", "nodes"),
    [
        (STAND_IN_DONE, True, ("g1",)),  # looks finished (end, COMPLETED) but names the batch node only
        (STAND_IN_PENDING, True, ("g1",)),
        (FINAL, False, ("g1", "g2")),
        (NEVER_RAN, False, ()),
    ],
)
def test_parse_json_flags_the_stand_in_row(raw: dict, provisional: bool, nodes: tuple[str, ...]) -> None:
    (job,) = parse_sacct_json(_json(raw))
    assert (job.provisional, job.nodes) == (provisional, nodes)


P2_HEADER = "JobID|JobName|User|Partition|State|Submit|Start|End|NodeList|AllocNodes|AllocTRES"
T = "2026-11-22T08:49:41"


@pytest.mark.parametrize(
    ("line", "provisional"),
    [
        # sacct derives AllocNodes from the TRES once the completion set them: 2 beside one node.
        (f"2|allocation|root||COMPLETED|{T}|{T}|{T}|g1|2|billing=2,cpu=2,gres/gpu=2,node=2", True),
        (f"2|allocation|root||PENDING|{T}|{T}|Unknown|g1|0|", True),
        (f"2|wrap|root|all|COMPLETED|{T}|{T}|{T}|g[1-2]|2|billing=2,cpu=2,gres/gpu=2,node=2", False),
        (f"2|wrap|root|all|CANCELLED by 0|{T}|Unknown|{T}|None assigned|0|", False),
    ],
)
def test_parse_parsable2_flags_the_stand_in_row(line: str, provisional: bool) -> None:
    (job,) = parse_sacct_parsable2(f"{P2_HEADER}\n{line}\n", tz=UTC)
    assert job.provisional is provisional


def test_is_stand_in_uses_only_the_fields_it_has() -> None:
    assert is_stand_in(("g1",), "", None)
    assert is_stand_in(("g1",), None, 2)
    assert not is_stand_in(("g1",), None, None)  # older output without either field: nothing to go on
    assert not is_stand_in(("g1", "g2"), "all", 2)
    assert not is_stand_in((), "", 0)


def _two_node_record() -> JobRecord:
    return JobRecord(
        job_id="2", submit=S, start=S, end=S + 3, state="COMPLETED",
        placements=[PlacementRecord(start=S, end=S + 3, config={"g1": 1, "g2": 1})],
    )


def test_cross_check_says_a_record_is_provisional_instead_of_comparing_its_nodes() -> None:
    (found,) = cross_check([_two_node_record()], parse_sacct_json(_json(STAND_IN_DONE)))
    assert found == Disagreement("2", "provisional", "g1,g2", "g1")
    assert "provisional record" in found.message() and "(g1) was not compared" in found.message()
    assert cross_check([_two_node_record()], parse_sacct_json(_json(FINAL))) == []
    wrong = {**FINAL, "nodes": "g[2-3]"}
    assert cross_check([_two_node_record()], parse_sacct_json(_json(wrong))) == [
        Disagreement("2", "nodes", "g1,g2", "g2,g3")
    ]


def test_run_sacct_asks_again_while_a_record_is_provisional(monkeypatch, tmp_path: Path) -> None:
    """A FAKE ``sacct`` that prints the stand-in twice, then the final row (as slurmdbd does once the deferred start arrives)."""
    (tmp_path / "early.json").write_text(_json(STAND_IN_DONE))
    (tmp_path / "final.json").write_text(_json(FINAL))
    calls = tmp_path / "calls"
    exe = tmp_path / "sacct"
    exe.write_text(
        "#!/bin/sh\n"
        f"echo x >> {calls}\n"
        f'if [ "$(wc -l < {calls})" -le 2 ]; then cat {tmp_path / "early.json"}; else cat {tmp_path / "final.json"}; fi\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    (job,) = run_sacct(["2"], json_output=True, settle=10)
    assert (job.provisional, job.nodes, len(calls.read_text().split())) == (False, ("g1", "g2"), 3)
    calls.unlink()
    (job,) = run_sacct(["2"], json_output=True, settle=0)  # no time to wait: returned, flagged
    assert (job.provisional, job.nodes, len(calls.read_text().split())) == (True, ("g1",), 1)
