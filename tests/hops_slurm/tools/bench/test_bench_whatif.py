"""``hops-slurm bench whatif`` at a small size: it writes the recorded export's table and plots and the
generated history's step timings (what it measures is never asserted, only that it is reported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.tools.bench import discover


def test_bench_whatif_writes_both_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = discover()["whatif"]
    assert module.IN_ALL is False  # minutes at 10,000 jobs: run by name
    monkeypatch.setenv("HOPS_BENCH_WHATIF_JOBS", "60")
    text = module.run(tmp_path).read_text()
    assert "## On a recorded sacct export (Slurm 22.05, slurmdbd)" in text
    assert "hops-slurm: warning: jobs[8] (job 9): never started (CANCELLED): left out" in text
    assert "## 60 generated jobs" in text
    for row in ("| slurm-recorded |", "| slurm-backfill |", "| hops |", "| simulate hops |", "**whatif in all**"):
        assert row in text, row
    for png in ("lr_jct_cdf.png", "wait_vs_age.png", "gpu_use.png"):
        assert (tmp_path / "whatif" / png).is_file() and f"(whatif/{png})" in text
