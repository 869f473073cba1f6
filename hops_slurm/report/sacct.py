"""Cross-check with Slurm accounting: what ``sacct`` (slurmdbd) says against the engine's records.

Data flow: :func:`run_sacct` (runs ``sacct``, arguments as a list, never a shell) -->
:func:`parse_sacct_json` / :func:`parse_sacct_parsable2` --> :class:`SacctJob` list -->
:func:`cross_check` (pure) --> :class:`Disagreement` list, and :func:`apply_sacct` which makes
the report's Start/End come from accounting.

Formats are Slurm 22.05's: ``sacct --json`` is the dbv0.0.38 job schema (``jobs[].job_id``,
``.state.current``, ``.time.{submission,start,end}`` as epoch seconds with 0 for unknown,
``.nodes`` as a hostlist, ``.tres.allocated[]`` entries ``{type, name, count}``); ``--parsable2``
prints ``|``-separated fields with a header, times as ``YYYY-MM-DDTHH:MM:SS`` in local time
(``SLURM_TIME_FORMAT=standard``) and ``Unknown``/``None`` for times that do not exist.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord
from hops_slurm.report.accounting import JobRow
from hops_slurm.slurm.parse import expand_hostlist as parse_hostlist

log = logging.getLogger(__name__)

#: The fields :func:`run_sacct` asks for in ``--parsable2`` mode.
SACCT_FIELDS = ("JobID", "JobName", "User", "State", "Submit", "Start", "End", "NodeList", "AllocTRES")


class SacctError(HopsError):
    """``sacct`` could not be run or its output could not be read."""


@dataclass(frozen=True)
class SacctJob:
    """One job as Slurm accounting has it (its latest run when it was requeued)."""

    job_id: str
    state: str
    submit: float | None
    start: float | None
    end: float | None
    nodes: tuple[str, ...]
    gpus: int | None = None
    name: str = ""
    user: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A field where the engine's record and accounting differ (times in seconds)."""

    job_id: str
    field: str  # "start", "end", "nodes", "state", "missing"
    engine: str
    sacct: str

    def message(self) -> str:
        if self.field == "missing":
            return f"job {self.job_id}: not in Slurm accounting (engine: {self.engine})"
        return f"job {self.job_id}: {self.field} differs: engine {self.engine}, sacct {self.sacct}"


# --- hostlists ---------------------------------------------------------------------------------


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm's compact node list as a tuple (see :func:`hops_slurm.slurm.parse.expand_hostlist`)."""
    try:
        return tuple(parse_hostlist(text))
    except ValueError as exc:
        raise SacctError(str(exc)) from None


# --- parsing -----------------------------------------------------------------------------------


def _epoch(value: object) -> float | None:
    if isinstance(value, Mapping):  # later data_parser versions wrap numbers: {"set":..,"number":..}
        if not value.get("set", True):
            return None
        value = value.get("number")
    if value is None:
        return None
    t = float(value)  # type: ignore[arg-type]
    return t if t > 0 else None


def _gpus_from_tres(entries: object) -> int | None:
    if not isinstance(entries, list):
        return None
    counts = [int(e.get("count", 0)) for e in entries if isinstance(e, Mapping) and e.get("type") == "gres" and e.get("name") == "gpu"]
    return sum(counts) if counts else 0


def parse_sacct_json(text: str) -> list[SacctJob]:
    """Jobs from ``sacct --json`` output (Slurm 22.05, dbv0.0.38)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SacctError(f"sacct --json output is not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("jobs"), list):
        raise SacctError("sacct --json output has no 'jobs' list; is this sacct --json from Slurm 22.05?")
    jobs: list[SacctJob] = []
    for raw in doc["jobs"]:
        try:
            state = raw.get("state", {})
            current = state.get("current", "") if isinstance(state, Mapping) else str(state)
            if isinstance(current, list):  # newer Slurm: a list of flags
                current = current[0] if current else ""
            t = raw.get("time", {})
            tres = raw.get("tres", {})
            jobs.append(
                SacctJob(
                    job_id=str(raw["job_id"]),
                    state=str(current).split()[0] if current else "",
                    submit=_epoch(t.get("submission")),
                    start=_epoch(t.get("start")),
                    end=_epoch(t.get("end")),
                    nodes=expand_hostlist(str(raw.get("nodes") or "")),
                    gpus=_gpus_from_tres(tres.get("allocated") if isinstance(tres, Mapping) else None),
                    name=str(raw.get("name", "")),
                    user=str(raw.get("user", "")),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SacctError(f"unexpected job entry in sacct --json output: {exc!r}") from None
    return jobs


def _parse_local(text: str, tz: tzinfo | None) -> float | None:
    text = text.strip()
    if not text or text in ("Unknown", "None"):
        return None
    try:
        dt = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise SacctError(f"unexpected sacct time {text!r}: run sacct with SLURM_TIME_FORMAT=standard") from None
    return dt.replace(tzinfo=tz).timestamp() if tz is not None else dt.timestamp()


def _gpus_from_tres_text(text: str) -> int | None:
    if not text:
        return None
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key == "gres/gpu":
            return int(value)
    return 0


def parse_sacct_parsable2(text: str, tz: tzinfo | None = None) -> list[SacctJob]:
    """Jobs from ``sacct --parsable2`` output with a header line (see :data:`SACCT_FIELDS`).

    Step lines (``123.batch``, ``123.0``) are skipped; ``tz`` is the zone sacct printed in (local).
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    need = {"JobID", "State", "Start", "End", "NodeList"}
    missing = need - set(header)
    if missing:
        raise SacctError(f"sacct --parsable2 output lacks fields {sorted(missing)}; header was {lines[0]!r}")
    jobs: list[SacctJob] = []
    for lineno, line in enumerate(lines[1:], 2):
        values = line.split("|")
        if len(values) != len(header):
            raise SacctError(f"sacct --parsable2 line {lineno} has {len(values)} fields, header has {len(header)}")
        row = dict(zip(header, values, strict=True))
        if "." in row["JobID"]:
            continue
        jobs.append(
            SacctJob(
                job_id=row["JobID"],
                state=row["State"].split()[0] if row["State"] else "",
                submit=_parse_local(row.get("Submit", ""), tz),
                start=_parse_local(row["Start"], tz),
                end=_parse_local(row["End"], tz),
                nodes=expand_hostlist(row["NodeList"]),
                gpus=_gpus_from_tres_text(row.get("AllocTRES", "")),
                name=row.get("JobName", ""),
                user=row.get("User", ""),
            )
        )
    return jobs


