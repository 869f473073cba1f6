"""``hops-slurm whatif`` end to end on exports recorded from the local cluster with slurmdbd
(tests/data/sacct/<release>/, tests/data/sacct/capture.py): the table in sacct's shapes, the JSON, the
files and plots of --out, the problem lines, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.sim.workload import file_workload
from hops_slurm.cli import main
from hops_slurm.sim.costs import CostModel
from tests_paths import DATA

SACCT = DATA / "sacct"
CLUSTER = str(SACCT / "replay-cluster.toml")
FAST = ["--round-seconds", "30", "--refresh-seconds", "5", "--process-start-seconds", "5", "--cluster", CLUSTER]
RELEASES = sorted(p.name for p in SACCT.iterdir() if (p / "sacct.json").is_file())


def test_recorded_exports_exist() -> None:
    assert "22.05" in RELEASES


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("export", ["sacct.json", "sacct-parsable2.txt"])
def test_whatif_on_a_recorded_export(release: str, export: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["whatif", str(SACCT / release / export), *FAST, "--parsable2"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "Scheduler|Jobs|Done|AvgJCT|AvgWait|MaxLR|Util|Makespan|Preemptions"
    rows = {ln.split("|")[0]: ln.split("|") for ln in lines[1:]}
    assert list(rows) == ["slurm-recorded", "slurm-backfill", "slurm-multifactor", "hops"]
    assert len({r[1] for r in rows.values()}) == 1 and int(rows["hops"][1]) >= 10  # same jobs on every side
    assert all(r[2] == r[1] for r in rows.values())  # every job finished on every side
    # the left-out rows are named, one line each: the job cancelled while pending and the CPU-only job
    assert "hops-slurm: warning:" in err and "never started (CANCELLED): left out" in err
    assert "no GPUs in its TRES (not a GPU job): left out" in err
    assert "left out: 0 bad rows (errors), 2 warnings" in err


def test_json_and_out_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w"
    rc = main(["whatif", str(SACCT / "22.05" / "sacct.json"), *FAST, "--json", "--out", str(out)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["release"] == "22.05" and doc["meta"]["source"] == "sacct --json"
    recorded = doc["schedulers"][0]
    assert recorded["scheduler"] == "slurm-recorded" and 0 < recorded["utilisation"] <= 1
    assert {p["severity"] for p in doc["problems"]} == {"warning"}
    for name in ("results.md", "summary.json", "problems.txt", "workload.csv", "cluster.toml",
                 "lr_jct_cdf.png", "wait_vs_age.png", "gpu_use.png", "hops/jobs.jsonl", "slurm-recorded/jobs.jsonl"):
        assert (out / name).is_file(), name
    assert (out / "gpu_use.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the derived workload is the simulator's own input format
    assert main(["simulate", "--workload", str(out / "workload.csv"), "--cluster", CLUSTER, "--policies",
                 "slurm-backfill", "--round-seconds", "30", "--out", str(tmp_path / "sim")]) == 0
    assert (tmp_path / "sim" / "results.md").is_file()
    assert doc["meta"]["assumed_from"] == {"default": doc["meta"]["replayed"]}
    # the recorded time limits (5 minutes) travel with it: Slurm's backfill plans with them
    assert {s.time_limit for s in file_workload(out / "workload.csv")} == {300.0}


def test_format_and_noheader(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(SACCT / "22.05" / "sacct.json"), *FAST, "--policies", "slurm-backfill",
                 "--format", "Scheduler%-10,Jobs%4", "--noheader"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln[:10] for ln in lines] == ["slurm-rec+", "slurm-bac+"]
    assert all(len(ln) == 15 and ln[11:].strip().isdigit() for ln in lines)


@pytest.mark.parametrize(("args", "needle"), [
    (["--format", "Nope"], "unknown field 'Nope' in --format"),
    (["--policies", "no-such-policy"], "no-such-policy"),
    (["--cluster", "/nonexistent.toml"], "cluster '/nonexistent.toml'"),
])
def test_bad_options_are_one_error_line(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["whatif", str(SACCT / "22.05" / "sacct.json"), *args])
    err = capsys.readouterr().err
    assert rc == 1 and needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_garbage_export_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for content, needle in ((b"\x00\xff" * 50, "lacks JobID"), (b'{"jobs": 3', "not valid JSON")):
        f = tmp_path / "x"
        f.write_bytes(content)
        assert main(["whatif", str(f)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("hops-slurm: error:") and needle in err and len(err.strip().splitlines()) == 1
    assert main(["whatif", str(tmp_path / "missing.json")]) == 1
    assert "No such file" in capsys.readouterr().err


def test_no_replayable_job_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.txt"
    f.write_text("JobID|State|Submit|Start|End|AllocTRES\n1|PENDING|2026-01-01T00:00:00|Unknown|Unknown|\n")
    assert main(["whatif", str(f)]) == 1
    err = capsys.readouterr().err
    assert "line 2 (job 1): never started (PENDING): left out" in err
    assert "hops-slurm: error: no job in the export can be replayed" in err


def test_progress_bar_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    from hops_slurm.sim.cluster_spec import load_cluster
    from hops_slurm.sim.runner import Options
    from hops_slurm.whatif.assumptions import Assumptions
    from hops_slurm.whatif.pipeline import run_whatif

    run_whatif(SACCT / "22.05" / "sacct.json", load_cluster(CLUSTER), Assumptions(), ["slurm-backfill"],
               Options(30.0, 5.0, CostModel(process_start=5.0)), progress=True)
    err = capsys.readouterr().err
    assert "0/1 policies; slurm-backfill" in err and "1/1 policies" in err
