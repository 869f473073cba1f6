"""Reading 22.05's job listing as text: ``squeue --Format`` with only the fields the engine reads.

Where it sits: :class:`hops_slurm.slurm.cli.CliSlurm` lists jobs on 22.05 with this reader first; its records
are 22.05's JSON records (:mod:`hops_slurm.slurm.read_v0038`) field for field, read by the same
:func:`hops_slurm.slurm.read_common.job_record`. Why: 22.05's ``squeue --json`` ignores every filter and
writes 32 MB for 10,000 jobs (1.4 s of squeue's CPU and as much again to decode); the text of the same
fields is 1.3 MB and a tenth of the time (issue 37, docs/results/load.md).

What the text lacks: a running job's GPU indices per node (``gres_detail``). They do not change while the
job runs, so the caller keeps them from the last JSON listing (:class:`FromJson`, by job id, start
time and nodes); a job that runs whose indices it does not hold (a job just started) is asked of
``scontrol`` (:mod:`hops_slurm.slurm.read_detail`, a few jobs at most), else the JSON listing is read again. The same for a reason the text gives as slurmctld's description rather than its
code (``job requeued in held state``), unless the last JSON listing gave that job's code with it:
:func:`jobs` then answers None.

Hostile input: names and comments are the users' and may hold any character, new lines included. Every
field is followed by a separator holding a random token drawn for each read (:func:`new_separator`),
handed to squeue in its environment (``SQUEUE_FORMAT2``), never its argv: no user sees it
(``/proc/<pid>/environ`` is readable by the process's owner only) or can write it into a name before the
read. The output is split on that separator, never on new lines, and refused as a whole (None: the
caller reads the JSON instead) unless it is exactly records of :data:`FIELDS` each starting with a job id.
Numbers longer than Slurm writes read as unset. Pure.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hops_slurm.slurm import read_v0038
from hops_slurm.slurm.api import ACTIVE_STATES, SlurmJob
from hops_slurm.slurm.parse import expand_hostlist, null_text
from hops_slurm.slurm.read_common import JobCache

#: (``squeue --Format`` field, the 22.05 JSON key it fills), in the order they are asked for; ``:0``
#: asks for the whole value (no width, no cut: checked on 22.05.8)
FIELDS = (("JobID", "job_id"), ("State", "job_state"), ("Reason", "state_reason"), ("PriorityLong", "priority"),
          ("Partition", "partition"), ("Account", "account"), ("QOS", "qos"), ("UserName", "user_name"),
          ("SubmitTime", "submit_time"), ("StartTime", "start_time"), ("EndTime", "end_time"),
          ("EligibleTime", "eligible_time"), ("NodeList", "nodes"), ("ReqNodes", "required_nodes"),
          ("NumNodes", "node_count"), ("tres-per-node", "tres_per_node"), ("tres-per-job", "tres_per_job"),
          ("Reservation", "resv_name"), ("RestartCnt", "restart_cnt"), ("TimeLimit", "time_limit"),
          ("Dependency", "dependency"), ("Name", "name"), ("Comment", "comment"), ("admin_comment", "admin_comment"))
_NUMBERS = frozenset({"priority", "node_count", "restart_cnt"})
_TIMES = frozenset({"submit_time", "start_time", "end_time", "eligible_time"})  # epoch seconds (SLURM_TIME_FORMAT=%s)
#: the end slurmctld gives a job that runs without a time limit, after its start (22.05.8's JSON: a year)
UNLIMITED_RUN_S = 365 * 24 * 3600
#: the environment squeue reads the listing's fields from, and how it writes times
FORMAT_VARIABLE = "SQUEUE_FORMAT2"
TIME_FORMAT = {"SLURM_TIME_FORMAT": "%s"}
#: the argv of the text listing: every state, every partition (what 22.05's JSON lists), by job id (the JSON's
#: order: slurmctld's job list, in submission order; checked on 22.05.8)
ARGV = ["squeue", "--noheader", "--all", "--states=all", "--sort=i"]
#: a job id or a count as Slurm writes it (ASCII digits; more than 20: not Slurm's)
_DIGITS = re.compile(r"[0-9]{1,20}")
#: a reason's code as the JSON gives it (``JobHeldAdmin``, ``None``); squeue's text gives the job's description
#: instead where slurmctld wrote one (``job requeued in held state``, ``ReqNodeNotAvail, UnavailableNodes:..``),
#: which does not say the code (a requeue-held job keeps it after an admin hold): :meth:`FromJson.reason`
_REASON = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_DURATION = re.compile(r"(?:([0-9]{1,9})-)?([0-9]{1,9})(?::([0-9]{1,2}))?(?::([0-9]{1,2}))?")


def new_separator() -> str:
    """A separator no job's text can hold: a token drawn for one read (letters and digits only, so that
    ``--Format``'s own commas and colons are never part of it)."""
    return f"Hops{secrets.token_hex(16)}sep"


