"""Timing of the phases of one training iteration, used by the probe runner.

On a GPU the phases are timed with CUDA events recorded on the current stream (read after one
synchronisation at the end of the iteration); on the CPU with ``time.perf_counter`` (CPU work is
synchronous, so the wall clock between marks is the phase time).
"""

from __future__ import annotations

import time

import torch


class PhaseClock:
    """``start()``, then ``mark(name)`` after each phase, then ``finish()`` -> {name: seconds}."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self._names: list[str] = []
        self._cpu: list[float] = []
        self._events: list[torch.cuda.Event] = []

    @property
    def method(self) -> str:
        return "cuda_events" if self.cuda else "wall_clock_sync"

    def start(self) -> None:
        self._names.clear()
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events = [ev]
        else:
            self._cpu = [time.perf_counter()]

    def mark(self, name: str) -> None:
        self._names.append(name)
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events.append(ev)
        else:
            self._cpu.append(time.perf_counter())

    def finish(self) -> dict[str, float]:
        if self.cuda:
            self._events[-1].synchronize()
            return {
                n: self._events[i].elapsed_time(self._events[i + 1]) / 1000.0 for i, n in enumerate(self._names)
            }
        return {n: self._cpu[i + 1] - self._cpu[i] for i, n in enumerate(self._names)}


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
