"""``hops-slurm daemon``: the engine's steps on the timetable, until SIGTERM.

Where it sits: between the CLI (:mod:`hops_slurm.cli.daemon_cmd`) and :class:`hops_slurm.engine.engine.Engine`.
The timetable is the one the simulators follow (:mod:`hops_slurm.core.timetable`): :class:`Driver` sleeps
on the main thread until each instant and runs its step there, one at a time (steps share Slurm state,
and the journal's SQLite connection belongs to the thread that opened it). The steps: the round (every
``round_length`` s, the first right after start: refresh, round plan, fragment plans), the refresh at
each tick (every ``queue_refresh`` s inside a round, followed by fragment plans) and, while the driver
sleeps, the monitor, the live event source (every ``monitor_interval`` s: ended or newly submitted jobs
-> refresh and fragment plan). APScheduler's interval timers, which the daemon used before, cannot
say "ticks inside a round, restarting at each round" nor share one timetable with a virtual clock; a
sleep until the next instant can. With ``[metrics] port`` set it serves the engine's Prometheus
metrics (:mod:`hops_slurm.engine.exporter`) on ``address:port`` while it runs. SIGTERM or SIGINT stops the timetable; the step in progress is finished (the handler only sets a flag)
(each Slurm step is journaled, so even an abandoned one would be repaired by the next start), then the
stores are closed and the lock released. Exit status 0. A step that fails (Slurm unreachable, a
command refused, the disk full) is logged and retried at its next turn; before that turn the engine
repairs Slurm's state from the journal (:meth:`Engine.recover`), as it does after a crash.
"""

from __future__ import annotations

import logging
import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Protocol

from hops_slurm.core.timetable import EPS, Instant, Kind, LoopSettings, round_instants
from hops_slurm.core.timetable import Clock as TimetableClock
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.exporter import serve
from hops_slurm.errors import HopsError

log = logging.getLogger(__name__)


def _run_step(name: str, fn: Callable[[], object]) -> bool:
    """Run one step; False if it failed (logged: one line for a failure the message explains, Slurm
    unreachable or the disk full, a traceback for anything else)."""
    try:
        fn()
    except HopsError as exc:  # SlurmError, StateError: the message says what went wrong
        log.error("%s failed; retrying at its next turn: %s", name, exc)
        return False
    except Exception:  # noqa: BLE001 - one failed step must not stop the daemon; the next one retries
        log.exception("%s failed; retrying at its next turn", name)
        return False
    return True


class Clock(TimetableClock, Protocol):
    """The daemon's clock: the timetable's (:class:`hops_slurm.core.timetable.Clock`; done once stopped)
    and a sleep that a stop cuts short."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` or until stopped."""


