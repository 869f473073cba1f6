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

Provisional records. slurmctld 22.05 sends a job's start to slurmdbd at once only when the job
already has a database index; otherwise the start goes out later, from a thread that runs every
few seconds (Slurm's ``jobacct_storage_job_start_direct``). Messages that do go out at once (the batch step's start, the job's completion) can reach
slurmdbd first, and slurmdbd then inserts a stand-in job row built from them: name ``allocation``,
no partition, ``allocation_nodes`` 0, and as node list the batch step's node, i.e. the job's FIRST
node only. Its completion later fills in end, state and TRES (``node=2`` for a two-node job), so
the row looks finished while its node list is still ``g1`` for a job that ran on ``g[1-2]``. When
the deferred start arrives (seconds later) the row is rewritten with the real name, partition and
node list. Observed on the minicluster for ``sbatch -N2 --wrap 'sleep 1'``, sacct --json of job 1:

    +0.8 s  name=allocation partition='' nodes=g1     allocation_nodes=0 state=PENDING
    +2.1 s  name=allocation partition='' nodes=g1     allocation_nodes=0 state=COMPLETED (end set)
    +4.1 s  name=wrap       partition=all nodes=g[1-2] allocation_nodes=2 state=COMPLETED

so an end time does not make a record final. :func:`is_stand_in` recognises the stand-in (a row
with nodes but no partition, or whose node list disagrees with its allocated node count);
:func:`run_sacct` asks again for a while until none is left, and :func:`cross_check` does not
compare the node list of one that is still there but says that the record is provisional.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord
from hops_slurm.report.accounting import JobRow
from hops_slurm.slurm.parse import expand_hostlist as parse_hostlist

log = logging.getLogger(__name__)

#: The fields :func:`run_sacct` asks for in ``--parsable2`` mode.
SACCT_FIELDS = (
    "JobID", "JobName", "User", "Partition", "State", "Submit", "Start", "End", "NodeList", "AllocNodes", "AllocTRES",
)


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
    #: True for slurmdbd's stand-in row (see the module notes): its node list is the batch step's.
    provisional: bool = False


@dataclass(frozen=True)
class Disagreement:
    """A field where the engine's record and accounting differ (times in seconds)."""

    job_id: str
    field: str  # "start", "end", "nodes", "state", "missing", "provisional"
    engine: str
    sacct: str

    def message(self) -> str:
        if self.field == "missing":
            return f"job {self.job_id}: not in Slurm accounting (engine: {self.engine})"
        if self.field == "provisional":
            return (
                f"job {self.job_id}: Slurm accounting holds only a provisional record (slurmdbd has not yet "
                f"received the job's start); its node list ({self.sacct}) was not compared (engine: {self.engine})"
            )
        return f"job {self.job_id}: {self.field} differs: engine {self.engine}, sacct {self.sacct}"


# --- hostlists ---------------------------------------------------------------------------------


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm's compact node list as a tuple (see :func:`hops_slurm.slurm.parse.expand_hostlist`)."""
    try:
        return tuple(parse_hostlist(text))
    except ValueError as exc:
        raise SacctError(str(exc)) from None


# --- parsing -----------------------------------------------------------------------------------


def is_stand_in(nodes: Sequence[str], partition: str | None, alloc_nodes: int | None) -> bool:
    """Whether a job row is slurmdbd's stand-in, made before the job's start reached it.

    Only a row that names nodes can mislead. Every real job row has a partition, and its node
    list has as many names as the job was allocated nodes; the stand-in has no partition, and
    once the job's completion has set its TRES it says ``node=2`` beside the single batch node.
    ``None`` means the output did not have that field, which is then not used.
    """
    if not nodes:
        return False
    if partition is not None and not partition.strip():
        return True
    return alloc_nodes is not None and alloc_nodes != len(nodes)


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


def _nodes_from_tres(entries: object) -> int | None:
    if not isinstance(entries, list):
        return None
    for e in entries:
        if isinstance(e, Mapping) and e.get("type") == "node" and e.get("count") is not None:
            return int(e["count"])
    return None


def _json_alloc_nodes(raw: Mapping[str, object], tres: object) -> int | None:
    """Allocated node count of a ``--json`` job: ``allocation_nodes`` (set from the job's start only;
    0 in a stand-in) when it is there and not 0, else the TRES ``node`` count (set by completion)."""
    value = raw.get("allocation_nodes")
    if isinstance(value, Mapping):
        value = value.get("number") if value.get("set", True) else None
    count = None if value is None else int(str(value))
    if count:
        return count
    from_tres = _nodes_from_tres(tres.get("allocated") if isinstance(tres, Mapping) else None)
    return from_tres if from_tres is not None else count


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
            nodes = expand_hostlist(str(raw.get("nodes") or ""))
            partition = raw.get("partition")
            jobs.append(
                SacctJob(
                    job_id=str(raw["job_id"]),
                    state=str(current).split()[0] if current else "",
                    submit=_epoch(t.get("submission")),
                    start=_epoch(t.get("start")),
                    end=_epoch(t.get("end")),
                    nodes=nodes,
                    gpus=_gpus_from_tres(tres.get("allocated") if isinstance(tres, Mapping) else None),
                    name=str(raw.get("name", "")),
                    user=str(raw.get("user", "")),
                    provisional=is_stand_in(
                        nodes, None if partition is None else str(partition), _json_alloc_nodes(raw, tres)
                    ),
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


def _tres_text(text: str, key: str) -> int | None:
    """The count of ``key`` in an AllocTRES text; None when the text is empty, 0 when key is absent."""
    if not text:
        return None
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name == key:
            return int(value)
    return 0


def _gpus_from_tres_text(text: str) -> int | None:
    return _tres_text(text, "gres/gpu")


def _text_alloc_nodes(row: Mapping[str, str]) -> int | None:
    """Allocated node count of a ``--parsable2`` row: the TRES ``node`` count, else AllocNodes
    (which sacct itself derives from the TRES once there are any; 0 in a stand-in before that)."""
    from_tres = _tres_text(row.get("AllocTRES", ""), "node")
    if from_tres:
        return from_tres
    text = row.get("AllocNodes")
    return int(text) if text is not None and text.strip().isdigit() else None


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
        nodes = expand_hostlist(row["NodeList"])
        jobs.append(
            SacctJob(
                job_id=row["JobID"],
                state=row["State"].split()[0] if row["State"] else "",
                submit=_parse_local(row.get("Submit", ""), tz),
                start=_parse_local(row["Start"], tz),
                end=_parse_local(row["End"], tz),
                nodes=nodes,
                gpus=_gpus_from_tres_text(row.get("AllocTRES", "")),
                name=row.get("JobName", ""),
                user=row.get("User", ""),
                provisional=is_stand_in(nodes, row.get("Partition"), _text_alloc_nodes(row)),
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
    settle: float = 15.0,
) -> list[SacctJob]:
    """Run ``sacct`` (needs slurmdbd accounting) and parse what it prints.

    While some job is still slurmdbd's provisional stand-in (see the module notes), ask again
    every half second for up to ``settle`` seconds: slurmctld sends the deferred job start within
    seconds. What is still provisional after that is returned flagged (``provisional``).
    """
    deadline = time.monotonic() + settle
    while True:
        jobs = _run_sacct_once(job_ids, starttime, endtime, json_output, timeout)
        waiting = [j.job_id for j in jobs if j.provisional]
        if not waiting or time.monotonic() >= deadline:
            return jobs
        log.debug("sacct: provisional records for jobs %s, asking again", ",".join(waiting))
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def _run_sacct_once(
    job_ids: Sequence[str], starttime: str | None, endtime: str | None, json_output: bool, timeout: float
) -> list[SacctJob]:
    args = sacct_command(job_ids, starttime, endtime, json_output)
    env = {**os.environ, "SLURM_TIME_FORMAT": "standard"}
    log.debug("running %s", args)
    try:
        proc = subprocess.run(args, capture_output=True, text=True, encoding="utf-8", errors="replace",  # raw job names
                              timeout=timeout, env=env, check=False)
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

    A provisional accounting record gets a ``provisional`` entry instead of a node comparison.

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
        if acct.provisional:
            # The stand-in's node list is the batch step's (the first node), not the allocation's.
            out.append(Disagreement(job.job_id, "provisional", ",".join(nodes), ",".join(sorted(acct.nodes))))
        elif nodes and tuple(sorted(acct.nodes)) != nodes:
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
