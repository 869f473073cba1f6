"""The second half of ``make demo``: the same jobs under Slurm's own scheduling, with the Hops engine off.

Where it sits: after the Hops run, :func:`run_demo <hops_slurm.tools.demo.run.run_demo>` stops the daemon and
calls :func:`run_backfill` on the same minicluster (slurm.conf ``SchedulerType=sched/backfill``). For
every job script of the workload it writes a rigid copy (:func:`rigid_script`): no ``#HOPS`` lines, so
the submit hook leaves it alone and never holds it, and one GPU count asked of Slurm with ``--gres``,
the median of the job's requirement set (lower median, ``planner.baselines.common.median_requirement``:
how the Hops paper ran Gavel). Scripts the hook rejects (malformed ``#HOPS``) are not resubmitted. The
engine's reservations (``hops-gate`` and any ``hops-j*``) are deleted first, as ``hops-slurm failopen``
does when the daemon is gone; then the rigid scripts are submitted at the workload's arrival times to
the default (Hops) partition, and Slurm places them where it likes (any GPU type), first come first
served with backfill, each with a ``--time`` limit so backfill has something to plan with. The jobs
train exactly as under Hops (etc/demo/train.py on the original script; the same EMULATED speed of the
allocation's GPU type and the learning rate ``#HOPS lr=`` gives at that count). What Slurm reports
(submit, start, end, GPUs per node) becomes :class:`~hops_slurm.records.JobRecord` s for
:mod:`hops_slurm.tools.demo.compare`.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from hops_slurm.tools.demo.submission import ENDED, Progress, Submission, sbatch_script
from hops_slurm.directives import HopsDirectives, format_lr, parse_script
from hops_slurm.errors import DirectiveError, HopsError
from hops_slurm.records import JobRecord, PlacementRecord
from hops_slurm.slurm.api import SlurmApi, SlurmError, SlurmJob
from planner.baselines.common import median_requirement
from planner.views import JobView

#: Each rigid job's ``--time`` (minutes) at least: far above any demo job's run, as users over-ask; backfill
#: needs limits to start a later job beside an earlier one that is waiting for GPUs. The demo raises it for
#: a workload whose Hops run was long (:func:`time_limit_minutes`); a script's own limit is kept.
TIME_LIMIT_MINUTES = 10
#: ... to this many times the Hops run's makespan, so no job of a site's workload is cut by the demo's limit
TIME_LIMIT_FACTOR = 4.0
#: The engine's reservations (gate, per-job placement) all start with this.
HOPS_RESERVATION_PREFIX = "hops-"


class BackfillError(HopsError):
    """The Slurm-scheduled run could not finish: a job was held, failed, or the run timed out."""


def rigid_gpus(d: HopsDirectives) -> int:
    """The one GPU count the job asks of Slurm: the (lower) median of its requirement set."""
    view = JobView(job_id="", requirements=d.gpus, submit_time=0.0, wait=0.0, age=0.0, sensitivity=0.0,
                   throughput=lambda _config: 0.0)
    return median_requirement(view)


@dataclass(frozen=True)
class RigidJob:
    """One workload script as a rigid Slurm job."""

    original: Path
    name: str  # the original script's stem
    gpus: int
    nodes: int
    lr: str | None  # the job's learning rate at ``gpus`` (None when it gave no lr=)
    requirements: tuple[int, ...] = ()  # the #HOPS gpus= set it was taken from

    @property
    def per_node(self) -> int:
        return self.gpus // self.nodes


def rigid_job(original: Path, d: HopsDirectives, max_per_node: int) -> RigidJob:
    """The rigid request for ``d``: one node when the count fits on the largest node, else the fewest
    nodes that split it evenly (Slurm's ``--gres`` is per node)."""
    gpus = rigid_gpus(d)
    nodes = max(1, math.ceil(gpus / max_per_node))
    if gpus % nodes:
        raise BackfillError(f"{original.name}: {gpus} GPUs do not split evenly over {nodes} nodes of {max_per_node}")
    lr = d.lr_for(gpus)
    return RigidJob(original, original.stem, gpus, nodes, None if lr is None else format_lr(lr), d.gpus)


def time_limit_minutes(hops_makespan: float) -> int:
    """The rigid jobs' ``--time`` for a workload whose Hops run took ``hops_makespan`` seconds."""
    return max(TIME_LIMIT_MINUTES, math.ceil(TIME_LIMIT_FACTOR * max(hops_makespan, 0.0) / 60.0))


def has_time_limit(sbatch_lines: list[str]) -> bool:
    """True when the script's ``#SBATCH`` lines set a time limit (``-t``, ``--time``) of their own."""
    for line in sbatch_lines:
        try:
            words = shlex.split(line[len("#SBATCH"):], comments=True)
        except ValueError:
            continue
        for w in words:
            if w in ("-t", "--time") or w.startswith("--time=") or (w.startswith("-t") and not w.startswith("--")):
                return True
    return False


def rigid_script(job: RigidJob, original_text: str, minutes: int = TIME_LIMIT_MINUTES, account: str = "") -> str:
    """The batch script for Slurm's own scheduling: the original's ``#SBATCH`` lines, a rigid GPU request,
    and the demo's trainer on the original script (which still says the model, batch size and samples).
    It holds no Hops directive, so the submit hook leaves it alone; the allocation the trainer emulates
    is the one Slurm gave (``HOPS_PLACEMENT`` from the nodes Slurm chose). ``account``: the Slurm account it
    is charged to (``--slurm-priority multifactor``: its team's, :mod:`hops_slurm.tools.demo.multifactor`)."""
    sbatch = [line for line in original_text.splitlines()[1:] if line.startswith("#SBATCH")]
    if job.nodes == 1:
        config = f'export HOPS_PLACEMENT="$SLURMD_NODENAME:{job.per_node}"'
    else:
        config = (f'HOPS_PLACEMENT=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed "s/$/:{job.per_node}/" | '
                  'paste -sd,); export HOPS_PLACEMENT')
    lines = [
        "#!/bin/bash",
        *sbatch,
        f"#SBATCH --nodes={job.nodes} --gres=gpu:{job.per_node}" + ("" if has_time_limit(sbatch) else f" --time={minutes}"),
        *([f"#SBATCH --account={account}"] if account else []),
        f"# make demo, Slurm's own scheduling: {job.original.name} as a rigid job of {job.gpus} GPUs (the median",
        "# of its requirement set); Slurm picks the nodes, the trainer emulates the GPU type it got.",
        f"export HOPS_GPUS={job.gpus}",
        *([f"export HOPS_LR={job.lr}"] if job.lr is not None else []),
        config,
        f'exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" {shlex.quote(str(job.original))}',
    ]
    return "\n".join(lines) + "\n"


def write_rigid_scripts(submissions: list[Submission], dest: Path, max_per_node: int,
                        minutes: int = TIME_LIMIT_MINUTES,
                        account_of: Callable[[str], str] | None = None) -> list[tuple[Submission, RigidJob]]:
    """A rigid copy of every script whose ``#HOPS`` lines parse, in ``dest``; the others are left out
    (the submit hook rejects them, so they never ran under Hops either)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for sub in submissions:
        text = sub.script.read_text()
        try:
            d = parse_script(text)
        except DirectiveError:
            continue
        if d is None:
            continue
        job = rigid_job(sub.script.resolve(), d, max_per_node)
        path = dest / sub.script.name
        path.write_text(rigid_script(job, text, minutes, account_of(job.name) if account_of is not None else ""))
        out.append((Submission(path, sub.at), job))
    return out


def remove_hops_reservations(api: SlurmApi) -> list[str]:
    """Delete the engine's reservations (the daemon is stopped); their names."""
    gone = []
    for resv in api.reservations():
        if resv.name.startswith(HOPS_RESERVATION_PREFIX):
            api.delete_reservation(resv.name)
            gone.append(resv.name)
    return gone


@dataclass
class Observed:
    """What the demo saw of one rigid job in Slurm."""

    job: RigidJob
    submit: float = 0.0
    state: str = "PENDING"
    runs: dict[float, dict[str, int]] = field(default_factory=dict)  # start time -> GPUs per node
    end: float | None = None

    def update(self, sj: SlurmJob) -> None:
        self.submit = sj.submit_time or self.submit
        self.state = sj.state
        if sj.start_time and (sj.active or sj.state in ENDED) and sj.start_time not in self.runs:
            self.runs[sj.start_time] = {}
        if sj.active and sj.start_time:
            config = sj.gpu_config() or {n: self.job.per_node for n in sj.nodes}
            if config:
                self.runs[sj.start_time] = config
        if sj.state in ENDED:
            self.end = sj.end_time or None
            for start, config in self.runs.items():  # ended between two polls: the nodes Slurm lists
                if not config:
                    self.runs[start] = {n: self.job.per_node for n in sj.nodes}

    def record(self, job_id: str, user: str = "", partition: str = "") -> JobRecord:
        starts = sorted(self.runs)
        placements = [
            PlacementRecord(start=s, end=(starts[i + 1] if i + 1 < len(starts) else self.end), config=self.runs[s],
                            preempted=i + 1 < len(starts))
            for i, s in enumerate(starts)
        ]
        return JobRecord(job_id=job_id, name=self.job.name, user=user, partition=partition, submit=self.submit,
                         start=starts[0] if starts else None, end=self.end, state=self.state,
                         requirements=[self.job.gpus], placements=placements)


def poll_backfill(api: SlurmApi, seen: dict[str, Observed], progress: Progress) -> None:
    """Update ``seen`` and ``progress`` from one read of Slurm's jobs; a held job is an error (the
    submit hook must have left these jobs alone)."""
    try:
        jobs = {j.job_id: j for j in api.jobs()}
    except SlurmError:
        return  # slurmctld busy; the next poll retries
    for job_id, obs in seen.items():
        sj = jobs.get(job_id)
        if sj is None:
            continue
        if sj.held:
            raise BackfillError(f"job {job_id} ({obs.job.name}) is held ({sj.reason or 'priority 0'}): "
                                "Slurm's own run must not be held by the submit hook")
        obs.update(sj)
        progress.states[job_id] = sj.state
        progress.gpus[job_id] = sum(sj.gpu_config().values()) or obs.job.gpus


def run_backfill(api: SlurmApi, submissions: list[tuple[Submission, RigidJob]], logs: Path, env: dict[str, str],
                 out: TextIO, *, timeout: float, poll: float) -> tuple[dict[str, str], list[JobRecord]]:
    """Submit the rigid jobs at their arrival times, wait until all have ended; (job id -> script name,
    their records)."""
    for name in remove_hops_reservations(api):
        print(f"   deleted the engine's reservation {name} (the daemon is stopped)", file=out)
    queue = sorted(submissions, key=lambda s: (s[0].at, s[0].script.name))
    seen: dict[str, Observed] = {}
    progress = Progress(names={})
    start = time.monotonic()
    last_line = ""
    while True:
        elapsed = time.monotonic() - start
        while queue and queue[0][0].at <= elapsed:
            sub, job = queue.pop(0)
            job_id = sbatch_script(sub.script, logs, env, out, elapsed, label=job.original.name,
                                   note=f" (rigid: {job.gpus} of gpus={','.join(map(str, job.requirements))})")
            if job_id is None:
                raise BackfillError(f"sbatch refused the rigid copy of {job.original.name}")
            seen[job_id] = Observed(job)
            progress.names[job_id] = job.name
        poll_backfill(api, seen, progress)
        line = progress.line(elapsed, len(queue))
        if not queue and progress.ended():
            print(line, file=out)
            break
        if line.split("]", 1)[1] != last_line:
            print(line, file=out, flush=True)
            last_line = line.split("]", 1)[1]
        if elapsed > timeout:
            raise BackfillError(f"the Slurm-scheduled run did not finish within {timeout:.0f} s")
        time.sleep(poll)
    jobs = {j.job_id: j for j in api.jobs()}
    records = [obs.record(job_id, jobs[job_id].user if job_id in jobs else "", jobs[job_id].partition if job_id in jobs else "")
               for job_id, obs in seen.items()]
    return dict(progress.names), records

