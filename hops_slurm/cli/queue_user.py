"""``hops-slurm queue`` for every user: the daemon's queue summary, filtered and printed like ``squeue``.

Where it sits: read-only, as any user. :mod:`hops_slurm.cli.queue_cmd` calls :func:`run` when the caller
asks with squeue's filters (``-u``, ``--me``, ``-j``, ``-p``, ``-t``, ``-A``, ``--start``) or cannot read
the engine's own state; it reads ``queue-summary.json``
(:func:`hops_slurm.engine.queue_summary.read`: bounded, one error line for a bad file), selects the rows
(:func:`select`) and prints them (:func:`render`): columns padded, or ``|``-separated with
``--parsable2``, or ``--json``. Before the daemon's first run there is no summary: one line saying so,
exit 0. A summary older than :func:`stale_after` marks each pending job ``HopsEngineDown`` (its last
known reason in DETAIL) and says so on stderr. What the reasons mean: docs/user-guide.md.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.engine.queue_summary import NotWritten, Summary, SummaryJob, read
from hops_slurm.errors import HopsError
from hops_slurm.text import printable
from planner.reasons import DESCRIPTIONS, Code

FIELDS = ("jobid", "partition", "name", "user", "account", "state", "position", "reason", "detail", "submit",
          "start", "early", "late", "end", "nodelist", "preemptions", "preempted")
DEFAULT = ("jobid", "partition", "name", "user", "state", "position", "reason", "detail")
START = ("jobid", "partition", "name", "user", "state", "start", "early", "late", "end", "position", "reason")
HEADERS = {"jobid": "JOBID", "partition": "PARTITION", "name": "NAME", "user": "USER", "account": "ACCOUNT",
           "state": "ST", "position": "POSITION", "reason": "REASON", "detail": "DETAIL", "submit": "SUBMIT_TIME",
           "start": "START_TIME", "early": "START_EARLY", "late": "START_LATE", "end": "END_TIME",
           "nodelist": "NODELIST", "preemptions": "PREEMPTIONS", "preempted": "LAST_PREEMPTED"}
#: fields that are another name for a row's attribute
ATTRIBUTE = {"jobid": "job_id", "nodelist": "nodes", "early": "start_early", "late": "start_late"}
#: squeue's compact state names, and the long ones -t also takes
SHORT = {"PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG", "CONFIGURING": "CF", "REQUEUED": "RQ",
         "SUSPENDED": "S", "RESIZING": "RS", "REQUEUE_HOLD": "RH", "REQUEUE_FED": "RF", "SIGNALING": "SI",
         "STAGE_OUT": "SO", "STOPPED": "ST"}
#: values each filter may take: at most this many, each a bounded name
MAX_VALUES = 1000
NAME_RE = re.compile(r"^[A-Za-z0-9_.@$-][A-Za-z0-9_.@$ -]{0,63}$")
JOB_RE = re.compile(r"^[0-9]{1,10}(_[0-9]{1,10})?$")


@dataclass(frozen=True)
class Filters:
    users: frozenset[str] = frozenset()
    jobs: frozenset[str] = frozenset()
    partitions: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    states: frozenset[str] = frozenset()  # long names; empty: squeue's default (pending and running)
    start: bool = False  # squeue --start: pending jobs only


def _values(option: str, text: str | None, pattern: re.Pattern[str], what: str) -> frozenset[str]:
    if text is None:
        return frozenset()
    items = [v.strip() for v in text.split(",") if v.strip()]
    if not items or len(items) > MAX_VALUES:
        raise HopsError(f"{option}: give 1 to {MAX_VALUES} comma-separated {what}s")
    for v in items:
        if not pattern.match(v):
            raise HopsError(printable(f"{option}: bad {what} {v[:80]!r}", 200))
    return frozenset(items)


def user_names(text: str | None, me: bool) -> frozenset[str]:
    """``-u``'s names (a numeric uid is looked up as squeue does) and, with ``--me``, the caller's."""
    names = set(_values("-u/--user", text, NAME_RE, "user name"))
    for v in list(names):
        if v.isdigit():
            try:
                names.add(pwd.getpwuid(int(v)).pw_name)
            except (KeyError, OverflowError):
                pass
    if me:
        try:
            names.add(pwd.getpwuid(os.getuid()).pw_name)
        except KeyError:
            names.add(str(os.getuid()))
    return frozenset(names)


def states(text: str | None) -> frozenset[str]:
    """``-t``'s states as long names; ``all`` (or none) is every state."""
    if text is None:
        return frozenset()
    out: set[str] = set()
    longs = {v: k for k, v in SHORT.items()}
    for v in _values("-t/--states", text, re.compile(r"^[A-Za-z_]{1,20}$"), "state"):
        u = v.upper()
        if u == "ALL":
            return frozenset()
        if u in SHORT:
            out.add(u)
        elif u in longs:
            out.add(longs[u])
        else:
            raise HopsError(f"-t/--states: unknown state {v!r}; known: {', '.join(SHORT.values())} "
                            f"(or {', '.join(SHORT)}, all)")
    return frozenset(out)


