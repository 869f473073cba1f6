"""A job's processed samples and restart costs from its runs: one function for the live engine and the simulator.

Where it sits: a job's ledger (:class:`hops_slurm.core.ledger.Ledger`: the live engine's
:class:`hops_slurm.engine.state.JobState`, the simulator's :class:`hops_slurm.core.ledger.JobLedger`) has
one placement dict per run (:func:`hops_slurm.core.ledger.account`). Each rank-0 window of the job's
runtime records (:class:`Window`; live: :func:`hops_slurm.engine.runtime_records.ingest_job`, in
simulation the records :mod:`hops_slurm.sim.sim_backend` makes) is added to the run it belongs to by
:func:`note_window`, which keeps in that run's dict the samples and seconds its records cover, when its
first progress began, when its last record ended and the job's own sample count (the record's
``done_samples``). :func:`processed_samples` turns the runs into the samples the job has processed so
far; both backends give it to the honesty check (:mod:`estimator.honesty`).

Rules of :func:`processed_samples` (issue 21, item 4):

- **Restart time is not progress.** A run's progress starts at its first record's window start, not at
  Slurm's start time (a process start, imports, checkpoint load come before): a run without a record
  yet counts nothing.
- **Records justify.** A run with records counts their samples, plus the time between its records
  (and, while it still runs, since its last record) at the rate its records show; an ended run counts
  nothing after its last record (the recorder writes its last window when the job stops). Only a job
  that has written no record at all is counted by time, each run less ``restart`` seconds (its restart
  cost, measured or default), times its estimated rate.
- **Redone samples count once.** A run whose records carry the job's own count resumed at the count
  its first window started from: what the runs before counted beyond it was redone (lost since the last
  checkpoint) and is dropped. A count above what was counted changes nothing (never above what the
  records justify); a count below it cannot drop the run's own samples.

:func:`note_window` also returns the run's **restart cost** when the window is the run's first: seconds
from the run's start to its first progress, plus the notice the run before it was given before its
requeue (the placement key ``notice``, seconds from signal to requeue; missing = 0). The live engine
keeps it in the store per model signature (:meth:`estimator.store.ThroughputStore.put_restart_cost`).
Pure bookkeeping: no Slurm, no clock, no I/O.

Speed: a job moved hundreds of times has hundreds of runs, and :func:`processed_samples` is asked at every
planning; once a job writes records its closed runs no longer depend on ``now`` or the estimated rate, so
their sum is kept (:data:`_CLOSED`, per runs list) and only the runs after it are added at each call. Only
:func:`note_window` changes a closed run (a late window); it drops the kept sum of that job.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from hops_slurm.core.ledger import Ledger

#: placement keys kept by :func:`note_window` (beside ``start``, ``end``, ``config``, ``preempted``)
REC_SAMPLES, REC_SECONDS, PROGRESS_FROM, REC_END = "rec_samples", "rec_seconds", "progress_from", "rec_end"
RESUMED, DONE = "resumed", "done"
#: seconds from the requeue signal to the requeue of a preempted run (written by the notice step)
NOTICE = "notice"


class _RecordLike(Protocol):
    steps: int
    batch_size: int
    gpus: int
    window_seconds: float
    measured_at: datetime
    done_samples: float | None


@dataclass(frozen=True)
class Window:
    """One rank-0 window of a job's runtime records."""

    samples: float  # steps x batch x GPUs
    seconds: float  # the window's length
    end: float  # when it ended (epoch s live; the simulator's clock in simulation)
    done: float | None = None  # the job's own count of samples done at its end (None: not said)

    @classmethod
    def of(cls, record: _RecordLike) -> Window:
        """The window of a validated :class:`profiler.records.RuntimeRecord`."""
        return cls(samples=float(record.steps * record.batch_size * record.gpus), seconds=float(record.window_seconds),
                   end=record.measured_at.timestamp(), done=record.done_samples)


#: id(runs) -> (runs, how many leading runs are closed and summed, the sum after them, the ``unplaced`` it
#: started from): the closed runs of jobs that write records (see the module docstring); bounded
_CLOSED: OrderedDict[int, tuple[list[dict[str, Any]], int, float, float]] = OrderedDict()
_CLOSED_MAX = 50_000


def _number(value: object, default: float = 0.0) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return x if math.isfinite(x) and x >= 0 else default


def notice_before(placements: list[dict[str, Any]], i: int) -> float:
    """The notice given to the run before run ``i`` when it was preempted (0: none recorded)."""
    if i <= 0 or not placements[i - 1].get("preempted"):
        return 0.0
    return _number(placements[i - 1].get(NOTICE))


