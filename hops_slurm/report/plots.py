"""Report plots (PNG, headless): CDFs of LR and JCT, wait vs age, cluster GPU use over time.

Data flow: records --> these functions --> PNG files. Each plot takes a mapping ``label -> data`` so
the same code draws one live cluster or several simulated policies side by side. Figures are drawn
with matplotlib's object API on the Agg canvas (no pyplot, no display, no global state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report import metrics

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


def plot_cdfs(series: JobSeries, path: Path) -> Path:
    """Two panels: CDF of the final LR and CDF of JCT (hours) of finished jobs, one line per series."""
    fig, (ax_lr, ax_jct) = _figure(2)
    any_lr = any_jct = False
    for label, jobs in series.items():
        done = [j for j in jobs if j.end is not None]
        lrs = [lr for j in done if (lr := metrics.job_latency_ratio(j, j.end or 0.0)) is not None]
        jcts = [t / 3600.0 for j in done if (t := metrics.jct(j)) is not None]
        any_lr |= _cdf(ax_lr, lrs, label)
        any_jct |= _cdf(ax_jct, jcts, label)
    for ax, seen, xlabel in ((ax_lr, any_lr, "latency ratio (wait / age)"), (ax_jct, any_jct, "JCT (hours)")):
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
    return _save(fig, path)


def plot_wait_vs_age(series: JobSeries, path: Path, now: float) -> Path:
    """Scatter of wait (hours) against the age estimate (hours), with the LR = 1 diagonal."""
    fig, (ax,) = _figure()
    top = 0.0
    seen = False
    for label, jobs in series.items():
        pts = [
            (j.age_estimate / 3600.0, metrics.wait_time(j, j.end if j.end is not None else now) / 3600.0)
            for j in jobs
            if j.age_estimate is not None and j.age_estimate > 0
        ]
        if pts:
            seen = True
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, alpha=0.7, label=f"{label} (n={len(pts)})")
            top = max(top, *(p[0] for p in pts))
    if seen:
        ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="LR = 1")
        ax.legend(fontsize="small")
    else:
        _no_data(ax)
    ax.set_xlabel("age estimate (hours)")
    ax.set_ylabel("wait (hours)")
    ax.set_title("Wait vs age")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_gpu_use(
    series: Mapping[str, tuple[Sequence[JobRecord], Sequence[RoundRecord]]], path: Path, now: float
) -> Path:
    """GPUs in use over time (hours since the first placement) per series, from placements; the cluster size from plan records."""
    fig, (ax,) = _figure()
    seen = False
    all_steps = {label: metrics.gpus_in_use_steps(jobs, now) for label, (jobs, _) in series.items()}
    t0 = min((steps[0][0] for steps in all_steps.values() if steps), default=0.0)
    for label, (jobs, rounds) in series.items():
        steps = all_steps[label]
        if steps:
            seen = True
            xs = [(t - t0) / 3600.0 for t, _ in steps]
            ys = [g for _, g in steps]
            ax.step(xs, ys, where="post", label=label)
        total = max((r.total_gpus for r in rounds), default=0)
        if total:
            ax.axhline(total, color="grey", linestyle=":", linewidth=1)
    if seen:
        ax.legend(fontsize="small")
    else:
        _no_data(ax)
    ax.set_xlabel("hours since the first placement")
    ax.set_ylabel("GPUs in use")
    ax.set_title("Cluster GPU use")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def write_plots(
    out_dir: Path,
    series: Mapping[str, tuple[Sequence[JobRecord], Sequence[RoundRecord]]],
    now: float,
) -> list[Path]:
    """All report plots into ``out_dir``: lr_jct_cdf.png, wait_vs_age.png, gpu_use.png."""
    jobs_only = {label: jobs for label, (jobs, _) in series.items()}
    return [
        plot_cdfs(jobs_only, out_dir / "lr_jct_cdf.png"),
        plot_wait_vs_age(jobs_only, out_dir / "wait_vs_age.png", now),
        plot_gpu_use(series, out_dir / "gpu_use.png", now),
    ]