def filters(user: str | None = None, me: bool = False, jobs: str | None = None, partition: str | None = None,
            account: str | None = None, state: str | None = None, start: bool = False) -> Filters:
    """The filters from squeue's options (each a one-line error when malformed)."""
    return Filters(users=user_names(user, me), jobs=_values("-j/--jobs", jobs, JOB_RE, "job id"),
                   partitions=_values("-p/--partition", partition, NAME_RE, "partition"),
                   accounts=_values("-A/--account", account, NAME_RE, "account"), states=states(state), start=start)


def stale_after(summary: Summary) -> float:
    """Seconds after its ``as_of`` from which a summary is stale: the daemon missed several refreshes."""
    return max(4.0 * summary.refresh_seconds, 120.0)


def select(summary: Summary, f: Filters, now: float) -> list[SummaryJob]:
    """The rows ``f`` selects, in the summary's order (the Hops queue's, running jobs last); a stale
    summary's pending rows with reason ``HopsEngineDown``."""
    stale = now - summary.as_of > stale_after(summary)
    out = []
    for row in summary.jobs:
        if f.users and row.user not in f.users:
            continue
        if f.jobs and row.job_id not in f.jobs:
            continue
        if f.partitions and row.partition not in f.partitions:
            continue
        if f.accounts and row.account not in f.accounts:
            continue
        if f.start and row.state != "PENDING":
            continue
        if f.states and row.state not in f.states:
            continue
        if stale and row.state == "PENDING":
            last = f"last known: {row.reason}" + (f" ({row.detail})" if row.detail else "")
            row = row.model_copy(update={"reason": Code.ENGINE_DOWN.value, "reason_code": Code.ENGINE_DOWN.value,
                                         "detail": last[:200]})
        out.append(row)
    return out


def _time(t: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) if t else "N/A"


def cell(row: SummaryJob, field: str) -> str:
    if field == "jobid":
        return row.job_id
    if field == "state":
        return SHORT.get(row.state, row.state)
    if field == "position":
        return str(row.position) if row.position is not None else "-"
    if field in ("submit", "start", "end", "early", "late"):
        return _time(getattr(row, ATTRIBUTE.get(field, field)))
    if field == "nodelist":
        return row.nodes or "(null)"
    if field in ("detail", "preempted"):
        return getattr(row, field) or "-"
    return printable(str(getattr(row, field)))


def _json_value(row: SummaryJob, field: str) -> object:
    return getattr(row, ATTRIBUTE.get(field, field))


def render(rows: Sequence[SummaryJob], fields: Sequence[str], *, parsable: bool = False, header: bool = True,
           as_json: bool = False, as_of: float | None = None) -> str:
    if as_json:
        return json.dumps({"as_of": as_of, "jobs": [{f: _json_value(r, f) for f in fields} for r in rows]}, indent=1)
    table = [[cell(r, f) for f in fields] for r in rows]
    head = [HEADERS[f] for f in fields]
    if parsable:
        return "\n".join((["|".join(head)] if header else []) + ["|".join(t) for t in table])
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]
    lines = ([head] if header else []) + table
    return "\n".join(" ".join(c.ljust(w) if i < len(fields) - 1 else c for i, (c, w) in enumerate(zip(t, widths))).rstrip()
                     for t in lines)


def parse_format(text: str | None, start: bool) -> tuple[str, ...]:
    if not text:
        return START if start else DEFAULT
    fields = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    bad = [f for f in fields if f not in HEADERS]
    if bad or not fields or len(fields) > 64:
        raise HopsError(printable(f"--format: unknown field(s) {', '.join(bad)[:200]}; known: {', '.join(FIELDS)}", 400))
    return fields


def run(path: Path, f: Filters, fields: Sequence[str], *, parsable: bool, header: bool, as_json: bool,
        now: float | None = None) -> int:
    """Print the selected rows of the summary at ``path``; 0, or a :class:`HopsError` for a bad file."""
    try:
        summary = read(path)
    except NotWritten as exc:
        print(f"hops-slurm: {exc}", file=sys.stderr)
        return 0
    now = time.time() if now is None else now
    if now - summary.as_of > stale_after(summary):
        print(f"hops-slurm: note: the queue summary is from {_time(summary.as_of)} ({now - summary.as_of:.0f} s ago): "
              f"the Hops daemon may be stopped; pending jobs show {Code.ENGINE_DOWN.value} "
              f"({DESCRIPTIONS[Code.ENGINE_DOWN]})", file=sys.stderr)
    rows = select(summary, f, now)
    out = render(rows, fields, parsable=parsable, header=header, as_json=as_json, as_of=summary.as_of)
    if out:
        print(out)
    if summary.left_out:
        print(f"hops-slurm: note: {summary.left_out} jobs are beyond the summary's bound and not shown", file=sys.stderr)
    return 0


__all__ = ["DEFAULT", "FIELDS", "Filters", "HEADERS", "START", "filters", "parse_format", "render", "run", "select",
           "stale_after"]