def note_window(ledger: Ledger, window: Window, now: float) -> float | None:
    """Add ``window`` to the run it belongs to: the last one started before its middle (its times are
    the job's word: clamped into [first start, ``now``]; the middle, because a run's last window may end
    at the instant the next run starts, a move). Returns that run's restart cost when ``window`` is its
    first, else None. A job that never ran has no run to add to: nothing happens."""
    runs = ledger.placements
    if not runs or not (math.isfinite(window.samples) and math.isfinite(window.seconds) and math.isfinite(window.end)):
        return None
    _CLOSED.pop(id(runs), None)  # it may change a closed run
    first_start = float(runs[0]["start"])
    end = min(max(window.end, first_start), now)
    middle = max(end - max(window.seconds, 0.0) / 2, first_start)
    i = max(k for k, p in enumerate(runs) if float(p["start"]) <= middle)
    run = runs[i]
    start = float(run["start"])
    begin = max(start, end - max(window.seconds, 0.0))
    first = PROGRESS_FROM not in run
    run[REC_SAMPLES] = _number(run.get(REC_SAMPLES)) + max(window.samples, 0.0)
    run[REC_SECONDS] = _number(run.get(REC_SECONDS)) + max(window.seconds, 0.0)
    run[PROGRESS_FROM] = begin if first else min(_number(run[PROGRESS_FROM]), begin)
    run[REC_END] = max(_number(run.get(REC_END), end), end)
    if window.done is not None and math.isfinite(window.done):
        if RESUMED not in run:  # its count when its first window began
            run[RESUMED] = max(0.0, window.done - run[REC_SAMPLES])
        run[DONE] = max(_number(run.get(DONE)), window.done)
    return begin - start + notice_before(runs, i) if first else None


def recorded(ledger: Ledger) -> tuple[float, float]:
    """(samples, seconds) of the records added to its runs."""
    return (sum(_number(p.get(REC_SAMPLES)) for p in ledger.placements),
            sum(_number(p.get(REC_SECONDS)) for p in ledger.placements))


def recorded_samples(ledger: Ledger) -> float:
    """The samples of the records added to its runs (:func:`recorded`'s first half, asked at every refresh)."""
    return sum(_number(p.get(REC_SAMPLES)) for p in ledger.placements if REC_SAMPLES in p)


def processed_samples(ledger: Ledger, now: float, *, rate: Callable[[Mapping[str, int]], float | None],
                      restart: float, unplaced: float = 0.0) -> float:
    """Samples the job has processed by ``now`` (the rules of the module docstring).

    ``rate(config)``: the estimated samples/s of the job in ``config`` (None: no estimate) and ``restart``
    (seconds of each start without progress), used only while the job has written no record;
    ``unplaced``: samples of records that are in no run (kept by an engine from before records were
    added per run), counted first."""
    runs = ledger.placements
    pool_samples = max(unplaced, 0.0)
    first, total = 0, pool_samples
    kept = _CLOSED.get(id(runs))
    if kept is not None and kept[0] is runs and kept[1] <= len(runs) and kept[3] == pool_samples:
        first, total = kept[1], kept[2]  # its closed runs, summed before (they wrote records)
        writes_records = True
    else:
        writes_records = pool_samples > 0 or any(REC_SAMPLES in p for p in runs)
    closed, summed, contiguous = first, total, True
    for p in runs[first:] if first else runs:
        start = float(p["start"])
        current = p.get("end") is None
        upto = now if current else float(p["end"])
        if REC_SAMPLES in p:
            samples, seconds = _number(p[REC_SAMPLES]), _number(p.get(REC_SECONDS))
            stop = upto if current else min(upto, _number(p.get(REC_END), upto))
            between = max(0.0, stop - _number(p.get(PROGRESS_FROM), start) - seconds)
            progress = samples + between * (samples / seconds if seconds > 0 else 0.0)
        elif writes_records:
            progress = 0.0  # no record of this run yet (restarting), or it stopped without one
        else:
            busy = max(0.0, upto - start - max(restart, 0.0))
            r = rate(p.get("config") or {}) if busy > 0 else None
            progress = busy * r if r is not None and math.isfinite(r) and r > 0 else 0.0
        if RESUMED in p:
            total = min(total, _number(p[RESUMED]))
        total += progress
        if current:
            contiguous = False
        elif contiguous:  # every run so far closed: their sum does not change any more
            closed, summed = closed + 1, total
    if writes_records and closed > first:
        _CLOSED[id(runs)] = (runs, closed, summed, pool_samples)
        _CLOSED.move_to_end(id(runs))
        if len(_CLOSED) > _CLOSED_MAX:
            _CLOSED.popitem(last=False)
    return total


__all__ = ["Window", "note_window", "notice_before", "processed_samples", "recorded", "recorded_samples", "NOTICE", "REC_SAMPLES",
           "REC_SECONDS", "PROGRESS_FROM", "REC_END", "RESUMED", "DONE"]
