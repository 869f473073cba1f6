"""Slurm-style time formats for ``hops-slurm report``: parsing -S/-E and windows, printing times.

Sits at the edges of the report data flow: the CLI turns user strings into seconds here, and the
table code turns record times (seconds) back into the strings ``sacct`` users know
(``2026-11-22T05:50:00`` for instants, ``[D-]HH:MM:SS`` for durations).

The accepted instant forms follow ``sacct``'s -S/-E documentation (Slurm 22.05):
``YYYY-MM-DD[THH:MM[:SS]]``, ``MM/DD[/YY][-HH:MM[:SS]]``, ``MMDD[YY]``, ``MM.DD[.YY]``,
``HH:MM[:SS] [AM|PM]``, ``now[{+|-}N[seconds|minutes|hours|days|weeks]]`` and the words
``today``, ``midnight``, ``noon``, ``elevenses``, ``fika``, ``teatime``, ``tomorrow``.
One extension: ``@SECONDS`` gives a raw clock value (simulated records count seconds from 0).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, tzinfo

from hops_slurm.errors import HopsError

_UNITS = {
    "": 1,
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}

# Slurm's named times of day (parse_time.c documents these words for -S/-E and --begin).
_NAMED_HOURS = {"midnight": 0, "elevenses": 11, "noon": 12, "fika": 15, "teatime": 16}

_FORMS_HELP = (
    "use YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MMDD[YY], HH:MM[:SS] [AM|PM], "
    "now[-N{minutes,hours,days,weeks}], today, midnight, noon, tomorrow, or @SECONDS"
)


class TimeFormatError(HopsError):
    """A time or duration string could not be parsed; the message shows the accepted forms."""


def _local(now: float, tz: tzinfo | None) -> datetime:
    return datetime.fromtimestamp(now, tz) if tz is not None else datetime.fromtimestamp(now).astimezone()


def _wall(now: float, tz: tzinfo | None) -> datetime:
    """The wall-clock reading (naive) at ``now`` in ``tz``; local when None."""
    return datetime.fromtimestamp(now, tz).replace(tzinfo=None) if tz is not None else datetime.fromtimestamp(now)


def _epoch(wall: datetime, tz: tzinfo | None) -> float:
    """Seconds since the epoch of a wall-clock reading in ``tz`` (daylight saving applied per date)."""
    return wall.replace(tzinfo=tz).timestamp() if tz is not None else wall.timestamp()


def _year(yy: str | None, today: datetime) -> int:
    if yy is None:
        return today.year
    value = int(yy)
    return value if len(yy) == 4 else 2000 + value


#: Times and durations beyond this many seconds (about 3000 years) are typing errors, not times.
MAX_SECONDS = 1e11


def _bounded(value: float, text: str, what: str, low: float) -> float:
    if not math.isfinite(value) or not low <= value <= MAX_SECONDS:
        raise TimeFormatError(f"{what} {text!r} is outside {low:g}..{MAX_SECONDS:g} seconds")
    return value


def parse_time(text: str, now: float, tz: tzinfo | None = None) -> float:
    """Seconds since the epoch for a Slurm time string, relative to ``now`` (seconds) in zone ``tz``.

    ``tz=None`` means the local zone, as ``sacct`` does. Raises :class:`TimeFormatError`.
    """
    return _bounded(_parse_time(text, now, tz), text, "time", -MAX_SECONDS)


def _parse_time(text: str, now: float, tz: tzinfo | None = None) -> float:
    s = text.strip()
    low = s.lower()
    if not s:
        raise TimeFormatError(f"empty time; {_FORMS_HELP}")
    if s.startswith("@"):
        try:
            return float(s[1:])
        except ValueError:
            raise TimeFormatError(f"bad raw time {text!r}: expected @SECONDS, e.g. @3600") from None
    base = _wall(now, tz)
    m = re.fullmatch(r"now(?:\s*([+-])\s*(\d+)\s*([a-z]*))?", low)
    if m:
        if not m.group(1):
            return now
        unit = m.group(3)
        if unit not in _UNITS:
            raise TimeFormatError(f"bad unit {unit!r} in {text!r}: use seconds, minutes, hours, days or weeks")
        delta = int(m.group(2)) * _UNITS[unit]
        return now + delta if m.group(1) == "+" else now - delta
    midnight = base.replace(hour=0, minute=0, second=0, microsecond=0)
    if low == "today":
        return _epoch(midnight, tz)
    if low == "tomorrow":
        return _epoch(midnight + timedelta(days=1), tz)
    if low in _NAMED_HOURS:
        return _epoch(midnight.replace(hour=_NAMED_HOURS[low]), tz)
    try:
        return _epoch(_parse_calendar(s, base), tz)
    except ValueError as exc:  # out-of-range month/day/hour from datetime()
        raise TimeFormatError(f"bad time {text!r}: {exc}") from None


def _parse_calendar(s: str, base: datetime) -> datetime:
    """A naive wall-clock datetime for ``s``; ``base`` is the naive wall clock at 'now'."""
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:T(\d{1,2}):(\d{2})(?::(\d{2}))?)?", s)
    if m:
        y, mo, d, hh, mm, ss = m.groups()
        return datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0))
    m = re.fullmatch(r"(\d{1,2})([/.])(\d{1,2})(?:\2(\d{2}|\d{4}))?(?:-(\d{1,2}):(\d{2})(?::(\d{2}))?)?", s)
    if m:
        mo, _, d, yy, hh, mm, ss = m.groups()
        return datetime(_year(yy, base), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0))
    m = re.fullmatch(r"(\d{2})(\d{2})(\d{2})?", s)
    if m:
        mo, d, yy = m.groups()
        return datetime(_year(yy, base), int(mo), int(d))
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?", s)
    if m:
        hh, mm, ss, ampm = m.groups()
        hour = int(hh)
        if ampm:
            if not 1 <= hour <= 12:
                raise TimeFormatError(f"bad time {s!r}: hour {hour} with {ampm.upper()}")
            hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
        day = base.replace(hour=hour, minute=int(mm), second=int(ss or 0), microsecond=0)
        # Slurm: a bare time of day that has already passed today means tomorrow.
        return day + timedelta(days=1) if day < base.replace(microsecond=0) else day
    raise TimeFormatError(f"cannot parse time {s!r}; {_FORMS_HELP}")


def parse_duration(text: str) -> float:
    """Seconds in a duration: ``24h``, ``90m``, ``2d``, ``3600`` / ``3600s`` (a bare number is seconds),
    ``1w``, or Slurm's time-limit forms ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``."""
    return _bounded(_parse_duration(text), text, "duration", 1.0)


