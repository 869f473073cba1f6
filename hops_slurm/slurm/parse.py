"""Parsers for Slurm's compact notations: host lists, GRES strings with GPU indices, JSON numbers,
one-line ``scontrol -o`` records.

Pure functions, shared by the readers of every Slurm release (:mod:`hops_slurm.slurm.read_v0038`,
:mod:`hops_slurm.slurm.read_data_parser`) and the pyslurm backend.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass


def expand_hostlist(text: str) -> list[str]:
    """``gpu[01-03,7],cpu1`` -> ``['gpu01', 'gpu02', 'gpu03', 'gpu7', 'cpu1']`` (zero padding kept,
    several bracket groups in one name allowed); ``(null)``, ``None assigned`` or empty -> ``[]``.
    Raises ValueError on a malformed range."""
    text = text.strip()
    if not text or text == "(null)" or text.lower().startswith("none"):
        return []
    names: list[str] = []
    for part in _split_top_level(text):
        pieces = re.split(r"\[([^\]]*)\]", part)  # literal, range, literal, range, ..., literal
        choices = [[p] if i % 2 == 0 else _expand_range(p) for i, p in enumerate(pieces)]
        names.extend("".join(combo) for combo in itertools.product(*choices))
    return names


def _expand_range(body: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not sep:
            out.append(lo)
            continue
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise ValueError(f"bad hostlist range {item!r}")
        out.extend(str(i).zfill(len(lo)) for i in range(int(lo), int(hi) + 1))
    return out


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and parentheses: ``g[1-2],h`` and ``gpu:a100:2(IDX:0,3),mps:1``."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


def expand_indices(text: str) -> list[int]:
    """``0-2,5`` -> ``[0, 1, 2, 5]``; ``N/A`` or empty -> ``[]``."""
    if not text or text == "N/A":
        return []
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass(frozen=True)
class GpuGres:
    gpu_type: str  # "" when untyped
    count: int
    indices: tuple[int, ...] = ()


_GRES = re.compile(r"^gpu(?::(?P<type>[A-Za-z0-9_.-]+))?:(?P<count>\d+)(?:\(IDX:(?P<idx>[^)]*)\))?")


def parse_gpu_gres(text: str) -> GpuGres | None:
    """One GRES entry: ``gpu:a100:5(IDX:0-4)``, ``gpu:a100:2(IDX:0,3)``, ``gpu:v100:0(IDX:N/A)``, ``gpu:2``;
    None if not a GPU. Entries are separated by commas outside the parentheses of an index list."""
    for entry in _split_top_level(text or ""):
        entry = entry.strip().removeprefix("gres:").removeprefix("gres/")
        m = _GRES.match(entry)
        if m:
            gpu_type = m["type"] or ""
            if gpu_type.isdigit() and m["count"] is None:
                gpu_type = ""
            return GpuGres(gpu_type, int(m["count"]), tuple(expand_indices(m["idx"] or "")))
    return None


def gpu_allocation(nodes: list[str], gres_detail: list[str]) -> dict[str, tuple[int, ...]]:
    """A running job's GPU indices per node: Slurm lists ``gres_detail`` one entry per allocated node, in
    expanded node order (``['gpu:a100:2(IDX:1,5)', 'gpu:a100:3(IDX:2-3,6)']`` for ``a100-[1-2]``); a node
    whose entry is missing yet (right after the start) or names no GPU maps to ``()``."""
    alloc: dict[str, tuple[int, ...]] = {}
    for node, detail in zip(nodes, gres_detail, strict=False):
        gres = parse_gpu_gres(detail)
        alloc[node] = gres.indices if gres else ()
    return alloc


def slurm_number(value: object) -> int | None:
    """A number as Slurm's JSON gives it: a plain number (22.05) or ``{"set", "infinite", "number"}``
    (data_parser 0.0.40 and later); None when unset, infinite or null. Raises ValueError on anything else."""
    if value is None:
        return None
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a Slurm number: {value!r}")
    return bounded_number(value)


#: the widest number Slurm prints (uint64, NO_VAL64 and INFINITE64 among them)
MAX_SLURM_NUMBER = 2 ** 64


def bounded_number(value: int | float) -> int | None:
    """A number Slurm can print, or None (unset) for one it cannot: not finite, or wider than 64 bits
    (one job's odd value is that job's unset field, never an error that stops the whole listing)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if -MAX_SLURM_NUMBER <= value <= MAX_SLURM_NUMBER else None


