"""``hops-slurm bench whatif`` at a small size: it writes each recorded export's default run (the console
script's table, assumptions and verdict, with the command and the commit) and the generated history's
step timings (what it measures is never asserted, only that it is reported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.tools.bench import discover


def test_bench_whatif_writes_both_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = discover()["whatif"]
    assert module.IN_ALL is False  # minutes at 10,000 jobs: run by name
    monkeypatch.setenv("HOPS_BENCH_WHATIF_JOBS", "60")
    text = module.run(tmp_path).read_text()
    assert "## The recorded exports, with every default" in text and "Commit " in text
    for release in ("22.05", "24.11", "26.05"):
        export = f"tests/data/sacct/{release}/sacct.json"
        assert f"    hops-slurm whatif {export}\n" in text  # the exact command, no option
        assert f"| `{export}` | hops |" in text  # its row in the summary
    assert "hops-slurm: warning: jobs[8] (job 9): never started (CANCELLED): left out" in text
    assert "hops-slurm: whatif: assumptions (" in text and "  [guessed] model identity:" in text
    assert "ahead of slurm-backfill on avg JCT" in text
    assert "## 60 generated jobs" in text
    for row in ("| slurm-recorded |", "| slurm-backfill |", "| hops |", "| simulate hops |", "**whatif in all**"):
        assert row in text, row
