"""``hops-slurm queue``: the latency-ratio queue as the engine sees it, formatted like ``sprio``/``squeue``.

Where it sits: read-only. Joins Slurm's job list (state) with the engine's bookkeeping
(``engine.sqlite``: wait, age, profiling) and its last planning (priority, service window, plan). Works
while the daemon runs (no lock taken, nothing written).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hops_slurm.engine.honesty_review import declared_samples
from hops_slurm.engine.queue_summary import preemptions_of
from hops_slurm.engine.state import PROFILE_FAILED, PROFILE_INPLACE, SCHEDULABLE_PROFILES, EngineState, JobState
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.text import printable

FIELDS = ("jobid", "name", "user", "state", "priority", "lr", "wait", "estrun", "done", "history", "window", "plan")
#: ``estrun`` is Hops' estimated run time (eq. 9, the row's ``age``): not called AGE, which is sprio's time waited
HEADERS = {"jobid": "JOBID", "name": "NAME", "user": "USER", "state": "ST", "priority": "PRIORITY", "lr": "LR",
           "wait": "WAIT", "estrun": "ESTRUN", "done": "DONE", "history": "HISTORY", "window": "WINDOW", "plan": "PLAN",
           "reason": "REASON", "preemptions": "PREEMPTIONS", "preempted": "LAST_PREEMPTED"}
#: the row attribute behind a field, where the names differ
_ATTR = {"estrun": "age"}
#: field names that were renamed: the old name gets an error naming the new one
RENAMED = {"age": "estrun (Hops' estimated run time; sprio's AGE is the time a job waited)"}
_STATE = {"PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG", "CONFIGURING": "CF", "REQUEUED": "RQ", "SUSPENDED": "S"}


@dataclass
class QueueRow:
    jobid: str
    name: str
    user: str
    state: str
    priority: float | None  # the planner's priority in the last round (latency ratio by default)
    lr: float  # latency ratio now: wait / age (eq. 6)
    wait: float  # seconds pending, summed over preemptions
    age: float | None  # eq. 9 expected run time without waiting (None until profiled), x its age factor
    done: float | None  # processed / declared samples (None: never ran); issue 16
    history: str  # the owner's history factor on their ages (estimator.honesty), "-" without one
    window: bool  # in the last round's service window
    plan: str  # node:gpus of the last plan, or why there is none
    reason: str = "-"  # why it waits, as the daemon last published it (planner.reasons; the users' view's REASON)
    preemptions: int = 0  # how many of its runs were stopped
    preempted: str = "-"  # why the last of them was (planner.changes; "-": none, or no cause kept)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def queue_rows(state: EngineState, jobs: Sequence[SlurmJob], now: float | None = None,
               reasons: Mapping[str, str] | None = None) -> list[QueueRow]:
    """The rows of the jobs the engine tracks that Slurm lists as pending or running; ``reasons``: job id ->
    the REASON the daemon last published (its queue summary: :mod:`hops_slurm.engine.queue_summary`)."""
    now = time.time() if now is None else now
    reasons = reasons or {}
    listing = {j.job_id: j for j in jobs}
    plan = json.loads(state.meta("last_plan", "{}") or "{}")
    frag = json.loads(state.meta("last_fragment", "{}") or "{}")
    prios = plan.get("priorities", {})
    window = set(plan.get("window", []))
    unservable = dict(frag.get("unservable", {}) if frag.get("time", 0) > plan.get("time", 0) else {})
    unservable = {**dict(plan.get("unservable", {})), **unservable}
    # blocked by the site's limits (planner.governance): the latest planning's word
    limited = dict(frag.get("limited", {}) if frag.get("time", 0) > plan.get("time", 0) else plan.get("limited", {}))
    assign = dict(plan.get("assignments", {}))
    if frag.get("time", 0) > plan.get("time", 0):
        assign.update({j: c for j, c in frag.get("assignments", {}).items() if c})
    rows = []
    for js in state.jobs().values():
        seen = listing.get(js.job_id)
        if seen is None or not (seen.pending or seen.active):
            continue
        wait = js.wait + (max(0.0, now - js.last_seen) if js.last_state == "PENDING" and seen.pending else 0.0)
        if js.aside:
            where = f"set aside: {js.aside}"
        elif js.profile not in SCHEDULABLE_PROFILES:
            where = f"profiling ({js.profile})"
        elif seen.active and seen.gpu_config():
            where = ",".join(f"{n}:{k}" for n, k in seen.gpu_config().items())
        elif assign.get(js.job_id):
            where = ",".join(f"{n}:{k}" for n, k in assign[js.job_id].items())
        elif js.job_id in limited:
            where = f"limit: {limited[js.job_id]}"
        elif js.job_id in unservable:
            where = f"unservable: {unservable[js.job_id]}"
        else:
            where = "-"
        if js.profile == PROFILE_FAILED:
            where += " (fallback estimate)"
        elif js.profile == PROFILE_INPLACE and js.age is None:
            where += " (measured in place)"
        if js.honesty and not js.aside:
            where += f" (declaration: {js.honesty})"
        age = js.age * max(js.age_factor, 1.0) if js.age else None
        declared = declared_samples(js)
        done = js.processed / declared if declared and js.run_time > 0 else None
        rows.append(QueueRow(js.job_id, js.name, js.user, _STATE.get(seen.state, seen.state), prios.get(js.job_id),
                             wait / age if age else 0.0, wait, age, done, state.meta(f"history:{js.user}", "-"),
                             js.job_id in window, where, reasons.get(js.job_id, "-"), *_stopped(js)))
    rows.sort(key=lambda r: (-(r.priority if r.priority is not None else -1.0), -r.lr, r.jobid))
    return rows


def _stopped(js: JobState) -> tuple[int, str]:
    n, cause = preemptions_of(js)  # as the users' view has them (hops_slurm.engine.queue_summary)
    return n, cause or "-"


def _value(row: QueueRow, f: str) -> Any:
    return getattr(row, _ATTR.get(f, f))


def _cell(row: QueueRow, f: str) -> str:
    v = _value(row, f)
    if f in ("wait", "estrun"):
        return fmt_duration(v)
    if f == "priority":
        return "-" if v is None else f"{v:.3f}"
    if f == "lr":
        return f"{v:.3f}"
    if f == "done":
        return "-" if v is None else f"{v:.2f}"
    if f == "window":
        return "yes" if v else "no"
    return printable(str(v))  # job and user names are the users' text


def render(rows: Sequence[QueueRow], fields: Sequence[str] = FIELDS, *, parsable: bool = False,
           header: bool = True, as_json: bool = False) -> str:
    if as_json:
        return json.dumps({"jobs": [{f: _value(r, f) for f in fields} for r in rows]}, indent=1)
    table = [[_cell(r, f) for f in fields] for r in rows]
    head = [HEADERS[f] for f in fields]
    if parsable:
        lines = (["|".join(head)] if header else []) + ["|".join(t) for t in table]
        return "\n".join(lines)
    widths = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]
    out = [head] if header else []
    out += table
    return "\n".join(" ".join(c.rjust(w) if i < len(widths) - 1 else c for i, (c, w) in enumerate(zip(t, widths))).rstrip()
                     for t in out)


def parse_format(text: str | None) -> tuple[str, ...]:
    if not text:
        return FIELDS
    fields = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    bad = [f for f in fields if f not in HEADERS]
    if bad:
        from hops_slurm.errors import HopsError

        renamed = [f"{f} is now {RENAMED[f]}" for f in bad if f in RENAMED]
        if renamed:
            raise HopsError(f"--format: {'; '.join(renamed)}")
        raise HopsError(f"--format: unknown field(s) {', '.join(bad)}; known: {', '.join(FIELDS)}")
    return fields
