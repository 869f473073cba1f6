"""``hops-slurm daemon``: the engine's steps on an APScheduler 3 timetable, until SIGTERM.

Where it sits: between the CLI (:mod:`hops_slurm.cli.daemon_cmd`) and :class:`hops_slurm.engine.engine.Engine`.
A :class:`BackgroundScheduler` keeps the timetable; its jobs only queue the step's name, and the
main thread runs the steps one at a time (they share Slurm state, and the journal's SQLite connection
belongs to the thread that opened it); a step already queued is not queued twice. The steps: the refresh (every ``queue_refresh`` s, followed by a fragment plan), the round
(every ``round_length`` s, first one right after start) and the monitor (every ``monitor_interval`` s:
ended or newly submitted jobs -> refresh and fragment plan). With ``[metrics] port`` set it serves the engine's Prometheus
metrics (:mod:`hops_slurm.engine.exporter`) on ``address:port`` while it runs. SIGTERM or SIGINT stops the timetable; the step in progress is finished (the handler only sets a flag)
(each Slurm step is journaled, so even an abandoned one would be repaired by the next start), then the
stores are closed and the lock released. Exit status 0. A step that fails (Slurm unreachable, a
command refused, the disk full) is logged and retried at its next turn; before that turn the engine
repairs Slurm's state from the journal (:meth:`Engine.recover`), as it does after a crash.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from types import FrameType

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

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


class _Steps:
    """The queue between the timetable (scheduler thread) and the main thread."""

    def __init__(self) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.queued: set[str] = set()
        self.lock = threading.Lock()

    def put(self, name: str) -> None:
        with self.lock:
            if name in self.queued:
                return
            self.queued.add(name)
        self.queue.put(name)

    def get(self, timeout: float) -> str | None:
        try:
            name = self.queue.get(timeout=timeout)
        except queue.Empty:
            return None
        with self.lock:
            self.queued.discard(name)
        return name


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
    steps = _Steps()
    work: dict[str, Callable[[], object]] = {"round": engine.full_round, "refresh": engine.refresh_and_fill,
                                             "monitor": engine.monitor}
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(1)},
                                    job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None})
    now = datetime.now()
    steps.put("round")  # the first round right away (it reads Slurm first)
    scheduler.add_job(steps.put, "interval", args=["round"], seconds=cfg.scheduler.round_length,
                      next_run_time=now + timedelta(seconds=cfg.scheduler.round_length), id="round")
    scheduler.add_job(steps.put, "interval", args=["refresh"], seconds=cfg.scheduler.queue_refresh,
                      next_run_time=now + timedelta(seconds=cfg.scheduler.queue_refresh), id="refresh")
    scheduler.add_job(steps.put, "interval", args=["monitor"], seconds=cfg.engine.monitor_interval,
                      next_run_time=now + timedelta(seconds=cfg.engine.monitor_interval), id="monitor")
    log.info("hops-slurm engine running: round %gs, refresh %gs, monitor %gs, state %s",
             cfg.scheduler.round_length, cfg.scheduler.queue_refresh, cfg.engine.monitor_interval, engine.state_dir)
    scheduler.start()
    damaged = engine.needs_recovery  # a step failed half-way: repair from the journal before the next one
    try:
        while not stop.is_set():
            name = steps.get(timeout=0.5)
            if name is not None and not stop.is_set():
                if damaged:
                    damaged = not _run_step("recovery", engine.recover)
                    if damaged:
                        continue
                damaged = not _run_step(name, work[name])
                if damaged:
                    engine.metrics.step_failed(name)
    finally:
        scheduler.shutdown(wait=False)
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()
        engine.close()
        for s, h in previous.items():
            signal.signal(s, h)
        log.info("hops-slurm engine stopped")
    return 0