def listing_format(separator: str) -> str:
    """The ``SQUEUE_FORMAT2`` value: every field of :data:`FIELDS` whole, each followed by ``separator``."""
    return ",".join(f"{name}:0{separator}" for name, _ in FIELDS)


def environment(base: Mapping[str, str], separator: str) -> dict[str, str]:
    """``base`` for the listing: the format and time format set, and no other ``SQUEUE_*`` variable (a site's
    ``SQUEUE_PARTITION`` or ``SQUEUE_USERS`` would filter the listing)."""
    env = {k: v for k, v in base.items() if not k.startswith("SQUEUE_")}
    return {**env, FORMAT_VARIABLE: listing_format(separator), **TIME_FORMAT}


def records(text: str, separator: str) -> list[dict[str, str]] | None:
    """The records of a text listing (field key -> its text), or None when the text is not exactly records
    of :data:`FIELDS` (each starting with a job id, the last one ended by a new line)."""
    pieces = text.split(separator)
    width = len(FIELDS)
    if (len(pieces) - 1) % width or pieces[-1] not in ("\n", ""):
        return None
    out = []
    for start in range(0, len(pieces) - 1, width):
        values = pieces[start:start + width]
        first = values[0]
        if start:
            if not first.startswith("\n"):
                return None
            first = first[1:]
        if not _DIGITS.fullmatch(first):
            return None
        out.append({key: value for (_, key), value in zip(FIELDS, [first, *values[1:]])})
    return out


def number(text: str) -> int:
    """A count or time Slurm wrote (``N/A``, ``Unknown`` and anything not digits: 0)."""
    return int(text) if _DIGITS.fullmatch(text) else 0


def minutes(text: str) -> int | None:
    """A time limit as squeue writes it (``[days-]hours:minutes:seconds``, ``minutes:seconds``, ``minutes``) in
    minutes, as 22.05's JSON gives it; None for ``UNLIMITED``, ``Partition_Limit`` and anything else."""
    m = _DURATION.fullmatch(text)
    if m is None:
        return None
    days, first, second, third = m.groups()
    if third is not None:  # h:m:s
        hours, mins, secs = int(first), int(second), int(third)
    elif second is not None:  # m:s, or d-h:m
        hours, mins, secs = (int(first), int(second), 0) if days is not None else (0, int(first), int(second))
    else:  # m, or d-h
        hours, mins, secs = (int(first), 0, 0) if days is not None else (0, int(first), 0)
    return (int(days or 0) * 24 + hours) * 60 + mins + (1 if secs else 0)


def json_record(fields: Mapping[str, str]) -> dict[str, Any]:
    """One text record as 22.05's JSON writes the same job; ``gres_detail`` empty, as the JSON has it for a job
    that does not run (a running job's: :class:`FromJson`)."""
    out: dict[str, Any] = {"gres_detail": []}
    for key, value in fields.items():
        if key == "job_id":
            out[key] = int(value)
        elif key in _NUMBERS or key in _TIMES:
            out[key] = number(value)
        elif key == "time_limit":
            out[key] = minutes(value)
        else:
            out[key] = value
    if (out.get("job_state") in ACTIVE_STATES and out.get("time_limit", 0) is None and out.get("start_time")
            and not _DIGITS.fullmatch(fields.get("end_time", ""))):
        # no time limit: squeue writes NONE, slurmctld's record (and so the JSON) holds the start plus a year
        out["end_time"] = out["start_time"] + UNLIMITED_RUN_S
    return out


