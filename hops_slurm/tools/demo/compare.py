"""``make demo``'s closing table: the Hops run and the Slurm-backfill run of the same jobs, side by side.

Where it sits: after both runs, :mod:`hops_slurm.tools.demo.run` hands this module the two runs' job records
(the Hops daemon's records; the records :mod:`hops_slurm.tools.demo.rigid` built from what Slurm reported) and
prints :func:`comparison_text`. Both columns come from one function, :func:`summarise_run`, over the
report's own metrics (:mod:`hops_slurm.report.summary` / :mod:`hops_slurm.report.metrics`): the
latency ratio of either run is ``metrics.job_latency_ratio`` (Hops eq. 6, wait / age). A Slurm job has no
eq. 9 age of its own (no engine estimated one), so :func:`with_hops_ages` gives it the age the Hops
engine estimated for the same script: the same denominator on both sides, so the ratios differ only by
how long each scheduler made the job wait. Pure: no Slurm, no files, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hops_slurm.records import JobRecord
from hops_slurm.report import metrics, timeline
from hops_slurm.report.summary import group_stats
from hops_slurm.report.timefmt import format_elapsed


@dataclass(frozen=True)
class RunSummary:
    """One run of the demo's workload, over its makespan (first submission to last end)."""

    label: str
    jobs: int
    completed: int
    avg_jct: float | None  # seconds, over the jobs that ended
    avg_wait: float | None  # seconds queued, summed over preemptions
    max_lr: float | None  # largest final latency ratio (eq. 6)
    gpu_utilisation: float | None  # 0..1 of total_gpus over the makespan
    makespan: float | None  # seconds
    total_gpus: int
    peak_gpus: int = 0  # most GPUs in use at any instant (:mod:`hops_slurm.report.timeline`; never above total_gpus)
    preemptions: int = 0  # requeues and moves of running jobs, over every job
    raqlr: float | None = None  # RAQLR (eq. 7) over the run: mean final latency ratio of the jobs that ended


def summarise_run(label: str, jobs: Sequence[JobRecord], total_gpus: int) -> RunSummary:
    """Avg JCT, avg wait, max LR (the report's ``group_stats``), GPU utilisation and makespan of one run."""
    ended = [j.end for j in jobs if j.end is not None]
    if not jobs or not ended:
        return RunSummary(label, len(jobs), 0, None, None, None, None, None, total_gpus)
    start, end = min(j.submit for j in jobs), max(ended)
    stats = group_stats(label, jobs, start - 1.0, end)  # every job that ended counts
    return RunSummary(
        label=label,
        jobs=len(jobs),
        completed=sum(1 for j in jobs if j.state == "COMPLETED"),
        avg_jct=stats.avg_jct,
        avg_wait=stats.avg_wait,
        max_lr=stats.max_lr,
        gpu_utilisation=metrics.gpu_utilisation(jobs, total_gpus, start, end),
        makespan=end - start,
        total_gpus=total_gpus,
        peak_gpus=timeline.peak(timeline.gpus_in_use_steps(jobs, end)),
        preemptions=sum(j.preemptions for j in jobs),
        raqlr=stats.raqlr,
    )


def with_hops_ages(jobs: Sequence[JobRecord], names: Mapping[str, str], hops_ages: Mapping[str, float | None]) -> list[JobRecord]:
    """``jobs`` with ``age_estimate`` set to the Hops engine's estimate for the same script
    (``names``: job id -> script name; ``hops_ages``: script name -> age); None where Hops had none."""
    return [j.model_copy(update={"age_estimate": hops_ages.get(names.get(j.job_id, ""))}) for j in jobs]


def _cells(s: RunSummary) -> list[str]:
    util = "-" if s.gpu_utilisation is None else f"{100 * s.gpu_utilisation:.1f}%"
    return [
        f"{s.completed} of {s.jobs}",
        format_elapsed(s.avg_jct) or "-",
        format_elapsed(s.avg_wait) or "-",
        "-" if s.raqlr is None else f"{s.raqlr:.3f}",
        "-" if s.max_lr is None else f"{s.max_lr:.2f}",
        util,
        format_elapsed(s.makespan) or "-",
        f"{s.peak_gpus} of {s.total_gpus}" if s.makespan is not None else "-",
        f"{s.preemptions / s.jobs:.2f}" if s.makespan is not None else "-",
    ]


ROWS = ("Jobs completed", "Avg JCT", "Avg wait", "RAQLR (eq. 7)", "Max latency ratio", "GPU utilisation", "Makespan", "Peak GPUs in use",
        "Preemptions per job")


def comparison_text(runs: Sequence[RunSummary]) -> str:
    """The runs as columns, one metric per row (plain text, right-aligned like Slurm's tables)."""
    cols = [_cells(r) for r in runs]
    widths = [max(len(r.label), *(len(c) for c in col)) for r, col in zip(runs, cols, strict=True)]
    head = f"{'':<18}" + "".join(f"  {r.label:>{w}}" for r, w in zip(runs, widths, strict=True))
    lines = [head, "-" * len(head)]
    for i, row in enumerate(ROWS):
        lines.append(f"{row:<18}" + "".join(f"  {col[i]:>{w}}" for col, w in zip(cols, widths, strict=True)))
    return "\n".join(lines) + "\n"


def comparison_markdown(runs: Sequence[RunSummary]) -> str:
    """The same table in Markdown (docs/demo/comparison.md, the README)."""
    cols = [_cells(r) for r in runs]
    lines = ["| | " + " | ".join(r.label for r in runs) + " |", "|---|" + "---:|" * len(runs)]
    lines += [f"| {row} | " + " | ".join(col[i] for col in cols) + " |" for i, row in enumerate(ROWS)]
    return "\n".join(lines) + "\n"
