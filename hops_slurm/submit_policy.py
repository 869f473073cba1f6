"""The submit hook's verdict on one job, in Python: the twin of ``M.verdict`` in ``hooks/hops_submit.lua``.

Where it sits: between a job's request (what ``sbatch`` fills in from its options and the script's
``#SBATCH`` lines, :mod:`hops_slurm.sbatch_header`) and the hook's answer. ``hops-slurm directives
check`` uses it to give the same verdict as the hook on a script; ``tests/hooks/test_script_corpus.py``
runs a corpus of GPU scripts through both and requires the same answers. Pure: no Slurm, no files.

The rules (docs/directives-grammar.md, "Partitions" and "Existing GPU scripts"):

- a user (uid != 0) naming a ``hops-*`` reservation anywhere in the comma list is refused, Hops job or not;
- no ``#HOPS`` line and no ``hops:`` comment: not a Hops job (``NONE``);
- partitions named: all Hops partitions -> a Hops job; none -> not a Hops job (directives not even
  validated); a mix -> refused. None named: the default (the first Hops partition); no partition list
  known -> refused naming the problem. A job naming partitions while the list is unknown: ``NONE``;
- malformed directives -> refused with the grammar's message;
- GPU options: ``--gpus-per-task``/``--gpus-per-socket`` refused; a typed request refused; an untyped
  request whose total (per node x nodes, or per job) is one of the ``gpus=`` counts is dropped (the
  engine decides); any other count refused. Each refusal is one line saying what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from hops_slurm.directives import parse_script
from hops_slurm.errors import DirectiveError

_ENGINE_RESERVATION = re.compile(r"[,\s]hops-")
_GPU_TYPED = re.compile(r":([A-Za-z0-9._-]+):([0-9]+)")
_GPU_COUNT = re.compile(r":([0-9]+)")
_GPU_TYPE = re.compile(r":([A-Za-z0-9._-]+)")
_LUA_SPACE = " \t\n\v\f\r"  # Lua's %s in the C locale


@dataclass(frozen=True)
class Request:
    """The fields of a submission the hook reads (``job_desc`` in the hook), as sbatch fills them in."""

    script: bytes = b""
    comment: bytes | None = None
    partition: str | None = None
    reservation: str | None = None
    tres_per_node: str | None = None
    tres_per_job: str | None = None
    tres_per_task: str | None = None
    tres_per_socket: str | None = None
    min_nodes: int | None = None
    uid: int = 1000


@dataclass(frozen=True)
class Verdict:
    """``NONE`` (not a Hops job, untouched), ``ERR`` (refused: ``message``), or ``OK`` (a Hops job)."""

    kind: Literal["NONE", "OK", "ERR"]
    message: str = ""
    canonical: str = ""
    partitions: tuple[str, ...] = ()
    changes: dict[str, str] = field(default_factory=dict)  # field -> new value ("" = cleared)
    note: str = ""
    key: str = ""  # what a refusal is about: a #HOPS key, "partition" or "reservation"


class _Refused(Exception):
    pass


def printable(text: str | None, n: int = 200) -> str:
    """The hook's printable(): the first ``n`` bytes, every byte outside printable ASCII as ``\\xHH``."""
    raw = str(text).encode("utf-8", "surrogateescape")[:n]
    return "".join(chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02X}" for b in raw)


def engine_reservation(value: str | None) -> bool:
    """True when a reservation string names a ``hops-*`` reservation anywhere in its comma list."""
    if value is None:
        return False
    lowered = "," + "".join(c.lower() if c.isascii() else c for c in value)  # Lua's string.lower: ASCII only
    return any(lowered[i] in "," + _LUA_SPACE and lowered.startswith("hops-", i + 1) for i in range(len(lowered)))


def _gpu_entries(value: str) -> tuple[int, str | None, str] | None | Literal[False]:
    """(count, type, the field without its GPU entries); False: no GPU entry; None: one it cannot read."""
    count, gtype, found, keep = 0, None, False, []
    for entry in value[:1024].split(","):
        body = entry[5:] if entry[:5] in ("gres:", "gres/") else entry
        if body.split(":", 1)[0] == "gpu":
            found = True
            rest = body[3:]
            n: str | None
            t: str | None = None
            if rest == "":
                n = "1"
            elif m := _GPU_COUNT.fullmatch(rest):
                n = m.group(1)
            elif m := _GPU_TYPED.fullmatch(rest):
                t, n = m.group(1), m.group(2)
            elif m := _GPU_TYPE.fullmatch(rest):
                t, n = m.group(1), "1"
            else:
                return None
            if t is None and len(n) > 7:
                return None
            gtype = gtype or t
            count += int(n)
        elif entry:
            keep.append(entry)
    if not found:
        return False
    return count, gtype, ",".join(keep)


