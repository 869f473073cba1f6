"""The machine a benchmark ran on, for its results file: cores and the load average before and after.

Where it sits: a helper of the benchmarks in :mod:`hops_slurm.tools.bench` (not itself a benchmark: it has no
``run``). A load average near zero before the run means nothing else competed for the cores."""

from __future__ import annotations

import os
import platform


def load() -> float:
    """The 1-minute load average now."""
    return os.getloadavg()[0]


def machine_line(load_at_start: float) -> str:
    """One sentence naming the machine and the load before and after the run (the load after includes
    the benchmark's own processes, e.g. a minicluster and its jobs)."""
    cores = os.cpu_count() or 1
    before = "idle" if load_at_start < 0.5 * cores else "busy with other work: timings are noisy"
    return (f"Machine: {platform.machine()}, {cores} cores; 1-minute load average {load_at_start:.2f} before the run "
            f"and {load():.2f} after it (which counts the benchmark's own processes); before the run the machine "
            f"was {before}.")
