"""Reading a sacct export file: size cap, format detection, duplicates, and which jobs can be replayed.

Where it sits: the first step of ``hops-slurm whatif``: a path in, a :class:`Selection` out (the jobs
to replay, and every row that was bad or left out as a :class:`Problem`, so nothing is dropped
silently). The file is untrusted: it is capped at :data:`MAX_EXPORT_BYTES`, decoded as UTF-8 with bad
bytes replaced (a byte order mark at its start dropped), a number too long to be a value fails its row
(:func:`hops_slurm.whatif.fields.json_int`), and a document that is not a supported export is one
:class:`HopsError` line.

A job is replayed when it ran and ended (state COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL,
OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL or DEADLINE with a start and an end) and held GPUs. Left out, each
with a warning naming it: jobs without GPUs, jobs that never started (cancelled while pending) and jobs
still pending or running. A job listed more than once (22.05 lists a requeued job once per run) is
replayed once, from its last record, with a warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.text import printable
from hops_slurm.whatif import fields, read_json, read_parsable2
from hops_slurm.whatif.history import ENDED_STATES, MAX_EXPORT_BYTES, ExportReading, HistoryJob, Problem


@dataclass
class Selection:
    reading: ExportReading
    jobs: list[HistoryJob] = field(default_factory=list)  # replayed, in submission order

    @property
    def left_out(self) -> int:
        return self.reading.rows - len(self.jobs)

    def summary(self) -> str:
        r = self.reading
        release = f" (Slurm {r.release})" if r.release else ""
        steps = f"; {r.steps} step lines ignored" if r.steps else ""
        return (f"{r.source}{release}: {r.rows} job rows, {len(self.jobs)} replayed, {self.left_out} left out: "
                f"{r.errors} bad rows (errors), {r.warnings} warnings{steps}")


def parse_text(text: str) -> ExportReading:
    """The rows of an export's text, ``--json`` or ``--parsable2`` by its first character."""
    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark (some editors and Windows tools write one)
    body = text.lstrip()
    if not body:
        raise HopsError("the export is empty")
    if body[0] in "{[":
        try:
            doc = json.loads(body, parse_int=fields.json_int)  # a 5000-digit number fails its row, not the file
        except json.JSONDecodeError as exc:
            raise HopsError(f"sacct --json export is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        except RecursionError:
            raise HopsError("sacct --json export is nested too deeply to be sacct output") from None
        try:
            return read_json.read(doc)
        except read_json.LayoutError as exc:
            raise HopsError(str(exc)) from None
    try:
        return read_parsable2.read(text)
    except read_parsable2.LayoutError as exc:
        raise HopsError(f"sacct --parsable2 export: {exc}") from None


def read_export(path: Path, limit: int = MAX_EXPORT_BYTES) -> ExportReading:
    """Read and parse the export at ``path`` (at most ``limit`` bytes)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise HopsError(f"{printable(path, 200)}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise HopsError(f"{printable(path, 200)} is not a file")
    if size > limit:
        raise HopsError(f"{printable(path, 200)} is {size} bytes; whatif reads at most {limit} "
                        "(split the export by --starttime/--endtime)")
    with path.open("rb") as fh:  # its size, not the limit: read(n) allocates n bytes first
        data = fh.read(min(size, limit) + 1)
        while len(data) <= limit and (more := fh.read(min(1 << 20, limit + 1 - len(data)))):  # it grew meanwhile
            data += more
    if len(data) > limit:
        raise HopsError(f"{printable(path, 200)} grew past {limit} bytes while being read")
    return parse_text(data.decode("utf-8-sig", errors="replace"))


def select(reading: ExportReading) -> Selection:
    """Pick the replayable jobs; add a problem for every job row left out."""
    last: dict[str, HistoryJob] = {}
    count: dict[str, int] = {}
    for job in reading.jobs:
        last[job.job_id] = job
        count[job.job_id] = count.get(job.job_id, 0) + 1
    problems = reading.problems
    chosen: list[HistoryJob] = []
    for job_id, job in last.items():
        if count[job_id] > 1:
            problems.append(Problem(job.where, f"listed {count[job_id]} times (requeued or restarted); "
                                    "replayed once, from its last record", "warning"))
            reading.rows -= count[job_id] - 1  # one job, not several rows left out
        why = _left_out(job)
        if why is not None:
            problems.append(Problem(job.where, why[0], why[1]))
            continue
        if job.run_time == 0:
            problems.append(Problem(job.where, "ran 0 s; replayed as a 1 s job", "warning"))
            job = replace(job, end=(job.start or 0.0) + 1.0)
        chosen.append(job)
    chosen.sort(key=lambda j: (j.submit, j.job_id))
    return Selection(reading, chosen)


def _left_out(job: HistoryJob) -> tuple[str, str] | None:
    """(reason, severity) when ``job`` cannot be replayed."""
    if job.start is None:
        return f"never started ({job.state}): left out", "warning"
    if job.gpus == 0:
        return "no GPUs in its TRES (not a GPU job): left out", "warning"
    if job.end is None or job.state not in ENDED_STATES:
        return f"has not ended ({job.state}): left out", "warning"
    if job.start < job.submit:
        return "starts before its submission: left out", "error"
    if job.end < job.start:
        return "ends before it starts: left out", "error"
    return None
