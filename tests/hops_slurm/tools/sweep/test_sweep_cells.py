"""A simulate sweep cut into cells (``hops-slurm sweep-task`` per (seed, policy), as the tasks of a Slurm job
array run them) and merged gives the local run's result: the same records, the same metrics, the same
summary apart from wall-clock seconds. Here the tasks run one after another in this process; the live
test (test_job_array_live.py) runs them as a job array on the minicluster."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.tools.sweep.job_array import _ranges, exit_status, prepare
from hops_slurm.tools.sweep.sim_cells import cells, merge, read_spec, write_spec

ARGS = ["--cluster", "paper-64", "--workload", "paper:jobs=6", "--policies", "hops,fifo-greedy,slurm-backfill",
        "--seeds", "0,1", "--no-progress"]
#: summary fields measured in wall-clock seconds: they differ between any two runs, local or not
WALL = ("wall_seconds", "planner_mean_seconds", "planner_max_seconds")


def without_wall(summary: dict) -> dict:
    runs = [{k: v for k, v in r.items() if k not in WALL} for r in summary["runs"]]
    agg = {p: {k: v for k, v in row.items() if k not in WALL} for p, row in summary["aggregate"].items()}
    return {"runs": runs, "aggregate": agg, "failed": summary["failed"]}


def test_cells_run_one_by_one_merge_into_the_local_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    local = tmp_path / "local"
    assert main(["simulate", *ARGS, "--out", str(local)]) == 0
    table = capsys.readouterr().out

    swept = tmp_path / "swept"
    from hops_slurm.cli import build_parser

    args = build_parser().parse_args(["simulate", *ARGS, "--out", str(swept)])
    pairs = cells(["hops", "fifo-greedy", "slurm-backfill"], [0, 1])
    assert pairs[:3] == [(0, "hops"), (0, "fifo-greedy"), (0, "slurm-backfill")]
    spec = write_spec(args, pairs, swept / ".slurm-sweep")
    back, back_pairs = read_spec(spec)
    assert back_pairs == pairs and back.out == swept.resolve() and back.workload == "paper:jobs=6"
    for i in reversed(range(len(pairs))):  # tasks finish in any order
        assert main(["sweep-task", str(spec), str(i)]) == 0
    merged = merge(pairs, swept, swept / ".slurm-sweep")
    assert [(r.policy, r.seed) for r in merged] == [(p, s) for s, p in pairs] and not merged.failures

    for seed, policy in pairs:
        for name in ("jobs.jsonl", "rounds.jsonl", "throughput.csv"):
            a = (local / policy / f"seed{seed}" / name).read_text()
            b = (swept / policy / f"seed{seed}" / name).read_text()
            if name == "rounds.jsonl":  # the planner's solve seconds are wall-clock
                a, b = ([{k: v for k, v in json.loads(line).items() if k != "solve_seconds"} for line in t.splitlines()]
                        for t in (a, b))
            assert a == b, (policy, seed, name)

    # the same summary, through the command's own writer
    from hops_slurm.sim.comparison import markdown_table, write_summary

    write_summary(merged, swept)
    ours = without_wall(json.loads((swept / "summary.json").read_text()))
    theirs = without_wall(json.loads((local / "summary.json").read_text()))
    assert ours == theirs
    assert markdown_table(merged).splitlines()[0] in table


def test_a_run_that_fails_in_its_task_is_a_failure_of_the_merge_as_locally(tmp_path: Path) -> None:
    args = argparse.Namespace(cluster="paper-64", workload="paper:jobs=4", out=tmp_path, round_seconds=360.0,
                              refresh_seconds=30.0, fragment_plans="at-once", engine=False, process_start_seconds=35.0,
                              checkpoint_seconds=None, grace_seconds=120.0, checkpoint_interval=1800.0,
                              checkpoint_on_notice=1.0)
    pairs = [(0, "hops:sigma=-5")]  # a planner parameter out of range: the run raises
    spec = write_spec(args, pairs, tmp_path / ".slurm-sweep")
    assert main(["sweep-task", str(spec), "0"]) == 0  # recorded, not a failed task
    merged = merge(pairs + [(1, "hops")], tmp_path, tmp_path / ".slurm-sweep", {1: Path("logs/9_1.log")})
    assert not list(merged)
    assert merged.failures[0].policy == "hops:sigma=-5" and "sigma" in merged.failures[0].error
    assert (tmp_path / "hops:sigma=-5" / "seed0" / "error.txt").is_file()
    assert merged.failures[1].error == "its Slurm task left no result (log logs/9_1.log)"
    assert main(["sweep-task", str(spec), "3"]) == 1  # no such cell: one line, no traceback


def test_a_spec_that_is_not_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "sweep.json"
    bad.write_text(json.dumps({"simulate": {"out": "x"}, "cells": [[0, 1]]}))
    assert main(["sweep-task", str(bad), "0"]) == 1
    assert "not a sweep spec" in capsys.readouterr().err


def test_the_task_script_runs_its_own_argv_and_records_its_exit_status(tmp_path: Path) -> None:
    state = tmp_path / "state with 'quote"
    marker = tmp_path / "out"
    script = prepare([["sh", "-c", 'printf "%s" "$0" > "$1"', "two words; $HOME", str(marker)], ["false"]], state)
    for i in (0, 1):
        env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(i))
        subprocess.run(["bash", str(script)], env=env, check=False, timeout=30)
    assert marker.read_text() == "two words; $HOME"  # no shell ever re-read the argument
    assert exit_status(state, 0) == 0 and exit_status(state, 1) == 1 and exit_status(state, 2) is None


def test_array_index_lists() -> None:
    assert _ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert _ranges([3]) == "3"
