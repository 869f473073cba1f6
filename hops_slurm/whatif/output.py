"""The what-if's output: one row per side (Slurm as recorded, each simulated policy), as sacct prints.

Where it sits: the last step of ``hops-slurm whatif``: :class:`~hops_slurm.whatif.replay.Side` lists in,
text and files out. The row's metrics are the ``hops-slurm report`` summary's, computed by
:mod:`hops_slurm.report.metrics` from the same kind of records for every side: average JCT and wait
of the finished jobs, the largest latency ratio (wait / age), GPU utilisation (GPU-seconds held over
the cluster's GPU-seconds from the first submission to the last end) and makespan.

Shapes, as ``sacct``'s: fixed-width columns (``--format=Scheduler,AvgJCT%12``; ``%-N`` left-justified,
values too long end in ``+``), ``--parsable2`` (``|`` between fields), ``--noheader``, and ``--json``
(every field, raw numbers: seconds and fractions). ``--out DIR`` gets ``results.md``, ``summary.json``,
the report's plots (``lr_jct_cdf.png``, ``wait_vs_age.png``, ``gpu_use.png``), per-side ``jobs.jsonl``,
the simulator's input (``workload.csv``, usable with ``hops-slurm simulate --workload``),
``cluster.toml`` and ``problems.txt``. Every text in them that came from the export (user and job names,
ids, comments, paths) is written escaped: printable text in the CSV, Markdown and text files
(:func:`hops_slurm.text.printable`), ASCII with ``\\u`` escapes in the JSON and TOML files: no file
whatif writes holds a raw control character, escape sequence or bidirectional override.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from hops_slurm.report import columns, metrics
from hops_slurm.report.columns import Column, fit as _fit
from hops_slurm.report.plots import write_plots
from hops_slurm.report.timefmt import format_elapsed
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.text import printable
from hops_slurm.whatif.assumptions import Derived
from hops_slurm.whatif.history import Problem
from hops_slurm.whatif.replay import Side



@dataclass(frozen=True)
class Row:
    scheduler: str
    jobs: int
    finished: int
    avg_jct: float | None
    avg_wait: float | None
    max_lr: float | None
    raqlr: float | None  # mean LR of the finished jobs
    utilisation: float | None
    makespan: float | None
    preemptions: int
    error: str = ""


def row_of(side: Side, total_gpus: int) -> Row:
    done = [j for j in side.jobs if j.end is not None]
    if not done:
        return Row(side.label, len(side.jobs), 0, None, None, None, None, None, None, 0, side.error)
    lrs = [lr for j in done if (lr := metrics.job_latency_ratio(j, j.end or 0.0)) is not None]
    first = min(j.submit for j in side.jobs)
    last = max(j.end or 0.0 for j in done)
    return Row(
        scheduler=side.label,
        jobs=len(side.jobs),
        finished=len(done),
        avg_jct=metrics.mean([j.end - j.submit for j in done if j.end is not None]),
        avg_wait=metrics.mean([metrics.wait_time(j, j.end or last) for j in done]),
        max_lr=max(lrs, default=None),
        raqlr=metrics.mean(lrs),
        utilisation=metrics.gpu_utilisation(side.jobs, total_gpus, first, last),
        makespan=last - first,
        preemptions=sum(j.preemptions for j in side.jobs),
        error=side.error,
    )


_NOT_ASCII = re.compile("[\x7f-\U0010ffff]")


def ascii_json(text: str) -> str:
    """JSON text with every character past ASCII (and DEL) as a ``\\u`` escape: the same document, and
    nothing in it a terminal or an editor would act on (control characters are escaped by JSON itself)."""
    def esc(m: re.Match[str]) -> str:
        c = ord(m.group())
        if c < 0x10000:
            return f"\\u{c:04x}"
        c -= 0x10000
        return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"
    return _NOT_ASCII.sub(esc, text)


def toml_string(text: str) -> str:
    """A TOML basic string holding ``text``, every character past printable ASCII escaped."""
    out = []
    for ch in text:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= c < 0x7f:
            out.append(ch)
        else:
            out.append(f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}")
    return '"' + "".join(out) + '"'


def _dur(x: float | None) -> str:
    return "" if x is None else format_elapsed(x)


def _num(x: float | None, digits: int = 2) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    text: Callable[[Row], str]


FIELDS = {f.name.lower(): f for f in (
    Field("Scheduler", 17, lambda r: r.scheduler),
    Field("Jobs", 6, lambda r: str(r.jobs)),
    Field("Done", 6, lambda r: str(r.finished)),
    Field("AvgJCT", 11, lambda r: _dur(r.avg_jct)),
    Field("AvgWait", 11, lambda r: _dur(r.avg_wait)),
    Field("MaxLR", 8, lambda r: _num(r.max_lr)),
    Field("RAQLR", 8, lambda r: _num(r.raqlr, 3)),
    Field("Util", 6, lambda r: "" if r.utilisation is None else f"{100 * r.utilisation:.1f}%"),
    Field("Makespan", 11, lambda r: _dur(r.makespan)),
    Field("Preemptions", 11, lambda r: str(r.preemptions)),
    Field("Error", 30, lambda r: r.error),
)}
DEFAULT_FORMAT = "Scheduler,Jobs,Done,AvgJCT,AvgWait,MaxLR,Util,Makespan,Preemptions"


def parse_format(spec: str) -> list[Column[Field]]:
    """``Name[%[-]WIDTH],...`` as sacct's --format (names case-insensitive)."""
    return columns.parse_format(spec, FIELDS)


