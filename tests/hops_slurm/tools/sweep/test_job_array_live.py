"""Live: a sweep submitted as a Slurm job array on the minicluster (``hops-slurm simulate --on-slurm``)
merges into the same result as the local run, a benchmark split in parts (``hops-slurm bench paper-tables
--on-slurm``) writes the local run's document saying where each part ran, and a task that fails is
submitted again.

The tasks are ordinary batch jobs of the caller in the cluster's default partition, running the Python
that runs the command; they write under --out only."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.tools import results_header
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.tools.sweep.job_array import SlurmClients, run_array

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[4]
CLI = [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())"]
ARGS = ["simulate", "--cluster", "paper-64", "--workload", "paper:jobs=5", "--policies", "hops,slurm-backfill",
        "--seeds", "0,1", "--no-progress"]
WALL = ("wall_seconds", "planner_mean_seconds", "planner_max_seconds")


def _summary(path: Path) -> dict:
    data = json.loads(path.read_text())
    return {"runs": [{k: v for k, v in r.items() if k not in WALL} for r in data["runs"]], "failed": data["failed"]}


def _cancel_one_task_before_it_runs(minicluster: Minicluster, index: int) -> str:
    """With the default partition down, wait for the sweep's array and cancel its task ``index`` while it is
    pending (as an admin or a dead node would end it: no exit status); the array's job id."""
    for _ in range(600):
        listed = minicluster.run(["squeue", "--noheader", "--array", "--name=hops-simulate", "--format=%i"]).stdout.split()
        if listed:
            array = listed[0].split("_")[0]
            minicluster.run(["scancel", f"{array}_{index}"])
            return array
        time.sleep(0.1)
    raise AssertionError("the sweep's job array never showed in squeue")


def test_a_simulate_sweep_as_a_job_array_merges_into_the_local_result(minicluster: Minicluster, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """... also when one task is cancelled before it runs: it is submitted again, and the merge is the same."""
    local, swept = tmp_path / "local", tmp_path / "swept"
    assert main([*ARGS, "--out", str(local)]) == 0
    capsys.readouterr()
    minicluster.run(["scontrol", "update", "PartitionName=hops", "State=DOWN"])
    try:
        task = subprocess.Popen([*CLI, *ARGS, "--out", str(swept), "--on-slurm"], cwd=ROOT, env=minicluster.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        array = _cancel_one_task_before_it_runs(minicluster, 2)
    finally:
        minicluster.run(["scontrol", "update", "PartitionName=hops", "State=UP"])
    stdout, stderr = task.communicate(timeout=600)
    assert task.returncode == 0, stderr[-2000:]
    assert f"submitted 4 sweep task(s) as job array {array}" in stderr
    assert "sweep task 2 (hops seed 1) ended without an exit status" in stderr
    assert "submitted 1 sweep task(s) as job array" in stderr
    state = swept / ".slurm-sweep"
    logs = sorted(p.name for p in (state / "logs").iterdir())
    first = [name for name in logs if name.startswith(f"{array}_")]
    again = [name for name in logs if not name.startswith(f"{array}_")]
    assert first == [f"{array}_{i}.log" for i in (0, 1, 3)] and len(again) == 1 and again[0].endswith("_2.log"), logs
    for policy in ("hops", "slurm-backfill"):
        for seed in (0, 1):
            a, b = (d / policy / f"seed{seed}" / "jobs.jsonl" for d in (local, swept))
            assert a.read_text() == b.read_text(), (policy, seed)
    assert _summary(swept / "summary.json") == _summary(local / "summary.json")
    table = lambda text: [line.split("|")[1:6] for line in text.splitlines() if line.startswith("| ")]  # noqa: E731
    assert table(stdout) == table((local / "results.md").read_text())


#: paper-tables cut to two cheap parts: Table 3 under slurm-backfill alone (seconds), and FTF, whose policies
#: HOPS_BENCH_POLICIES leaves out (its section says so and runs nothing)
BENCH_ENV = {"HOPS_BENCH_PARTS": "table3,ftf", "HOPS_BENCH_SEEDS": "0", "HOPS_BENCH_POLICIES": "slurm-backfill"}


def _without_wall_time(text: str) -> str:
    """A document's body without what is measured in wall-clock seconds (the sections' wall time and where
    they ran, the tables' planner seconds per round)."""
    lines, column = [], None
    for line in results_header.body(text).splitlines():
        cells = line.split("|")
        if "Planner s/round" in line:
            column = [c.strip() for c in cells].index("Planner s/round")
        elif column is not None and line.startswith("| ") and len(cells) > column:
            cells[column] = " s "
            line = "|".join(cells)
        lines.append(re.sub(r"^Wall time \d+ s; ran on: .*$", "Wall time", line))
    return "\n".join(lines)


def test_a_bench_in_parts_as_a_job_array_writes_the_local_runs_document(minicluster: Minicluster, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    local, swept = tmp_path / "local", tmp_path / "swept"
    for key, value in BENCH_ENV.items():
        monkeypatch.setenv(key, value)
    assert main(["bench", "paper-tables", "--out", str(local)]) == 0
    capsys.readouterr()
    done = subprocess.run([*CLI, "bench", "paper-tables", "--out", str(swept), "--on-slurm"], cwd=ROOT,
                          env={**minicluster.env(), **BENCH_ENV}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "submitted 2 sweep task(s) as job array" in done.stderr
    assert "paper-tables part table3: done" in done.stdout and "paper-tables part ftf: done" in done.stdout
    assert len(list((swept / ".slurm-sweep" / "logs").iterdir())) == 2

    ours, theirs = ((d / "paper-tables.md").read_text() for d in (swept, local))
    assert _without_wall_time(ours) == _without_wall_time(theirs)
    head, local_head = results_header.read(swept / "paper-tables.md"), results_header.read(local / "paper-tables.md")
    assert head is not None and local_head is not None and head.command == local_head.command
    assert re.fullmatch(r"slurm job array \d+ on cluster [\w.-]+, 2 tasks", head.ran_on or ""), head
    assert (local_head.ran_on or "").startswith("local, ")
    # the part that ran says where: the task of the array, on the minicluster
    array = head.ran_on.split()[3]
    assert f"; ran on: slurm job array {array} task 0 on cluster " in ours
    a, b = (d / "paper-tables" / "table3" / "slurm-backfill" / "seed0" / "jobs.jsonl" for d in (local, swept))
    assert a.read_text() == b.read_text()


def test_a_failed_task_is_submitted_again_and_one_that_keeps_failing_is_named(minicluster: Minicluster,
                                                                             tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    mark = tmp_path / "failed-once"
    commands = [["true"], ["sh", "-c", f'test -e "{mark}" || {{ touch "{mark}"; exit 3; }}'], ["false"]]
    got = run_array(commands, tmp_path / "state", retries=1, poll_seconds=0.5,
                    clients=SlurmClients(env=minicluster.env()), labels=["ok", "flaky", "broken"])
    assert got.attempts == {0: 1, 1: 2, 2: 2}
    assert list(got.failed) == [2] and got.failed[2].is_file()
    assert len(got.job_ids) == 2  # the first array, then one of the two failed tasks
    assert got.failed[2].name == f"{got.job_ids[1]}_2.log"