# --- running sacct ----------------------------------------------------------------------------


def sacct_command(
    job_ids: Sequence[str] = (), starttime: str | None = None, endtime: str | None = None, json_output: bool = False
) -> list[str]:
    """The ``sacct`` argument list (all users, allocations only) for the given jobs / window."""
    args = ["sacct", "--allusers", "--allocations"]
    if json_output:
        args.append("--json")
    else:
        args += ["--parsable2", f"--format={','.join(SACCT_FIELDS)}"]
    if job_ids:
        args.append(f"--jobs={','.join(job_ids)}")
    if starttime:
        args.append(f"--starttime={starttime}")
    if endtime:
        args.append(f"--endtime={endtime}")
    return args


def run_sacct(
    job_ids: Sequence[str] = (),
    starttime: str | None = None,
    endtime: str | None = None,
    json_output: bool = False,
    timeout: float = 60.0,
) -> list[SacctJob]:
    """Run ``sacct`` (needs slurmdbd accounting) and parse what it prints."""
    args = sacct_command(job_ids, starttime, endtime, json_output)
    env = {**os.environ, "SLURM_TIME_FORMAT": "standard"}
    log.debug("running %s", args)
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except FileNotFoundError:
        raise SacctError("sacct not found on PATH: install Slurm's client tools, or run the report without --sacct") from None
    except subprocess.TimeoutExpired:
        raise SacctError(f"sacct did not answer within {timeout:.0f} s; is slurmdbd running?") from None
    if proc.returncode != 0:
        detail = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
        raise SacctError(f"sacct failed: {detail} (the cross-check needs slurmdbd accounting)")
    return parse_sacct_json(proc.stdout) if json_output else parse_sacct_parsable2(proc.stdout)


# --- comparing ---------------------------------------------------------------------------------


def _last_run(job: JobRecord) -> tuple[float | None, tuple[str, ...]]:
    """Start and nodes of the job's latest placement: what sacct reports for a requeued job."""
    if not job.placements:
        return job.start, ()
    last = max(job.placements, key=lambda p: p.start)
    return last.start, tuple(sorted(n for n, g in last.config.items() if g > 0))


def _show(t: float | None) -> str:
    return "Unknown" if t is None else f"{t:.0f}"


def cross_check(
    records: Iterable[JobRecord], accounting: Iterable[SacctJob], tolerance: float = 2.0
) -> list[Disagreement]:
    """Disagreements between engine records and accounting: latest start, end, nodes, state.

    Times agree within ``tolerance`` seconds (sacct has whole seconds; the engine sees a start
    only when it next polls). Jobs that never started are not expected in accounting.
    """
    by_id = {j.job_id: j for j in accounting}
    out: list[Disagreement] = []
    for job in records:
        start, nodes = _last_run(job)
        acct = by_id.get(job.job_id)
        if acct is None:
            if start is not None:
                out.append(Disagreement(job.job_id, "missing", f"started {_show(start)}", ""))
            continue
        for name, ours, theirs in (("start", start, acct.start), ("end", job.end, acct.end)):
            if (ours is None) != (theirs is None) or (
                ours is not None and theirs is not None and abs(ours - theirs) > tolerance
            ):
                out.append(Disagreement(job.job_id, name, _show(ours), _show(theirs)))
        if nodes and tuple(sorted(acct.nodes)) != nodes:
            out.append(Disagreement(job.job_id, "nodes", ",".join(nodes), ",".join(sorted(acct.nodes))))
        if acct.state and job.state and acct.state.upper() != job.state.upper():
            out.append(Disagreement(job.job_id, "state", job.state, acct.state))
    return out


def apply_sacct(rows: Sequence[JobRow], accounting: Iterable[SacctJob]) -> list[JobRow]:
    """Job rows with Start/End taken from accounting where it knows the job (history rows unchanged).

    Start stays the engine's first start when the job ran more than once (sacct only keeps the
    latest run), so Wait and LR remain the engine's.
    """
    by_id = {j.job_id: j for j in accounting}
    out: list[JobRow] = []
    for row in rows:
        acct = by_id.get(row.job_id) if row.step is None else None
        if acct is None:
            out.append(row)
            continue
        start = acct.start if row.preemptions == 0 and acct.start is not None else row.start
        end = acct.end if acct.end is not None else row.end
        out.append(dataclasses.replace(row, start=start, end=end))
    return out
