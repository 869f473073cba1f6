"""``hops-slurm report`` end to end on recorded data: tables, --parsable2 and --json parsed back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["report", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def parse2(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    header = lines[0].split("|")
    return [dict(zip(header, ln.split("|"), strict=True)) for ln in lines[1:]]


def test_parsable2_parsed_back(capsys, data_dir: Path) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "--parsable2")
    assert rc == 0
    assert not any(line.endswith("|") for line in out.splitlines())
    rows = {r["JobID"]: r for r in parse2(out)}
    assert list(rows) == ["1", "6", "2", "3", "4", "5"]
    j2 = rows["2"]
    assert j2["Wait"] == "00:25:00"  # 1500 s
    assert j2["EstRun"] == "00:16:40"  # 1000 s
    assert j2["LR"] == "1.50"
    assert j2["FTF"] == "3.00"
    assert j2["Config"] == "n2:2"
    assert j2["Preemptions"] == "1"
    assert j2["Start"] == "+00:15:00"  # simulated clock
    assert j2["End"] == "+01:30:00"
    assert rows["4"]["LR"] == "4.00"  # pending 2400 s of a 600 s job
    assert rows["4"]["Start"] == "Unknown"
    assert rows["6"]["LR"] == ""  # no age estimate
    assert rows["1"]["LR"] == "0.17"


def test_json_parsed_back_with_history(capsys, data_dir: Path) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "--json", "--history", "-j", "2,5")
    assert rc == 0
    doc = json.loads(out)
    assert doc["meta"]["clock"] == "simulated"
    assert doc["meta"]["now"] == 5400
    jobs = {j["job_id"]: j for j in doc["jobs"]}
    assert set(jobs) == {"2", "5"}
    assert jobs["2"]["wait"] == 1500
    assert jobs["2"]["lr"] == pytest.approx(1.5)
    assert jobs["2"]["ftf_rho"] == pytest.approx(3.0)
    assert jobs["2"]["jct"] == 5100
    assert [(h["job_id"], h["state"], h["wait"]) for h in jobs["2"]["history"]] == [
        ("2.0", "PREEMPTED", 600),
        ("2.1", "COMPLETED", 900),
    ]
    assert jobs["5"]["history"][0]["state"] == "RUNNING"
    assert jobs["5"]["lr"] == pytest.approx(600 / 7200)


def test_format_widths_justification_and_truncation(capsys, data_dir: Path) -> None:
    rc, out, _ = run(
        capsys, "--records", str(data_dir / "sim_records.jsonl"), "--format=JobID%-4,JobName%4,LR%10", "-j", "1"
    )
    assert rc == 0
    header, rule, row = out.splitlines()
    assert header == "Job+ Job+         LR"  # "JobID" and "JobName" do not fit in 4: cut, marked "+"
    assert rule == "---- ---- ----------"
    assert row == "1    res+       0.17"


def test_noheader_and_history_table(capsys, data_dir: Path) -> None:
    rc, out, _ = run(
        capsys, "--records", str(data_dir / "sim_records.jsonl"), "-n", "--history", "-o", "JobID,State,Wait", "-j", "2"
    )
    assert rc == 0
    assert [ln.split() for ln in out.splitlines()] == [
        ["2", "COMPLETED", "00:25:00"],
        ["2.0", "PREEMPTED", "00:10:00"],
        ["2.1", "COMPLETED", "00:15:00"],
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-u", "alice"], ["1", "3"]),
        (["--state", "CD"], ["1", "2", "3"]),
        (["--state", "pending,ca"], ["6", "4"]),
        (["-S", "@4300"], ["2", "4", "5"]),
        (["-E", "@1000"], ["1", "6", "2"]),
        (["-S", "now-15minutes"], ["2", "4", "5"]),  # now = 5400 on the simulated clock
        (["-r", "debug", "-A", "vision"], ["3"]),
    ],
)
def test_filters(capsys, data_dir: Path, args: list[str], expected: list[str]) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "-P", "-n", "-o", "JobID", *args)
    assert rc == 0
    assert out.split() == expected


def test_epoch_clock_prints_slurm_dates(capsys, data_dir: Path) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "live_records.jsonl"), "-P", "--utc", "-o", "JobID,Submit,End,Wait,Config", "-j", "101")
    assert rc == 0
    (row,) = parse2(out)
    assert row == {
        "JobID": "101",
        "Submit": "2026-11-22T05:50:00",
        "End": "2026-11-22T06:51:00",
        "Wait": "00:01:00",
        "Config": "gpu01:4,gpu02:4",
    }


def test_summary_json_hand_computed(capsys, data_dir: Path) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "--summary", "--json")
    assert rc == 0
    s = json.loads(out)["summary"]
    a = s["all"]
    assert a["finished"] == 4  # jobs 1, 2, 3 and the cancelled 6
    assert a["raqlr"] == pytest.approx((1 / 6 + 1.5 + 0.5) / 3)
    assert a["max_lr"] == pytest.approx(1.5)
    assert a["p95_lr"] == pytest.approx(1.4)
    assert a["avg_wait"] == pytest.approx((600 + 1500 + 600 + 100) / 4)
    assert a["avg_jct"] == pytest.approx((4200 + 5100 + 1800 + 100) / 4)
    assert a["max_ftf"] == pytest.approx(3.0)
    assert a["waiting"] == 1 and a["waiting_max_lr"] == pytest.approx(4.0)
    assert a["gpu_hours"] == pytest.approx(28800 / 3600)
    assert s["rounds"] == 4
    assert s["fragments_per_round"] == pytest.approx(1.25)
    assert s["gpu_utilisation"] == pytest.approx(2 / 3)
    users = {g["key"]: g for g in s["by_user"]}
    assert users["alice"]["raqlr"] == pytest.approx((1 / 6 + 0.5) / 2)
    assert users["bob"]["raqlr"] == pytest.approx(1.5)
    assert users["carol"]["raqlr"] is None and users["carol"]["waiting"] == 1
    parts = {g["key"]: g for g in s["by_partition"]}
    assert parts["gpu"]["raqlr"] == pytest.approx((1 / 6 + 1.5) / 2)
    assert parts["debug"]["raqlr"] == pytest.approx(0.5)


def test_summary_window(capsys, data_dir: Path) -> None:
    rc, out, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "--summary", "--json", "--window", "2000s")
    s = json.loads(out)["summary"]
    assert s["all"]["raqlr"] == pytest.approx((1 / 6 + 1.5) / 2)
    assert s["gpu_utilisation"] == pytest.approx(0.75)
    assert s["fragments_per_round"] == pytest.approx(2.0)  # rounds at 3600 (0) and 5400 (4)
    rc, text, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "--summary", "--window", "2000s")
    assert "RAQLR (eq. 7)        0.833" in text
    assert "GPU utilisation      75.0% of 8 GPUs" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "JobID,Colour"], "unknown field 'Colour'"),
        (["-o", "LR%x"], "bad width 'x'"),
        (["--state", "SLEEPING"], "unknown job state 'SLEEPING'"),
        (["-S", "last tuesday"], "cannot parse time 'last tuesday'"),
    ],
)
def test_errors_are_one_line_messages(capsys, data_dir: Path, args: list[str], message: str) -> None:
    rc, out, err = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), *args)
    assert rc == 1
    assert err.startswith("hops-slurm: error: ") and message in err
    assert "Traceback" not in err


def test_no_records_is_an_actionable_error(capsys, monkeypatch) -> None:
    monkeypatch.delenv("HOPS_SLURM_RECORDS", raising=False)
    monkeypatch.delenv("HOPS_CONFIG", raising=False)
    rc = main(["report"])
    err = capsys.readouterr().err
    assert rc == 1 and "--records" in err


def test_sqlite_records_give_the_same_report(capsys, data_dir: Path, tmp_path: Path) -> None:
    from hops_slurm.report.source import open_source, write_sqlite

    records = open_source(data_dir / "sim_records.jsonl").load()
    db = write_sqlite(tmp_path / "engine.sqlite", records.jobs, records.rounds)
    _, from_jsonl, _ = run(capsys, "--records", str(data_dir / "sim_records.jsonl"), "-P", "--history")
    _, from_sqlite, _ = run(capsys, "--records", str(db), "-P", "--history")
    assert from_sqlite == from_jsonl
    assert len(from_sqlite.splitlines()) == 1 + 6 + 5  # header, jobs, placements


def test_helpformat_lists_every_field_format_accepts(capsys) -> None:
    rc, out, _ = run(capsys, "--helpformat")
    assert rc == 0
    names = out.split()
    assert {"JobID", "LR", "FTF", "Config", "Preemptions", "Wait", "EstRun", "NodeList", "ExitCode", "Timelimit", "Reason"} <= set(names)
    from hops_slurm.report.table import parse_format

    assert [c.field.name for c in parse_format(",".join(names))] == names


def test_declared_processed_and_each_users_history(capsys, tmp_path: Path) -> None:
    """Issue 16: ``bad`` declared 100 samples and processed 3000 (ratio 30); ``good`` processed 102 of
    100 (within the 5 % forgiven) and 50 of 100 (overstated: never below 1)."""
    def job(job_id: str, user: str, declared: float, processed: float, end: float) -> str:
        return json.dumps({"kind": "job", "job_id": job_id, "user": user, "submit": 0, "start": 10, "end": end,
                           "state": "COMPLETED", "requirements": [1], "age_estimate": 100, "total_samples": declared,
                           "processed_samples": processed,
                           "placements": [{"start": 10, "end": end, "config": {"n1": 1}, "gpu_type": "v100"}]})
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join([job("1", "bad", 100, 3000, 500), job("2", "good", 100, 102, 600),
                               job("3", "good", 100, 50, 700)]) + "\n")
    rc, out, _ = run(capsys, "--records", str(path), "--parsable2", "-o", "JobID,User,Declared,Processed,Done")
    assert rc == 0
    assert parse2(out) == [{"JobID": "1", "User": "bad", "Declared": "100", "Processed": "3000", "Done": "30.00"},
                           {"JobID": "2", "User": "good", "Declared": "100", "Processed": "102", "Done": "1.02"},
                           {"JobID": "3", "User": "good", "Declared": "100", "Processed": "50", "Done": "0.50"}]
    rc, out, _ = run(capsys, "--records", str(path), "--summary", "--json")
    assert rc == 0
    users = {g["key"]: g["history"] for g in json.loads(out)["summary"]["by_user"]}
    assert users == {"bad": 30.0, "good": 1.0}
    rc, out, _ = run(capsys, "--records", str(path), "--summary")
    line = next(ln for ln in out.splitlines() if ln.startswith("bad "))
    assert line.split()[-1] == "x30" and "History" in out
