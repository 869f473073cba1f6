"""A time-scaled replay of any workload: a window of its arrivals, the gaps between them compressed.

Data flow: ``--workload SPEC,start=S,end=E,speedup=K`` -> :func:`split_replay` (the replay keys off the end
of any spec: ``sia:``, ``alibaba:``, a generator or a trace file) -> the workload's own loader
(:mod:`hops_slurm.sim.traces.specs`) -> :meth:`Replay.apply` -> the same :class:`JobSpec` with new
arrival times, and one note saying what the replay changed (docs/traces.md, "Time-scaled replay").

* ``start``/``end``: keep the jobs that arrive in ``[start, end)`` of the workload's own clock (seconds
  from its first arrival, or with a unit: ``116d``, ``6h``, ``90m``); the others are left out and counted.
  A job kept keeps all of its work, also when it was recorded as running past ``end``.
* ``speedup``: a kept job arriving at ``t`` arrives at ``(t - start) / K``: every gap between arrivals is
  ``K`` times shorter, so ``K`` times as much work arrives per hour. Nothing else changes: each job keeps
  its work (an imported task its recorded run time), GPUs, model, constraint and time limit.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from hops_slurm.errors import HopsError
from hops_slurm.sim.workload import JobSpec
from hops_slurm.text import printable

KEYS = ("speedup", "start", "end")
MAX_SPEEDUP = 1e6
#: a window bound at most this far into a workload (ten years)
MAX_SECONDS = 10 * 365 * 86400.0
UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DURATION = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,9})?)([smhd]?)")
#: one trailing ``,key=value`` (or ``:key=value`` right after a generator's name)
TRAILING = re.compile(r"([,:])([a-z]{1,16})=([^,]{0,4096})$")


@dataclass(frozen=True)
class Replay:
    """A window ``[start, end)`` of a workload's arrivals (seconds), replayed ``speedup`` times faster."""

    speedup: float = 1.0
    start: float = 0.0
    end: float | None = None

    def apply(self, jobs: tuple[JobSpec, ...]) -> tuple[tuple[JobSpec, ...], str]:
        """The kept jobs with their new arrivals, and a note saying what changed."""
        end = math.inf if self.end is None else self.end
        kept = tuple(dataclasses.replace(j, arrival=(j.arrival - self.start) / self.speedup)
                     for j in jobs if self.start <= j.arrival < end)
        if not kept:
            raise HopsError(f"replay: no job arrives in the window start={self.start:g} s, end={end:g} s "
                            f"(the workload's arrivals span 0-{max((j.arrival for j in jobs), default=0):g} s)")
        span = max(j.arrival for j in kept) - min(j.arrival for j in kept)
        window = f"arrivals in [{_human(self.start)}, {'the end' if self.end is None else _human(self.end)})"
        return kept, (f"time-scaled replay: {len(kept)} of {len(jobs)} jobs kept ({window}), arriving "
                      f"{self.speedup:g}x faster from {_human(self.start)} on (their arrivals now span "
                      f"{_human(span)}); each job keeps its work, GPUs and constraints")


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.4g} {unit}"
    return f"{seconds:.4g} s"


def _seconds(key: str, text: str) -> float:
    m = DURATION.fullmatch(text.strip())
    if not m:
        raise HopsError(f"workload replay: {key} must be seconds or a number with s, m, h or d, "
                        f"got {printable(text, 40)!r}")
    value = float(m.group(1)) * UNITS[m.group(2)]
    if value > MAX_SECONDS:
        raise HopsError(f"workload replay: {key} must be at most ten years, got {printable(text, 40)!r}")
    return value


def _replay(params: dict[str, str]) -> Replay:
    speedup = 1.0
    if "speedup" in params:
        text = params["speedup"].strip()
        try:
            speedup = float(text)
        except ValueError:
            speedup = math.nan
        if not (math.isfinite(speedup) and 0 < speedup <= MAX_SPEEDUP):
            raise HopsError(f"workload replay: speedup must be a number in (0, {MAX_SPEEDUP:g}], "
                            f"got {printable(text, 40)!r}")
    start = _seconds("start", params["start"]) if "start" in params else 0.0
    end = _seconds("end", params["end"]) if "end" in params else None
    if end is not None and end <= start:
        raise HopsError(f"workload replay: end ({end:g} s) must be after start ({start:g} s)")
    return Replay(speedup, start, end)


def split_replay(spec: str) -> tuple[str, Replay | None]:
    """``SPEC[,key=value...]`` -> (SPEC without the replay keys, the replay they ask for, or None).

    The replay keys (:data:`KEYS`) may sit anywhere among a spec's trailing ``key=value`` parameters;
    the others are left in place for the workload's own loader."""
    body, tail = spec, []
    for _ in range(64):
        m = TRAILING.search(body)
        if not m:
            break
        tail.insert(0, (m.group(1), m.group(2), m.group(3)))
        body = body[: m.start()]
    params: dict[str, str] = {}
    others: list[tuple[str, str, str]] = []
    for sep, key, value in tail:
        if key in KEYS:
            if key in params:
                raise HopsError(f"workload {printable(spec, 200)!r}: {key} given twice")
            params[key] = value
        else:
            others.append((sep, key, value))
    if not params:
        return spec, None
    if others:
        body += tail[0][0] + ",".join(f"{k}={v}" for _s, k, v in others)
    if not body:
        raise HopsError(f"workload {printable(spec, 200)!r}: name a workload before the replay keys")
    return body, _replay(params)
