"""Run a list of commands as the tasks of one Slurm job array, on the cluster the caller runs on.

Where it sits: ``hops-slurm simulate --on-slurm`` and ``hops-slurm bench --on-slurm`` hand
:func:`run_array` one argv per cell of their sweep (:mod:`hops_slurm.tools.sweep.sim_cells` for a
simulation) and a state folder. What it does:

* writes each task's argv to ``STATE/cmd/<index>`` (NUL-separated: no shell quoting anywhere) and one batch
  script that runs ``cmd/$SLURM_ARRAY_TASK_ID`` and records its exit status in ``STATE/rc/<index>``;
* submits it with ``sbatch --array=...`` as an ordinary job of the caller (the caller's environment and
  working directory, the default partition unless ``partition`` names one), each task's output in
  ``STATE/logs/<array job id>_<index>.log``, so a resubmitted task keeps the log of every attempt;
* follows the tasks with ``squeue`` (a progress line on a terminal: tasks done, running, pending);
* when every task has left the queue, a task without exit status 0 (it failed, was cancelled, its node
  died, it ran out of time) is submitted again, up to ``retries`` times, as a new array of just those
  indices; what still fails is returned with the path of its last log.

Interrupted (Ctrl-C), it cancels the array jobs it submitted. Nothing here needs root: the state folder
belongs to the caller, and the tasks run as the caller.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from hops_slurm.errors import HopsError
from hops_slurm.progress import StepBar
from hops_slurm.text import printable

#: the batch script: run this task's argv (cmd/<index>, NUL-separated), record its exit status atomically
SCRIPT = """#!/bin/bash
# hops-slurm sweep task: runs {state}/cmd/$SLURM_ARRAY_TASK_ID, records its exit status in {state}/rc/
i="$SLURM_ARRAY_TASK_ID"
mapfile -d '' -t cmd < {state}/cmd/"$i" || exit 2
"${{cmd[@]}}"
rc=$?
printf '%s\\n' "$rc" > {state}/rc/"$i".tmp && mv -f {state}/rc/"$i".tmp {state}/rc/"$i"
exit "$rc"
"""
#: array indices per sbatch (MaxArraySize is 1001 by default; a larger sweep goes in several arrays)
MAX_ARRAY = 1000


@dataclass
class ArrayResult:
    """What ran: the array job ids submitted (first attempt first) and, per task that never succeeded,
    the path of its last log."""

    job_ids: list[str] = field(default_factory=list)
    failed: dict[int, Path] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)


@dataclass
class SlurmClients:
    """How the Slurm client commands are run: their environment (SLURM_CONF, PATH) and a timeout each."""

    env: Mapping[str, str] | None = None
    timeout: float = 60.0

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(argv, env=None if self.env is None else dict(self.env), capture_output=True,
                                  text=True, errors="replace", timeout=self.timeout, check=False)
        except FileNotFoundError as exc:
            raise HopsError(f"{argv[0]} not found: --on-slurm runs on a machine with the Slurm client commands") from exc
        except subprocess.TimeoutExpired as exc:
            raise HopsError(f"`{argv[0]}` gave no answer within {self.timeout:g} s: is slurmctld up?") from exc


def _quote(path: Path) -> str:
    text = str(path)
    return "'" + text.replace("'", "'\\''") + "'"


def _ranges(indices: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (sbatch --array's list)."""
    out, run = [], [indices[0]]
    for i in indices[1:]:
        if i == run[-1] + 1:
            run.append(i)
            continue
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def prepare(commands: Sequence[Sequence[str]], state: Path) -> Path:
    """Write the tasks' argvs and the batch script under ``state``; the script's path."""
    state = state.resolve()
    for sub in ("cmd", "rc", "logs"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    for old in (state / "rc").iterdir():
        old.unlink()
    for i, argv in enumerate(commands):
        if not argv or any("\0" in a for a in argv):
            raise HopsError(f"sweep task {i}: an empty command or a NUL byte in an argument")
        (state / "cmd" / str(i)).write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    script = state / "task.sh"
    script.write_text(SCRIPT.format(state=_quote(state)))
    script.chmod(0o755)
    return script


def submit(clients: SlurmClients, script: Path, indices: Sequence[int], name: str,
           sbatch_args: Sequence[str] = ()) -> list[str]:
    """``sbatch --array`` of ``indices`` (several arrays past :data:`MAX_ARRAY`); the array job ids."""
    logs = script.parent / "logs" / "%A_%a.log"
    ids = []
    for start in range(0, len(indices), MAX_ARRAY):
        chunk = list(indices[start:start + MAX_ARRAY])
        argv = ["sbatch", "--parsable", f"--array={_ranges(chunk)}", f"--job-name={name}", f"--output={logs}",
                f"--chdir={os.getcwd()}", *sbatch_args, str(script)]
        done = clients.run(argv)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise HopsError(f"sbatch refused the sweep: {printable(why, 500)}")
        ids.append(done.stdout.strip().split(";")[0])
    return ids


def queued(clients: SlurmClients, job_ids: Sequence[str]) -> dict[int, str] | None:
    """Task index -> state (PENDING, RUNNING, ...) of the tasks of ``job_ids`` still in the queue; None when
    squeue did not answer (ask again later)."""
    done = clients.run(["squeue", "--noheader", "--array", f"--jobs={','.join(job_ids)}", "--format=%i|%T"])
    if done.returncode != 0:
        # a job that left the queue long ago is unknown to squeue: then none of its tasks is queued
        return {} if "Invalid job id" in done.stderr else None
    out: dict[int, str] = {}
    for line in done.stdout.splitlines():
        ident, _, state = line.strip().partition("|")
        _job, _, index = ident.partition("_")
        if index.isdigit():
            out[int(index)] = state
        elif index.startswith("["):  # a pending remainder not yet split: 3-7 or 3,5
            for part in index.strip("[]").split("%")[0].split(","):
                lo, _, hi = part.partition("-")
                if lo.isdigit():
                    for i in range(int(lo), int(hi or lo) + 1):
                        out[i] = state
    return out


def exit_status(state: Path, index: int) -> int | None:
    """The recorded exit status of task ``index``; None when it recorded none (killed, cancelled)."""
    try:
        return int((state / "rc" / str(index)).read_text().strip())
    except (OSError, ValueError):
        return None


def cluster_name(clients: SlurmClients) -> str:
    """The cluster's ClusterName (``scontrol show config``), reduced to ``[\\w.-]``; ``unnamed`` when unknown."""
    done = clients.run(["scontrol", "show", "config"])
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        key, _, value = line.partition("=")
        if key.strip() == "ClusterName":
            return re.sub(r"[^\w.-]", "_", value.strip())[:64] or "unnamed"
    return "unnamed"


def run_array(commands: Sequence[Sequence[str]], state: Path, *, name: str = "hops-sweep",
              sbatch_args: Sequence[str] = (), retries: int = 2, poll_seconds: float = 2.0,
              clients: SlurmClients | None = None, labels: Sequence[str] | None = None,
              stream: TextIO | None = None) -> ArrayResult:
    """Run ``commands`` as one job array and wait for it (see the module docstring)."""
    clients = clients or SlurmClients()
    stream = stream if stream is not None else sys.stderr
    labels = list(labels) if labels is not None else [str(i) for i in range(len(commands))]
    result = ArrayResult()
    if not commands:
        return result
    state = state.resolve()
    script = prepare(commands, state)
    todo = list(range(len(commands)))
    with StepBar(len(commands), "tasks", stream=stream) as bar:
        for attempt in range(retries + 1):
            for i in todo:
                (state / "rc" / str(i)).unlink(missing_ok=True)
                result.attempts[i] = attempt + 1
            ids = submit(clients, script, todo, name, sbatch_args)
            result.job_ids.extend(ids)
            print(f"hops-slurm: submitted {len(todo)} sweep task(s) as job array {','.join(ids)}; logs in "
                  f"{state / 'logs'}", file=stream, flush=True)
            try:
                _follow(clients, ids, todo, state, bar, poll_seconds)
            except KeyboardInterrupt:
                clients.run(["scancel", *ids])
                raise
            failed = [i for i in todo if exit_status(state, i) != 0]
            bar.finished = len(commands) - len(failed)
            for i in failed:
                rc = exit_status(state, i)
                log = state / "logs" / f"{_job_of(ids, todo, i)}_{i}.log"
                result.failed[i] = log
                again = "; submitted again" if attempt < retries else ""
                ended = f"exited {rc}" if rc is not None else "ended without an exit status"
                bar.print(printable(f"hops-slurm: sweep task {i} ({labels[i]}) {ended}; log {log}{again}", 2000),
                          stream=stream)
            for i in todo:
                if i not in failed:
                    result.failed.pop(i, None)
            todo = failed
            if not todo:
                break
    return result


def _job_of(ids: Sequence[str], todo: Sequence[int], index: int) -> str:
    return ids[todo.index(index) // MAX_ARRAY]


def _follow(clients: SlurmClients, ids: Sequence[str], todo: Sequence[int], state: Path, bar: StepBar,
            poll_seconds: float) -> None:
    """Wait until no task of ``ids`` is queued; keep the bar's counts current."""
    base = bar.finished
    shown = ""
    while True:
        now = queued(clients, ids)
        if now is not None:
            running = sum(1 for s in now.values() if s in ("RUNNING", "COMPLETING"))
            ended = [i for i in todo if i not in now]
            bar.finished = base + sum(1 for i in ended if exit_status(state, i) == 0)
            status = f"array {','.join(ids)}: {running} running, {len(now) - running} pending"
            if status != shown:
                bar.start(status)
                shown = status
            if not now:
                return
        time.sleep(poll_seconds)


__all__ = ["ArrayResult", "SlurmClients", "cluster_name", "exit_status", "prepare", "queued", "run_array", "submit"]
