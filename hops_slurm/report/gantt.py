"""A per-job timeline (Gantt chart) of one or more runs: when each job waited, where it ran, when it was forecast to start.

Where it sits: records --> :func:`timeline_figure` --> PNG, beside :mod:`hops_slurm.report.plots`. ``make demo``
draws the Hops run and the Slurm run of the same jobs one above the other
(:func:`hops_slurm.tools.demo.ab.write_ab_plots`), so a reader sees where heterogeneity and the queue order
made the difference: each job is one row (the same row in every run, by job name); its wait is a thin grey
line from submission to first start; each placement is a bar coloured by its GPU type (``mixed`` for one
across types), hatched when the scheduler preempted it; its forecast start at submission
(:attr:`hops_slurm.records.JobRecord.forecast_start`: the Hops engine's forecast, or the start Slurm
expected) is a black tick, its actual first start a filled dot. Pure drawing: no Slurm, no files but the
PNG, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.report.plots import DPI, UNITS, time_unit

#: GPU types in a fixed colour order (matplotlib's tab10), so the same type has the same colour in every run.
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
           "tab:cyan")
MIXED_COLOUR = "tab:gray"
#: rows drawn at most per run (a larger run shows its first jobs by submission and says so in its title)
MAX_ROWS = 60


def placement_type(p: PlacementRecord, type_of_node: Mapping[str, str] | None = None) -> str:
    """The GPU type of one placement: its recorded type, else the types of its nodes
    (``type_of_node``), ``mixed`` when they differ, ``?`` when nothing says."""
    if p.gpu_type:
        return p.gpu_type
    types = {type_of_node.get(n, "?") for n in p.config} if type_of_node else set()
    return "mixed" if len(types) > 1 else next(iter(types), "?")


def colours(types: Sequence[str]) -> dict[str, str]:
    """One colour per GPU type, in sorted order, ``mixed`` always grey."""
    plain = sorted({t for t in types if t != "mixed"})
    out = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(plain)}
    out["mixed"] = MIXED_COLOUR
    return out


def row_order(runs: Sequence[tuple[str, Sequence[JobRecord]]]) -> list[str]:
    """Job names (one row each) in order of first submission over every run; a job without a name is
    its id."""
    first: dict[str, float] = {}
    for _, jobs in runs:
        for j in jobs:
            key = j.name or j.job_id
            first[key] = min(first.get(key, j.submit), j.submit)
    return sorted(first, key=lambda k: (first[k], k))[:MAX_ROWS]


def timeline_figure(runs: Sequence[tuple[str, Sequence[JobRecord]]], now: float,
                    type_of_node: Mapping[str, str] | None = None, unit: str | None = None) -> Figure:
    """One panel per run, jobs as rows (:func:`row_order`), each run's time from its own first submission
    in ``unit`` (default :func:`~hops_slurm.report.plots.time_unit` of the longest run). A placement still
    running ends at ``now``."""
    rows = row_order(runs)
    height = max(3.0, 1.2 + 0.18 * len(rows)) * max(1, len(runs))
    fig = Figure(figsize=(9.0, min(height, 30.0)), dpi=DPI)
    FigureCanvasAgg(fig)
    origins = {label: min((j.submit for j in jobs), default=0.0) for label, jobs in runs}
    ends = [e for label, jobs in runs for j in jobs for e in (j.end or now,)]
    span = max((e - min(origins.values(), default=0.0) for e in ends), default=0.0)
    unit = unit or time_unit(max(0.0, span))
    scale = UNITS[unit]
    types = colours([placement_type(p, type_of_node) for _, jobs in runs for j in jobs for p in j.placements])
    first_ax = None
    for k, (label, jobs) in enumerate(runs):
        ax = fig.add_subplot(len(runs), 1, k + 1, sharex=first_ax)  # one time axis: the runs compare by eye
        first_ax = first_ax or ax
        _draw_run(ax, jobs, rows, origins[label], now, scale, types, type_of_node)
        shown = sum(1 for j in jobs if (j.name or j.job_id) in rows)
        ax.set_title(label + (f" (first {shown} of {len(jobs)} jobs)" if shown < len(jobs) else ""), fontsize="medium")
        ax.set_yticks(range(len(rows)), rows, fontsize="x-small")
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(f"{unit} since the run's first submission")
    used = {placement_type(p, type_of_node) for _, jobs in runs for j in jobs for p in j.placements}
    handles: list = [Patch(color=c, label=t) for t, c in types.items() if t in used]
    handles += [Patch(facecolor="white", edgecolor="black", hatch="///", label="preempted"),
                Line2D([], [], color="lightgrey", label="waiting"),
                Line2D([], [], color="black", marker="|", linestyle="", markersize=9, markeredgewidth=2,
                       label="forecast start"),
                Line2D([], [], color="black", marker="o", linestyle="", markersize=3, label="actual start")]
    fig.legend(handles=handles, loc="upper right", fontsize="x-small", ncol=min(len(handles), 5))
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def _draw_run(ax, jobs: Sequence[JobRecord], rows: Sequence[str], t0: float, now: float, scale: float,
              types: Mapping[str, str], type_of_node: Mapping[str, str] | None) -> None:
    index = {name: i for i, name in enumerate(rows)}
    for j in jobs:
        y = index.get(j.name or j.job_id)
        if y is None:
            continue
        first = j.start if j.start is not None else (j.placements[0].start if j.placements else None)
        ax.plot([(j.submit - t0) / scale, ((first if first is not None else (j.end or now)) - t0) / scale], [y, y],
                color="lightgrey", linewidth=1, zorder=1)
        for p in j.placements:
            end = p.end if p.end is not None else (j.end or now)
            ax.barh(y, (end - p.start) / scale, left=(p.start - t0) / scale, height=0.7,
                    color=types.get(placement_type(p, type_of_node), MIXED_COLOUR),
                    hatch="///" if p.preempted else None, edgecolor="black" if p.preempted else None,
                    linewidth=0.3, zorder=2)
        if j.forecast_start is not None:
            ax.plot([(j.forecast_start - t0) / scale], [y], marker="|", markersize=9, markeredgewidth=2,
                    color="black", zorder=4)
        if first is not None:
            ax.plot([(first - t0) / scale], [y], marker="o", markersize=3, color="black", zorder=3)


def plot_timeline(runs: Sequence[tuple[str, Sequence[JobRecord]]], path: Path, now: float,
                  type_of_node: Mapping[str, str] | None = None, unit: str | None = None) -> Path:
    """:func:`timeline_figure` as a PNG at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    timeline_figure(runs, now, type_of_node, unit).savefig(path)
    return path


__all__ = ["MAX_ROWS", "colours", "placement_type", "plot_timeline", "row_order", "timeline_figure"]
