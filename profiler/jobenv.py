"""The job's Hops environment, for training scripts: what the engine chose for this run (HOPS_GPUS,
HOPS_LR, HOPS_PLACEMENT, the recorder and notice settings), waiting for it when it is not there yet.

Where it sits: the engine writes ``$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env`` (``export KEY='value'`` lines)
before it releases a held job, and a batch script sources it. A job the submit hook started on an offer
(docs/design.md, "Offers: new jobs start at Slurm's next pass") starts before the engine has seen it; the
engine writes its file within a monitor interval. This helper is for that case::

    from profiler.jobenv import load_job_env

    load_job_env()   # HOPS_* into os.environ: at once if the script sourced the file, else when it appears

It waits only when ``HOPS_GPUS`` is not set and ``HOPS_JOB_ENV_DIR`` and ``SLURM_JOB_ID`` are: at most
``HOPS_ENV_WAIT`` seconds (default 60; a value that is not a finite number from 0 to 3600 is refused
and the default used), then the job runs on what Slurm gave it (its allocation's
GPUs, its script's defaults). Only ``HOPS_*`` keys are taken, from a file of at most 64 KiB.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path

KEY = re.compile(r"HOPS_[A-Z0-9_]{1,64}")
MAX_BYTES = 65536
DEFAULT_WAIT = 60.0
MAX_WAIT = 3600.0


def parse_env_file(text: str) -> dict[str, str]:
    """The ``HOPS_*`` values of an env file (``export KEY='value'`` lines, as the engine writes them)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not KEY.fullmatch(key):
            continue
        try:
            parts = shlex.split(value)
        except ValueError:
            continue
        out[key] = parts[0] if len(parts) == 1 else ""
    return out


def wait_seconds(text: str | None) -> float:
    """``HOPS_ENV_WAIT`` as seconds: a finite number from 0 to :data:`MAX_WAIT`; anything else (not a
    number, ``nan``, ``inf``, negative, larger, over 32 characters) is refused and the default used."""
    if text is None or len(text) > 32:
        return DEFAULT_WAIT
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_WAIT
    return value if math.isfinite(value) and 0.0 <= value <= MAX_WAIT else DEFAULT_WAIT


def env_file(environ: MutableMapping[str, str]) -> Path | None:
    d, job = environ.get("HOPS_JOB_ENV_DIR", ""), environ.get("SLURM_JOB_ID", "")
    return Path(d) / f"{job}.env" if d and job.isdigit() else None


def load_job_env(environ: MutableMapping[str, str] | None = None, *, wait: float | None = None, poll: float = 0.1,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> dict[str, str]:
    """Put the job's ``HOPS_*`` values into ``environ`` (default ``os.environ``) and return them; {} when
    there is no file to wait for or it did not come within ``wait`` seconds (``HOPS_ENV_WAIT``)."""
    env = os.environ if environ is None else environ
    path = env_file(env)
    if path is None:
        return {}
    wait = wait_seconds(env.get("HOPS_ENV_WAIT")) if wait is None else wait_seconds(str(wait))
    deadline = clock() + (0.0 if env.get("HOPS_GPUS") else wait)
    while True:
        try:
            with path.open("rb") as f:
                text = f.read(MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            if clock() >= deadline:
                return {}
            sleep(poll)
            continue
        values = parse_env_file(text)
        env.update(values)
        return values


__all__ = ["load_job_env", "parse_env_file", "wait_seconds"]
