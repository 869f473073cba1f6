"""Report plots (PNG, headless): CDFs of LR and JCT, wait vs age, cluster GPU use over time.

Data flow: records --> these functions --> PNG files. Each plot takes a mapping ``label -> data`` so
the same code draws one live cluster, several simulated policies or the demo's two schedulers side by
side. Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no
global state). GPU use over time is :mod:`hops_slurm.report.timeline`'s, each series from its own first
submission (two live runs at different hours share the axis); never clipped to the cluster: a stretch
above it is drawn, marked and named on the plot. Every time axis is in the unit :func:`time_unit` picks
(minutes for a run under two hours, hours beyond, seconds under two minutes); the plots of one report share it (:func:`write_plots`).
Each ``plot_*`` saves the figure its ``*_figure`` draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report import metrics, timeline

#: Pixel size of every plot: figure inches times DPI.
FIG_INCHES = (8.0, 4.5)
DPI = 100
PIXELS = (int(FIG_INCHES[0] * DPI), int(FIG_INCHES[1] * DPI))

JobSeries = Mapping[str, Sequence[JobRecord]]


def _figure(ncols: int = 1) -> tuple[Figure, list]:
    fig = Figure(figsize=FIG_INCHES, dpi=DPI)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI)
    return path


def _cdf(ax, values: Sequence[float], label: str) -> bool:
    if not values:
        return False
    xs = sorted(values)
    n = len(xs)
    ax.step(xs, [(i + 1) / n for i in range(n)], where="post", label=f"{label} (n={n})")
    return True


def _no_data(ax) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


#: time units of the time axes: name -> seconds
UNITS = {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0}
#: a run shorter than this is drawn in seconds (a test's few jobs) ...
SECONDS_BELOW = 120.0
#: ... one shorter than this in minutes (the live demo's few minutes), a longer one in hours
MINUTES_BELOW = 2 * 3600.0


def time_unit(span: float) -> str:
    """The unit of every time axis for a run lasting ``span`` seconds: minutes under two hours (the live
    demo's few minutes), hours from there on (the simulator's days), seconds under two minutes. The one
    place that decides it."""
    if span < SECONDS_BELOW:
        return "seconds"
    return "minutes" if span < MINUTES_BELOW else "hours"


def run_span(series: Mapping[str, Sequence[JobRecord]], now: float) -> float:
    """The longest run of ``series``: from its first submission to ``now`` or its last end (seconds)."""
    spans = [_horizon(jobs, now) - min(j.submit for j in jobs) for jobs in series.values() if jobs]
    return max(spans, default=0.0)


def cdf_figure(series: JobSeries, unit: str | None = None) -> Figure:
    """Two panels: CDF of the final LR and CDF of JCT of finished jobs, one line per series; JCT in
    ``unit`` (default :func:`time_unit` of the longest JCT)."""
    fig, (ax_lr, ax_jct) = _figure(2)
    done = {label: [j for j in jobs if j.end is not None] for label, jobs in series.items()}
    jcts = {label: [t for j in jobs if (t := metrics.jct(j)) is not None] for label, jobs in done.items()}
    unit = unit or time_unit(max((t for v in jcts.values() for t in v), default=0.0))
    any_lr = any_jct = False
    for label, jobs in done.items():
        lrs = [lr for j in jobs if (lr := metrics.job_latency_ratio(j, j.end or 0.0)) is not None]
        any_lr |= _cdf(ax_lr, lrs, label)
        any_jct |= _cdf(ax_jct, [t / UNITS[unit] for t in jcts[label]], label)
    for ax, seen, xlabel in ((ax_lr, any_lr, "latency ratio (wait / age)"), (ax_jct, any_jct, f"JCT ({unit})")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of jobs")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if seen:
            ax.legend(fontsize="small", loc="lower right")
        else:
            _no_data(ax)
    ax_lr.set_title("CDF of latency ratio")
    ax_jct.set_title("CDF of JCT")
    return fig


def plot_cdfs(series: JobSeries, path: Path, unit: str | None = None) -> Path:
    """:func:`cdf_figure` as a PNG."""
    return _save(cdf_figure(series, unit), path)


def wait_vs_age_figure(series: JobSeries, now: float, unit: str | None = None) -> Figure:
    """Scatter of wait against the age estimate, with the LR = 1 diagonal; both in ``unit`` (default
    :func:`time_unit` of the largest of them)."""
    fig, (ax,) = _figure()
    points = {
        label: [(j.age_estimate, metrics.wait_time(j, j.end if j.end is not None else now))
                for j in jobs if j.age_estimate is not None and j.age_estimate > 0]
        for label, jobs in series.items()
    }
    unit = unit or time_unit(max((max(p) for pts in points.values() for p in pts), default=0.0))
    scale = UNITS[unit]
    top = 0.0
    seen = False
    for label, pts in points.items():
        if pts:
            seen = True
            ax.scatter([p[0] / scale for p in pts], [p[1] / scale for p in pts], s=14, alpha=0.7,
                       label=f"{label} (n={len(pts)})")
            top = max(top, *(p[0] / scale for p in pts))
    if seen:
        ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="LR = 1")
        ax.legend(fontsize="small")
    else:
        _no_data(ax)
    ax.set_xlabel(f"age estimate ({unit})")
    ax.set_ylabel(f"wait ({unit})")
    ax.set_title("Wait vs age")
    ax.grid(alpha=0.3)
    return fig


def plot_wait_vs_age(series: JobSeries, path: Path, now: float, unit: str | None = None) -> Path:
    """:func:`wait_vs_age_figure` as a PNG."""
    return _save(wait_vs_age_figure(series, now, unit), path)


def jct_cdf_figure(series: JobSeries, unit: str | None = None) -> Figure:
    """CDF of JCT of the finished jobs, one line per series, in ``unit`` (default :func:`time_unit` of the
    longest JCT)."""
    fig, (ax,) = _figure()
    jcts = {label: [t for j in jobs if (t := metrics.jct(j)) is not None] for label, jobs in series.items()}
    unit = unit or time_unit(max((t for v in jcts.values() for t in v), default=0.0))
    seen = False
    for label, values in jcts.items():
        seen |= _cdf(ax, [t / UNITS[unit] for t in values], label)
    ax.set_xlabel(f"JCT ({unit})")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.set_title("CDF of job completion time")
    if seen:
        ax.legend(fontsize="small", loc="lower right")
    else:
        _no_data(ax)
    return fig


def plot_jct_cdf(series: JobSeries, path: Path, unit: str | None = None) -> Path:
    """:func:`jct_cdf_figure` as a PNG."""
    return _save(jct_cdf_figure(series, unit), path)


def _horizon(jobs: Sequence[JobRecord], now: float) -> float:
    """Where a series' GPU-use curve stops: ``now``, or its last end once every job of it has ended."""
    ends = [j.end for j in jobs]
    return min(now, max(e for e in ends if e is not None)) if ends and None not in ends else now


