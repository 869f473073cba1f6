"""A Markdown page of a report (table, summary, plots) for the README example made by ``make demo``.

Data flow: records of a demo run (engine SQLite or simulator JSONL) --> :func:`write_markdown` -->
``OUT/report.md`` beside ``OUT/*.png``. The page holds exactly what ``hops-slurm report`` prints,
so the README shows real output, not a mock-up.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from hops_slurm.report import plots
from hops_slurm.report.accounting import build_rows
from hops_slurm.report.source import RecordSet
from hops_slurm.report.summary import summarise, summary_text
from hops_slurm.report.table import TimeStyle, parse_format, render_table

#: Columns of the example table: the ones that tell the Hops story and fit a README.
EXAMPLE_FORMAT = "JobID%6,User%6,Submit%10,Forecast%10,Start%10,End%10,Wait%9,EstRun%9,LR,FTF,GPUs,Config%16,Preemptions,State"


def write_markdown(
    records: RecordSet,
    out_dir: Path,
    now: float,
    simulated: bool,
    window: float | None = None,
    title: str = "Example report",
    max_rows: int = 15,
) -> Path:
    """Write ``report.md`` and the plots into ``out_dir``; returns the Markdown file's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    style = TimeStyle(simulated=simulated, tz=UTC)
    jobs = list(records.jobs)
    rows = build_rows(jobs[:max_rows], now)
    table = render_table(rows, parse_format(EXAMPLE_FORMAT if simulated else EXAMPLE_FORMAT.replace("%10", "")), style)
    summary = summary_text(summarise(jobs, records.rounds, now, window), style.instant)
    label = "simulated" if simulated else "cluster"
    pngs = plots.write_plots(out_dir, {label: (jobs, records.rounds)}, now)
    shown = f"first {len(rows)} of {len(jobs)} jobs" if len(jobs) > len(rows) else f"{len(jobs)} jobs"
    lines = [
        f"## {title}",
        "",
        f"`hops-slurm report` ({shown}):",
        "",
        "```text",
        table.rstrip("\n"),
        "```",
        "",
        "`hops-slurm report --summary`:",
        "",
        "```text",
        summary.rstrip("\n"),
        "```",
        "",
        *(f"![{p.stem.replace('_', ' ')}]({p.name})" for p in pngs),
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
