"""Reading ``sacct --parsable2`` exports into :class:`HistoryJob` rows.

Where it sits: :mod:`.exports` hands the text here; one row per job line, or one :class:`Problem` naming
the line number (and job id when readable) and what was wrong.

The export whatif reads (a header line, ``|`` between fields, times in sacct's default
``YYYY-MM-DDTHH:MM:SS``)::

    sacct --allusers --allocations --parsable2 --starttime=2026-01-01 --endtime=now \\
          --format=JobID,JobName,User,Partition,State,Submit,Start,End,AllocTRES,ReqTRES,AdminComment

Required fields: ``JobID``, ``State``, ``Submit``, ``Start``, ``End`` and at least one of ``AllocTRES``
/ ``ReqTRES``; the others are used when present (``NodeList``: the cluster is inferred from it;
``Timelimit``: what the replay of Slurm's backfill plans with), and fields
whatif does not know are ignored. Step lines
(``123.batch``, ``123.0``; not there with ``--allocations``) are counted and left out. A line with more
or fewer fields than the header (a job name or comment holding ``|``) is a bad row. Pure.
"""

from __future__ import annotations

from hops_slurm.whatif import fields
from hops_slurm.whatif.fields import RowError
from hops_slurm.whatif.history import MAX_ROWS, ExportReading, HistoryJob, Problem

REQUIRED = ("JobID", "State", "Submit", "Start", "End")
FORMAT = "JobID,JobName,User,Partition,State,Submit,Start,End,Timelimit,AllocTRES,ReqTRES,AdminComment,NodeList"
MAX_LINE = 64 * 1024


class LayoutError(ValueError):
    """The text as a whole is not a ``sacct --parsable2`` export whatif can read."""


def _nodes(tres: str) -> int:
    for item in tres.split(","):
        key, _, value = item.partition("=")
        if key == "node" and value.isdigit() and len(value) < 9:
            return int(value)
    return 0


def row(values: dict[str, str], where: str) -> HistoryJob:
    submit = fields.iso_time(values["Submit"], "Submit")
    if submit is None:
        raise RowError("no Submit time")
    alloc = values.get("AllocTRES", "")
    gpus, gpu_type = fields.gpus_from_tres(fields.tres_text_pairs(alloc))
    if gpus is None or (gpus == 0 and not alloc):
        gpus, gpu_type = fields.gpus_from_tres(fields.tres_text_pairs(values.get("ReqTRES", "")))
    names = fields.node_list(values.get("NodeList"))
    fields.check_per_node(gpus or 0, names)
    return HistoryJob(
        job_id=fields.job_id(values["JobID"]),
        where=where,
        name=fields.text(values.get("JobName")),
        user=fields.text(values.get("User")),
        partition=fields.text(values.get("Partition")),
        state=fields.state(values["State"]),
        submit=submit,
        start=fields.iso_time(values["Start"], "Start"),
        end=fields.iso_time(values["End"], "End"),
        gpus=gpus or 0,
        gpu_type=gpu_type,
        hops=fields.text(values.get("AdminComment")),
        nodes=len(names) or _nodes(alloc) or _nodes(values.get("ReqTRES", "")),
        node_names=names,
        time_limit=fields.text_time_limit(values.get("Timelimit", "")),
    )


def read(text: str) -> ExportReading:
    """Rows of a ``--parsable2`` export; raises :class:`LayoutError` when the header is not usable."""
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise LayoutError("the export is empty")
    header = lines[first].split("|")
    if len(lines[first]) > MAX_LINE or len(header) > 200:
        raise LayoutError(f"line {first + 1}: the header is too long for a sacct header")
    missing = [f for f in REQUIRED if f not in header]
    if missing or not {"AllocTRES", "ReqTRES"} & set(header):
        need = missing + ([] if {"AllocTRES", "ReqTRES"} & set(header) else ["AllocTRES or ReqTRES"])
        raise LayoutError(f"line {first + 1}: the header lacks {', '.join(need)}; export with "
                          f"`sacct --allusers --allocations --parsable2 --format={FORMAT}`")
    if len(set(header)) != len(header):
        raise LayoutError(f"line {first + 1}: the header names a field twice")
    reading = ExportReading("sacct --parsable2", "")
    for lineno in range(first + 2, len(lines) + 1):
        line = lines[lineno - 1]
        if not line.strip():
            continue
        where = f"line {lineno}"
        if reading.rows >= MAX_ROWS:
            reading.problems.append(Problem(where, f"only the first {MAX_ROWS} job lines are read "
                                            "(split the export by --starttime/--endtime)"))
            break
        head = line[:80].split("|", 1)[0]
        if "." in head and "|" in line:  # 123.batch, 123.0: steps, not jobs
            reading.steps += 1
            continue
        reading.rows += 1
        named = f"{where} (job {fields.printable_id(head)})" if fields.looks_like_id(head) else where
        if len(line) > MAX_LINE:
            reading.problems.append(Problem(named, f"the line is {len(line)} characters long (at most {MAX_LINE})"))
            continue
        values = line.split("|")
        if len(values) != len(header):
            reading.problems.append(Problem(named, f"{len(values)} fields where the header has {len(header)} "
                                            "(a '|' inside a job name or comment?)"))
            continue
        try:
            reading.jobs.append(row(dict(zip(header, values, strict=True)), named))
        except RowError as exc:
            reading.problems.append(Problem(named, str(exc)))
    return reading
