"""What the live A/B of ``make demo`` leaves in its report folder: each run's records and the A/B plots.

Where it sits: :mod:`hops_slurm.tools.demo.run` calls :func:`keep_run` after the Hops run (``fresh``) and again
after the Slurm-backfill run, then :func:`write_ab_plots` for both; the comparison page
(``comparison.md``) links the plots. Tests read the records back with :func:`load_runs` (the GPU-use
check of issue 21 reads docs/demo this way).

Files, all in the report folder (docs/demo for ``make demo``):
- ``records-<slug>.jsonl``: one run's job (and plan) records, the JSONL ``hops-slurm report --records``
  reads (:mod:`hops_slurm.report.source`);
- ``runs.json``: which files hold which run, and the cluster's GPUs (the Slurm run has no plan records
  to say it): ``{"total_gpus": 24, "runs": [{"label": "Hops", "records": "records-hops.jsonl"}, ...]}``;
- ``ab_jct_cdf.png``, ``ab_gpu_use.png``: CDF of JCT and GPUs in use over time of both runs, in the unit
  :func:`hops_slurm.report.plots.time_unit` picks for the longer run (minutes for the demo's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report.source import RecordSet, open_source, write_jsonl

RUNS_FILE = "runs.json"
HOPS = "Hops"
SLURM = "Slurm backfill (rigid)"
SLURM_MULTIFACTOR = "Slurm multifactor (rigid)"  # hops-slurm demo --slurm-priority multifactor
JCT_CDF = "ab_jct_cdf.png"
GPU_USE = "ab_gpu_use.png"
TIMELINE = "ab_timeline.png"


class RunEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=200)
    records: str = Field(pattern=r"^records-[a-z0-9-]{1,80}\.jsonl$")  # a file name in the same folder


class RunsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total_gpus: int = Field(gt=0, le=10**7)
    runs: list[RunEntry] = Field(default_factory=list, max_length=64)


def slug(label: str) -> str:
    """``"Slurm backfill (rigid)"`` -> ``"slurm-backfill-rigid"`` (the run's records file name)."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:80] or "run"


def keep_run(report_dir: Path, label: str, jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord],
             total_gpus: int, *, fresh: bool = False) -> Path:
    """Write one run's records into ``report_dir`` and list them in ``runs.json`` (``fresh``: a new list,
    forgetting the runs an earlier demo left there); the records file's path."""
    report_dir.mkdir(parents=True, exist_ok=True)
    entry = RunEntry(label=label, records=f"records-{slug(label)}.jsonl")
    path = write_jsonl(report_dir / entry.records, jobs, rounds)
    index = RunsFile(total_gpus=total_gpus)
    if not fresh and (report_dir / RUNS_FILE).is_file():
        index = _read_index(report_dir)
        index.total_gpus = total_gpus
    index.runs = [r for r in index.runs if r.label != label] + [entry]
    (report_dir / RUNS_FILE).write_text(index.model_dump_json(indent=2) + "\n")
    return path


def _read_index(report_dir: Path) -> RunsFile:
    where = report_dir / RUNS_FILE
    try:
        return RunsFile.model_validate_json(where.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        raise HopsError(f"{where}: not a demo runs index: {str(exc).splitlines()[0]}") from None


def load_runs(report_dir: Path) -> tuple[int, list[tuple[str, RecordSet]]]:
    """The cluster's GPUs and each kept run's records (label, records), in the order they were kept."""
    index = _read_index(report_dir)
    return index.total_gpus, [(r.label, open_source(report_dir / r.records).load()) for r in index.runs]


def write_ab_plots(report_dir: Path, runs: Sequence[tuple[str, Sequence[JobRecord]]], total_gpus: int,
                   type_of_node: Mapping[str, str] | None = None) -> list[Path]:
    """CDF of JCT, GPUs in use over time and the per-job timeline of every run
    (:mod:`hops_slurm.report.gantt`: bars coloured by GPU type, ``type_of_node`` naming each node's, forecast
    and actual starts marked), each run from its own first submission, all in the unit
    :func:`~hops_slurm.report.plots.time_unit` picks for the longer run; the cluster's ``total_gpus`` as the
    line no run may cross."""
    from hops_slurm.report import gantt, plots  # matplotlib: imported only when plotting

    ends = [j.end for _, jobs in runs for j in jobs if j.end is not None]
    now = max([max(ends, default=0.0), *(j.submit for _, jobs in runs for j in jobs)])
    series = {label: jobs for label, jobs in runs}
    unit = plots.time_unit(plots.run_span(series, now))
    return [
        plots.plot_jct_cdf(series, report_dir / JCT_CDF, unit=unit),
        plots.plot_gpu_use({label: (jobs, ()) for label, jobs in runs}, report_dir / GPU_USE, now, capacity=total_gpus,
                           unit=unit),
        gantt.plot_timeline(runs, report_dir / TIMELINE, now, type_of_node, unit=unit),
    ]


def plots_markdown(paths: Sequence[Path]) -> str:
    """The plots as Markdown images (relative links: the page sits beside them)."""
    titles = {JCT_CDF: "CDF of JCT, both schedulers", GPU_USE: "GPUs in use over time, both schedulers",
              TIMELINE: "Each job's wait and runs, coloured by GPU type, with its forecast start (tick) and actual start (dot)"}
    return "\n".join(f"![{titles.get(p.name, p.stem)}]({p.name})" for p in paths) + "\n"


def check_runs(report_dir: Path) -> str:
    """One line on the kept runs' GPU timelines: the peak of each, and any stretch above the cluster."""
    from hops_slurm.report.timeline import gpus_in_use_steps, peak, timeline_problems

    total, runs = load_runs(report_dir)
    parts = []
    for label, records in runs:
        until = records.last_time() or 0.0
        problems = timeline_problems(list(records.jobs), total, until)
        parts.append(f"{label}: peak {peak(gpus_in_use_steps(records.jobs, until))} of {total} GPUs"
                     + (f", {len(problems)} problem(s): {problems[0]}" if problems else ""))
    return "; ".join(parts)
