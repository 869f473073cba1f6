"""The solver bench's per-node-speed part measures a small instance and reports the gap per instance."""

from __future__ import annotations

import pytest

from hops_slurm.tools.bench import solver
from hops_slurm.tools.bench.solver_speeds import measure_speeds, report
from hops_slurm.errors import HopsError


def test_a_small_speed_row_measures_and_stays_within_the_gap() -> None:
    row = measure_speeds(64, 120, [1])
    assert len(row.cold) == len(row.warm) == len(row.today) == len(row.gaps) == 1
    assert row.gaps[0] <= 0.01  # the default plan is within 1% of today's model, by today's objective
    assert row.classes[0] > 5  # per-node speeds split the five declared classes
    text = report([row], [1])
    assert "| 64 | 120 |" in text and "objective gap" in text


def test_unknown_part_is_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("HOPS_BENCH_PARTS", "nope")
    with pytest.raises(HopsError, match="unknown part"):
        solver.run(tmp_path)
