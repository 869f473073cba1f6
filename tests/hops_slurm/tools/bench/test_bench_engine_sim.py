"""The engine-sim bench's document: the generated parts, then its hand-written notes (the runs themselves are
the benchmark, not a test)."""

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
