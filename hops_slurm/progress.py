"""A one-line progress bar on stderr for long CLI commands, shown only on a terminal.

Where it sits: the CLI (``hops-slurm bench``; ``simulate`` has its own per-run bar in
:mod:`hops_slurm.sim.runner`) wraps its steps in :class:`StepBar`. On a terminal the line is redrawn in
place twice a second (steps done, the current step, its elapsed time), so a step that runs for minutes
still shows it is alive; when stderr is not a terminal (logs, CI, pipes) it writes nothing, and the
command's results on stdout are the same either way.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

WIDTH = 24


class StepBar:
    """``with StepBar(total, "benchmarks") as bar: bar.start(name); ...; bar.done()``."""

    def __init__(self, total: int, unit: str, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total, self.unit = max(total, 1), unit
        self.finished = 0
        self.current = ""
        self._since = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def line(self, now: float | None = None) -> str:
        frac = min(1.0, self.finished / self.total)
        filled = int(frac * WIDTH)
        elapsed = (now if now is not None else time.monotonic()) - self._since
        current = f"; {self.current} {elapsed:.0f} s" if self.current else ""
        return f"[{'#' * filled}{'-' * (WIDTH - filled)}] {self.finished}/{self.total} {self.unit}{current}"

    def _draw(self) -> None:
        with self._lock:
            self.stream.write("\r" + self.line() + "\033[K")
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def start(self, step: str) -> None:
        self.current, self._since = step, time.monotonic()
        if self.enabled:
            self._draw()

    def done(self) -> None:
        self.finished += 1
        self.current = ""
        if self.enabled:
            self._draw()

    def print(self, text: str, stream: TextIO | None = None) -> None:
        """Print a line of output without tearing the bar (cleared first, redrawn after)."""
        out = stream if stream is not None else sys.stdout
        if self.enabled:
            with self._lock:
                self.stream.write("\r\033[K")
                self.stream.flush()
        print(text, file=out, flush=True)
        if self.enabled:
            self._draw()

    def __enter__(self) -> StepBar:
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
