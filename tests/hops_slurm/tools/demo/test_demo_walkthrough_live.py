"""The README's first hour on the live minicluster (issue 26): ``hops-slurm demo`` with a tiny workload, then
every command it prints at its end, run exactly as printed (report on its records, queue on its engine
state, whatif on a sacct export), from the folder it names and without ``SLURM_CONF``. Any ``error:`` line
or traceback, from the demo or from a command, fails the test.

The demo runs on the session's shared cluster (``--spec`` of the ``minicluster`` fixture, ``--keep`` so it
is left up for the other tests) and writes its report into the test's folder; afterwards the test checks
that the demo's daemon is gone and removes what the demo left on the cluster (``hops-`` reservations, its
state folder)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hops_slurm.tools.demo.ab import SLURM, slug
from hops_slurm.tools.demo.next_steps import HEADER, commands
from hops_slurm.tools.demo.rigid import remove_hops_reservations
from hops_slurm.tools.demo.run import JOBS_DIR, ROOT
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.cli import CliSlurm
from slurm_helpers import leftover_processes, test_release
from tests_paths import DATA

CLI = [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())"]
#: two tiny jobs (seconds of training each), arriving 3 s apart
JOBS = {
    "tiny-a.sh": "gpus=1,2 samples=1200 batch-size=32 model=resnet18",
    "tiny-b.sh": "gpus=1 samples=400 batch-size=16 model=mobilenetv2 lr=0.02@1",
}
BAD_LINE = re.compile(r"(^|\W)error:|Traceback \(most recent call last\)", re.IGNORECASE)


def _write_workload(folder: Path) -> tuple[Path, Path]:
    jobs = folder / "jobs"
    jobs.mkdir()
    body = (JOBS_DIR / "resnet18-a.sh").read_text().splitlines()[4:]  # the shipped env + train lines
    for name, hops in JOBS.items():
        script = jobs / name
        script.write_text("\n".join(["#!/bin/bash", f"#SBATCH -J {name[:-3]}", f"#HOPS {hops}", *body]) + "\n")
        script.chmod(0o755)
    workload = folder / "workload.toml"
    workload.write_text('[arrivals]\n"tiny-a.sh" = 0\n"tiny-b.sh" = 3\n')
    return jobs, workload


def _bad_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if BAD_LINE.search(line)]


@pytest.mark.slurm
def test_the_demo_then_every_command_it_prints_as_printed(minicluster: Minicluster, tmp_path: Path) -> None:
    spec = Path(os.environ["HOPS_TEST_SPEC"]) if os.environ.get("HOPS_TEST_SPEC") else DATA / "minicluster-test.toml"
    jobs, workload = _write_workload(tmp_path)
    out_dir = tmp_path / "report"
    demo_state = minicluster.state / "demo"
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}  # what a new shell has: no cluster chosen
    argv = [*CLI, "demo", "--spec", str(spec), *(["--slurm", r] if (r := test_release()) else []),
            "--jobs", str(jobs), "--workload", str(workload), "--out", str(out_dir), "--timeout", "180", "--keep"]
    try:
        demo = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=420, check=False)
        print(demo.stdout, demo.stderr)
        assert demo.returncode == 0, demo.stderr[-2000:]
        assert _bad_lines(demo.stdout + demo.stderr) == []
        assert "0 pending, 2 completed" in demo.stdout
        assert "leaving the cluster up" in demo.stdout  # --keep: the shared cluster stays for the other tests

        block = demo.stdout.split(HEADER, 1)
        assert len(block) == 2, "the demo printed no commands at its end"
        assert str(ROOT) not in block[1], "the block names no machine's checkout path (it is committed in docs/demo)"
        where = ROOT  # the folder the demo ran in
        steps = commands(demo.stdout)
        assert [s[1] for s in steps] == ["report", "report", "report", "queue", "whatif"]
        assert str(out_dir / f"records-{slug(SLURM)}.jsonl") in steps[2]
        for step in steps:
            run = subprocess.run(step, cwd=where, env=env, capture_output=True, text=True, timeout=120, check=False)
            shown = " ".join(step)
            print(f"$ {shown}\n{run.stdout}{run.stderr}")
            assert run.returncode == 0, f"{shown}: {run.stderr[-1000:]}"
            assert _bad_lines(run.stdout + run.stderr) == [], shown
        outputs = {s[1] + (" --summary" if "--summary" in s else ""): s for s in steps}
        report = subprocess.run(outputs["report"], cwd=where, env=env, capture_output=True, text=True, timeout=120).stdout
        assert [line.split()[1] for line in report.splitlines()[2:]] == ["tiny-a", "tiny-b"]
        assert all(line.split()[-1] == "COMPLETED" for line in report.splitlines()[2:])
        queue = subprocess.run(outputs["queue"], cwd=where, env=env, capture_output=True, text=True, timeout=120)
        assert queue.stdout.split()[:3] == ["JOBID", "NAME", "USER"] and len(queue.stdout.splitlines()) == 1
        whatif = subprocess.run(outputs["whatif"], cwd=where, env=env, capture_output=True, text=True, timeout=120)
        assert [line.split()[0] for line in whatif.stdout.splitlines()[2:]] == ["slurm-recorded", "slurm-backfill", "slurm-multifactor", "hops"]
    finally:
        remove_hops_reservations(CliSlurm(minicluster.env()))
        left = leftover_processes(demo_state)
        shutil.rmtree(demo_state, ignore_errors=True)
    assert left == [], f"the demo left processes behind: {left}"
