"""Field checks shared by the two export readers: job ids, states, TRES GPU counts, times, text.

Where it sits: called by :mod:`.read_json` and :mod:`.read_parsable2` on each untrusted value; every
check raises :class:`RowError` with a one-line reason, which the reader turns into a
:class:`~hops_slurm.whatif.history.Problem` for that row. Patterns are linear and run on capped text.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from datetime import datetime, timezone

from hops_slurm.text import printable
from hops_slurm.whatif.history import MAX_JOB_GPUS, MAX_TEXT

#: the most nodes one row may name (a GPU job holds a GPU on each of its nodes, at most this many)
MAX_ROW_NODES = MAX_JOB_GPUS
#: the most GPUs per node a row may claim (the simulator's servers have at most this many)
MAX_GPUS_PER_NODE = 64
#: the most digits of a number in a JSON export (an epoch time has 10; Python refuses more than 4300)
MAX_DIGITS = 20
_NODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_RANGE = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9}))?")

_JOB_ID = re.compile(r"[0-9][0-9_+\[\]%,-]{0,63}")
_STATE = re.compile(r"[A-Z_]{1,32}")
_GPU_TYPE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: Slurm's 32-bit NO_VAL and INFINITE: "unset" where a field has no value (slurm.h)
NO_VAL32 = (0xFFFFFFFE, 0xFFFFFFFF)
#: the latest instant accepted (year 2100): later times are corrupt, not history
MAX_EPOCH = 4102444800.0


class RowError(ValueError):
    """A value in one export row is unusable; the message says which and why."""


class Oversized:
    """A JSON integer of more than :data:`MAX_DIGITS` digits, kept as its digit count (the JSON reader's
    ``parse_int``, :func:`json_int`): not a number to any field, so the row that holds it is refused,
    naming it, where the whole export would fail on Python's own limit (4300 digits)."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a number of {self.digits} digits>"


def json_int(digits: str) -> int | Oversized:
    """``parse_int`` for :func:`json.loads` on an export: an int, or :class:`Oversized` past MAX_DIGITS."""
    n = len(digits.lstrip("-"))
    return int(digits) if n <= MAX_DIGITS else Oversized(n)


def _whole(value: object, what: str) -> None:
    if isinstance(value, Oversized):
        raise RowError(f"{what} is a number of {value.digits} digits (at most {MAX_DIGITS})")


def short(value: object, limit: int = 40) -> str:
    """A value quoted for a message, escaped and cut."""
    return repr(printable(value, limit))


def text(value: object) -> str:
    """A free text field (name, user, partition, comment): ``None`` is empty; cut to MAX_TEXT."""
    if value is None:
        return ""
    if not isinstance(value, (str, int, float)):
        raise RowError(f"expected text, got {type(value).__name__}")
    s = str(value)
    return s[:MAX_TEXT]


def job_id(value: object) -> str:
    _whole(value, "job id")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RowError(f"job id must be a number or text, got {type(value).__name__}")
    s = str(value)
    if not _JOB_ID.fullmatch(s[:65]) or len(s) > 64:
        raise RowError(f"job id {short(s)} is not a Slurm job id")
    return s


def state(value: str) -> str:
    """The base state of ``CANCELLED by 0`` / ``COMPLETED`` / ``RUNNING+...``."""
    head = value.strip()[:64].split(" ", 1)[0].split("+", 1)[0]
    if not _STATE.fullmatch(head):
        raise RowError(f"state {short(value)} is not a Slurm job state")
    return head


