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

from hops_slurm.errors import HopsError
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
        # the start forecast when the job was first seen waiting (the engine's; "" when none was made)
        Field("Forecast", 19, lambda r, s: "" if r.forecast is None else s.instant(r.forecast)),
        Field("End", 19, lambda r, s: s.instant(r.end)),
        Field("Wait", 10, lambda r, s: format_elapsed(r.wait)),
        # Hops' estimated run time (eq. 9); not "Age", which is sprio's time waited
        Field("EstRun", 10, lambda r, s: format_elapsed(r.age)),
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
        # as sacct has them
        Field("NodeList", 15, lambda r, s: hostlist(r.nodes) if r.nodes else "None assigned"),
        Field("ExitCode", 8, lambda r, s: r.exit_code),
        Field("Timelimit", 10, lambda r, s: "" if r.time_limit is None else format_elapsed(r.time_limit)),
        Field("Reason", 14, lambda r, s: r.reason),
    )
}

#: field names that were renamed: the old name gets an error saying the new one
RENAMED = {"age": "EstRun (Hops' estimated run time; sprio's AGE is the time a job waited)"}

DEFAULT_FORMAT = "JobID,JobName,User,Account,Partition,Submit,Start,End,Wait,EstRun,LR,FTF,GPUs,Config,Preemptions,State"


def hostlist(nodes: Sequence[str]) -> str:
    """Node names in Slurm's compact form (``g[1-3],x``): names that end in digits share a prefix and
    digit width, and consecutive numbers become a range."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in sorted(set(nodes)):
        head = name.rstrip("0123456789")
        digits = name[len(head):]
        if digits:
            groups.setdefault((head, len(digits)), []).append(int(digits))
        else:
            plain.append(name)
    out = list(plain)
    for (head, width), numbers in sorted(groups.items()):
        numbers.sort()
        ranges: list[str] = []
        lo = prev = numbers[0]
        for n in numbers[1:] + [-2]:
            if n == prev + 1:
                prev = n
                continue
            ranges.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            lo = prev = n
        out.append(f"{head}{ranges[0]}" if len(numbers) == 1 else f"{head}[{','.join(ranges)}]")
    return ",".join(out)


def help_format() -> str:
    """The field names, as ``sacct --helpformat`` lists them."""
    names = [f.name for f in FIELDS.values()]
    return "\n".join(" ".join(f"{n:<12}" for n in names[i : i + 6]).rstrip() for i in range(0, len(names), 6)) + "\n"


def parse_format(spec: str) -> list[Column[Field]]:
    """Columns from ``Name[%[-]WIDTH],...`` (names case-insensitive, as sacct's --format); a renamed
    field is an error naming its new name."""
    for item in spec.split(","):
        old = item.split("%", 1)[0].strip().lower()
        if old in RENAMED:
            raise HopsError(f"--format: {item.split('%', 1)[0].strip()} is now {RENAMED[old]}")
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


def render_parsable2(rows: Sequence[JobRow], columns: Sequence[Column], style: TimeStyle, header: bool = True,
                     *, trailing: bool = False) -> str:
    """``sacct --parsable2``: ``|`` between fields, no trailing ``|``, values never truncated; ``trailing``:
    ``sacct --parsable`` (``-p``), a ``|`` after the last field too."""
    end = "|" if trailing else ""
    lines: list[str] = []
    if header:
        lines.append("|".join(c.field.name for c in columns) + end)
    for row in rows:
        lines.append("|".join(printable(c.field.text(row, style)).replace("|", "/") for c in columns) + end)
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
        "nodes": list(row.nodes),
        "time_limit": row.time_limit,
        "exit_code": row.exit_code,
        "reason": row.reason,
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
