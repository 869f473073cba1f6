"""Preemption with notice, for training scripts: checkpoint when Hops says it will requeue the job.

Where it sits: before Hops requeues a running job (to move it or to give its GPUs to another) it sends
the job a signal and waits up to a grace period (the engine's ``[engine] preempt_signal`` and
``preempt_grace``; the job finds them in ``HOPS_PREEMPT_SIGNAL`` and ``HOPS_PREEMPT_GRACE``). This
helper installs the handler for that signal, tells the training loop that a notice came
(:attr:`Preemption.requested`) and writes :class:`profiler.records.CheckpointMark` lines into the job's
runtime-record file (``HOPS_METRICS_FILE``), which the engine reads: that the job listens, and each
checkpoint it saved. The whole protocol, verified on Slurm 22.05, is in docs/preemption.md::

    from profiler.preempt import Preemption

    pre = Preemption.from_env()                # installs the handlers; says "listening" to the engine
    while True:
        for batch in loader:
            if pre.requested or pre.stopping or done >= total:
                break
            ...train one step...
            if time_to_checkpoint:
                save_checkpoint()               # atomically (write a temporary file, then rename it)
                pre.checkpointed(samples_done)  # a mark: the engine knows how much a requeue would lose
        save_checkpoint()
        if done >= total:
            return 0                            # finished: exit 0, no mark (Hops never requeues an ended job)
        pre.checkpointed(samples_done)          # after a notice this mark answers it
        if pre.requested and not pre.stopping and not pre.await_requeue():
            continue                            # nobody requeued it within twice the grace: train on
        return 143                              # stopped by Slurm (requeue, cancel, time limit)

What the job must do, and why (each observed on Slurm 22.05):

* **Receive the signal.** Hops signals only the batch script's own process (``scancel --batch``): the
  script must ``exec`` its python, or trap the signal and forward it (a shell that does not handle the
  signal dies of it, and the job ends FAILED). This helper says it listens only where the signal
  reaches it: in the batch step's top process (``SLURM_TASK_PID``), or with ``forwarded=True``.
* **After a notice: save, mark, then wait to be requeued; do not exit.** A job that exits 0 is
  COMPLETED and would never run again, its remaining samples lost; one that exits non-zero is FAILED.
  The engine requeues the job as soon as it reads the mark; Slurm then sends SIGTERM
  (:attr:`stopping`) and the job exits, to be restarted from its checkpoint later.
* **A job that finishes during the notice just finishes** (exit 0) without answering: the engine sees
  it end and never requeues it (``scontrol requeuehold Incomplete`` leaves an ended job alone). An
  answer is for a job that will not finish: the engine requeues as soon as it reads one, and any mark
  after a notice answers it -- so a job that trains on to finish within the grace calls
  :meth:`Preemption.decline` first (its later marks are then regular ones).
* **If nothing happens** well after the grace (twice it, and a minute; the engine stopped, say),
  :meth:`await_requeue` returns False and the job trains on: the notice is forgotten.

Every write is one bounded, validated JSON line; a mark that cannot be written is logged, never raised:
the training loop never stops for it. Only rank 0 writes (``RANK`` / ``SLURM_PROCID``).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

from profiler.records import MAX_RUN, MAX_TOTAL_SAMPLES, CheckpointMark

log = logging.getLogger(__name__)

#: Signals a site may choose for the notice: catchable, not SIGTERM (Slurm's own "stop now") nor SIGKILL.
PREEMPT_SIGNALS = ("USR1", "USR2", "HUP", "INT", "ALRM", "URG", "XCPU")
DEFAULT_SIGNAL = "USR1"
DEFAULT_GRACE = 120.0
MAX_GRACE = 3600.0
SIGNAL_ENV, GRACE_ENV = "HOPS_PREEMPT_SIGNAL", "HOPS_PREEMPT_GRACE"


def signal_number(name: str) -> int:
    """The number of a notice signal by its Slurm name (``USR1``); ValueError for one not allowed."""
    if name not in PREEMPT_SIGNALS:
        raise ValueError(f"notice signal {name[:16]!r} is not one of {', '.join(PREEMPT_SIGNALS)}")
    return int(getattr(signal, f"SIG{name}"))


def _rank() -> int:
    for key in ("RANK", "SLURM_PROCID"):
        value = os.environ.get(key, "")
        if value.isdigit():
            return int(value)
    return 0


#: SLURM_STEP_ID of the batch step itself: unset up to 24.11; 26.05 sets it to SLURM_BATCH_SCRIPT, printed
#: signed (-5) (seen on the 26.05 minicluster); its unsigned and symbolic spellings for other builds
BATCH_STEP_IDS = frozenset({"-5", "4294967291", "batch"})


def receives_batch_signal(forwarded: bool = False) -> bool:
    """Whether a signal Hops sends this job (``scancel --batch``: the batch script's own process) reaches
    this process: it is not inside an ``srun`` step and it is the batch script's process (the script
    ``exec``-ed python), or ``forwarded`` (the script traps the signal and passes it on)."""
    if forwarded:
        return True
    step = os.environ.get("SLURM_STEP_ID", "")
    if step and step not in BATCH_STEP_IDS:  # inside an srun step (Slurm 25.x+ names the batch step itself)
        return False
    task = os.environ.get("SLURM_TASK_PID", "")
    return not task or (task.isdigit() and int(task) == os.getpid())


class Preemption:
    """See the module docstring. ``path``: the runtime-record file marks go to (None: none are written,
    the engine then never gives this job notice); ``signal_name``/``grace``: the protocol's signal and
    grace; ``run``: Slurm's restart count of this run; ``receives``: whether the notice reaches this
    process (:func:`receives_batch_signal`); ``stop_on_term``: also handle SIGTERM (:attr:`stopping`)
    instead of dying of it; ``clock``: epoch seconds (tests pass their own)."""

    def __init__(self, path: Path | str | None, *, signal_name: str = DEFAULT_SIGNAL, grace: float = DEFAULT_GRACE,
                 run: int = 0, receives: bool = True, stop_on_term: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        self.signum = signal_number(signal_name)
        self.signal_name = signal_name
        if not (math.isfinite(grace) and 0 <= grace <= MAX_GRACE):
            raise ValueError(f"grace {grace!r} is not within 0 .. {MAX_GRACE:g} s")
        self.grace = float(grace)
        self.run = min(max(int(run), 0), MAX_RUN)
        self.path = Path(path) if path is not None else None
        self.clock = clock
        self.notices = 0  # notices received (the signal may come again while the job waits)
        self._answered = 0  # notices answered by a checkpoint mark (or declined)
        self._requested = False
        self._stopping = False
        self._last_samples: int | None = None
        self._previous: dict[int, Any] = {}
        self.marks_written = 0
        self._install(stop_on_term)
        if receives:
            self._write(CheckpointMark(event="listening", run=self.run, signal=signal_name, measured_at=self._now()))

    @classmethod
    def from_env(cls, *, forwarded: bool = False, stop_on_term: bool = True) -> Preemption:
        """A helper configured from the environment the engine gives a placed job (``HOPS_PREEMPT_SIGNAL``,
        ``HOPS_PREEMPT_GRACE``, ``HOPS_METRICS_FILE``, ``SLURM_RESTART_COUNT``); values that do not read
        fall back to the defaults (logged), so a bad environment never stops the job."""
        env = os.environ
        name = env.get(SIGNAL_ENV) or DEFAULT_SIGNAL
        if name not in PREEMPT_SIGNALS:
            log.warning("%s=%r is not a notice signal; listening for %s", SIGNAL_ENV, name[:16], DEFAULT_SIGNAL)
            name = DEFAULT_SIGNAL
        try:
            grace = float(env.get(GRACE_ENV) or DEFAULT_GRACE)
            if not (math.isfinite(grace) and 0 <= grace <= MAX_GRACE):
                raise ValueError(grace)
        except ValueError:
            log.warning("%s=%r is not a grace in seconds; using %g", GRACE_ENV, env.get(GRACE_ENV, "")[:16], DEFAULT_GRACE)
            grace = DEFAULT_GRACE
        restarts = env.get("SLURM_RESTART_COUNT", "0")
        path = env.get("HOPS_METRICS_FILE") or None
        return cls(path if _rank() == 0 else None, signal_name=name, grace=grace,
                   run=int(restarts) if restarts.isdigit() else 0, receives=receives_batch_signal(forwarded),
                   stop_on_term=stop_on_term)

    # ----- signals ------------------------------------------------------------------------------------
    def _install(self, stop_on_term: bool) -> None:
        self._previous[self.signum] = signal.signal(self.signum, self._on_notice)
        if stop_on_term:
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_term)

    def _on_notice(self, signum: int, frame: FrameType | None) -> None:
        self.notices += 1
        self._requested = True

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True

    def close(self) -> None:
        """Put the signal handlers back as they were."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def __enter__(self) -> Preemption:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the loop's view ------------------------------------------------------------------------------
    @property
    def requested(self) -> bool:
        """A notice came: save a checkpoint, call :meth:`checkpointed`, then :meth:`await_requeue`."""
        return self._requested

    @property
    def stopping(self) -> bool:
        """Slurm sent SIGTERM (requeue, cancel or time limit): save what you can and exit."""
        return self._stopping

    @property
    def answered(self) -> bool:
        """Every notice received so far has been answered by a checkpoint mark."""
        return self._answered >= self.notices

    def decline(self) -> None:
        """The job will finish within the grace instead of answering: the notices so far get no answer (the
        engine waits for the job to end, and requeues it at the grace's end if it has not)."""
        self._answered = self.notices
        self._requested = False

    def checkpointed(self, samples: int) -> None:
        """The job saved a checkpoint of ``samples`` processed samples (call it once the file is complete):
        a mark for the engine; it answers the notice when one came since the last mark."""
        samples = min(max(int(samples), 0), MAX_TOTAL_SAMPLES)
        self._last_samples = samples
        notice = self._requested and not self.answered
        seen = self.notices
        self._write(CheckpointMark(event="saved", run=self.run, samples=samples, notice=notice, measured_at=self._now()))
        if notice:
            self._answered = seen

    def await_requeue(self, timeout: float | None = None, poll: float = 0.5) -> bool:
        """After answering a notice: wait for Slurm to stop the job (True, :attr:`stopping`). A notice that
        comes again meanwhile is answered again (same checkpoint). After ``timeout`` seconds (default twice
        the grace and a minute) with nothing happening the notice is forgotten: False, train on."""
        limit = 2 * self.grace + 60.0 if timeout is None else max(0.0, float(timeout))
        deadline = time.monotonic() + limit
        while not self._stopping:
            if not self.answered and self._last_samples is not None:
                self.checkpointed(self._last_samples)
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("notice not followed by a requeue within %.0f s: training on", limit)
                self._requested = False
                self._answered = self.notices
                return False
            time.sleep(min(poll, left))
        return True

    # ----- marks -------------------------------------------------------------------------------------
    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), tz=timezone.utc)

    def _write(self, mark: CheckpointMark) -> None:
        if self.path is None:
            return
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(mark.model_dump_json() + "\n")
            self.marks_written += 1
        except OSError as exc:  # the loop goes on; the engine then requeues at the grace's end
            log.warning("checkpoint mark not written to %s: %s", self.path, exc)
