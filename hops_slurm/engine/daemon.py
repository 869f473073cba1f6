"""``hops-slurm daemon``: the engine's steps on an APScheduler 3 timetable, until SIGTERM.

Where it sits: between the CLI (:mod:`hops_slurm.cli.daemon`) and :class:`hops_slurm.engine.engine.Engine`.
A :class:`BackgroundScheduler` with a single worker thread runs, never two at once (they share Slurm
state and the journal): the refresh (every ``queue_refresh`` s, followed by a fragment plan), the round
(every ``round_length`` s, first one right after start) and the monitor (every ``monitor_interval`` s:
ended jobs -> fragment plan). SIGTERM or SIGINT stops the timetable; the step in progress is finished
(each Slurm step is journaled, so even an abandoned one would be repaired by the next start), then the
stores are closed and the lock released. Exit status 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import FrameType

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from hops_slurm.engine.engine import Engine

log = logging.getLogger(__name__)


def _guarded(name: str, fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - one failed step must not stop the daemon; the next one retries
            log.exception("%s failed; retrying at its next turn", name)

    return run


def run_daemon(engine: Engine, stop: threading.Event | None = None) -> int:
    """Open the engine, run the timetable until ``stop`` is set (SIGTERM/SIGINT set it), close."""
    stop = stop or threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the current step", signum)
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    engine.open()
    cfg = engine.config
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(1)},
                                    job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None})
    now = datetime.now()
    scheduler.add_job(_guarded("round", engine.full_round), "interval", seconds=cfg.scheduler.round_length,
                      next_run_time=now + timedelta(seconds=0.5), id="round")
    scheduler.add_job(_guarded("refresh", engine.refresh_and_fill), "interval", seconds=cfg.scheduler.queue_refresh,
                      next_run_time=now, id="refresh")
    scheduler.add_job(_guarded("monitor", engine.monitor), "interval", seconds=cfg.engine.monitor_interval,
                      next_run_time=now + timedelta(seconds=cfg.engine.monitor_interval), id="monitor")
    log.info("hops-slurm engine running: round %gs, refresh %gs, monitor %gs, state %s",
             cfg.scheduler.round_length, cfg.scheduler.queue_refresh, cfg.engine.monitor_interval, engine.state_dir)
    scheduler.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        scheduler.shutdown(wait=True)  # lets the running step finish
        engine.close()
        for s, h in previous.items():
            signal.signal(s, h)
        log.info("hops-slurm engine stopped")
    return 0
