"""``hops-slurm bench --on-slurm`` cut into tasks: one per benchmark, one per part of a benchmark that has
parts (paper-tables, engine-sim), each part's command naming its part, and the parts assembled into one
document whose header says it ran as the tasks of a job array. The live test (test_job_array_live.py) runs
such a benchmark on the minicluster."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.tools import results_header
from hops_slurm.tools.bench import discover
from hops_slurm.tools.sweep.bench_cells import BenchCell, argv, assemble, cells

BENCHES = discover()


def test_a_benchmark_with_parts_is_one_task_per_part_and_the_others_one_task() -> None:
    got = cells(["engine-sim", "estimator", "paper-tables"], BENCHES, {})
    assert got[:3] == [BenchCell("engine-sim", "table3"), BenchCell("engine-sim", "table4"), BenchCell("estimator")]
    assert [c.part for c in got[3:]] == ["table3", "table4", "rigid", "gavel", "ftf", "ablation", "sweep"]
    assert got[3].label == "paper-tables part table3" and got[2].label == "estimator"
    assert cells(["paper-tables"], BENCHES, {"HOPS_BENCH_PARTS": "ftf,table3"}) == \
        [BenchCell("paper-tables", "ftf"), BenchCell("paper-tables", "table3")]
    for one in ({"HOPS_BENCH_PARTS": "table4"}, {"HOPS_BENCH_QUICK": "1"}):  # one part: the benchmark as it is
        assert cells(["paper-tables"], BENCHES, one) == [BenchCell("paper-tables")]
    # a benchmark that starts its own minicluster runs where the command runs, never as a task
    assert cells(["engine", "hook", "estimator"], BENCHES, {}) == [BenchCell("estimator")]
    with pytest.raises(HopsError, match="unknown part"):  # refused before anything is submitted
        cells(["paper-tables"], BENCHES, {"HOPS_BENCH_PARTS": "table3,table9"})


def test_a_parts_task_runs_the_benchmark_with_its_part_only(tmp_path: Path) -> None:
    def me(*words: str) -> list[str]:
        return [sys.executable, "-m", "x", *words]

    assert argv(BenchCell("estimator"), tmp_path, me) == [sys.executable, "-m", "x", "bench", "estimator", "--out", str(tmp_path)]
    assert argv(BenchCell("paper-tables", "ftf"), tmp_path, me) == \
        ["env", "HOPS_BENCH_PARTS=ftf", sys.executable, "-m", "x", "bench", "paper-tables", "--out", str(tmp_path)]


def test_the_parts_are_assembled_into_one_document_saying_where_they_ran(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HOPS_BENCH_PARTS", "HOPS_BENCH_SEEDS", "HOPS_BENCH_POLICIES", "HOPS_BENCH_QUICK", "HOPS_BENCH_WORKERS"):
        monkeypatch.delenv(var, raising=False)
    parts = tmp_path / "paper-tables" / "parts"
    parts.mkdir(parents=True)
    (parts / "ftf.md").write_text("## FTF\n\nWall time 9 s; ran on: slurm job array 7 task 1 on cluster c, 4 CPUs.\n")
    (parts / "table3.md").write_text("## Table 3\n\nWall time 5 s; ran on: slurm job array 7 task 0 on cluster c, 4 CPUs.\n")
    done = [BenchCell("estimator"), BenchCell("paper-tables", "table3"), BenchCell("paper-tables", "ftf")]
    where = "slurm job array 7 on cluster c, 2 tasks"  # its own two of the array's three
    (path,) = assemble(done, BENCHES, tmp_path, "7", "c")
    head = results_header.read(path)
    assert head is not None and head.ran_on == where and head.command == "hops-slurm bench paper-tables"
    text = path.read_text()
    assert text.index("## Table 3") < text.index("## FTF")  # the benchmark's order, not the tasks'
    assert results_header.header("m:run", "c").ran_on != where  # only the assembled document says so
    assert assemble([BenchCell("estimator")], BENCHES, tmp_path, "7", "c") == []
    with pytest.raises(ValueError):
        assemble(done, BENCHES, tmp_path, "7", "c/x")
