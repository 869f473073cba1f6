"""Field checks shared by the two export readers: job ids, states, TRES GPU counts, times, text.

Where it sits: called by :mod:`.read_json` and :mod:`.read_parsable2` on each untrusted value; every
check raises :class:`RowError` with a one-line reason, which the reader turns into a
:class:`~hops_slurm.whatif.history.Problem` for that row. Patterns are linear and run on capped text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime, timezone

from hops_slurm.text import printable
from hops_slurm.whatif.history import MAX_JOB_GPUS, MAX_TEXT

_JOB_ID = re.compile(r"[0-9][0-9_+\[\]%,-]{0,63}")
_STATE = re.compile(r"[A-Z_]{1,32}")
_GPU_TYPE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: Slurm's 32-bit NO_VAL and INFINITE: "unset" where a field has no value (slurm.h)
NO_VAL32 = (0xFFFFFFFE, 0xFFFFFFFF)
#: the latest instant accepted (year 2100): later times are corrupt, not history
MAX_EPOCH = 4102444800.0


class RowError(ValueError):
    """A value in one export row is unusable; the message says which and why."""


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


def epoch(value: object, what: str) -> float | None:
    """An epoch-seconds time: int/float, or a data_parser ``{"set", "number"}`` object; 0/unset = None."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None:
        return None
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


def gpu_count(value: object) -> int:
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


def looks_like_id(value: str) -> bool:
    return bool(_JOB_ID.fullmatch(value[:65])) and len(value) <= 64


def printable_id(value: str) -> str:
    return printable(value, 64)
