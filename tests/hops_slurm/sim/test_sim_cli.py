"""``hops-slurm simulate``: the paper-64 smoke run with every available policy, one seed."""

import json

import pytest

from hops_slurm.cli import main
from hops_slurm.records import JobRecord, RoundRecord
from planner.policies import policy_names


def test_paper_64_smoke_run_all_available_policies(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", "--cluster", "paper-64", "--seeds", "0", "--out", str(out), "--no-progress"]) == 0
    policies = policy_names()
    summary = json.loads((out / "summary.json").read_text())
    assert [r["policy"] for r in summary["runs"]] == policies
    for name in policies:
        jobs = [JobRecord.model_validate_json(line) for line in (out / name / "seed0" / "jobs.jsonl").read_text().splitlines()]
        rounds = [RoundRecord.model_validate_json(line) for line in (out / name / "seed0" / "rounds.jsonl").read_text().splitlines()]
        assert len(jobs) == 25
        finished = [j for j in jobs if j.state == "COMPLETED"]
        assert all(j.end is not None and j.end >= j.start >= j.submit for j in finished)
        assert rounds and all(r.gpus_in_use + r.idle_gpus_after == 64 for r in rounds)
        # no node ever over-committed: replay every placement interval
        for t in sorted({p.start for j in jobs for p in j.placements}):
            use: dict[str, int] = {}
            for j in jobs:
                for p in j.placements:
                    if p.start <= t < (p.end if p.end is not None else float("inf")):
                        for node, g in p.config.items():
                            use[node] = use.get(node, 0) + g
            assert max(use.values()) <= 8
    for png in ("cdf_jct.png", "cdf_lr.png", "cdf_rho.png", "throughput.png"):
        assert (out / png).stat().st_size > 1000
    table = (out / "results.md").read_text()
    assert all(f"| {name} |" in table for name in policies)
    assert "Makespan" in capsys.readouterr().out


def test_errors_are_reported_without_traceback(tmp_path, capsys):
    assert main(["simulate", "--policies", "no-such-policy", "--out", str(tmp_path)]) == 1
    assert "unknown policy 'no-such-policy'" in capsys.readouterr().err
    bad = tmp_path / "w.csv"
    bad.write_text("arrival,model\n0,ResNet-50\n")
    assert main(["simulate", "--workload", str(bad), "--policies", "fifo-greedy", "--out", str(tmp_path)]) == 1
    assert "w.csv:2: missing 'requirements'" in capsys.readouterr().err


def test_the_safety_stop_is_a_parameter(tmp_path, capsys):
    """--max-days: a run still going after that much virtual time fails by name (a trace may span more than 90)."""
    out = tmp_path / "sim"
    argv = ["simulate", "--cluster", "paper-64", "--workload", "paper:jobs=3", "--policies", "fifo-greedy",
            "--seeds", "0", "--out", str(out), "--no-progress"]
    assert main([*argv, "--max-days", "0.01"]) == 1
    assert "simulation passed 0.01 days of virtual time" in (out / "fifo-greedy" / "seed0" / "error.txt").read_text()
    assert main([*argv, "--max-days", "30"]) == 0
    with pytest.raises(SystemExit):  # out of range: argparse's usage error
        main([*argv, "--max-days", "0"])
    assert "--max-days: 0 is outside" in capsys.readouterr().err


def test_every_policy_may_plan_at_events_between_ticks(tmp_path):
    """--plan-on-events: Hops plans at arrivals and ends too, not only on the refresh grid (a long trace's
    longer ticks then cost no wait)."""
    def times(flag: list[str]) -> set[float]:
        out = tmp_path / ("on" if flag else "off")
        assert main(["simulate", "--cluster", "paper-64", "--workload", "paper:jobs=6", "--policies", "hops",
                     "--seeds", "0", "--round-seconds", "3600", "--refresh-seconds", "600", "--out", str(out),
                     "--no-progress", *flag]) == 0
        return {RoundRecord.model_validate_json(line).time
                for line in (out / "hops" / "seed0" / "rounds.jsonl").read_text().splitlines()}

    assert all(t % 600 == 0 for t in times([]))
    assert any(t % 600 != 0 for t in times(["--plan-on-events"]))
