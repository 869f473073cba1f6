"""What both runs of ``make demo`` share: a timed submission, ``sbatch`` of one script, and the progress
line built from the jobs' Slurm states.

Where it sits: :mod:`hops_slurm.tools.demo.run` (the Hops run) and :mod:`hops_slurm.tools.demo.rigid` (the same jobs
under Slurm's own backfill) submit their scripts with :func:`sbatch_script` at the times of a
:class:`Submission` and print :meth:`Progress.line` as the jobs move through Slurm's states.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


@dataclass(frozen=True)
class Submission:
    script: Path
    at: float  # seconds after the first submission


@dataclass
class Progress:
    """What the demo knows about its jobs: Slurm states as last seen."""

    names: dict[str, str]  # job id -> script name
    states: dict[str, str] = field(default_factory=dict)
    gpus: dict[str, int] = field(default_factory=dict)

    def ended(self) -> bool:
        return all(self.states.get(j) in ENDED for j in self.names)

    def line(self, elapsed: float, waiting: int) -> str:
        running = [j for j in self.names if self.states.get(j) == "RUNNING"]
        done = sum(1 for j in self.names if self.states.get(j) == "COMPLETED")
        failed = sum(1 for j in self.names if self.states.get(j) in ENDED - {"COMPLETED"})
        pending = len(self.names) - len(running) - done - failed
        used = sum(self.gpus.get(j, 0) for j in running)
        text = f"   [{elapsed:4.0f} s] {len(running)} running on {used} GPUs, {pending} pending, {done} completed"
        text += f", {failed} failed" if failed else ""
        return text + (f", {waiting} still to submit" if waiting else "")


def sbatch_script(script: Path, logs: Path, env: dict[str, str], out: TextIO, elapsed: float, label: str | None = None,
                  note: str = "") -> str | None:
    """``sbatch`` ``script`` (output appended to ``logs``/NAME-ID.out); its job id, or None when sbatch
    refused it (the hook's message is printed). ``label``: the name printed (default the file name)."""
    argv = ["sbatch", "--parsable", "--open-mode=append", f"--output={logs}/%x-%j.out", str(script)]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    name = label or script.name
    if result.returncode != 0:
        reason = next((l for l in result.stderr.splitlines() if "#HOPS" in l), result.stderr.strip())
        print(f"   [{elapsed:4.0f} s] {name:<15} rejected by sbatch: {reason.removeprefix('sbatch: error: ')}", file=out)
        return None
    job_id = result.stdout.strip().split(";")[0]
    print(f"   [{elapsed:4.0f} s] {name:<15} job {job_id}{note}", file=out, flush=True)
    return job_id