class FromJson:
    """What only the JSON listing says, kept from the last one: running jobs' GPU indices per node (while the
    job runs on the same nodes from the same start: Slurm does not change them then; or read since by
    :meth:`learn`), and the reason code of
    each job whose reason slurmctld described (while the description, state and priority stay, and until
    :meth:`forget_reasons`: a hold changes the code, not the description)."""

    def __init__(self) -> None:
        self._allocations: dict[str, tuple[float, tuple[str, ...], dict[str, tuple[int, ...]]]] = {}
        self._reasons: dict[str, tuple[str, str, str, int]] = {}

    def remember(self, jobs: Iterable[SlurmJob], records: Iterable[Mapping[str, Any]] = ()) -> None:
        """From a JSON listing (``records``: its records, the jobs' own, in order): the allocations of the
        active jobs whose record lists every node's GPUs (right after a start it may not yet: such a job is
        read from the JSON again), and the described reasons."""
        jobs = list(jobs)
        self._allocations = {j.job_id: (j.start_time, j.nodes, dict(j.gpu_alloc)) for j in jobs if j.active and _whole(j)}
        self._reasons = {j.job_id: (str(r.get("state_description")), j.reason, j.state, j.priority)
                         for j, r in zip(jobs, records) if r.get("state_description")}

    def learn(self, record: Mapping[str, Any], nodes: tuple[str, ...], alloc: Mapping[str, tuple[int, ...]]) -> None:
        """The allocation of a record's job read elsewhere (:mod:`hops_slurm.slurm.read_detail`), naming every
        node's GPUs, kept until the next JSON listing."""
        self._allocations[str(record["job_id"])] = (float(record["start_time"]), nodes, dict(alloc))

    def forget_reasons(self) -> None:
        """After a command that may change jobs' reason codes (a hold, a requeue, an update)."""
        self._reasons = {}

    def allocation(self, record: Mapping[str, Any], nodes: tuple[str, ...]) -> dict[str, tuple[int, ...]] | None:
        """The allocation of a record's job (``nodes``: its nodes, expanded), None when not known."""
        known = self._allocations.get(str(record["job_id"]))
        if known is None or known[0] != float(record["start_time"]) or known[1] != nodes:
            return None
        return known[2]

    def reason(self, record: Mapping[str, Any]) -> str | None:
        """The reason code of a record whose reason is a description, None when not known."""
        known = self._reasons.get(str(record["job_id"]))
        if known is None or (known[0], known[2], known[3]) != (record["state_reason"], record["job_state"], record["priority"]):
            return None
        return known[1]


def _whole(job: SlurmJob) -> bool:
    """Whether a job's allocation names every node's GPUs, or the job asks for no GPU and has none."""
    if job.gpu_alloc:
        return set(job.gpu_alloc) == set(job.nodes) and all(job.gpu_alloc.values())
    return "gpu" not in job.tres_per_node and "gpu" not in job.tres_per_job


#: asks for the allocations of active jobs that :class:`FromJson` does not hold (each a record of
#: :func:`json_record` with its nodes, expanded): each one's GPU indices per node, or None when one is not known
Lookup = Callable[[list[tuple[dict[str, Any], tuple[str, ...]]]], list[dict[str, tuple[int, ...]]] | None]


def jobs(found: list[dict[str, str]], facts: FromJson, cache: JobCache, lookup: Lookup | None = None) -> list[SlurmJob] | None:
    """The jobs of :func:`records` (unchanged ones from ``cache``), or None when the JSON listing must answer:
    a job is active whose allocation neither ``facts`` holds nor ``lookup`` gives (then ``facts`` keeps it),
    or a job's reason is a description whose code ``facts`` does not hold."""
    listing = [json_record(f) for f in found]
    known: dict[str, dict[str, tuple[int, ...]]] = {}
    missing: list[tuple[dict[str, Any], tuple[str, ...]]] = []
    for record in listing:
        if not _REASON.fullmatch(record["state_reason"]):  # a description, not the reason's code
            code = facts.reason(record)
            if code is None:
                return None
            record["state_reason"] = code
        if record["job_state"] in ACTIVE_STATES:
            nodes = tuple(expand_hostlist(null_text(record["nodes"])))
            alloc = facts.allocation(record, nodes)
            if alloc is None:
                missing.append((record, nodes))
            else:
                known[str(record["job_id"])] = alloc
    if missing:
        looked = lookup(missing) if lookup is not None else None
        if looked is None or len(looked) != len(missing):
            return None
        for (record, nodes), alloc in zip(missing, looked):
            facts.learn(record, nodes, alloc)
            known[str(record["job_id"])] = alloc

    def read(record: Mapping[str, Any]) -> SlurmJob:
        job = read_v0038.job(record)
        alloc = known.get(job.job_id)
        return job if alloc is None or not job.active else job.model_copy(update={"gpu_alloc": alloc})

    return cache.jobs(listing, read)