def data_parser_number(value: object) -> object:
    """A 24.11+ data_parser ``{"set", "infinite", "number"}`` object's number (None when unset or infinite);
    any other value as it is."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        return value.get("number")
    return value


def epoch(value: object, what: str) -> float | None:
    """An epoch-seconds time: int/float, or a data_parser ``{"set", "number"}`` object; 0/unset = None."""
    value = data_parser_number(value)
    if value is None:
        return None
    _whole(value, f"{what} time")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError(f"{what} time {short(value)} is not a number")
    if value in NO_VAL32:  # 24.11 gives a never-started job's start as NO_VAL (recorded)
        return None
    t = float(value)
    if not math.isfinite(t) or t < 0 or t > MAX_EPOCH:
        raise RowError(f"{what} time {short(value)} is out of range")
    return t if t > 0 else None


def iso_time(value: str, what: str) -> float | None:
    """A ``--parsable2`` time ``YYYY-MM-DDTHH:MM:SS`` (read as UTC: only differences matter);
    ``Unknown``/``None``/empty = None."""
    s = value.strip()
    if s in ("", "Unknown", "None"):
        return None
    if len(s) > 32:
        raise RowError(f"{what} time {short(s)} is not a time")
    try:
        dt = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise RowError(f"{what} time {short(s)} is not YYYY-MM-DDTHH:MM:SS (sacct's default; "
                       "unset SLURM_TIME_FORMAT or set it to 'standard')") from None
    t = dt.replace(tzinfo=timezone.utc).timestamp()
    if not 0 < t <= MAX_EPOCH:
        raise RowError(f"{what} time {short(s)} is out of range")
    return t


#: the longest time limit read (one year, in minutes); a longer one is taken as unlimited (unknown)
MAX_LIMIT_MINUTES = 366 * 24 * 60
_LIMIT = re.compile(r"(?:([0-9]{1,3})-)?([0-9]{1,6}(?::[0-9]{1,2}){0,2})")


def json_time_limit(value: object) -> float | None:
    """A JSON ``time.limit``: minutes as an int (22.05) or a data_parser ``{"set", "infinite", "number"}``
    object (24.11, 26.05); seconds, or None when unset, unlimited or longer than a year."""
    value = data_parser_number(value)
    if value is None:
        return None
    _whole(value, "time limit")
    if isinstance(value, bool) or not isinstance(value, int):
        raise RowError(f"time limit {short(value)} is not a number of minutes")
    if value in NO_VAL32 or value <= 0 or value > MAX_LIMIT_MINUTES:
        return None
    return value * 60.0


def text_time_limit(value: str) -> float | None:
    """A ``--parsable2`` ``Timelimit`` (``[D-]HH:MM:SS``, ``MM:SS``, minutes); seconds, or None when
    ``UNLIMITED``, ``Partition_Limit``, empty or longer than a year."""
    s = value.strip()
    if s in ("", "UNLIMITED", "Partition_Limit", "INVALID", "None", "Unknown"):
        return None
    m = _LIMIT.fullmatch(s) if len(s) <= 20 else None
    if m is None:
        raise RowError(f"Timelimit {short(s)} is not [D-]HH:MM:SS")
    parts = [int(p) for p in m.group(2).split(":")]
    days = int(m.group(1)) if m.group(1) else 0
    if m.group(1):  # Slurm's forms with days: D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:  # H:M:S
        hours, minutes, seconds = parts
    else:  # M, M:S
        hours, minutes, seconds = 0, parts[0], (parts + [0])[1]
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0 or total > MAX_LIMIT_MINUTES * 60:
        return None
    return float(total)


def gpu_count(value: object) -> int:
    _whole(value, "GPU count")
    if isinstance(value, bool):
        raise RowError("GPU count is not a number")
    if isinstance(value, str):
        if not value.isdigit() or len(value) > 9:
            raise RowError(f"GPU count {short(value)} is not a whole number")
        value = int(value)
    if not isinstance(value, int):
        raise RowError(f"GPU count {short(value)} is not a whole number")
    if not 0 <= value <= MAX_JOB_GPUS:
        raise RowError(f"GPU count {value} is outside 0..{MAX_JOB_GPUS}")
    return value


def gpus_from_tres(entries: Iterable[tuple[str, object]]) -> tuple[int | None, str]:
    """GPUs and GPU type from TRES ``(name, count)`` pairs of type gres: ``gpu`` (untyped) and
    ``gpu:TYPE``. Slurm records both when it accounts typed GPUs; the untyped count is the total then.
    ``None`` when no GPU TRES is present."""
    untyped: int | None = None
    typed: dict[str, int] = {}
    for name, count in entries:
        if name == "gpu":
            untyped = gpu_count(count)
        elif name.startswith("gpu:"):
            kind = name[4:].split(":", 1)[0]
            if not _GPU_TYPE.fullmatch(kind[:65]):
                raise RowError(f"GPU type {short(kind)} in TRES is not a GPU type name")
            typed[kind] = typed.get(kind, 0) + gpu_count(count)
    if untyped is None and not typed:
        return None, ""
    total = untyped if untyped is not None else sum(typed.values())
    if total > MAX_JOB_GPUS:
        raise RowError(f"GPU count {total} is outside 0..{MAX_JOB_GPUS}")
    gpu_type = next(iter(typed)) if len(typed) == 1 else ("mixed" if typed else "")
    return total, gpu_type


def tres_text_pairs(value: str) -> list[tuple[str, str]]:
    """``billing=1,cpu=1,gres/gpu:a100=2,gres/gpu=2,node=1`` -> the gres pairs ``[("gpu:a100", "2"), ("gpu", "2")]``."""
    out = []
    for item in value.split(","):
        if not item:
            continue
        key, eq, count = item.partition("=")
        if not eq:
            raise RowError(f"TRES item {short(item)} is not key=value")
        if key.startswith("gres/"):
            out.append((key[5:], count))
    return out


def node_list(value: object) -> tuple[str, ...]:
    """The node names of a Slurm hostlist (``g1``, ``n[01-04,07],gpu-a``, ``r[1-2]-n[1-2]``); () when unset
    (``None assigned``, empty). At most :data:`MAX_ROW_NODES` names, counted before any is made."""
    if value is None:
        return ()
    if not isinstance(value, str):
        raise RowError(f"node list {short(value)} is not text")
    text = value.strip()
    if text in ("", "None assigned", "(null)", "None"):
        return ()
    if len(text) > 64 * 1024:
        raise RowError(f"node list of {len(text)} characters is not a Slurm hostlist")
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "[") - (c == "]")
        if depth not in (0, 1):
            raise RowError(f"node list {short(text)} is not a Slurm hostlist")
        if c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    names: list[str] = []
    for item in items:
        parts = re.split(r"\[([^\]]*)\]", item)  # literal, ranges, literal, ranges, ..., literal
        choices: list[list[str]] = []
        count = 1
        for k, part in enumerate(parts):
            if k % 2 == 0:
                choices.append([part])
                continue
            ranges = []
            for r in part.split(","):
                m = _RANGE.fullmatch(r)
                if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
                    raise RowError(f"node list {short(text)}: {short(r, 20)} is not a range")
                ranges.append(m)
            count *= sum(int(m.group(2) or m.group(1)) - int(m.group(1)) + 1 for m in ranges)
            if len(names) + count > MAX_ROW_NODES:
                raise RowError(f"node list {short(text)} names more than {MAX_ROW_NODES} nodes")
            choices.append([str(n).zfill(len(m.group(1))) for m in ranges
                            for n in range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1)])
        expanded = [""]
        for options in choices:
            expanded = [head + tail for head in expanded for tail in options]
        for name in expanded:
            if not _NODE.fullmatch(name):
                raise RowError(f"node list {short(text)}: {short(name, 20)} is not a node name")
        names.extend(expanded)
    if len(set(names)) != len(names):
        raise RowError(f"node list {short(text)} names a node twice")
    return tuple(sys.intern(n) for n in names)


def check_per_node(gpus: int, names: tuple[str, ...]) -> None:
    """A row's GPUs spread over its nodes: at most :data:`MAX_GPUS_PER_NODE` on each."""
    if names and math.ceil(gpus / len(names)) > MAX_GPUS_PER_NODE:
        raise RowError(f"{gpus} GPUs on {len(names)} node(s): more than {MAX_GPUS_PER_NODE} GPUs per node")


def looks_like_id(value: str) -> bool:
    return bool(_JOB_ID.fullmatch(value[:65])) and len(value) <= 64


def printable_id(value: str) -> str:
    return printable(value, 64)