def _parse_duration(text: str) -> float:
    s = text.strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", s)
    if m and m.group(2) in _UNITS:
        return float(m.group(1)) * _UNITS[m.group(2)]
    # Slurm's time-limit forms: M:S, H:M:S, D-H, D-H:M, D-H:M:S
    m = re.fullmatch(r"(\d+)-(\d+)(?::(\d+))?(?::(\d+))?", s)
    if m:
        d, hh, mm, ss = m.groups()
        return int(d) * 86400.0 + int(hh) * 3600 + int(mm or 0) * 60 + int(ss or 0)
    m = re.fullmatch(r"(\d+):(\d+)(?::(\d+))?", s)
    if m:
        a, b, c = m.groups()
        if c is None:
            return int(a) * 60.0 + int(b)
        return int(a) * 3600.0 + int(b) * 60 + int(c)
    raise TimeFormatError(f"cannot parse duration {text!r}: use e.g. 24h, 90m, 2d, 3600s or [D-]HH:MM:SS")


def format_time(t: float | None, tz: tzinfo | None = None) -> str:
    """``2026-11-22T05:50:00`` in zone ``tz`` (local when None); ``Unknown`` for a missing time, as sacct."""
    if t is None:
        return "Unknown"
    return _local(float(t), tz).strftime("%Y-%m-%dT%H:%M:%S")


def format_elapsed(seconds: float | None) -> str:
    """Slurm elapsed format ``[D-]HH:MM:SS`` (whole seconds, rounded); empty for a missing value."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return ""
    total = int(round(seconds))
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    body = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{sign}{days}-{body}" if days else f"{sign}{body}"