def render(rows: Sequence[Row], cols: Sequence[Column], parsable2: bool, header: bool) -> str:
    lines = []
    if parsable2:
        if header:
            lines.append("|".join(c.field.name for c in cols))
        lines += ["|".join(printable(c.field.text(r)).replace("|", "/") for c in cols) for r in rows]
    else:
        if header:
            lines.append(" ".join(_fit(c.field.name, c) for c in cols))
            lines.append(" ".join("-" * c.width for c in cols))
        lines += [" ".join(_fit(c.field.text(r), c) for c in cols) for r in rows]
    return "\n".join(lines) + ("\n" if lines else "")


def _finite(x: object) -> object:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def document(rows: Sequence[Row], meta: dict[str, object], problems: Sequence[Problem]) -> dict[str, object]:
    return {
        "meta": {"generator": "hops-slurm whatif", **meta},
        "schedulers": [{k: _finite(v) for k, v in asdict(r).items()} for r in rows],
        "problems": [{"where": p.where, "severity": p.severity, "message": p.message} for p in problems],
    }


def markdown(rows: Sequence[Row], title: str, notes: Sequence[str] = ()) -> str:
    """The table as Markdown (durations ``[D-]HH:MM:SS``, as the terminal table and ``hops-slurm report``),
    then ``notes`` (the assumptions and the verdict, one line each) as a block."""
    head = "| Scheduler | Jobs | Done | Avg JCT | Avg wait | Max LR | GPU util. | Makespan | Preemptions |"
    lines = [f"# {title}", "", head, "|" + "---|" * 9]
    for r in rows:
        util = "" if r.utilisation is None else f"{100 * r.utilisation:.1f}%"
        name = r.scheduler + (f" (FAILED: {printable(r.error, 80)})" if r.error else "")
        lines.append(f"| {name} | {r.jobs} | {r.finished} | {_dur(r.avg_jct)} | {_dur(r.avg_wait)} | {_num(r.max_lr)} "
                     f"| {util} | {_dur(r.makespan)} | {r.preemptions} |")
    if notes:
        lines += ["", "## Assumptions and verdict", "", "```", *(printable(n, 400) for n in notes), "```"]
    return "\n".join(lines) + "\n"


def write_out(out: Path, sides: Sequence[Side], rows: Sequence[Row], derived: Sequence[Derived],
              cluster: ClusterSpec, problems: Sequence[Problem], meta: dict[str, object], title: str,
              notes: Sequence[str] = ()) -> list[Path]:
    """Every file of ``--out`` (see the module notes); returns the plots written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(markdown(rows, printable(title), notes))
    (out / "summary.json").write_text(ascii_json(json.dumps(document(rows, meta, problems), indent=2)) + "\n")
    (out / "problems.txt").write_text("".join(printable(p.line(), 600) + "\n" for p in problems))
    (out / "cluster.toml").write_text(_cluster_toml(cluster))
    with (out / "workload.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")  # no \r: nothing in the file a terminal acts on
        w.writerow(["job_id", "arrival", "model", "requirements", "samples", "user", "time_limit"])
        for d in derived:
            s = d.spec
            w.writerow([printable(s.job_id, 64), f"{s.arrival:.3f}", printable(s.model, 128),
                        " ".join(map(str, s.requirements)), f"{s.total_samples:.6g}", printable(s.user, 256),
                        "" if s.time_limit is None else f"{s.time_limit:g}"])
    for side in sides:
        folder = out / side.label
        folder.mkdir(exist_ok=True)
        with (folder / "jobs.jsonl").open("w") as fh:
            for rec in side.jobs:
                fh.write(ascii_json(rec.model_dump_json()) + "\n")
        if side.error:
            (folder / "error.txt").write_text(printable(side.error) + "\n")
    done = [s for s in sides if s.jobs]
    now = max((j.end or 0.0 for s in done for j in s.jobs), default=0.0)
    return write_plots(out, {s.label: (s.jobs, s.rounds) for s in done}, now)


def _cluster_toml(c: ClusterSpec) -> str:
    lines = [f"name = {toml_string(c.name)}", f"description = {toml_string(c.description)}", "",
             "[profiler]", f"gpus_per_type = {c.profiler.gpus_per_type}", f"probe_seconds = {c.profiler.probe_seconds}"]
    for k in c.server_kind:
        lines += ["", "[[server_kind]]", f"name = {toml_string(k.name)}", f"gpu_type = {toml_string(k.gpu_type)}",
                  f"gpus = {k.gpus}", f"count = {k.count}", f"speed = {k.speed}"]
    return "\n".join(lines) + "\n"