def json_int(digits: str) -> int | float:
    """``json.loads(parse_int=...)``: an integer of more digits than any 64-bit value reads as infinite
    (so as unset: :func:`bounded_number`) in time linear in its length, never as Python's digit-limit
    ValueError that would make the whole listing unreadable."""
    if len(digits) > 24:
        return float("-inf") if digits.startswith("-") else float("inf")
    return int(digits)


def parse_record(line: str, keys: tuple[str, ...]) -> dict[str, str]:
    """One ``scontrol -o show`` record whose keys Slurm prints in the order ``keys``: each value runs up to
    the nearest key expected after it, so text like `` Other=...`` inside a value (an unknown key, or one
    printed earlier) stays part of it. A value that imitates a key printed later cannot be told apart in
    this text form: read it only for records whose values only administrators set (reservations), never
    for jobs (job names and comments are the user's). Keys missing from the line are skipped; a line that
    does not start with ``keys[0]=`` raises ValueError."""
    if not line.startswith(keys[0] + "="):
        raise ValueError(f"not a record starting with {keys[0]}=: {line[:60]!r}")
    fields: dict[str, str] = {}
    pos, key, rest = len(keys[0]) + 1, keys[0], keys[1:]
    while True:
        nxt = None
        for i, candidate in enumerate(rest):  # the nearest later key that follows (keys may be absent)
            at = line.find(f" {candidate}=", pos)
            if at >= 0 and (nxt is None or at < nxt[0]):
                nxt = (at, i)
        if nxt is None:
            fields[key] = line[pos:].strip()
            return fields
        at, i = nxt
        fields[key] = line[pos:at].strip()
        key, pos, rest = rest[i], at + len(rest[i]) + 2, rest[i + 1:]


def null_text(value: object) -> str:
    """Slurm's ways of saying "nothing" (``None``, ``(null)``, ``None``, ``N/A``) -> ``""``."""
    return "" if value in (None, "(null)", "None", "N/A") else str(value)


def canonical_tres(text: str) -> str:
    """A TRES request in the form ``scontrol update TresPerNode=`` takes and 22.05 prints
    (``gres:gpu:a100:2``); data_parser 0.0.40+ prints ``gres/gpu:a100:2``."""
    return ",".join("gres:" + e[len("gres/"):] if e.startswith("gres/") else e for e in _split_top_level(null_text(text)))


#: Job state flags in the order Slurm's ``job_state_string`` reports them instead of the base state
#: (22.05 prints that one string; data_parser 0.0.40+ lists the base state and the flags).
JOB_STATE_FLAGS = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                   "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING")
JOB_BASE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                   "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")
#: Node base states (data_parser lists them with flags such as DRAIN, RESERVED in one ``state`` list).
NODE_BASE_STATES = ("UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE")


def job_state(states: list[str]) -> str:
    """A data_parser ``job_state`` list (``["PENDING", "REQUEUED"]``) -> the one word 22.05 prints
    (``REQUEUED``): the first flag of :data:`JOB_STATE_FLAGS` present, else the base state."""
    base = [s for s in states if s in JOB_BASE_STATES]
    if len(base) != 1:
        raise ValueError(f"job_state {states!r} names no single base state")
    return next((f for f in JOB_STATE_FLAGS if f in states), base[0])


def node_state(states: list[str]) -> tuple[str, tuple[str, ...]]:
    """A data_parser node ``state`` list (``["IDLE", "DRAIN"]``) -> (base state lower case, sorted flags)."""
    base = [s for s in states if s in NODE_BASE_STATES]
    if len(base) != 1:
        raise ValueError(f"node state {states!r} names no single base state")
    return base[0].lower(), tuple(sorted(str(s) for s in states if s != base[0]))
