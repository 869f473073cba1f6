"""Reading ``sacct --json`` exports of the supported releases into :class:`HistoryJob` rows.

Where it sits: :mod:`.exports` hands the decoded document here; one row per ``jobs[]`` entry, or one
:class:`Problem` naming the entry (``jobs[i]``, and its job id when it has one) and what was wrong.

Layouts (recorded from each release's slurmdbd in tests/data/sacct/<release>/, see
docs/slurm-releases.md): ``meta.plugin.type`` ``openapi/dbv0.0.38`` is 22.05; ``meta.plugin.data_parser``
``data_parser/v0.0.42`` is 24.11 and ``data_parser/v0.0.45`` 26.05. The fields read are the same in the
three except: ``state.current`` is a string in 22.05 and a list (base state first) from 24.11 on, and
numbers that may be unset are ``{"set", "infinite", "number"}`` objects from 24.11 on, and 24.11 gives
the start of a job cancelled while pending as 4294967294 (Slurm's NO_VAL) where 22.05 gives 0. Fields read:
``job_id``, ``name``, ``user``, ``partition``, ``state.current``, ``time.{submission,start,end}`` (epoch
seconds, 0 = unknown), ``tres.allocated[]`` / ``tres.requested[]`` (``{type, name, count}``; GPUs are
``type == "gres"`` with ``name`` ``gpu`` or ``gpu:TYPE``; node count ``type == "node"``) and
``comment.administrator`` (where the submit hook keeps a job's canonical ``#HOPS`` form) and ``nodes`` (a
Slurm hostlist, :func:`hops_slurm.whatif.fields.node_list`: the cluster is inferred from it). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hops_slurm.whatif import fields
from hops_slurm.whatif.fields import RowError
from hops_slurm.whatif.history import MAX_ROWS, ExportReading, HistoryJob, Problem

#: what ``meta`` says -> release
RELEASES = {"openapi/dbv0.0.38": "22.05", "data_parser/v0.0.42": "24.11", "data_parser/v0.0.45": "26.05"}


class LayoutError(ValueError):
    """The document as a whole is not a supported sacct --json export."""


def release_of(doc: Mapping[str, Any]) -> str:
    meta = doc.get("meta")
    plugin = meta.get("plugin") if isinstance(meta, Mapping) else None
    if not isinstance(plugin, Mapping):
        raise LayoutError("no meta.plugin: is this `sacct --json` output?")
    for key in ("data_parser", "type"):
        value = plugin.get(key)
        if isinstance(value, str) and value in RELEASES:
            return RELEASES[value]
    seen = plugin.get("data_parser") or plugin.get("type")
    raise LayoutError(f"sacct --json from an unsupported Slurm (meta.plugin says {fields.short(seen)}); "
                      f"supported: {', '.join(f'{r} ({p})' for p, r in RELEASES.items())}")


def _tres(entries: object, where: str) -> tuple[list[tuple[str, object]], int]:
    """(gres pairs, node count) of a TRES list."""
    if entries is None:
        return [], 0
    if not isinstance(entries, list):
        raise RowError(f"tres.{where} is not a list")
    pairs: list[tuple[str, object]] = []
    nodes = 0
    for e in entries[:64]:
        if not isinstance(e, Mapping):
            raise RowError(f"tres.{where} has an entry that is not an object")
        if e.get("type") == "gres" and isinstance(e.get("name"), str):
            pairs.append((e["name"], e.get("count")))
        elif e.get("type") == "node" and isinstance(e.get("count"), int) and not isinstance(e.get("count"), bool):
            nodes = max(0, e["count"])
    return pairs, nodes


def _state(raw: Mapping[str, Any]) -> str:
    st = raw.get("state")
    current = st.get("current") if isinstance(st, Mapping) else None
    if isinstance(current, list):
        current = current[0] if current else None
    if not isinstance(current, str):
        raise RowError("no state.current")
    return fields.state(current)


def job(raw: object, where: str) -> HistoryJob:
    if not isinstance(raw, Mapping):
        raise RowError("the entry is not an object")
    job_id = fields.job_id(raw.get("job_id"))
    t = raw.get("time")
    if not isinstance(t, Mapping):
        raise RowError("no time object")
    submit = fields.epoch(t.get("submission"), "submission")
    if submit is None:
        raise RowError("no submission time")
    tres = raw.get("tres")
    tres = tres if isinstance(tres, Mapping) else {}
    alloc, nodes = _tres(tres.get("allocated"), "allocated")
    req, req_nodes = _tres(tres.get("requested"), "requested")
    gpus, gpu_type = fields.gpus_from_tres(alloc)
    if gpus is None or (gpus == 0 and not alloc):
        gpus, gpu_type = fields.gpus_from_tres(req)
    where = f"{where} (job {job_id})"
    names = fields.node_list(raw.get("nodes"))
    fields.check_per_node(gpus or 0, names)
    comment = raw.get("comment")
    admin = fields.text(comment.get("administrator")) if isinstance(comment, Mapping) else ""
    return HistoryJob(
        job_id=job_id,
        where=where,
        name=fields.text(raw.get("name")),
        user=fields.text(raw.get("user")),
        partition=fields.text(raw.get("partition")),
        state=_state(raw),
        submit=submit,
        start=fields.epoch(t.get("start"), "start"),
        end=fields.epoch(t.get("end"), "end"),
        gpus=gpus or 0,
        gpu_type=gpu_type,
        hops=admin,
        nodes=len(names) or nodes or req_nodes,
        node_names=names,
        time_limit=fields.json_time_limit(t.get("limit")),
    )


def read(doc: object) -> ExportReading:
    """Rows of a decoded ``sacct --json`` document; raises :class:`LayoutError` when it is not one."""
    if not isinstance(doc, Mapping):
        raise LayoutError("the JSON is not an object: is this `sacct --json` output?")
    release = release_of(doc)
    entries = doc.get("jobs")
    if not isinstance(entries, list):
        raise LayoutError("no 'jobs' list: is this `sacct --json` output?")
    reading = ExportReading("sacct --json", release)
    for i, raw in enumerate(entries):
        if i >= MAX_ROWS:
            reading.problems.append(Problem(f"jobs[{i}]", f"the export has {len(entries)} jobs; only the first "
                                            f"{MAX_ROWS} are read (split the export by --starttime/--endtime)"))
            break
        reading.rows += 1
        where = f"jobs[{i}]"
        try:
            reading.jobs.append(job(raw, where))
        except RowError as exc:
            raw_id = raw.get("job_id") if isinstance(raw, Mapping) else None
            named = f"{where} (job {fields.short(raw_id, 20)[1:-1]})" if isinstance(raw_id, (int, str)) and not isinstance(raw_id, bool) else where
            reading.problems.append(Problem(named, str(exc)))
    return reading