def gpu_use_figure(
    series: Mapping[str, tuple[Sequence[JobRecord], Sequence[RoundRecord]]], now: float,
    capacity: int | None = None, unit: str | None = None,
) -> Figure:
    """GPUs in use over time per series (from its first submission to ``now`` or its last end, in ``unit``,
    default :func:`time_unit`); the cluster's size (``capacity``, else the plan records') as a dotted line.
    Stretches above it are marked in red and named in the title, not clipped."""
    fig, (ax,) = _figure()
    seen = False
    all_steps = {label: timeline.gpus_in_use_steps(jobs, _horizon(jobs, now)) for label, (jobs, _) in series.items()}
    origins = {label: min((j.submit for j in jobs), default=0.0) for label, (jobs, _) in series.items()}
    span = max((steps[-1][0] - origins[label] for label, steps in all_steps.items() if steps), default=0.0)
    unit = unit or time_unit(span)
    sizes = {label: capacity or max((r.total_gpus for r in rounds), default=0) for label, (_, rounds) in series.items()}
    over = 0
    for label, steps in all_steps.items():
        if steps:
            seen = True
            t0 = origins[label]
            ax.step([(t - t0) / UNITS[unit] for t, _ in steps], [g for _, g in steps], where="post", label=label)
            for a, b, g in timeline.above_capacity(steps, sizes[label]) if sizes[label] else ():
                over = max(over, g)
                ax.plot([(a - t0) / UNITS[unit], (b - t0) / UNITS[unit]], [g, g], color="red", linewidth=3)
    for total in sorted({g for g in sizes.values() if g}):
        ax.axhline(total, color="grey", linestyle=":", linewidth=1)
    if seen:
        ax.legend(fontsize="small")
    else:
        _no_data(ax)
    ax.set_xlabel(f"{unit} since the first submission")
    ax.set_ylabel("GPUs in use")
    if over:
        ax.set_title(f"Cluster GPU use: ABOVE THE CLUSTER ({over} GPUs in use, red)", color="red")
    else:
        ax.set_title("Cluster GPU use")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return fig


def plot_gpu_use(
    series: Mapping[str, tuple[Sequence[JobRecord], Sequence[RoundRecord]]], path: Path, now: float,
    capacity: int | None = None, unit: str | None = None,
) -> Path:
    """:func:`gpu_use_figure` as a PNG."""
    return _save(gpu_use_figure(series, now, capacity, unit), path)


def write_plots(
    out_dir: Path,
    series: Mapping[str, tuple[Sequence[JobRecord], Sequence[RoundRecord]]],
    now: float,
) -> list[Path]:
    """All report plots into ``out_dir``: lr_jct_cdf.png, wait_vs_age.png, gpu_use.png, every time axis in
    the one unit :func:`time_unit` picks for the longest run."""
    jobs_only = {label: jobs for label, (jobs, _) in series.items()}
    unit = time_unit(run_span(jobs_only, now))
    return [
        plot_cdfs(jobs_only, out_dir / "lr_jct_cdf.png", unit),
        plot_wait_vs_age(jobs_only, out_dir / "wait_vs_age.png", now, unit),
        plot_gpu_use(series, out_dir / "gpu_use.png", now, unit=unit),
    ]
