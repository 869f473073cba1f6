"""Hostile and malformed sacct exports: every bad row is one problem naming its line or job, never a
traceback, never dropped silently; a document that is not an export is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.whatif import history
from hops_slurm.whatif.exports import parse_text, read_export, select
from hops_slurm.whatif.fields import json_time_limit, text_time_limit
from hops_slurm.whatif.read_parsable2 import FORMAT

HEADER = FORMAT.replace(",", "|")
GOOD = "7|train|alice|gpu|COMPLETED|2026-01-01T00:00:00|2026-01-01T00:01:00|2026-01-01T01:01:00|02:00:00|billing=1,cpu=4,gres/gpu=2,node=1|cpu=4,gres/gpu=2||g1"


def p2(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def meta(release: str = "22.05") -> dict[str, object]:
    if release == "22.05":
        return {"plugin": {"type": "openapi/dbv0.0.38"}}
    return {"plugin": {"data_parser": {"24.11": "data_parser/v0.0.42", "26.05": "data_parser/v0.0.45"}[release]}}


def jjob(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "job_id": 5, "name": "x", "user": "bob", "partition": "gpu", "state": {"current": "COMPLETED"},
        "time": {"submission": 1767225600, "start": 1767225660, "end": 1767229260},
        "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 4}, {"type": "node", "count": 1}],
                 "requested": [{"type": "gres", "name": "gpu", "count": 4}]},
        "comment": {"administrator": None},
    }
    base.update(over)
    return base


def test_good_parsable2_row_reads() -> None:
    r = parse_text(p2(GOOD))
    assert r.problems == [] and len(r.jobs) == 1
    j = r.jobs[0]
    assert (j.job_id, j.gpus, j.run_time, j.submit, j.time_limit) == ("7", 2, 3600.0, 1767225600.0, 7200.0)


@pytest.mark.parametrize(("text", "seconds"), [
    ("02:00:00", 7200.0), ("1-00:00:00", 86400.0), ("1-02", 93600.0), ("2-03:04", 183840.0), ("30", 1800.0),
    ("05:30", 330.0), ("UNLIMITED", None), ("Partition_Limit", None), ("", None), ("400-00:00:00", None),
])
def test_time_limit_forms_of_sacct(text: str, seconds: float | None) -> None:
    assert text_time_limit(text) == seconds


@pytest.mark.parametrize(("limit", "seconds"), [
    (5, 300.0), ({"set": True, "infinite": False, "number": 5}, 300.0), ({"set": True, "infinite": True, "number": 0}, None),
    ({"set": False, "infinite": False, "number": 0}, None), (4294967294, None), (None, None),
])
def test_json_time_limit_of_each_release(limit: object, seconds: float | None) -> None:
    assert json_time_limit(limit) == seconds


@pytest.mark.parametrize(("row", "needle"), [
    (GOOD.replace("|alice|", "|al|ice|"), "14 fields where the header has 13"),
    (GOOD.replace("2026-01-01T00:01:00", "yesterday"), "Start time 'yesterday' is not YYYY-MM-DDTHH:MM:SS"),
    (GOOD.replace("gres/gpu=2,node", "gres/gpu=lots,node"), "GPU count 'lots' is not a whole number"),
    (GOOD.replace("gres/gpu=2,node", "gres/gpu=999999,node"), "GPU count 999999 is outside"),
    (GOOD.replace("COMPLETED", "DONE;rm -rf"), "is not a Slurm job state"),
    (GOOD.replace("7|", "x7|", 1), "is not a Slurm job id"),
    (GOOD.replace("billing=1,", "billing,"), "TRES item 'billing' is not key=value"),
    (GOOD.replace("2026-01-01T00:00:00", "Unknown", 1), "no Submit time"),
    (GOOD.replace("|02:00:00|", "|two hours|"), "Timelimit 'two hours' is not [D-]HH:MM:SS"),
])
def test_bad_parsable2_row_is_one_problem_with_its_line(row: str, needle: str) -> None:
    r = parse_text(p2(GOOD.replace("7|", "6|", 1), row))
    assert len(r.jobs) == 1 and r.rows == 2
    (problem,) = r.problems
    assert problem.where.startswith("line 3") and needle in problem.message, problem
    assert problem.line().startswith("hops-slurm: error: line 3")


def test_bad_json_entry_names_its_index_and_job() -> None:
    doc = {"meta": meta(), "jobs": [jjob(), jjob(job_id=6, time={"submission": "soon"}), "junk",
                                    jjob(job_id=8, tres={"allocated": [{"type": "gres", "name": "gpu", "count": -1}]})]}
    r = parse_text(json.dumps(doc))
    assert [j.job_id for j in r.jobs] == ["5"]
    wheres = [p.where for p in r.problems]
    assert wheres == ["jobs[1] (job 6)", "jobs[2]", "jobs[3] (job 8)"]
    assert "submission time 'soon' is not a number" in r.problems[0].message
    assert "outside 0..1024" in r.problems[2].message


def test_left_out_rows_are_warnings_never_silent() -> None:
    doc = {"meta": meta("24.11"), "jobs": [
        jjob(),
        jjob(job_id=2, state={"current": ["CANCELLED"]}, time={"submission": 1767225600, "start": 0, "end": 1767225700}),
        jjob(job_id=3, state={"current": ["RUNNING"]}, time={"submission": 1767225600, "start": 1767225601, "end": 0}),
        jjob(job_id=4, tres={"allocated": [{"type": "cpu", "count": 1}], "requested": []}),
        jjob(job_id=9, time={"submission": 1767225600, "start": 1767225500, "end": 1767229260}),
        jjob(), jjob(),  # job 5 three times (22.05 lists a requeued job once per run)
    ]}
    sel = select(parse_text(json.dumps(doc)))
    assert [j.job_id for j in sel.jobs] == ["5"]
    msgs = {p.where.split(" ")[-1].rstrip(")"): (p.severity, p.message) for p in sel.reading.problems}
    assert msgs["2"] == ("warning", "never started (CANCELLED): left out")
    assert msgs["3"] == ("warning", "has not ended (RUNNING): left out")
    assert msgs["4"][1].startswith("no GPUs")
    assert msgs["9"] == ("error", "starts before its submission: left out")
    assert msgs["5"] == ("warning", "listed 3 times (requeued or restarted); replayed once, from its last record")
    assert sel.reading.rows == 5 and sel.left_out == 4  # every job row is either replayed or named


@pytest.mark.parametrize(("text", "needle"), [
    ("", "empty"),
    ("{not json", "not valid JSON"),
    ("[" * 100000, "nested too deeply"),
    (json.dumps({"meta": {"plugin": {"data_parser": "data_parser/v0.0.99"}}, "jobs": []}), "unsupported Slurm"),
    (json.dumps({"jobs": []}), "no meta.plugin"),
    (json.dumps({"meta": meta(), "jobs": {}}), "no 'jobs' list"),
    ("JobID|State\n1|COMPLETED\n", "lacks Submit, Start, End, AllocTRES or ReqTRES"),
    ("JobID|JobID|State|Submit|Start|End|AllocTRES\n", "names a field twice"),
])
def test_not_an_export_is_one_error(text: str, needle: str) -> None:
    with pytest.raises(HopsError, match=needle):
        parse_text(text)


def test_caps_size_and_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.txt"
    big.write_text(p2(GOOD, GOOD))
    with pytest.raises(HopsError, match="whatif reads at most 100"):
        read_export(big, limit=100)
    monkeypatch.setattr("hops_slurm.whatif.read_parsable2.MAX_ROWS", 2)
    rows = [GOOD.replace("7|", f"{i}|", 1) for i in range(1, 6)]
    r = parse_text(p2(*rows))
    assert len(r.jobs) == 2
    assert r.problems[-1].where == "line 4" and "only the first 2 job lines" in r.problems[-1].message


def test_undecodable_bytes_and_controls_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(p2(GOOD.replace("train", "tr\x1b[31main\xff")).encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    r = read_export(path)
    assert len(r.jobs) == 1 and "\x1b" in r.jobs[0].name  # kept as data; printed escaped (printable)


def test_step_lines_are_counted_not_jobs() -> None:
    step = GOOD.replace("7|train", "7.batch|batch", 1)
    r = parse_text(p2(GOOD, step))
    assert r.steps == 1 and r.rows == 1 and not r.problems


def test_typed_tres_gives_type_and_untyped_total_wins() -> None:
    row = GOOD.replace("gres/gpu=2,node", "gres/gpu:a100=2,gres/gpu=2,node")
    assert parse_text(p2(row)).jobs[0].gpu_type == "a100"
    only_typed = GOOD.replace("gres/gpu=2,node", "gres/gpu:v100=3,node")
    j = parse_text(p2(only_typed)).jobs[0]
    assert (j.gpus, j.gpu_type) == (3, "v100")
    assert history.MAX_JOB_GPUS == 1024  # one limit with the records and the #HOPS grammar (hops_slurm.limits)
