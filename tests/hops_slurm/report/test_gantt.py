"""The per-job timeline: rows by job, bars coloured by GPU type, forecast and actual starts marked."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.colors import to_rgba

from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report import gantt


def _job(name: str, submit: float, runs: list[tuple[float, float, dict[str, int]]], forecast: float | None = None,
         gpu_type: str = "") -> JobRecord:
    placements = [PlacementRecord(start=a, end=b, config=c, gpu_type=gpu_type, preempted=i + 1 < len(runs))
                  for i, (a, b, c) in enumerate(runs)]
    return JobRecord(job_id=name, name=name, submit=submit, start=runs[0][0] if runs else None,
                     end=runs[-1][1] if runs else None, state="COMPLETED" if runs else "PENDING",
                     placements=placements, forecast_start=forecast)


TYPES = {"a100-1": "a100", "a100-2": "a100", "v100-1": "v100"}


def test_a_placement_takes_its_recorded_type_else_its_nodes_and_mixed_across_types() -> None:
    assert gantt.placement_type(PlacementRecord(start=0, config={"x": 1}, gpu_type="k80"), TYPES) == "k80"
    assert gantt.placement_type(PlacementRecord(start=0, config={"a100-1": 2, "a100-2": 2}), TYPES) == "a100"
    assert gantt.placement_type(PlacementRecord(start=0, config={"a100-1": 2, "v100-1": 2}), TYPES) == "mixed"
    assert gantt.placement_type(PlacementRecord(start=0, config={"n9": 2}), None) == "?"


def test_rows_follow_first_submission_over_every_run_and_are_bounded() -> None:
    a = [_job("late", 50.0, []), _job("early", 0.0, [])]
    b = [_job("early", 900.0, []), _job("mid", 20.0, [])]
    assert gantt.row_order([("A", a), ("B", b)]) == ["early", "mid", "late"]
    many = [_job(f"j{i:03d}", float(i), []) for i in range(gantt.MAX_ROWS + 5)]
    assert len(gantt.row_order([("A", many)])) == gantt.MAX_ROWS


def test_each_gpu_type_keeps_one_colour_and_mixed_is_grey() -> None:
    c = gantt.colours(["v100", "a100", "mixed", "a100"])
    assert c["a100"] != c["v100"] and c["mixed"] == gantt.MIXED_COLOUR


def test_the_figure_draws_a_bar_per_placement_in_its_type_colour_and_marks_forecast_and_start() -> None:
    hops = [_job("x", 0.0, [(10.0, 40.0, {"v100-1": 2}), (45.0, 90.0, {"a100-1": 4})], forecast=12.0),
            _job("y", 5.0, [(20.0, 60.0, {"a100-2": 8})])]
    slurm = [_job("x", 100.0, [(100.0, 190.0, {"a100-1": 2})]), _job("y", 105.0, [(190.0, 240.0, {"a100-2": 8})],
                                                                     forecast=180.0)]
    fig = gantt.timeline_figure([("Hops", hops), ("Slurm", slurm)], now=300.0, type_of_node=TYPES, unit="seconds")
    top, bottom = fig.axes[0], fig.axes[1]
    colours = gantt.colours(["a100", "v100"])
    bars = [(p.get_x(), p.get_width(), p.get_facecolor()) for p in top.patches]
    assert (10.0, 30.0, to_rgba(colours["v100"])) in bars and (45.0, 45.0, to_rgba(colours["a100"])) in bars
    assert [p.get_hatch() for p in top.patches].count("///") == 1  # the preempted v100 run
    ticks = [ln for ln in top.lines if ln.get_marker() == "|"]
    assert [(t.get_xdata()[0], t.get_ydata()[0]) for t in ticks] == [(12.0, 0)]  # x's forecast, row 0
    starts = sorted((ln.get_xdata()[0], ln.get_ydata()[0]) for ln in bottom.lines if ln.get_marker() == "o")
    assert starts == [(0.0, 0), (90.0, 1)]  # each run from its own first submission (100 s)
    assert [ln.get_xdata()[0] for ln in bottom.lines if ln.get_marker() == "|"] == [80.0]


def test_a_job_still_waiting_or_running_ends_at_now(tmp_path: Path) -> None:
    running = JobRecord(job_id="r", name="r", submit=0.0, start=10.0, state="RUNNING",
                        placements=[PlacementRecord(start=10.0, config={"a100-1": 1})])
    waiting = _job("w", 0.0, [])
    fig = gantt.timeline_figure([("Hops", [running, waiting])], now=70.0, type_of_node=TYPES, unit="seconds")
    assert [p.get_width() for p in fig.axes[0].patches] == [pytest.approx(60.0)]
    path = gantt.plot_timeline([("Hops", [running, waiting])], tmp_path / "t.png", 70.0, TYPES)
    assert path.read_bytes()[:4] == b"\x89PNG"
