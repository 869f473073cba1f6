"""``hops-slurm report`` on a simulation's records, exactly as on the live engine's records file."""

import json

import pytest

from hops_slurm.cli import main


def _report(capsys, *args: str) -> str:
    assert main(["report", *args]) == 0
    return capsys.readouterr().out


def test_report_reads_a_simulation_like_the_live_engine(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", "--cluster", "paper-64", "--workload", "paper:jobs=30", "--policies", "hops",
                 "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    run = out / "hops" / "seed0"
    metrics = json.loads((run / "metrics.json").read_text())
    # the engine's SQLite records file and the JSONL folder give the same report, row for row
    from_sqlite = _report(capsys, "--records", str(run / "records.sqlite"), "-P", "--history")
    from_jsonl = _report(capsys, "--records", str(run), "-P", "--history")
    assert from_sqlite == from_jsonl
    rows = from_sqlite.splitlines()
    assert len([r for r in rows[1:] if "." not in r.split("|")[0]]) == 30
    summary = json.loads(_report(capsys, "--records", str(run / "records.sqlite"), "--summary", "--json",
                                 "--window", "100d"))["summary"]
    # the report's numbers are the simulator's table numbers (one metrics module)
    assert summary["all"]["avg_jct"] == pytest.approx(metrics["avg_jct"])
    assert summary["all"]["avg_wait"] == pytest.approx(metrics["avg_wait"])
    assert summary["all"]["max_lr"] == pytest.approx(metrics["max_lr"])
    assert summary["fragments_per_round"] == pytest.approx(metrics["avg_frag"])
    # and the preemptions per cause (planner.changes), which add up to the table's preemptions
    assert summary["preemption_causes"] == metrics["preemption_causes"]
    assert sum(metrics["preemption_causes"].values()) == metrics["preemptions"] > 0
    text = _report(capsys, "--records", str(run), "--summary", "--window", "100d")
    first = next(iter(metrics["preemption_causes"]))
    assert f"Preemptions by cause {first} {metrics['preemption_causes'][first]}" in text
