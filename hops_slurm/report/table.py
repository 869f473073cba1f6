"""sacct-style output of :class:`~hops_slurm.report.accounting.JobRow` lists.

Last step of the report data flow: rows in, text out. Three shapes, as ``sacct`` has them:
fixed-width columns (``--format=JobID,LR%10``: right-justified, ``%-N`` left-justified, values too
long for a column end in ``+``), ``--parsable2`` (``|`` between fields, none at the end, nothing
truncated) and ``--json`` (every field, raw numbers in seconds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo

from hops_slurm.report import columns
from hops_slurm.report.accounting import JobRow
from hops_slurm.report.columns import Column, fit as _fit
from hops_slurm.report.timefmt import format_elapsed, format_time
from hops_slurm.text import printable



@dataclass(frozen=True)
class TimeStyle:
    """How instants print: Slurm dates in ``tz`` (live clocks) or ``+[D-]HH:MM:SS`` from 0 (simulated)."""

    simulated: bool = False
    tz: tzinfo | None = None

    def instant(self, t: float | None) -> str:
        if t is None:
            return "Unknown"
        if self.simulated:
            return "+" + format_elapsed(t)
        return format_time(t, self.tz)


def _ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def config_text(config: dict[str, int]) -> str:
    """``node:gpus,…`` in node-name order."""
    return ",".join(f"{node}:{gpus}" for node, gpus in sorted(config.items()))


_Getter = Callable[[JobRow, TimeStyle], str]


@dataclass(frozen=True)
class Field:
    name: str  # as printed in the header
    width: int  # default column width
    text: _Getter


FIELDS: dict[str, Field] = {
    f.name.lower(): f
    for f in (
        Field("JobID", 12, lambda r, s: r.job_id),
        Field("JobName", 10, lambda r, s: r.name),
        Field("User", 9, lambda r, s: r.user),
        Field("Account", 10, lambda r, s: r.account),
        Field("Partition", 10, lambda r, s: r.partition),
        Field("Submit", 19, lambda r, s: s.instant(r.submit)),
        Field("Start", 19, lambda r, s: s.instant(r.start)),
        Field("End", 19, lambda r, s: s.instant(r.end)),
        Field("Wait", 10, lambda r, s: format_elapsed(r.wait)),
        Field("Age", 10, lambda r, s: format_elapsed(r.age)),
        Field("LR", 6, lambda r, s: _ratio(r.lr)),
        Field("FTF", 6, lambda r, s: _ratio(r.ftf)),
        Field("GPUs", 5, lambda r, s: str(r.gpus)),
        Field("Config", 20, lambda r, s: config_text(r.config)),
        Field("GPUType", 7, lambda r, s: r.gpu_type),
        Field("Preemptions", 11, lambda r, s: str(r.preemptions)),
        Field("State", 10, lambda r, s: r.state),
        Field("Elapsed", 10, lambda r, s: format_elapsed(r.elapsed)),
        Field("JCT", 10, lambda r, s: format_elapsed(r.jct)),
        Field("Declared", 10, lambda r, s: "" if r.declared is None else f"{r.declared:.4g}"),
        Field("Processed", 10, lambda r, s: "" if r.processed is None else f"{r.processed:.4g}"),
        Field("Done", 6, lambda r, s: _ratio(r.done)),
        # preemption with notice (docs/preemption.md): per placement, or summed over the job's requeues
        Field("Notice", 10, lambda r, s: "" if r.notice is None else format_elapsed(r.notice)),
        Field("Checkpointed", 12, lambda r, s: "" if r.checkpointed is None else str(r.checkpointed)),
        Field("WorkLost", 10, lambda r, s: "" if r.lost is None else format_elapsed(r.lost)),
    )
}

DEFAULT_FORMAT = "JobID,JobName,User,Account,Partition,Submit,Start,End,Wait,Age,LR,FTF,GPUs,Config,Preemptions,State"


def help_format() -> str:
    """The field names, as ``sacct --helpformat`` lists them."""
    names = [f.name for f in FIELDS.values()]
    return "\n".join(" ".join(f"{n:<12}" for n in names[i : i + 6]).rstrip() for i in range(0, len(names), 6)) + "\n"


def parse_format(spec: str) -> list[Column[Field]]:
    """Columns from ``Name[%[-]WIDTH],...`` (names case-insensitive, as sacct's --format)."""
    return columns.parse_format(spec, FIELDS)


def render_table(rows: Sequence[JobRow], columns: Sequence[Column], style: TimeStyle, header: bool = True) -> str:
    """Fixed-width text like ``sacct``: a header, a dashed rule, then one line per row."""
    lines: list[str] = []
    if header:
        lines.append(" ".join(_fit(c.field.name, c) for c in columns))
        lines.append(" ".join("-" * c.width for c in columns))
    for row in rows:
        lines.append(" ".join(_fit(c.field.text(row, style), c) for c in columns))
    return "\n".join(lines) + ("\n" if lines else "")


def render_parsable2(rows: Sequence[JobRow], columns: Sequence[Column], style: TimeStyle, header: bool = True) -> str:
    """``sacct --parsable2``: ``|`` between fields, no trailing ``|``, values never truncated."""
    lines: list[str] = []
    if header:
        lines.append("|".join(c.field.name for c in columns))
    for row in rows:
        lines.append("|".join(printable(c.field.text(row, style)).replace("|", "/") for c in columns))
    return "\n".join(lines) + ("\n" if lines else "")


def row_dict(row: JobRow) -> dict[str, object]:
    """Every field of ``row`` as JSON-ready values (times in seconds on the records' clock)."""
    return {
        "job_id": row.job_id,
        "name": row.name,
        "user": row.user,
        "account": row.account,
        "partition": row.partition,
        "submit": row.submit,
        "start": row.start,
        "end": row.end,
        "wait": row.wait,
        "age": row.age,
        "lr": row.lr,
        "ftf_rho": row.ftf,
        "gpus": row.gpus,
        "config": dict(sorted(row.config.items())),
        "gpu_type": row.gpu_type,
        "preemptions": row.preemptions,
        "state": row.state,
        "jct": row.jct,
        "elapsed": row.elapsed,
        "notice": row.notice,
        "checkpointed": row.checkpointed,
        "work_lost": row.lost,
    }


def render_json(
    rows: Sequence[JobRow], now: float, simulated: bool, disagreements: Sequence[Mapping[str, str]] | None = None
) -> str:
    """``{"meta": {...}, "jobs": [...]}``; placement rows (``--history``) nest under their job, and
    ``sacct_disagreements`` is present when the report was cross-checked with accounting."""
    jobs: list[dict[str, object]] = []
    for row in rows:
        if row.step is None:
            jobs.append({**row_dict(row), "history": []})
        elif jobs:
            history = jobs[-1]["history"]
            assert isinstance(history, list)
            history.append({**row_dict(row), "step": row.step})
    doc: dict[str, object] = {
        "meta": {"generator": "hops-slurm report", "now": now, "clock": "simulated" if simulated else "epoch"},
        "jobs": jobs,
    }
    if disagreements is not None:
        doc["sacct_disagreements"] = [dict(d) for d in disagreements]
    return json.dumps(doc, indent=2) + "\n"