class WallClock:
    """The wall clock (monotonic seconds), stopped by ``stop`` (SIGTERM, SIGINT)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def now(self) -> float:
        return time.monotonic()

    def done(self) -> bool:
        return self.stop.is_set()

    def next_event(self) -> float | None:
        return None  # the monitor polls for events (Driver.wait)

    def sleep(self, seconds: float) -> None:
        self.stop.wait(max(0.0, seconds))


@dataclass
class Steps:
    """What the daemon runs: at a round instant, at a tick, at each monitor poll (the live event source:
    ended or newly submitted jobs), and the repair from the journal after a step that failed half-way."""

    round: Callable[[], object]
    tick: Callable[[], object]
    monitor: Callable[[], object]
    recover: Callable[[], object]
    failed: Callable[[str], None] = lambda _name: None


class Driver:
    """The timetable (:func:`hops_slurm.core.timetable.round_instants`) on the daemon's clock: it sleeps until
    each instant and runs its step; while it sleeps, the monitor polls every ``monitor_seconds``. A round
    that overran starts the next one at once, and ticks it passed are run once (coalesced)."""

    def __init__(self, loop: LoopSettings, clock: Clock, steps: Steps, monitor_seconds: float, *,
                 damaged: bool = False, on_instant: Callable[[Instant], None] | None = None) -> None:
        self.loop, self.clock, self.steps, self.monitor_seconds = loop, clock, steps, monitor_seconds
        self.damaged = damaged  # a step failed half-way: repair from the journal before the next one
        self.on_instant = on_instant
        self.next_monitor = clock.now() + monitor_seconds

    def run(self) -> None:
        """Rounds until the clock is done (stopped); the first round right away (it reads Slurm first)."""
        start = self.clock.now()
        while not self.clock.done():
            for instant in round_instants(self.loop, start, self.clock, coalesce=True):
                self.wait(instant.at)
                if self.clock.done():
                    return
                if self.on_instant is not None:
                    self.on_instant(instant)
                if instant.kind is Kind.END:
                    start = max(instant.at, self.clock.now())
                    break
                self.step("round" if instant.kind is Kind.ROUND else "refresh",
                          self.steps.round if instant.kind is Kind.ROUND else self.steps.tick)

    def wait(self, until: float) -> None:
        """Sleep until ``until`` (or a stop), running the monitor at each of its polls on the way (a fixed
        grid from the start, as the engine simulation models it; a poll due by an instant is left to the
        instant's step, which reads Slurm anyway)."""
        while not self.clock.done():
            now = self.clock.now()
            if now >= until - EPS:
                self._passed(now)
                return
            if now >= self.next_monitor - EPS:
                self.step("monitor", self.steps.monitor)
                self._passed(self.clock.now())
                continue
            self.clock.sleep(min(until, self.next_monitor) - now)

    def _passed(self, now: float) -> None:
        """The next monitor poll: the first on the grid after ``now`` (polls missed meanwhile are one)."""
        m = self.monitor_seconds
        if self.next_monitor <= now + EPS:
            self.next_monitor += m * (math.floor((now + EPS - self.next_monitor) / m) + 1)

    def step(self, name: str, fn: Callable[[], object]) -> None:
        """Run one step, after the repair from the journal that a step which failed half-way needs."""
        if self.damaged:
            self.damaged = not _run_step("recovery", self.steps.recover)
            if self.damaged:  # counted as any failed step: a repair that keeps failing holds every step back
                self.steps.failed("recovery")
        if not self.damaged:
            self.damaged = not _run_step(name, fn)
            if self.damaged:
                self.steps.failed(name)

def run_daemon(engine: Engine, stop: threading.Event | None = None) -> int:
    """Open the engine, run the timetable until ``stop`` is set (SIGTERM/SIGINT set it), close."""
    stop = stop or threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the current step", signum)
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    engine.recover_later = True
    engine.open()
    cfg = engine.config
    endpoint = None
    if cfg.metrics.port:
        try:
            endpoint = serve(engine.metrics, cfg.metrics.address, cfg.metrics.port)
        except OSError as exc:
            engine.close()
            for s, h in previous.items():
                signal.signal(s, h)
            raise HopsError(f"metrics endpoint {cfg.metrics.address}:{cfg.metrics.port}: "
                            f"{exc.strerror or exc} (set [metrics] port in hops.toml)") from None
        log.info("metrics on http://%s:%d/metrics", cfg.metrics.address, cfg.metrics.port)
    loop = engine.loop
    log.info("hops-slurm engine running: round %gs, refresh %gs, monitor %gs, state %s",
             loop.round_seconds, loop.refresh_seconds, cfg.engine.monitor_interval, engine.state_dir)
    steps = Steps(engine.full_round, engine.refresh_and_fill, engine.monitor, engine.recover, engine.metrics.step_failed)
    try:
        Driver(loop, WallClock(stop), steps, cfg.engine.monitor_interval, damaged=engine.needs_recovery).run()
    finally:
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()
        engine.close()
        for s, h in previous.items():
            signal.signal(s, h)
        log.info("hops-slurm engine stopped")
    return 0
