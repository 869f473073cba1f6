"""The engine-sim bench's document: the generated parts, then its hand-written notes (the runs themselves are
the benchmark, not a test)."""

import logging
from pathlib import Path

import pytest

from hops_slurm.tools import results_header
from hops_slurm.tools.bench import engine_sim


def test_the_hand_written_notes_follow_the_generated_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPS_BENCH_PARTS", raising=False)
    data = tmp_path / "engine-sim"
    data.mkdir()
    (data / "table4.md").write_text("## Table 4: 512 GPUs\n\ngenerated\n")
    (data / engine_sim.NOTES).write_text("## Why the paths differ\n\nby hand\n")
    text = engine_sim.assemble(tmp_path).read_text()
    assert results_header.read(tmp_path / "engine-sim.md") is not None
    assert text.index("generated") < text.index(engine_sim.DIFFERENCES[0]) < text.index("by hand")
    (data / engine_sim.NOTES).unlink()
    assert "by hand" not in engine_sim.assemble(tmp_path).read_text()


def test_the_quiet_engine_leaves_out_the_engines_per_job_lines_while_it_runs(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    def engine(*args: object, **kwargs: object) -> str:  # what the engine logs as it runs (a requeue-hold: ERROR)
        for name in engine_sim.NOISY:
            logging.getLogger(name).error("job 1 started on {'n1': 3}, plan was {'n1': 2}: requeue-holding it")
        logging.getLogger("hops_slurm.engine.refresh").error("other loggers still speak")
        return f"ran {args} {kwargs}"

    monkeypatch.setattr(engine_sim, "simulate_engine", engine)
    before = [logging.getLogger(name).level for name in engine_sim.NOISY]
    assert engine_sim.quiet_engine(1, policy="hops") == "ran (1,) {'policy': 'hops'}"
    assert [r.name for r in caplog.records] == ["hops_slurm.engine.refresh"]
    assert [logging.getLogger(name).level for name in engine_sim.NOISY] == before  # as they were


def test_the_quiet_engine_runs_the_engine_path() -> None:
    from hops_slurm.sim.cluster_spec import load_cluster
    from hops_slurm.sim.runner import compare

    runs = compare(load_cluster("paper-64"), "paper:jobs=4", ["hops"], [0], None, progress=False,
                   run=engine_sim.quiet_engine)
    assert not runs.failures and runs[0].metrics.jobs == 4 and runs[0].metrics.unfinished == 0