def _migrate_gpus(req: Request, counts: tuple[int, ...]) -> tuple[dict[str, str], str]:
    for name, option in (("tres_per_task", "--gpus-per-task"), ("tres_per_socket", "--gpus-per-socket")):
        value = getattr(req, name)
        if value is not None and "gpu" in value:
            raise _Refused(f"#HOPS gpus: remove {option}: a #HOPS job gets its GPUs from its gpus= line")
    total: int | None = None
    changes: dict[str, str] = {}
    fields = 0
    for name in ("tres_per_job", "tres_per_node"):
        value = getattr(req, name)
        if not value:
            continue
        got = _gpu_entries(value)
        if got is None:
            raise _Refused(f"#HOPS gpus: remove --gres/--gpus (got {printable(value, 60)}): the Hops engine picks "
                           "the GPUs of a #HOPS job from its gpus= line")
        if got is False:
            continue
        n, gtype, rest = got
        if gtype is not None:
            raise _Refused(f"#HOPS gpus: remove --gres/--gpus (it names GPU type {printable(gtype, 40)}): the Hops "
                           "engine picks the type and count of a #HOPS job from its gpus= line")
        fields += 1
        if name == "tres_per_node" and req.min_nodes is not None and req.min_nodes > 1:
            n *= req.min_nodes
        total = n
        changes[name] = rest
    if total is None:
        return changes, ""
    listed = ",".join(str(c) for c in counts)
    if fields > 1:
        raise _Refused(f"#HOPS gpus: remove --gres/--gpus (GPUs asked for twice): the Hops engine picks the count "
                       f"from gpus={listed}")
    if total in counts:
        return changes, (f"#HOPS: the request for {total} GPUs (--gres/--gpus) is dropped: the Hops engine gives "
                         f"this job one of gpus={listed}")
    raise _Refused(f"#HOPS gpus: --gres/--gpus asks for {total} GPUs, not one of gpus={listed}: remove "
                   "--gres/--gpus (the Hops engine picks the count from gpus=)")


def verdict(req: Request, partitions: tuple[str, ...] | None, problem: str = "") -> Verdict:
    """The hook's answer to ``req`` given the Hops partitions (``None``: unknown, ``problem`` says why)."""
    if req.uid != 0 and engine_reservation(req.reservation):
        return Verdict("ERR", f"reservation {printable(req.reservation)} belongs to the Hops engine: submit "
                              "without --reservation", key="reservation")
    error: DirectiveError | None = None
    try:
        parsed = parse_script(req.script, req.comment)
    except DirectiveError as exc:
        parsed, error = None, exc
    if parsed is None and error is None:
        return Verdict("NONE")
    named = [p for p in (req.partition or "")[:4096].split(",") if p] if req.partition is not None else []
    if not named:
        if partitions is None:
            return Verdict("ERR", f"#HOPS partition: the submit hook knows no Hops partition ({problem}): tell your "
                                  "administrator", key="partition")
        job_parts: tuple[str, ...] = (partitions[0],)
    else:
        if partitions is None:
            return Verdict("NONE", problem)
        inside = [p for p in named if p in partitions]
        if not inside:
            return Verdict("NONE", "not in a Hops partition")
        if len(inside) < len(named):
            return Verdict("ERR", f"#HOPS partition: {printable(','.join(named), 200)} mixes Hops partitions "
                                  f"({','.join(inside)}) with others: list only Hops partitions, or remove the "
                                  "#HOPS lines to run outside Hops", key="partition")
        job_parts = tuple(inside)
    if error is not None:
        return Verdict("ERR", str(error), key=error.key)
    assert parsed is not None
    try:
        changes, note = _migrate_gpus(req, parsed.gpus)
    except _Refused as exc:
        return Verdict("ERR", str(exc), key="gpus")
    return Verdict("OK", canonical=parsed.canonical(), partitions=job_parts, changes=changes, note=note)
