"""``hops-slurm simulate``'s table and plots in a reader's units (issue 26): counts as whole numbers, time
axes in the unit :func:`hops_slurm.report.plots.time_unit` picks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hops_slurm.report.metrics import RunMetrics
from hops_slurm.sim import comparison
from hops_slurm.sim.runner import RunResult


def _result(policy: str, seed: int, preemptions: int, unfinished: int = 0, hours: float = 5.0) -> RunResult:
    span = hours * 3600.0
    metrics = RunMetrics(jobs=10, unfinished=unfinished, makespan=span, avg_jct=span / 2, avg_wait=600.0, max_lr=1.5,
                         avg_frag=0.25, max_rho=1.2, preemptions=preemptions, planner_mean_seconds=0.01,
                         planner_max_seconds=0.02, limit_hits=0, jct=[span / 4, span / 2, span], lr=[0.5, 1.5],
                         rho=[1.0, 1.2])
    return RunResult(policy, seed, [], [], [(0.0, 0, 0.0), (span / 2, 8, 4.0), (span, 0, 0.0)], metrics,
                     bound_avg_jct=span / 4)


def _cells(table: str, policy: str) -> dict[str, str]:
    lines = table.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    row = next(line for line in lines if line.startswith(f"| {policy} |"))
    return dict(zip(head, (c.strip() for c in row.strip("|").split("|"))))


def test_counts_print_as_whole_numbers() -> None:
    cells = _cells(comparison.markdown_table([_result("hops", 0, 493)]), "hops")
    assert cells["Preemptions"] == "493"
    assert cells["Unfinished"] == "0"
    assert cells["Max.LR"] == "1.500"  # measurements keep their digits


def test_a_mean_over_seeds_keeps_one_decimal_only_when_it_is_not_whole() -> None:
    table = comparison.markdown_table([_result("a", 0, 2, 1), _result("a", 1, 3, 1), _result("b", 0, 4), _result("b", 1, 4)])
    a, b = _cells(table, "a"), _cells(table, "b")
    assert a["Preemptions"] == "2.5 ± 0.7"
    assert a["Unfinished"] == "1"
    assert b["Preemptions"] == "4"


@pytest.mark.parametrize(("hours", "unit"), [(5.0, "hours"), (0.5, "minutes"), (0.01, "seconds")])
def test_plot_time_axes_take_the_runs_unit(hours: float, unit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels: list[str] = []
    real = comparison._finish

    def spy(plt: Any, fig: Any, ax: Any, xlabel: str, ylabel: str, path: Path) -> Path:
        labels.append(xlabel)
        return real(plt, fig, ax, xlabel, ylabel, path)

    monkeypatch.setattr(comparison, "_finish", spy)
    comparison.write_plots([_result("hops", 0, 1, hours=hours)], tmp_path)
    assert labels[0] == f"JCT ({unit})" and labels[-1] == f"time ({unit})"
